#include "format/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/io.h"
#include "base/unique_fd.h"

namespace profiling::format {
namespace {

[[noreturn]] void fail_errno(const std::string& path, int error) {
  throw FormatError(path + ": " + std::strerror(error));
}

}  // namespace

std::string read_file(const std::string& path) {
  base::UniqueFd owned(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!owned.valid()) fail_errno(path, errno);
  int fd = owned.get();
  struct stat st;
  if (::fstat(fd, &st) != 0) fail_errno(path, errno);
  if (S_ISDIR(st.st_mode)) fail_errno(path, EISDIR);
  std::string bytes;
  // st_size is a hint only (0 for /proc files, stale for growing files):
  // read until end of file.
  size_t capacity = S_ISREG(st.st_mode) && st.st_size > 0 ? static_cast<size_t>(st.st_size) + 1 : 65536;
  for (;;) {
    size_t used = bytes.size();
    if (capacity <= used) capacity = used * 2;
    bytes.resize(capacity);
    ssize_t n = base::read_full(fd, bytes.data() + used, capacity - used);
    if (n < 0) fail_errno(path, errno);
    bytes.resize(used + static_cast<size_t>(n));
    if (static_cast<size_t>(n) < capacity - used) return bytes;
  }
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  if (path.empty()) fail_errno(path, ENOENT);
  size_t slash = path.rfind('/');
  std::string directory = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty()) fail_errno(path, EISDIR);
  base::UniqueFd dirfd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dirfd.valid()) fail_errno(path, errno);
  base::AtomicFile file;
  if (!file.open(dirfd.get(), name.c_str())) fail_errno(path, errno);
  if (!file.write(bytes.data(), bytes.size()) || !file.commit()) fail_errno(path, errno);
}

}  // namespace profiling::format
