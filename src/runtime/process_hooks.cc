#include "runtime/process_hooks.h"

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <vector>

#include "runtime/export.h"
#include "runtime/preload.h"
#include "sampler/sampler.h"

namespace profiling::runtime {
namespace {

pthread_once_t g_hooks_once = PTHREAD_ONCE_INIT;
// The pid the sampler's state belongs to. A vfork child shares our memory
// but has another pid: it must not touch that state (it has no timers
// anyway, and no pending signals).
std::atomic<pid_t> g_owner_pid{0};

void on_fork_prepare() { sampler::fork_prepare(); }
void on_fork_parent() { sampler::fork_parent(); }
void on_fork_child() {
  g_owner_pid.store(::getpid(), std::memory_order_relaxed);
  sampler::fork_child();
}

void register_hooks() {
  g_owner_pid.store(::getpid(), std::memory_order_relaxed);
  pthread_atfork(on_fork_prepare, on_fork_parent, on_fork_child);
}

template <typename Fn>
Fn next_symbol(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
}

// Stops sampling around an exec; resumes it if the exec failed.
class ExecGuard {
 public:
  ExecGuard() : owner_(g_owner_pid.load(std::memory_order_relaxed) == ::getpid()) {
    if (owner_) sampler::before_exec();
    preload_before_exec();  // profil run: the old image's samples (preload.h)
  }
  ~ExecGuard() {
    preload_after_failed_exec();
    if (owner_) sampler::after_failed_exec();
  }

 private:
  bool owner_;
};

std::vector<char*> collect_args(const char* first, va_list ap, char*** envp_out) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(first));
  while (char* arg = va_arg(ap, char*)) argv.push_back(arg);
  argv.push_back(nullptr);
  if (envp_out) *envp_out = va_arg(ap, char**);
  return argv;
}

}  // namespace

void ensure_process_hooks() { pthread_once(&g_hooks_once, register_hooks); }

bool process_owns_sampler() { return g_owner_pid.load(std::memory_order_relaxed) == ::getpid(); }

}  // namespace profiling::runtime

using profiling::runtime::ExecGuard;
using profiling::runtime::next_symbol;

extern "C" {

using execve_fn = int (*)(const char*, char* const[], char* const[]);
using execv_fn = int (*)(const char*, char* const[]);
using fexecve_fn = int (*)(int, char* const[], char* const[]);
using execveat_fn = int (*)(int, const char*, char* const[], char* const[], int);

PROFIL_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  static auto real = next_symbol<execve_fn>("execve");
  ExecGuard guard;
  return real(path, argv, envp);
}

PROFIL_EXPORT int execv(const char* path, char* const argv[]) {
  static auto real = next_symbol<execv_fn>("execv");
  ExecGuard guard;
  return real(path, argv);
}

PROFIL_EXPORT int execvp(const char* file, char* const argv[]) {
  static auto real = next_symbol<execv_fn>("execvp");
  ExecGuard guard;
  return real(file, argv);
}

PROFIL_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  static auto real = next_symbol<execve_fn>("execvpe");
  ExecGuard guard;
  return real(file, argv, envp);
}

PROFIL_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  static auto real = next_symbol<fexecve_fn>("fexecve");
  ExecGuard guard;
  return real(fd, argv, envp);
}

PROFIL_EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) {
  static auto real = next_symbol<execveat_fn>("execveat");
  ExecGuard guard;
  return real(dirfd, path, argv, envp, flags);
}

PROFIL_EXPORT int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  auto argv = profiling::runtime::collect_args(arg, ap, nullptr);
  va_end(ap);
  return execv(path, argv.data());
}

PROFIL_EXPORT int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  auto argv = profiling::runtime::collect_args(arg, ap, nullptr);
  va_end(ap);
  return execvp(file, argv.data());
}

PROFIL_EXPORT int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  char** envp = nullptr;
  auto argv = profiling::runtime::collect_args(arg, ap, &envp);
  va_end(ap);
  return execve(path, argv.data(), envp);
}

}  // extern "C"
