#include "format/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "base/io.h"
#include "base/unique_fd.h"

namespace profiling::format {

std::string size_text(size_t bytes) {
  if (bytes >= (size_t{1} << 30) && bytes % (size_t{1} << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (size_t{1} << 10) && bytes % (size_t{1} << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

bool try_read_file(const std::string& path, std::string* bytes, std::string* problem, size_t limit,
                   bool follow_symlinks) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever.
  base::UniqueFd owned(
      ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (follow_symlinks ? 0 : O_NOFOLLOW)));
  auto failed = [&](const std::string& why) {
    *problem = why;
    return false;
  };
  if (!owned.valid()) return failed(std::strerror(errno));
  int fd = owned.get();
  struct stat st;
  if (::fstat(fd, &st) != 0) return failed(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return failed(std::strerror(EISDIR));
  if (!S_ISREG(st.st_mode))
    return failed(std::string("not a regular file (") +
                  (S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) ? "a character device"
                                     : S_ISBLK(st.st_mode)  ? "a block device"
                                                            : "a socket") +
                  "); profiles are read from regular files only");
  auto too_large = [&](const std::string& size) {
    return failed("file is " + size + ", larger than the " + size_text(limit) + " a profile may be");
  };
  if (static_cast<uint64_t>(st.st_size) > limit) return too_large(std::to_string(st.st_size) + " bytes");
  // Regular files ignore O_NONBLOCK (open(2)); it is cleared all the same so
  // that nothing below depends on that.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  bytes->clear();
  // st_size is a hint only (0 for /proc files, stale for growing files):
  // read until end of file, never past limit + 1 bytes.
  size_t capacity = st.st_size > 0 ? static_cast<size_t>(st.st_size) + 1 : 65536;
  for (;;) {
    capacity = std::min(capacity, limit + 1);
    size_t used = bytes->size();
    bytes->resize(capacity);
    ssize_t n = base::read_full(fd, bytes->data() + used, capacity - used);
    if (n < 0) return failed(std::strerror(errno));
    bytes->resize(used + static_cast<size_t>(n));
    if (bytes->size() > limit) return too_large("more than " + size_text(limit));
    if (static_cast<size_t>(n) < capacity - used) return true;
    capacity = bytes->size() * 2;
  }
}

std::string read_file(const std::string& path, size_t limit) {
  std::string bytes, problem;
  if (!try_read_file(path, &bytes, &problem, limit)) throw FormatError(path + ": " + problem);
  return bytes;
}

bool try_write_file_atomically(const std::string& path, std::string_view bytes, std::string* problem,
                               int* error_out) {
  auto failed = [&](int error) {
    *problem = std::strerror(error);
    if (error_out != nullptr) *error_out = error;
    return false;
  };
  if (path.empty()) return failed(ENOENT);
  // An existing file that is not a regular one (/dev/null, a terminal, a
  // FIFO) is written to as it is, as the shell's > would: renaming a new
  // file over it replaces the node itself (as root, `profil report -o
  // /dev/null` left /dev/null a regular file, and every later `> /dev/null`
  // on the machine wrote into it). There is nothing to keep whole there.
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode) && !S_ISDIR(existing.st_mode)) {
    base::UniqueFd out(::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC));
    if (!out.valid()) return failed(errno);
    if (!base::write_all(out.get(), bytes.data(), bytes.size())) return failed(errno);
    return true;
  }
  size_t slash = path.rfind('/');
  std::string directory = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty()) return failed(EISDIR);
  base::UniqueFd dirfd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dirfd.valid()) return failed(errno);
  base::AtomicFile file;
  if (!file.open(dirfd.get(), name.c_str())) return failed(errno);
  if (!file.write(bytes.data(), bytes.size()) || !file.commit()) return failed(errno);
  return true;
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  std::string problem;
  if (!try_write_file_atomically(path, bytes, &problem)) throw FormatError(path + ": " + problem);
}

}  // namespace profiling::format
