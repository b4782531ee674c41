// ASYNC-SIGNAL-SAFE: system calls and stack buffers only (see io.h).
#include "base/io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace profiling::base {

bool write_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = ENOSPC;
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

ssize_t read_full(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, p + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

size_t format_decimal(unsigned long long value, char* buf) {
  char digits[21];
  size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  for (size_t i = 0; i < n; ++i) buf[i] = digits[n - 1 - i];
  buf[n] = '\0';
  return n;
}

AtomicFile::~AtomicFile() { abandon(); }

bool AtomicFile::set_names(int dirfd, const char* name) {
  size_t len = std::strlen(name);
  if (len == 0 || len >= 200) {
    errno = ENAMETOOLONG;
    return false;
  }
  std::memcpy(name_, name, len + 1);
  // "<name>.tmp.<pid>": unique per process, so a parent and its forked child
  // never share a temporary.
  std::memcpy(temp_, name, len);
  std::memcpy(temp_ + len, ".tmp.", 5);
  format_decimal(static_cast<unsigned long long>(::getpid()), temp_ + len + 5);
  dirfd_ = dirfd;
  failed_ = false;
  return true;
}

bool AtomicFile::open(int dirfd, const char* name, mode_t mode) {
  abandon();
  if (!set_names(dirfd, name)) return false;
  keep_placeholder_ = false;
  ::unlinkat(dirfd_, temp_, 0);  // a stale temporary of a dead process with our pid
  fd_ = ::openat(dirfd_, temp_, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd_ < 0) temp_[0] = '\0';
  return fd_ >= 0;
}

bool AtomicFile::adopt_placeholder(int dirfd, const char* name) {
  abandon();
  if (!set_names(dirfd, name)) return false;
  // Without O_TRUNC (it is empty): ext4 writes a file truncated to nothing
  // and rewritten back at its close (auto_da_alloc).
  fd_ = ::openat(dirfd_, temp_, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd_ < 0) {
    temp_[0] = '\0';
    return false;
  }
  keep_placeholder_ = true;
  return true;
}

bool AtomicFile::write(const void* data, size_t size) {
  if (fd_ < 0 || failed_) return false;
  if (!write_all(fd_, data, size)) {
    failed_ = true;
    saved_errno_ = errno;
    return false;
  }
  return true;
}

bool AtomicFile::commit(bool durable) {
  if (fd_ < 0) {
    errno = EBADF;
    return false;
  }
  int error = failed_ ? saved_errno_ : 0;
  if (error == 0 && durable && ::fsync(fd_) != 0 && errno != EINVAL) error = errno;
  if (::close(fd_) != 0 && error == 0 && errno != EINTR) error = errno;
  fd_ = -1;
  if (error == 0 && ::renameat(dirfd_, temp_, dirfd_, name_) != 0) error = errno;
  if (error != 0) {
    if (!keep_placeholder_) {
      ::unlinkat(dirfd_, temp_, 0);
    } else if (int fd = ::openat(dirfd_, temp_, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC); fd >= 0) {
      ::close(fd);  // the placeholder stays, empty: nothing was written
    }
    temp_[0] = '\0';
    errno = error;
    return false;
  }
  temp_[0] = '\0';
  return true;
}

void AtomicFile::abandon() {
  if (fd_ >= 0) {
    if (keep_placeholder_) ::ftruncate(fd_, 0);
    ::close(fd_);
    fd_ = -1;
  }
  if (temp_[0] != '\0') {
    if (!keep_placeholder_) ::unlinkat(dirfd_, temp_, 0);
    temp_[0] = '\0';
  }
}

}  // namespace profiling::base
