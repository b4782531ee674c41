// Restores errno when it goes out of scope: every signal handler starts with
// one, so the interrupted code never sees errno change under it.
// ASYNC-SIGNAL-SAFE.
#ifndef PROFIL_BASE_ERRNO_SAVER_H
#define PROFIL_BASE_ERRNO_SAVER_H

#include <cerrno>

namespace profiling::base {

class ErrnoSaver {
 public:
  // errno is thread-local behind a function call: look it up once.
  ErrnoSaver() : location_(&errno), saved_(*location_) {}
  ~ErrnoSaver() { *location_ = saved_; }
  ErrnoSaver(const ErrnoSaver&) = delete;
  ErrnoSaver& operator=(const ErrnoSaver&) = delete;
  int saved() const { return saved_; }

 private:
  int* location_;
  int saved_;
};

}  // namespace profiling::base

#endif  // PROFIL_BASE_ERRNO_SAVER_H
