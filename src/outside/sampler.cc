#include "outside/sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>
#include <string_view>

#include "base/unique_fd.h"
#include "perf/event.h"
#include "base/proc_syscall.h"

namespace profiling::outside {
namespace {

std::string read_setting(const char* path) {
  std::ifstream in(path);
  std::string value;
  std::getline(in, value);
  return value.empty() ? "?" : value;
}

std::set<pid_t> threads_of(pid_t pid) {
  std::set<pid_t> tids;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids.insert(static_cast<pid_t>(std::atol(e->d_name)));
    ::closedir(d);
  }
  return tids;
}

}  // namespace

Sampler::Sampler(SamplerOptions options) : options_(options) {
  int cpus[1024];
  const unsigned n = perf::online_cpus(cpus, 1024);
  cpus_.assign(cpus, cpus + n);
  if (cpus_.empty()) cpus_.push_back(0);
  scratch_.resize(65536);
  timespec mono{}, real{};
  ::clock_gettime(CLOCK_MONOTONIC, &mono);
  ::clock_gettime(CLOCK_REALTIME, &real);
  ProcessTable::Options table;
  table.hz = options_.hz;
  table.period_ns = options_.hz ? 1'000'000'000ull / options_.hz : 0;
  table.max_depth = options_.max_depth;
  table.stacks = options_.stacks;
  table.realtime_offset_ns = (real.tv_sec - mono.tv_sec) * 1'000'000'000ll + (real.tv_nsec - mono.tv_nsec);
  table.wall = options_.wall;
  table_ = std::make_unique<ProcessTable>(table);
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
}

Sampler::~Sampler() {
  stop();
  for (int fd : wake_)
    if (fd >= 0) ::close(fd);
}

uint64_t Sampler::now_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(t.tv_nsec);
}

std::string Sampler::describe_refusal(long error, pid_t pid) const {
  const std::string paranoid = read_setting("/proc/sys/kernel/perf_event_paranoid");
  switch (error) {
    case EACCES:
    case EPERM:
      return "the kernel refuses perf events on pid " + std::to_string(pid) + " (" + std::strerror(static_cast<int>(error)) +
             "): kernel.perf_event_paranoid is " + paranoid +
             "; sampling another user's process, or any process where it is above 2, needs CAP_PERFMON or "
             "root (or sysctl kernel.perf_event_paranoid=2)";
    case ESRCH: return "no process " + std::to_string(pid);
    case EMFILE:
    case ENFILE: return "out of file descriptors for the events (one per thread and CPU): raise ulimit -n";
    case ENOENT:
    case ENODEV:
    case ENOSYS:
    case EOPNOTSUPP: return "this kernel has no software task-clock perf events (" + std::string(std::strerror(static_cast<int>(error))) + ")";
    default: return "perf_event_open on pid " + std::to_string(pid) + ": " + std::strerror(static_cast<int>(error));
  }
}

std::string Sampler::open_on(pid_t tid, bool before_exec) {
  perf::EventSpec spec;
  spec.period_ns = options_.hz ? 1'000'000'000ull / options_.hz : 1'000'000;
  spec.sample_type = PERF_SAMPLE_TIME;
  if (options_.stacks) {
    spec.regs_user = perf::kUnwindRegisters;
    spec.stack_bytes = stack_bytes();
  }
  spec.inherit = true;
  spec.inherit_stat = true;  // each ended thread's count: ProcessTable::on_read
  spec.disabled = before_exec;
  spec.enable_on_exec = before_exec;
  spec.track_tasks = true;
  spec.user_only = user_only_;
  spec.wakeup_bytes = static_cast<uint32_t>(options_.ring_pages * 4096 / 4);
  for (size_t i = 0; i < cpus_.size(); ++i) {
    perf_event_attr attr = spec.attr();
    // Timestamps on CLOCK_MONOTONIC: comparable with ours.
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;
    long fd = perf::open_event(attr, tid, cpus_[i]);
    if (fd == -EACCES && !user_only_ && fds_.empty()) {
      // Kernel time is not ours to sample here: user time only.
      user_only_ = true;
      return open_on(tid, before_exec);
    }
    if (fd < 0) return describe_refusal(-fd, tid);
    fds_.push_back(static_cast<int>(fd));
    format_ = perf::RecordFormat::of(attr);
    if (i < rings_.size()) {
      // Another thread's event on this CPU writes into the CPU's ring.
      if (::ioctl(static_cast<int>(fd), PERF_EVENT_IOC_SET_OUTPUT, rings_[i].fd) != 0)
        return "PERF_EVENT_IOC_SET_OUTPUT: " + std::string(std::strerror(errno));
      continue;
    }
    size_t bytes = (1 + options_.ring_pages) * 4096ull;
    void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, static_cast<int>(fd), 0);
    while (map == MAP_FAILED && (errno == EPERM || errno == ENOMEM) && options_.ring_pages > 16) {
      options_.ring_pages /= 2;
      bytes = (1 + options_.ring_pages) * 4096ull;
      map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, static_cast<int>(fd), 0);
    }
    if (map == MAP_FAILED) {
      const int error = errno;
      return "cannot map a " + std::to_string(bytes / 1024) + " KiB perf ring (" + std::strerror(error) +
             "): kernel.perf_event_mlock_kb is " + read_setting("/proc/sys/kernel/perf_event_mlock_kb") +
             " KiB per CPU for a user without CAP_IPC_LOCK";
    }
    rings_.push_back({cpus_[i], static_cast<int>(fd), map, bytes, perf::RingReader(map, bytes)});
  }
  table_->set_kernel_sampled(!user_only_);  // before the reader starts: no lock needed
  return "";
}

std::string Sampler::open_before_exec(pid_t pid) { return open_on(pid, true); }

std::string Sampler::attach(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return "no process " + std::to_string(pid);
  // One event per thread and CPU: profil's own soft descriptor limit goes
  // up to the hard one (its own process only: nothing the target inherits).
  if (rlimit limit{}; ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
  std::set<pid_t> opened;
  // Threads created while the events are being opened carry the events of
  // their creator once it has them; the list is read again until it holds
  // no thread without events.
  for (int round = 0; round < 100; ++round) {
    const std::set<pid_t> tids = threads_of(pid);
    if (tids.empty()) return "no process " + std::to_string(pid);
    bool added = false;
    for (pid_t tid : tids) {
      if (opened.count(tid)) continue;
      std::string why = open_on(tid, false);
      if (!why.empty()) {
        if (!opened.empty() && ::kill(tid, 0) != 0) continue;  // a thread that ended meanwhile
        return why;
      }
      opened.insert(tid);
      added = true;
    }
    if (!added) break;
  }
  std::lock_guard<std::mutex> hold(lock_);
  table_->add_running(pid, now_ns());
  return "";
}

void Sampler::start() {
  stopping_.store(false);
  reader_ = std::thread([this] { reader_loop(); });
  if (options_.wall) poller_ = std::thread([this] { poller_loop(); });
}

void Sampler::pause() {
  stopping_.store(true);
  if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
  if (reader_.joinable()) reader_.join();
  if (poller_.joinable()) poller_.join();
  if (wake_[0] >= 0)
    for (char drained[16]; ::read(wake_[0], drained, sizeof drained) > 0;) {
    }
  if (!stopped_) read_round();
}

void Sampler::abandon() {
  // No read here: the rings' tails are shared with the copy that samples on.
  stopping_.store(true);
  if (reader_.joinable()) reader_.join();
  if (poller_.joinable()) poller_.join();
  stopped_ = true;
  for (Ring& ring : rings_) ::munmap(ring.mapping, ring.bytes);
  for (int fd : fds_) ::close(fd);
  rings_.clear();
  fds_.clear();
}

void Sampler::reader_loop() {
  std::vector<pollfd> polls;
  for (const Ring& ring : rings_) polls.push_back({ring.fd, POLLIN, 0});
  if (wake_[0] >= 0) polls.push_back({wake_[0], POLLIN, 0});
  while (!stopping_.load()) {
    // Woken at a quarter ring; at least every 100 ms for the snapshots'
    // sake and for rings that fill slowly.
    const int ready = ::poll(polls.data(), polls.size(), 100);
    read_round();
    // A ring whose process tree has ended polls as hung up at once, every
    // time (perf_poll): then the wake pipe alone, for 10 ms, so that the
    // reader does not spin until its owner stops it.
    const bool hung_up = ready > 0 && std::all_of(polls.begin(), polls.begin() + static_cast<long>(rings_.size()),
                                                  [](const pollfd& p) { return (p.revents & POLLHUP) != 0; });
    if (hung_up && wake_[0] >= 0) {
      pollfd wake{wake_[0], POLLIN, 0};
      ::poll(&wake, 1, 10);
    }
  }
}

// The wall clock's poller: once a period, every thread of the tree that is
// blocked is one sample of the periods since the previous look
// (base::LookPeriods), as the inside's watcher does
// (sampler/wall_sampler.h). Its sleep ends early when stop() or pause()
// writes the wake pipe.
void Sampler::poller_loop() {
  const uint64_t period = options_.hz ? 1'000'000'000ull / options_.hz : 1'000'000;
  uint64_t next = now_ns();
  base::LookPeriods look(next);
  while (!stopping_.load()) {
    next += period;
    const uint64_t now_before = now_ns();
    if (next > now_before) {
      const uint64_t wait = next - now_before;
      const timespec timeout{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
      pollfd wake{wake_[0], POLLIN, 0};
      ::ppoll(&wake, wake_[0] >= 0 ? 1 : 0, &timeout, nullptr);
    }
    if (stopping_.load()) break;
    const uint64_t now = now_ns();
    const int64_t periods = look.since_last(now, period);
    if (next + period < now) next = now;  // far behind: no burst of catch-up wake-ups
    if (periods > 0) sample_blocked_threads(static_cast<uint64_t>(std::min<int64_t>(periods, 1'000'000)));
  }
}

void Sampler::sample_blocked_threads(uint64_t periods) {
  // What the rings hold first: a process's exec and mappings are then known
  // before its blocked threads are unwound with them.
  read_round();
  std::vector<pid_t> pids;
  {
    std::lock_guard<std::mutex> hold(lock_);
    pids = table_->running();
  }
  if (options_.stacks) stack_copy_.resize(stack_bytes());
  for (pid_t pid : pids) {
    for (pid_t tid : threads_of(pid)) {
      const std::string path = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/syscall";
      base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
      if (!fd.valid()) {
        // Ended (ENOENT, ESRCH), or not ours to read: that is said.
        if (errno == EACCES || errno == EPERM) {
          std::lock_guard<std::mutex> hold(lock_);
          unreadable_.insert(tid);
        }
        continue;
      }
      char text[256];
      const std::string_view before(text, base::read_syscall_text(fd.get(), text));
      base::BlockedRegisters regs;
      if (!base::blocked_registers_from_syscall_text(before, &regs)) continue;
      perf::Sample s;
      s.who.pid = static_cast<uint32_t>(pid);
      s.who.tid = static_cast<uint32_t>(tid);
      s.who.time = now_ns();
      s.ip = regs.pc;
      if (options_.stacks) {
        s.regs_abi = PERF_SAMPLE_REGS_ABI_64;
        s.regs[perf::kUnwindRegisterBp] = 0;  // the kernel gives pc and sp alone
        s.regs[perf::kUnwindRegisterSp] = regs.sp;
        s.regs[perf::kUnwindRegisterIp] = regs.pc;
        s.reg_count = 3;
        iovec local{stack_copy_.data(), stack_copy_.size()};
        iovec remote{reinterpret_cast<void*>(regs.sp), stack_copy_.size()};
        const ssize_t copied = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
        s.stack = stack_copy_.data();
        s.stack_size = stack_copy_.size();
        // A thread that ran meanwhile left a stack of two moments: its pc
        // alone is kept (a one-frame stack, truncated), as inside.
        char after[256];
        const bool still = std::string_view(after, base::read_syscall_text(fd.get(), after)) == before;
        s.stack_copied = copied > 0 && still ? static_cast<uint64_t>(copied) : 0;
      }
      std::lock_guard<std::mutex> hold(lock_);
      table_->on_sample(s, false, periods);
    }
  }
}

void Sampler::read_round() {
  std::lock_guard<std::mutex> hold(lock_);
  // Every ring's records up to the head read now. Task records first, in
  // time order across the rings (an exec on one CPU, its mappings on
  // another), then the samples: each unwound with the mappings of its
  // process image.
  struct Pending {
    uint64_t time;
    std::vector<uint8_t> bytes;
  };
  std::vector<Pending> tasks;
  std::vector<uint64_t> heads(rings_.size());
  for (size_t i = 0; i < rings_.size(); ++i) {
    Ring& ring = rings_[i];
    heads[i] = ring.reader.head();
    uint64_t tail = ring.reader.tail();
    perf::walk_records(ring.reader.data(), ring.reader.data_size(), heads[i], &tail, scratch_.data(), scratch_.size(),
                       [&](const perf::Record& r) {
                         if (r.header.type == PERF_RECORD_SAMPLE) return;
                         perf::SampleId who;
                         if (!perf::parse_sample_id(format_, r, &who)) return;
                         tasks.push_back({who.time, std::vector<uint8_t>(r.bytes, r.bytes + r.size)});
                       });
  }
  std::stable_sort(tasks.begin(), tasks.end(), [](const Pending& a, const Pending& b) { return a.time < b.time; });
  for (const Pending& p : tasks) {
    perf::Record r;
    std::memcpy(&r.header, p.bytes.data(), sizeof r.header);
    r.bytes = p.bytes.data();
    r.size = p.bytes.size();
    switch (r.header.type) {
      case PERF_RECORD_MMAP:
      case PERF_RECORD_MMAP2: {
        perf::Mmap m;
        if (perf::parse_mmap(format_, r, &m)) table_->on_mmap(m);
        break;
      }
      case PERF_RECORD_COMM: {
        perf::Comm c;
        if (perf::parse_comm(format_, r, &c)) table_->on_comm(c);
        break;
      }
      case PERF_RECORD_FORK: {
        perf::Task t;
        if (perf::parse_task(format_, r, &t)) table_->on_fork(t);
        break;
      }
      case PERF_RECORD_EXIT: {
        perf::Task t;
        if (perf::parse_task(format_, r, &t)) table_->on_exit(t);
        break;
      }
      case PERF_RECORD_LOST: {
        perf::Lost l;
        if (perf::parse_lost(format_, r, &l)) table_->on_lost(l);
        break;
      }
      case PERF_RECORD_READ: {
        perf::Read read;
        if (perf::parse_read(format_, r, &read)) table_->on_read(read);
        break;
      }
      case PERF_RECORD_THROTTLE: throttled_.fetch_add(1); break;
      default: break;
    }
  }
  for (size_t i = 0; i < rings_.size(); ++i) {
    Ring& ring = rings_[i];
    uint64_t tail = ring.reader.tail();
    perf::walk_records(ring.reader.data(), ring.reader.data_size(), heads[i], &tail, scratch_.data(), scratch_.size(),
                       [&](const perf::Record& r) {
                         if (r.header.type != PERF_RECORD_SAMPLE) return;
                         perf::Sample s;
                         if (!perf::parse_sample(format_, r, &s)) return;
                         const bool kernel = (r.header.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
                         table_->on_sample(s, kernel);
                       });
    ring.reader.consume_to(heads[i]);
  }
}

void Sampler::stop() {
  if (stopped_) return;
  stopped_ = true;
  stopping_.store(true);
  if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
  if (reader_.joinable()) reader_.join();
  if (poller_.joinable()) poller_.join();
  // Sampling ends before the last read: nothing is written after it.
  for (int fd : fds_) ::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  read_round();
  for (Ring& ring : rings_) ::munmap(ring.mapping, ring.bytes);
  for (int fd : fds_) ::close(fd);
  rings_.clear();
  fds_.clear();
}

std::vector<ImageProfile> Sampler::take(bool final) {
  std::lock_guard<std::mutex> hold(lock_);
  return table_->take(now_ns(), final);
}

std::string Sampler::map_rings_again() {
  for (Ring& ring : rings_) {
    void* map = ::mmap(nullptr, ring.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, ring.fd, 0);
    if (map == MAP_FAILED) return std::string("mmap of a ring again: ") + std::strerror(errno);
    ring.mapping = map;
    ring.reader = perf::RingReader(map, ring.bytes);
  }
  return "";
}

std::vector<ImageProfile> Sampler::take_ended() {
  std::lock_guard<std::mutex> hold(lock_);
  return table_->take_ended(now_ns());
}

std::vector<pid_t> Sampler::running() const {
  std::lock_guard<std::mutex> hold(lock_);
  return table_->running();
}

uint64_t Sampler::samples() const {
  std::lock_guard<std::mutex> hold(lock_);
  return table_->samples();
}

size_t Sampler::threads_unreadable() const {
  std::lock_guard<std::mutex> hold(lock_);
  return unreadable_.size();
}

uint64_t Sampler::lost() const {
  std::lock_guard<std::mutex> hold(lock_);
  return table_->lost();
}

}  // namespace profiling::outside
