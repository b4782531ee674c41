// ASYNC-SIGNAL-SAFE (see profraw_writer.h): every call here is on the list in
// signal-safety(7) (readlink, clock_gettime, open, read, write, pwrite are);
// buffers are on the stack.
#include "runtime/profraw_writer.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <atomic>
#include <cstring>

#include "base/errno_saver.h"
#include "base/io.h"
#include "sampler/thread_names.h"

namespace profiling::runtime {
namespace {

using format::profraw::Header;
using format::profraw::Pair;

int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Streams the pairs through a stack buffer; counts what it wrote.
class PairWriter {
 public:
  explicit PairWriter(base::AtomicFile& file) : file_(file) {}
  void add(uint64_t pc, uint64_t count, uint64_t observations) {
    buffer_[used_++] = Pair{pc, count, observations};
    ++written_;
    if (used_ == kCapacity) flush();
  }
  void flush() {
    if (used_ > 0) file_.write(buffer_, used_ * sizeof(Pair));
    used_ = 0;
  }
  uint64_t written() const { return written_; }

 private:
  static constexpr size_t kCapacity = 128;  // 3 KiB of stack
  base::AtomicFile& file_;
  Pair buffer_[kCapacity];
  size_t used_ = 0;
  uint64_t written_ = 0;
};

// The distinct threads the stacks name, for their records after the
// stacks: an open-addressing set in static memory (a dump's stack may be a
// small alternate signal stack; dumps are one at a time, preload_dump.cc).
// A process with more threads than it holds leaves the rest unnamed.
constexpr size_t kThreadSetSize = 8192;
int32_t g_thread_set[kThreadSetSize];
size_t g_thread_set_used = 0;

void add_thread(int32_t tid) {
  if (tid == 0 || g_thread_set_used >= kThreadSetSize / 2) return;
  for (size_t i = static_cast<uint32_t>(tid) * 2654435761u % kThreadSetSize;; i = (i + 1) % kThreadSetSize) {
    if (g_thread_set[i] == tid) return;
    if (g_thread_set[i] == 0) {
      g_thread_set[i] = tid;
      ++g_thread_set_used;
      return;
    }
  }
}

// Streams stack records through a stack buffer; counts records and bytes.
class StackWriter final : public StackVisitor, public InterpreterFrameVisitor {
 public:
  explicit StackWriter(base::AtomicFile& file) : file_(file) {}
  void visit(const uint64_t* pcs, uint32_t depth, bool truncated, uint64_t weight, int32_t tid,
             uint32_t observations, uint8_t gil) override {
    if (depth == 0 || weight == 0) return;
    if (depth > format::profraw::kMaxStackDepth) {
      depth = format::profraw::kMaxStackDepth;
      truncated = true;
    }
    const uint32_t flags = (truncated ? format::profraw::kStackTruncated : 0u) | (uint32_t{gil & 3u} << format::profraw::kStackGilShift);
    const format::profraw::StackRecord record{depth, flags, weight, tid, observations};
    put(&record, sizeof record);
    put(pcs, depth * sizeof(uint64_t));
    add_thread(tid);
    ++records_;
  }
  // A ThreadRecord for each thread the stacks named: its name now, or the
  // one it ended with (sampler/thread_names.h). Returns how many.
  uint32_t put_threads() {
    uint32_t n = 0;
    for (size_t i = 0; i < kThreadSetSize; ++i) {
      if (g_thread_set[i] == 0) continue;
      format::profraw::ThreadRecord record{};
      record.tid = g_thread_set[i];
      char name[sampler::kThreadNameSize];
      if (sampler::thread_name(record.tid, name))
        std::memcpy(record.name, name, sizeof record.name);
      else
        record.flags = format::profraw::kThreadEnded;
      put(&record, sizeof record);
      g_thread_set[i] = 0;
      ++n;
    }
    g_thread_set_used = 0;
    return n;
  }
  // An InterpreterFrameRecord and its strings (after the threads).
  void frame(uint64_t address, int64_t line, const char* function, uint32_t function_length, const char* file,
             uint32_t file_length) override {
    if (function_length > format::profraw::kMaxInterpreterName) function_length = format::profraw::kMaxInterpreterName;
    if (file_length > format::profraw::kMaxInterpreterName) file_length = format::profraw::kMaxInterpreterName;
    const format::profraw::InterpreterFrameRecord record{address, line, function_length, file_length};
    const uint64_t before = bytes_;
    put(&record, sizeof record);
    put(function, function_length);
    put(file, file_length);
    static constexpr char kZeros[8] = {};
    put(kZeros, (8 - (function_length + file_length) % 8) % 8);
    frame_bytes_ += bytes_ - before;
    ++frames_;
  }
  uint64_t frames() const { return frames_; }
  uint64_t frame_bytes() const { return frame_bytes_; }
  bool flush() {
    const bool ok = used_ == 0 || file_.write(buffer_, used_);
    ok_ = ok_ && ok;
    used_ = 0;
    return ok_;
  }
  uint64_t records() const { return records_; }
  uint64_t bytes() const { return bytes_; }

 private:
  void put(const void* data, size_t size) {
    const char* bytes = static_cast<const char*>(data);
    bytes_ += size;
    while (size > 0) {
      const size_t n = size < sizeof buffer_ - used_ ? size : sizeof buffer_ - used_;
      std::memcpy(buffer_ + used_, bytes, n);
      used_ += n;
      bytes += n;
      size -= n;
      if (used_ == sizeof buffer_) flush();
    }
  }

  base::AtomicFile& file_;
  char buffer_[4096];  // 4 KiB of stack, like the maps copy
  size_t used_ = 0;
  uint64_t records_ = 0, bytes_ = 0, frames_ = 0, frame_bytes_ = 0;
  bool ok_ = true;
};

// Executable mappings the process had and unmapped (dlclose), appended to
// by retire_mapping_lines; published by the length (append-only).
constexpr size_t kRetiredBytes = 32 * 1024;
char g_retired[kRetiredBytes];
std::atomic<size_t> g_retired_length{0};

// /proc/self/maps read before the dump's file is opened, where it fits:
// a process at its descriptor limit may have one number free (issue 32: a
// program that lowered RLIMIT_NOFILE to 4 lost every dump, the maps and
// the file needing two at once). One dump at a time (preload_dump's
// state), so one buffer; in .bss, no page of it touched until a dump.
constexpr size_t kMapsBufferBytes = 256 * 1024;
char g_maps_buffer[kMapsBufferBytes];

// The length read into g_maps_buffer, or -1 where it did not fit or could
// not be read (copy_maps then reads the file as it writes).
int64_t read_maps_first() {
  const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t total = 0;
  for (;;) {
    if (total == kMapsBufferBytes) {
      total = SIZE_MAX;  // full: it may not all be here
      break;
    }
    const ssize_t n = ::read(fd, g_maps_buffer + total, kMapsBufferBytes - total);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      total = SIZE_MAX;
      break;
    }
    if (n == 0) break;
    total += static_cast<size_t>(n);
  }
  base::ErrnoSaver keep;
  ::close(fd);
  return total == SIZE_MAX ? -1 : static_cast<int64_t>(total);
}

// Copies /proc/self/maps as it is now (dlopen'ed objects included) — from
// the copy read_maps_first made, when it made one — then the lines of
// executable mappings that dlclose removed since the start
// (retire_mapping_lines). Returns the bytes copied, or -1 (errno set).
int64_t copy_maps(base::AtomicFile& file, int64_t read_first) {
  int64_t total = 0;
  if (read_first >= 0) {
    if (!file.write(g_maps_buffer, static_cast<size_t>(read_first))) return -1;
    total = read_first;
  } else {
    int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buffer[4096];
    for (;;) {
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0) {
        if (errno == EINTR) continue;
        base::ErrnoSaver keep;
        ::close(fd);
        return -1;
      }
      if (n == 0) break;
      if (!file.write(buffer, static_cast<size_t>(n))) {
        base::ErrnoSaver keep;
        ::close(fd);
        return -1;
      }
      total += n;
    }
    ::close(fd);
  }
  const size_t retired = g_retired_length.load(std::memory_order_acquire);
  if (retired != 0) {
    if (!file.write(g_retired, retired)) return -1;
    total += static_cast<int64_t>(retired);
  }
  return total;
}

// The directory to create files in: the runtime's kept descriptor itself
// when dir names it (run_directory.cc gives "/proc/self/fd/N" only while
// N is still the output directory), which takes no new descriptor; else
// dir opened (*owned: the caller closes it). -1 with errno set.
int directory_fd(const char* dir, bool* owned) {
  static constexpr char kSelfFd[] = "/proc/self/fd/";
  *owned = false;
  if (std::strncmp(dir, kSelfFd, sizeof kSelfFd - 1) == 0) {
    int fd = 0;
    const char* p = dir + sizeof kSelfFd - 1;
    for (; *p >= '0' && *p <= '9' && fd < (1 << 24); ++p) fd = fd * 10 + (*p - '0');
    if (*p == '\0' && p != dir + sizeof kSelfFd - 1) return fd;
  }
  *owned = true;
  return ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

}  // namespace

void retire_mapping_lines(const char* lines, size_t length) {
  // Callers are serialized (dlopen_hooks.cc: under a lock).
  const size_t used = g_retired_length.load(std::memory_order_relaxed);
  if (length > kRetiredBytes - used) return;  // full: later ones stay unnamed
  std::memcpy(g_retired + used, lines, length);
  g_retired_length.store(used + length, std::memory_order_release);
}

bool write_profraw(const char* dir, const char* name, const ProfrawInfo& info,
                   const sampler::PcTable& table, bool in_place) {
  bool owned = false;
  const int dirfd = directory_fd(dir, &owned);
  if (dirfd < 0) return false;
  const int64_t maps_read_first = read_maps_first();
  bool ok = false;
  int error = 0;
  {
    base::AtomicFile file;
    // A process's first dump goes into the temporary its runtime created,
    // empty, at start as a placeholder (run_directory.cc, choose_name):
    // creating a second file allocates an inode, and the placeholder's
    // removal frees one, per process; ext4 then searches past every inode
    // freed in the last seconds for each new one (recently_deleted()),
    // about a third of a shell loop's CPU under profil run (issue 12).
    // Otherwise (a later dump, or the placeholder gone) a new temporary.
    // 0600: a dump holds /proc/self/maps, the process's address layout
    // (issue 11), which only its owner should read.
    if ((in_place && file.adopt_placeholder(dirfd, name)) || file.open(dirfd, name, 0600)) {
      Header header{};
      std::memcpy(header.magic, format::profraw::kMagic, sizeof header.magic);
      header.version = format::profraw::kVersion;
      header.header_size = sizeof(Header);
      header.pid = ::getpid();
      header.ppid = ::getppid();
      header.clock = info.clock;
      header.hz = info.hz;
      header.period_ns = info.hz ? 1'000'000'000ull / info.hz : 0;
      header.start_ns = info.start_ns;
      header.end_reason = static_cast<uint32_t>(info.end_reason);
      header.signal = info.signal;
      header.signals = info.signals;
      header.start_clock = info.start_clock;
      for (size_t i = 0; i < sizeof header.run_id && info.run_id[i] != '\0'; ++i)
        header.run_id[i] = info.run_id[i];

      char program[4096];
      ssize_t length = ::readlink("/proc/self/exe", program, sizeof program);
      if (length < 0) length = 0;
      header.program_length = static_cast<uint32_t>(length);

      // The header goes first with the lengths still zero, and is rewritten
      // in place once the variable parts are known (other threads may add
      // samples while the table is walked).
      file.write(&header, sizeof header);
      file.write(program, static_cast<size_t>(length));
      PairWriter pairs(file);
      table.for_each([&pairs](uint64_t pc, uint64_t count, uint64_t observations) {
        pairs.add(pc, count, observations);
      });
      pairs.flush();
      header.sample_count = pairs.written();
      header.dropped = table.dropped();
      const int64_t maps = copy_maps(file, maps_read_first);
      bool records = maps >= 0 && (info.unsampled_count == 0 ||
                                   file.write(info.unsampled, info.unsampled_count *
                                                                  sizeof(format::profraw::Unsampled)));
      if (records && info.stacks) {
        StackWriter stacks(file);
        info.stacks->for_each_stack(stacks);
        header.stack_count = stacks.records();
        header.stacks_length = stacks.bytes();
        header.thread_count = stacks.put_threads();
        if (info.interpreter_frames) {
          info.interpreter_frames->for_each_frame(stacks);
          header.interp_frame_count = stacks.frames();
          header.interp_frames_length = stacks.frame_bytes();
        }
        records = stacks.flush();
        header.stacks_dropped = info.stacks->dropped_stacks();
        header.stack_flags = format::profraw::kStacksCaptured;
        header.max_depth = info.max_depth;
      }
      if (records) {
        header.maps_length = static_cast<uint64_t>(maps);
        header.unsampled_count = info.unsampled_count;
        header.end_ns = clock_ns(CLOCK_REALTIME);
        header.cpu_ns = static_cast<uint64_t>(clock_ns(CLOCK_PROCESS_CPUTIME_ID));
        ssize_t n;
        do {
          n = ::pwrite(file.fd(), &header, sizeof header, 0);
        } while (n < 0 && errno == EINTR);
        if (n == static_cast<ssize_t>(sizeof header)) {
          // No fsync: the dump must survive the process, not the machine,
          // and an fsync cost each process ~16 ms (issue 12).
          ok = file.commit(/*durable=*/false);
        } else if (n >= 0) {
          errno = EIO;
        }
      }
      if (!ok) error = errno;
    } else {
      error = errno;
    }
  }  // an uncommitted file removes its temporary here (a placeholder is emptied)
  if (owned) ::close(dirfd);
  if (!ok) errno = error;
  return ok;
}

bool append_ledger_record(const char* dir, const char* name, const format::profraw::LedgerRecord& record) {
  bool owned = false;
  const int dirfd = directory_fd(dir, &owned);
  if (dirfd < 0) return false;
  const int fd = ::openat(dirfd, name, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  const int open_error = errno;
  if (owned) ::close(dirfd);
  if (fd < 0) {
    errno = open_error;
    return false;
  }
  // One write: O_APPEND places it whole at the end (a retry after a short
  // write would leave a torn record, which the reader skips).
  ssize_t n;
  do {
    n = ::write(fd, &record, sizeof record);
  } while (n < 0 && errno == EINTR);
  const int write_error = errno;
  ::close(fd);
  if (n == static_cast<ssize_t>(sizeof record)) return true;
  errno = n < 0 ? write_error : ENOSPC;
  return false;
}

}  // namespace profiling::runtime
