// EINTR-safe whole reads and writes, and a file written under a temporary
// name then renamed into place, so a crash or a full disk never leaves a half
// file where a good one was.
// ASYNC-SIGNAL-SAFE: only open, read, write, fsync, rename, unlink, close;
// no allocation. The crash handler writes profiles with these.
#ifndef PROFIL_BASE_IO_H
#define PROFIL_BASE_IO_H

#include <sys/types.h>

#include <cstddef>

namespace profiling::base {

// Writes all of data; false (errno set) on error.
bool write_all(int fd, const void* data, size_t size);
// Reads up to size bytes, stopping only at end of file; -1 on error.
ssize_t read_full(int fd, void* data, size_t size);

// A file created as "<dir>/<name>.tmp.<pid>" (O_NOFOLLOW|O_EXCL, mode 0644)
// and renamed to "<dir>/<name>" by commit(). Destroying it uncommitted
// removes the temporary. dirfd is AT_FDCWD or an open directory.
class AtomicFile {
 public:
  AtomicFile() = default;
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // false (errno set) when the temporary cannot be created; name must be
  // shorter than 200 bytes. mode: the file's permissions (before umask).
  bool open(int dirfd, const char* name, mode_t mode = 0644);
  // Takes over the temporary "<name>.tmp.<pid>" this process created,
  // empty, beforehand (the preload runtime's placeholder,
  // run_directory.cc) rather than creating one: no inode is made and none
  // freed. A failure leaves it there, emptied again, instead of removing
  // it. false (errno set) when there is no such file.
  bool adopt_placeholder(int dirfd, const char* name);
  int fd() const { return fd_; }
  bool write(const void* data, size_t size);
  // Flushes, closes and renames over the final name. false (errno set) on any
  // error, in which case the temporary is removed and an existing file of the
  // final name is left as it was.
  // durable: fsync before the rename, so a power failure cannot leave an
  // empty file under the final name. A process's own end needs only the
  // rename (the data is in the page cache whatever becomes of the process).
  bool commit(bool durable = true);
  const char* temp_name() const { return temp_; }

 private:
  void abandon();
  bool set_names(int dirfd, const char* name);
  int dirfd_ = -1;
  bool keep_placeholder_ = false;
  int fd_ = -1;
  bool failed_ = false;
  int saved_errno_ = 0;
  char name_[256] = {};
  char temp_[288] = {};
};

// Formats an unsigned number into buf (at least 21 bytes); returns its length.
size_t format_decimal(unsigned long long value, char* buf);

}  // namespace profiling::base

#endif  // PROFIL_BASE_IO_H
