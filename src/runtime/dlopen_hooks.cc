// dlopen, interposed: code loaded at run time joins the unwinder's list of
// objects (src/unwind/code_table.h) before its first sample is unwound (a
// dl_iterate_phdr walk; no CFI is read); without a stack table installed this is
// one load and a branch.
//
// A known cost of interposing dlopen: glibc searches a bare name in the
// DT_RUNPATH of the object that called dlopen, found from the return
// address, which is now inside libprofil.so (no RUNPATH), so a library that
// dlopens a bare name found only through its own RUNPATH would not find it.
// Names with a '/' (python's extension modules, most plugins) and names in
// LD_LIBRARY_PATH, the executable's DT_RPATH or the system directories are
// unaffected. (A static program has no interposers: the unwinder notes a PC
// in no known object and sampler::unwind_tables_stale() says a refresh is
// due.)
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <string_view>

#include "runtime/export.h"
#include "runtime/preload.h"
#include "runtime/profraw_writer.h"
#include "sampler/sampler.h"

extern "C" PROFIL_EXPORT void* dlopen(const char* file, int mode) {
  using dlopen_fn = void* (*)(const char*, int);
  static auto real = reinterpret_cast<dlopen_fn>(::dlsym(RTLD_NEXT, "dlopen"));
  if (real == nullptr) return nullptr;
  void* handle = real(file, mode);
  if (handle != nullptr) profiling::sampler::refresh_unwind_tables();
  return handle;
}

// dlclose, interposed: the executable mappings an unload removes are kept
// for the dump (profraw_writer.h, retire_mapping_lines), so the samples
// taken in a module before it went keep their object and address (issue
// 20: ImageMagick unloads its coder modules at exit; the JPEG coder's
// libjpeg time was put at 0x0 in [unknown]). Two reads of
// /proc/self/maps per dlclose, under profil run only.
namespace {

// The executable lines ("r-xp") of /proc/self/maps.
std::string executable_map_lines() {
  std::string text, lines;
  const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return lines;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + at, end - at);
    const size_t perms = line.find(' ');
    if (perms != std::string_view::npos && line.substr(perms + 1, 4) == "r-xp") {
      lines.append(line);
      lines.push_back('\n');
    }
    at = end + 1;
  }
  return lines;
}

pthread_mutex_t g_close_lock = PTHREAD_MUTEX_INITIALIZER;

}  // namespace

extern "C" PROFIL_EXPORT int dlclose(void* handle) {
  using dlclose_fn = int (*)(void*);
  static auto real = reinterpret_cast<dlclose_fn>(::dlsym(RTLD_NEXT, "dlclose"));
  if (real == nullptr) return -1;
  if (!profiling::runtime::preload_active()) return real(handle);
  pthread_mutex_lock(&g_close_lock);
  const std::string before = executable_map_lines();
  const int result = real(handle);
  const int error = errno;
  const std::string after = executable_map_lines();
  for (size_t at = 0; at < before.size();) {
    const size_t end = before.find('\n', at);
    const std::string_view line(before.data() + at, end - at + 1);
    if (after.find(line) == std::string::npos) profiling::runtime::retire_mapping_lines(line.data(), line.size());
    at = end + 1;
  }
  pthread_mutex_unlock(&g_close_lock);
  errno = error;
  return result;
}
