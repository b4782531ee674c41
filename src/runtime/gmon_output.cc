#include "runtime/gmon_output.h"

#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "base/errno_saver.h"
#include "base/io.h"

namespace profiling::runtime {

std::string gmon_out_name(const char* prefix, pid_t pid, bool forked_child) {
  if (prefix != nullptr && *prefix != '\0') return std::string(prefix) + "." + std::to_string(pid);
  if (forked_child) return "gmon.out." + std::to_string(pid);
  return "gmon.out";
}

std::string openbsd_out_name(const char* progname, pid_t pid) {
  std::string name = progname != nullptr && *progname != '\0' ? progname : "unknown";
  for (char& c : name)
    if (c == '/') c = '_';  // a name, never a path
  return "gmon." + name + "." + std::to_string(pid) + ".out";
}

namespace {

// Keeps the descriptor clear of 0..99: a program that expects its first
// open() to return 3 is not surprised by ours.
int move_high(int fd) {
  int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 100);
  if (high < 0) return fd;  // RLIMIT_NOFILE below 100: keep the low one
  ::close(fd);
  return high;
}

}  // namespace

int open_output_directory(const char* path) {
  int fd = ::open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  return move_high(fd);
}

int keep_directory_descriptor(int fd) {
  int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 100);
  if (copy < 0 && errno == EINVAL) copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  return copy;
}

std::string shown_path(int dirfd, const std::string& name) {
  if (!name.empty() && name[0] == '/') return name;
  if (dirfd == AT_FDCWD) return name;
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
  char target[PATH_MAX];
  ssize_t n = ::readlink(link, target, sizeof target - 1);
  if (n <= 0) return name;
  return std::string(target, static_cast<size_t>(n)) + "/" + name;
}

bool write_profile_file(int dirfd, const std::string& name, std::string_view bytes) {
  base::ErrnoSaver keep_errno;  // runs at exit: leave the program's errno alone
  base::AtomicFile file;
  if (file.open(dirfd, name.c_str()) && file.write(bytes.data(), bytes.size()) && file.commit()) return true;
  const int error = errno;
  std::fprintf(stderr, "profil: %s: %s (not written; an existing file of that name is left as it was)\n",
               shown_path(dirfd, name).c_str(), std::strerror(error));
  return false;
}

uint64_t load_bias_of(uint64_t address) {
  struct Search {
    uint64_t address;
    uint64_t bias = 0;
  } search{address};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          const uint64_t start = info->dlpi_addr + ph.p_vaddr;
          if (s->address >= start && s->address - start < ph.p_memsz) {
            s->bias = info->dlpi_addr;
            return 1;
          }
        }
        return 0;
      },
      &search);
  return search.bias;
}

}  // namespace profiling::runtime
