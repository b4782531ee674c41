// The run directory's protocol, as one image of the program follows it:
// the output directory kept open (keep_directory, output_directory), the
// name its profile takes and the empty placeholder that reserves it
// (choose_name), its records in the run's ledger (record_in_ledger,
// begin_image), and the line that says a profile could not be written
// (report_write_error). The names themselves are format/run_names.h's;
// profil run reads what this writes (tools/profil/run_dumps.h).
//
// ASYNC-SIGNAL-SAFE, all but keep_directory (start-up): the dump reaches
// the rest from signal handlers, begin_image runs in a fork child. No
// allocation, no locks, no stdio; errno saved by choose_name and
// begin_image, and by preload_dump around the others.
#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/errno_saver.h"
#include "base/file_limit.h"
#include "base/io.h"
#include "format/run_names.h"
#include "runtime/internal/preload_state.h"
#include "runtime/profraw_writer.h"

namespace profiling::runtime::internal {

using format::profraw::EndReason;

// The output directory kept open, at a number the program is unlikely to
// use (500 and up) and, where the soft descriptor limit is below the hard
// one, at or above the soft limit, where it takes none of the descriptors
// the program may open (issue 20: at `ulimit -n` a program got one fewer
// than plainly). Where neither is possible (a soft limit of a few dozen
// that is also the hard one) nothing is kept: the dumps open the directory
// by its path, so the program still gets all of its descriptors.
void keep_directory() {
  int fd = ::open(g_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  rlimit files{};
  int floor = 500;
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY && files.rlim_cur <= 500) {
    // F_DUPFD honours the soft limit: raised for the one call.
    floor = static_cast<int>(files.rlim_cur);
    base::RaisedFileLimit raised(1);
    const int high = raised.raised() ? ::fcntl(fd, F_DUPFD_CLOEXEC, floor) : -1;
    ::close(fd);
    fd = high;
  } else if (const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, floor); high >= 0) {
    ::close(fd);
    fd = high;
  }
  struct stat st{};
  if (fd < floor || ::fstat(fd, &st) != 0) {
    if (fd >= 0) ::close(fd);
    return;
  }
  g_dirfd = fd;
  g_dir_dev = st.st_dev;
  g_dir_ino = st.st_ino;
  std::memcpy(g_dirfd_path, "/proc/self/fd/", 14);
  base::format_decimal(static_cast<unsigned long long>(fd), g_dirfd_path + 14);
}

// ASYNC-SIGNAL-SAFE. Is the kept descriptor still the output directory
// (a program may dup2 its own files over any number)?
// argv[0]'s base name as the program started: glibc's
// program_invocation_short_name points into argv[0]'s memory, which a
// program may write its process title over later (postgres' ps_status.c:
// "postgres: user db [local] idle"; issue 35 found a dump named "l] idle"),
// so the name is copied before the program's own code runs.
namespace {
char g_program_name[NAME_MAX + 1];
}  // namespace

void keep_program_name() {
  const char* name = program_invocation_short_name;
  size_t i = 0;
  for (; name != nullptr && name[i] != '\0' && i + 1 < sizeof g_program_name; ++i) g_program_name[i] = name[i];
  g_program_name[i] = '\0';
}

const char* program_name() { return g_program_name[0] != '\0' ? g_program_name : program_invocation_short_name; }

bool kept_directory_intact() {
  struct stat st{};
  return g_dirfd >= 0 && ::fstat(g_dirfd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == g_dir_dev &&
         st.st_ino == g_dir_ino;
}

// ASYNC-SIGNAL-SAFE.
const char* output_directory() { return kept_directory_intact() ? g_dirfd_path : g_dir; }

// The run's token, the last part of PROFIL_RUN_ID after its last '-' (8
// hex digits, make_run_id), or nullptr without one. ASYNC-SIGNAL-SAFE.
const char* run_token() { return format::run_token(g_run_id); }

// "<progname>.<pid>.run-<token>.profraw" (format/run_names.h), the token
// being the last part of PROFIL_RUN_ID (issue 11: profil run opens only the files its own run
// named, so a file planted in a shared directory is never read); without a
// run id, "<progname>.<pid>.profraw". When the directory already holds the
// name (an exec'd image of the same name keeps the pid; a pid used again
// later in a long run), ".<n>" goes before the extension.
//
// The name is taken by creating its temporary "<name>.tmp.<pid>", empty,
// 0600: a placeholder the first dump is written into and renamed from
// (profraw_writer.h). One left empty at the end tells profil run that this
// process started profiling and wrote no profile — it could not (a full
// disk, privileges dropped) or was given no chance — which, for a
// descendant of the program, nothing else would tell. Runs at start and in
// the fork child handler when there is no ledger (begin_image), else at the
// image's first dump. ASYNC-SIGNAL-SAFE.
void choose_name() {
  const pid_t pid = ::getpid();
  const char* token = run_token();
  base::ErrnoSaver errno_saver;  // the fork child's errno is the program's
  g_placeholder_empty = false;   // a fork child's is its parent's until it has its own
  // The kept descriptor only while it is still the output directory (issue
  // 20: a program that dup2'd its own directory over 500..1023 got our
  // placeholder in it); else the directory by its path, for this call.
  const bool kept = kept_directory_intact();
  const int dirfd = kept ? g_dirfd : ::open(g_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  for (unsigned n = 0;; ++n) {
    format::format_dump_name(g_name, sizeof g_name, program_name(), pid, token, n);
    if (dirfd < 0) break;  // no directory to create it in: the dump says why
    if (::faccessat(dirfd, g_name, F_OK, 0) == 0) {
      if (n < 1000) continue;
      break;
    }
    char placeholder[sizeof g_name + 32];
    format::format_temporary_name(placeholder, sizeof placeholder, g_name, pid);
    const int fd = ::openat(dirfd, placeholder, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::close(fd);
      g_placeholder_empty = true;
      break;
    }
    if (errno != EEXIST || n >= 1000) break;  // the dump will report a directory it cannot write
  }
  if (!kept && dirfd >= 0) ::close(dirfd);
}

// "profil: DIR/NAME: could not write the profile (ERROR)" on stderr, with
// write(2): the samples must never be lost silently (DESIGN.md §4).
void report_write_error(int error) {
  char line[PATH_MAX + 400];
  size_t n = 0;
  auto append = [&](const char* text) {
    for (; *text != '\0' && n < sizeof line - 2; ++text) line[n++] = *text;
  };
  append("profil: ");
  append(g_dir);
  append("/");
  append(g_name);
  append(": could not write the profile (");
  // strerror is not async-signal-safe: name the errors a dump meets.
  switch (error) {
    case ENOSPC: append("no space left on device"); break;
    case EDQUOT: append("disk quota exceeded"); break;
    case EACCES: append("permission denied"); break;
    case EROFS: append("read-only file system"); break;
    case ENOENT: append("no such directory"); break;
    case EMFILE: case ENFILE: append("too many open files"); break;
    case EIO: append("input/output error"); break;
    case EFBIG: append("file too large"); break;
    // Issue 20: man's seccomp sandbox refused the writes and the line said
    // "errno 38", a number with no name and no hint.
    case ENOSYS: append("ENOSYS: function not implemented; a seccomp sandbox (man's) refuses such calls"); break;
    case EPERM: append("EPERM: operation not permitted; a seccomp sandbox or a security module refuses it"); break;
    default: {
      // strerrorname_np (glibc 2.32) reads a static table: no locale, no
      // allocation. The number too, for an error it does not know.
      if (const char* name = ::strerrorname_np(error)) {
        append(name);
        append(", ");
      }
      char number[24];
      base::format_decimal(static_cast<unsigned long long>(error), number);
      append("errno ");
      append(number);
    }
  }
  append(")\n");
  base::write_all(STDERR_FILENO, line, n);
}

// ASYNC-SIGNAL-SAFE. One ledger record of this image.
bool record_in_ledger(format::profraw::LedgerKind kind, EndReason reason, int signo) {
  format::profraw::LedgerRecord record{};
  std::memcpy(record.magic, format::profraw::kLedgerMagic, sizeof record.magic);
  record.kind = static_cast<uint32_t>(kind);
  record.end_reason = static_cast<uint32_t>(reason);
  record.pid = ::getpid();
  record.ppid = ::getppid();
  record.start_ns = g_start_ns;
  record.cpu_ns = static_cast<uint64_t>(clock_ns(CLOCK_PROCESS_CPUTIME_ID));
  record.clock = clock_code(sampler::active_clock());
  record.start_clock = clock_code(sampler::clock_at_start());
  record.hz = g_hz;
  record.signal = static_cast<uint32_t>(signo);
  const char* name = program_name();
  for (size_t i = 0; name != nullptr && name[i] != '\0' && i + 1 < sizeof record.name; ++i) record.name[i] = name[i];
  return append_ledger_record(output_directory(), g_ledger, record);
}

// Sampling (re)started in a new image (the program's start, a fork
// child): its start goes to the ledger, or, without one, its placeholder
// file is created now (choose_name).
void begin_image() {
  base::ErrnoSaver errno_saver;  // the fork child's errno is the program's
  g_name[0] = '\0';
  g_placeholder_empty = false;
  g_end_in_ledger = false;
  g_in_ledger = g_ledger[0] != '\0' && record_in_ledger(format::profraw::LedgerKind::start, EndReason::exit, 0);
  if (!g_in_ledger) choose_name();
}

}  // namespace profiling::runtime::internal
