// Descriptors of profil's own kept out of the program's range (issue 20: a
// program that opens descriptors until EMFILE got one fewer under profil
// run than plainly). A descriptor at or above the soft RLIMIT_NOFILE stays
// valid, and open() never hands out such a number, so a descriptor placed
// there takes none of the program's. F_DUPFD honours the soft limit, which
// is raised for the one call where the hard limit allows (or the process
// may raise that: CAP_SYS_RESOURCE) and then put back.
// ASYNC-SIGNAL-SAFE: getrlimit, setrlimit, fcntl, close; errno kept.
#ifndef PROFIL_BASE_FILE_LIMIT_H
#define PROFIL_BASE_FILE_LIMIT_H

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/errno_saver.h"

namespace profiling::base {

// Raises the soft descriptor limit by `more` for its scope (the hard one
// too where it is the soft one and the process may), then puts both back;
// raised() says whether it could.
class RaisedFileLimit {
 public:
  explicit RaisedFileLimit(rlim_t more) {
    ErrnoSaver errno_saver;  // the caller's error stands if it cannot
    if (::getrlimit(RLIMIT_NOFILE, &saved_) != 0 || saved_.rlim_cur == RLIM_INFINITY) return;
    rlimit raised = saved_;
    raised.rlim_cur = saved_.rlim_cur + more;
    if (raised.rlim_cur > raised.rlim_max) {
      if (saved_.rlim_max == RLIM_INFINITY) return;
      raised.rlim_max = raised.rlim_cur;
    }
    raised_ = ::setrlimit(RLIMIT_NOFILE, &raised) == 0;
  }
  ~RaisedFileLimit() {
    if (!raised_) return;
    ErrnoSaver errno_saver;
    ::setrlimit(RLIMIT_NOFILE, &saved_);
  }
  RaisedFileLimit(const RaisedFileLimit&) = delete;
  RaisedFileLimit& operator=(const RaisedFileLimit&) = delete;
  bool raised() const { return raised_; }
  rlim_t soft() const { return saved_.rlim_cur; }

 private:
  rlimit saved_{};
  bool raised_ = false;
};

// fd moved to the first free number at or above the soft limit (its
// close-on-exec flag set), or fd itself where that cannot be done (the
// limit is the hard one): then it is the program's to count.
inline int move_above_file_limit(int fd) {
  ErrnoSaver errno_saver;
  rlimit files{};
  if (fd < 0 || ::getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur == RLIM_INFINITY ||
      files.rlim_cur > (1u << 20))
    return fd;
  RaisedFileLimit raised(64);
  if (!raised.raised()) return fd;
  const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, static_cast<int>(files.rlim_cur));
  if (high < 0) return fd;
  ::close(fd);
  return high;
}

}  // namespace profiling::base

#endif  // PROFIL_BASE_FILE_LIMIT_H
