// The exec family, interposed (process_hooks.h): the clocks stop and a
// pending sampling signal is dropped before the new image starts, and
// `profil run` writes the old image's samples. Only in libprofil.so: in a
// static link these strong definitions would replace the C library's (or
// clash with them) and dlsym(RTLD_NEXT) finds nothing to call (issue 9).
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
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

using format::profraw::NotEntered;

// The file execvp would run for `file` (PATH searched when it has no '/').
std::string resolve(const char* file, bool search) {
  if (file == nullptr) return {};
  if (!search || std::strchr(file, '/') != nullptr) return file;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/bin:/usr/bin";
  for (size_t at = 0; at <= dirs.size();) {
    size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(at, end - at);
    candidate = (candidate.empty() ? std::string(".") : candidate) + "/" + file;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    at = end + 1;
  }
  return {};
}

bool environment_preloads_us(char* const envp[]) {
  for (char* const* e = envp; e != nullptr && *e != nullptr; ++e)
    if (std::strncmp(*e, "LD_PRELOAD=", 11) == 0 && std::strstr(*e, "libprofil") != nullptr) return true;
  return false;
}

// Will the preload enter the program at `path`, given `envp`? Issue 20:
// a static child, a set-ID program (sudo), one with file capabilities or
// an environment without our LD_PRELOAD went unprofiled without a word.
std::optional<NotEntered> why_not_entered(const std::string& path, char* const envp[]) {
  if (!environment_preloads_us(envp != nullptr ? envp : environ)) return NotEntered::no_preload;
  if (path.empty()) return std::nullopt;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;  // the exec itself will say
  std::optional<NotEntered> why;
  struct stat st{};
  Elf64_Ehdr header{};
  if (::fstat(fd, &st) == 0 && (((st.st_mode & S_ISUID) && st.st_uid != ::geteuid()) ||
                                ((st.st_mode & S_ISGID) && st.st_gid != ::getegid()))) {
    why = NotEntered::set_id;
  } else if (::fgetxattr(fd, "security.capability", nullptr, 0) > 0) {
    why = NotEntered::capabilities;
  } else if (::pread(fd, &header, sizeof header, 0) == static_cast<ssize_t>(sizeof header) &&
             std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 && header.e_ident[EI_CLASS] == ELFCLASS64 &&
             header.e_phentsize == sizeof(Elf64_Phdr) && header.e_phnum < 256) {
    bool interpreter = false;
    for (unsigned i = 0; i < header.e_phnum && !interpreter; ++i) {
      Elf64_Phdr program{};
      if (::pread(fd, &program, sizeof program, static_cast<off_t>(header.e_phoff + i * sizeof program)) !=
          static_cast<ssize_t>(sizeof program))
        break;
      interpreter = program.p_type == PT_INTERP;
    }
    if (!interpreter) why = NotEntered::static_program;
  }
  ::close(fd);
  return why;
}

// Under a seccomp filter the program installed (sampler.h,
// before_seccomp_filter), the new image must not start sampling: its start
// issues system calls the filter may kill. The exec'd image is told so in
// its environment (the preload reads PROFIL_SECCOMP_FILTERED at start);
// envp with the variable added, in storage, or envp itself.
char* const* environment_for_exec(char* const envp[], std::vector<char*>& storage) {
  if (sampler::late_system_calls_allowed() || !preload_active()) return envp;
  static char kFiltered[] = "PROFIL_SECCOMP_FILTERED=1";
  for (char* const* e = envp; e != nullptr && *e != nullptr; ++e) {
    if (std::strcmp(*e, kFiltered) == 0) return envp;
    storage.push_back(*e);
  }
  storage.push_back(kFiltered);
  storage.push_back(nullptr);
  return storage.data();
}

// Stops sampling around an exec; resumes it if the exec failed. With the
// program to run, says in the run's ledger when the preload cannot enter
// it.
class ExecGuard {
 public:
  ExecGuard(const char* file = nullptr, char* const envp[] = nullptr, bool search = false)
      : owner_(process_owns_sampler()) {
    if (owner_) sampler::before_exec();
    preload_before_exec();  // profil run: the old image's samples (preload.h)
    if (preload_active() && !sampler::late_system_calls_allowed()) {
      preload_note_not_entered(file != nullptr ? file : "?", NotEntered::seccomp_filter);
    } else if (preload_active()) {
      if (const auto why = why_not_entered(resolve(file, search), envp))
        preload_note_not_entered(file != nullptr ? file : "?", *why);
    }
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
  ExecGuard guard(path, envp);
  std::vector<char*> storage;
  return real(path, argv, profiling::runtime::environment_for_exec(envp, storage));
}

PROFIL_EXPORT int execv(const char* path, char* const argv[]) {
  static auto real = next_symbol<execv_fn>("execv");
  static auto real_execve = next_symbol<execve_fn>("execve");
  ExecGuard guard(path);
  std::vector<char*> storage;
  char* const* env = profiling::runtime::environment_for_exec(environ, storage);
  if (env != environ) return real_execve(path, argv, env);
  return real(path, argv);
}

PROFIL_EXPORT int execvp(const char* file, char* const argv[]) {
  static auto real = next_symbol<execv_fn>("execvp");
  static auto real_execvpe = next_symbol<execve_fn>("execvpe");
  ExecGuard guard(file, nullptr, true);
  std::vector<char*> storage;
  char* const* env = profiling::runtime::environment_for_exec(environ, storage);
  if (env != environ) return real_execvpe(file, argv, env);
  return real(file, argv);
}

PROFIL_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  static auto real = next_symbol<execve_fn>("execvpe");
  ExecGuard guard(file, envp, true);
  std::vector<char*> storage;
  return real(file, argv, profiling::runtime::environment_for_exec(envp, storage));
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
