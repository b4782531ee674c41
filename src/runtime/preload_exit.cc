// The C library's exit functions, interposed (extern "C", exported) so
// that a process writes its profile however it ends: _exit, _Exit and
// quick_exit run the process-end hooks (process_end.h, which write the
// dump), exit() from a multithreaded process first writes a provisional
// dump; then each calls the real function, looked up at start
// (find_real_exits). process_has_other_threads (preload.h) is exit()'s
// question.
//
// ASYNC-SIGNAL-SAFE, as far as the dump goes: _exit and _Exit are
// async-signal-safe functions and may be called from a handler; exit
// itself is not.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/export.h"
#include "runtime/internal/preload_state.h"
#include "runtime/preload.h"
#include "runtime/process_end.h"

namespace profiling::runtime {
namespace internal {
namespace {

using exit_fn = void (*)(int);
exit_fn g_real_exit = nullptr;
exit_fn g_real_Exit = nullptr;
exit_fn g_real_quick_exit = nullptr;
exit_fn g_real_exit_function = nullptr;  // exit(3)

}  // namespace

void find_real_exits() {
  g_real_exit = reinterpret_cast<exit_fn>(::dlsym(RTLD_NEXT, "_exit"));
  g_real_Exit = reinterpret_cast<exit_fn>(::dlsym(RTLD_NEXT, "_Exit"));
  g_real_quick_exit = reinterpret_cast<exit_fn>(::dlsym(RTLD_NEXT, "quick_exit"));
  g_real_exit_function = reinterpret_cast<exit_fn>(::dlsym(RTLD_NEXT, "exit"));
}

}  // namespace internal

bool process_has_other_threads() {
  // proc(5): after "pid (comm) ", field 3 is the state and field 20
  // num_threads; comm may hold spaces and parentheses, so count from the
  // last ')'.
  int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;  // cannot tell: the safe answer
  char text[1024];
  ssize_t n;
  do {
    n = ::read(fd, text, sizeof text - 1);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return true;
  text[n] = '\0';
  const char* p = std::strrchr(text, ')');
  if (p == nullptr) return true;
  int field = 2;
  for (++p; *p != '\0' && field < 20; ++p)
    if (*p == ' ') ++field;
  long threads = 0;
  for (; *p >= '0' && *p <= '9'; ++p) threads = threads * 10 + (*p - '0');
  return threads != 1;
}

}  // namespace profiling::runtime

using profiling::runtime::internal::g_real_exit;
using profiling::runtime::internal::g_real_exit_function;
using profiling::runtime::internal::g_real_Exit;
using profiling::runtime::internal::g_real_quick_exit;

// _exit() and _Exit() end the process without exit handlers: interposed so
// the profile is written first. glibc's own exit() reaches _exit through an
// internal call, not this symbol (and the dump is once-only anyway).
extern "C" PROFIL_EXPORT void _exit(int status) {
  profiling::runtime::run_process_end_hooks(profiling::runtime::ProcessEnd::exit_call, 0);
  if (g_real_exit != nullptr) g_real_exit(status);
  for (;;) ::syscall(SYS_exit_group, status);
}

extern "C" PROFIL_EXPORT void _Exit(int status) {
  profiling::runtime::run_process_end_hooks(profiling::runtime::ProcessEnd::exit_call, 0);
  if (g_real_Exit != nullptr) g_real_Exit(status);
  for (;;) ::syscall(SYS_exit_group, status);
}

// quick_exit() reaches _exit inside glibc, past the interposed symbol, so
// it is interposed itself. The profile is written before the program's
// at_quick_exit handlers run (they are for flushing, not work).
extern "C" PROFIL_EXPORT void quick_exit(int status) noexcept {
  profiling::runtime::run_process_end_hooks(profiling::runtime::ProcessEnd::exit_call, 0);
  if (g_real_quick_exit != nullptr) g_real_quick_exit(status);
  for (;;) ::syscall(SYS_exit_group, status);
}

// exit() from a thread while others run: glibc runs the exit handlers (our
// destructor's dump among them) in whichever thread gets them, and any
// thread that finishes exit() first ends the process with exit_group,
// killing a dump still being written in another (issue 11: 9 threads calling
// exit at once lost the profile 15 times in 15). So a multithreaded
// process first writes a complete provisional dump here, before any exit
// handler runs; the destructor's dump then rewrites it with what the exit
// handlers ran too (renamed over it, so a rewrite cut short leaves the
// provisional file whole). return from main reaches exit inside glibc, not
// this symbol, and keeps the single dump. ASYNC-SIGNAL-SAFE as far as the
// dump goes (exit itself is not).
extern "C" PROFIL_EXPORT void exit(int status) {
  if (profiling::runtime::preload_active() && profiling::runtime::process_has_other_threads())
    profiling::runtime::preload_dump(profiling::format::profraw::EndReason::exit, 0,
                                     profiling::runtime::DumpKind::provisional);
  if (g_real_exit_function != nullptr) g_real_exit_function(status);
  for (;;) ::syscall(SYS_exit_group, status);
}
