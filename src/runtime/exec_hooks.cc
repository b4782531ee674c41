// The exec family, interposed (process_hooks.h): the clocks stop and a
// pending sampling signal is dropped before the new image starts, and
// `profil run` writes the old image's samples. Only in libprofil.so: in a
// static link these strong definitions would replace the C library's (or
// clash with them) and dlsym(RTLD_NEXT) finds nothing to call (issue 9).
#include <dlfcn.h>
#include <unistd.h>

#include <cstdarg>
#include <vector>

#include "runtime/export.h"
#include "runtime/preload.h"
#include "runtime/process_hooks.h"
#include "sampler/sampler.h"

namespace profiling::runtime {
namespace {

template <typename Fn>
Fn next_symbol(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
}

// Stops sampling around an exec; resumes it if the exec failed.
class ExecGuard {
 public:
  ExecGuard() : owner_(process_owns_sampler()) {
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
