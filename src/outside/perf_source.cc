// The perf rings and their reader (see perf_source.h).
#include "outside/perf_source.h"

#include "outside/perf_records_apply.h"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <thread>

namespace profiling::outside {

PerfSource::PerfSource(Feed feed, const SamplerOptions& options) : feed_(feed), options_(options) {
  int cpus[1024];
  const unsigned n = perf::online_cpus(cpus, 1024);
  cpus_.assign(cpus, cpus + n);
  if (cpus_.empty()) cpus_.push_back(0);
  scratch_.resize(65536);
}

PerfSource::~PerfSource() { stop(); }

std::string PerfSource::open_on(pid_t tid, bool before_exec) {
  perf::EventSpec spec = event_spec(options_, before_exec, user_only_);
  if (whole_machine_) {
    // A CPU's event counts every task on it: nothing to inherit (the
    // kernel refuses inherit on a CPU-wide event).
    spec.inherit = false;
    spec.inherit_stat = false;
  }
  for (size_t i = 0; i < cpus_.size(); ++i) {
    perf_event_attr attr = spec.attr();
    // Attached: enabled all at once by the reader (start), which reads from
    // the first sample on.
    if (!before_exec) attr.disabled = 1;
    // Timestamps on CLOCK_MONOTONIC: comparable with ours.
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;
    long fd = perf::open_event(attr, tid, cpus_[i]);
    if (fd == -EACCES && !user_only_ && fds_.empty()) {
      // Kernel time is not ours to sample here: user time only.
      user_only_ = true;
      return open_on(tid, before_exec);
    }
    if (fd < 0) {
      last_open_error_ = static_cast<int>(-fd);
      return describe_refusal(-fd, tid, options_.event.name);
    }
    fds_.push_back(static_cast<int>(fd));
    format_ = perf::RecordFormat::of(attr);
    attach_python_reads(static_cast<int>(fd));
    if (i < rings_.size()) {
      // Another thread's event on this CPU writes into the CPU's ring.
      if (::ioctl(static_cast<int>(fd), PERF_EVENT_IOC_SET_OUTPUT, rings_[i].fd) != 0)
        return "PERF_EVENT_IOC_SET_OUTPUT: " + std::string(std::strerror(errno));
      continue;
    }
    const size_t bytes = (1 + options_.ring_pages) * 4096ull;
    void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, static_cast<int>(fd), 0);
    if (map == MAP_FAILED && (errno == EPERM || errno == ENOMEM) && options_.ring_pages > kMinRingPages) {
      // The kernel's allowance is the user's, summed over every CPU's
      // ring: halving only the ring refused left the first CPU's at 1 MiB
      // and the second refused at 64 KiB where two of 512 KiB fit (issue
      // 32). So every event is opened again with half the ring (its
      // wakeup a quarter of it), as the user_only retry above does.
      close_rings();
      options_.ring_pages /= 2;
      return open_on(tid, before_exec);
    }
    if (map == MAP_FAILED) {
      const int error = errno;
      return "cannot map a perf ring of even " + std::to_string(options_.ring_pages * 4) + " KiB per CPU (" +
             errno_name(error) + "): " + lock_allowance() +
             "; raise either (sysctl kernel.perf_event_mlock_kb=" + std::to_string(SamplerOptions{}.ring_pages * 4 + 4) +
             ", ulimit -l unlimited), or run profil as root";
    }
    rings_.push_back({cpus_[i], static_cast<int>(fd), map, bytes, perf::RingReader(map, bytes), LostShare{}});
  }
  feed_.table.set_kernel_sampled(!user_only_);  // before the reader starts: no lock needed
  if (options_.ring_pages < ring_pages_said_) {
    // The ladder's second step, said once (issue 32): outside still, with
    // smaller rings.
    std::fprintf(stderr,
                 "profil: perf rings of %u KiB per CPU, not %u KiB: %s; a smaller ring is full sooner when profil's "
                 "reader runs late (then \"ring buffer full\" counts what was lost): raise either for the whole "
                 "ring\n",
                 options_.ring_pages * 4, ring_pages_said_ * 4, lock_allowance().c_str());
    ring_pages_said_ = options_.ring_pages;
  }
  return "";
}

void PerfSource::start() {
  reader_started_.store(false);
  reader_.start([this] { reader_loop(); });
  (void)raise_new_thread(reader_.native_handle());
  reader_started_.wait(false);
}

void PerfSource::pause() {
  reader_.stop();
  if (!stopped_) read_round();
}

void PerfSource::close_rings() {
  for (Ring& ring : rings_) ::munmap(ring.mapping, ring.bytes);
  for (int fd : fds_) ::close(fd);
  rings_.clear();
  fds_.clear();
}

void PerfSource::abandon() {
  // No read here: the rings' tails are shared with the copy that samples on.
  reader_.stop_quietly();
  stopped_ = true;
  close_rings();
}

void PerfSource::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (reader_.running()) {
    // At the reader's priority: disabling and closing 2,000 events from a
    // thread among the program's 1,000 took longer than the sampling.
    close_in_reader_.store(true);
    reader_.stop();
  } else {
    disable_read_close();
  }
}

void PerfSource::disable_read_close() {
  // Sampling ends before the last read: nothing is written after it.
  for (int fd : fds_) ::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  read_round();
  // Under the table's lock: the wall clock's poller reads the rings too
  // (read_round, from its own thread), and one did while they were being
  // unmapped at the end of a 0.1 s attach (profil died of SIGSEGV in 4 of
  // 60; Attach.ThreadsEndingDuringTheAttachAreSkipped in a CI run).
  std::lock_guard<FeedLock> hold(feed_.lock);
  close_rings();
}

std::vector<std::string> PerfSource::notes() const {
  std::vector<std::string> lines;
  if (const uint64_t times = throttled_.load(); times != 0)
    lines.push_back("the kernel throttled the sampling " + std::to_string(times) + " time" + (times == 1 ? "" : "s") +
                    ", taking fewer samples than the rate asks (kernel.perf_event_max_sample_rate is " +
                    read_setting("/proc/sys/kernel/perf_event_max_sample_rate") +
                    " Hz, kernel.perf_cpu_time_max_percent " + read_setting("/proc/sys/kernel/perf_cpu_time_max_percent") +
                    "): a lower --hz takes every sample");
  if (threads_without_events_ != 0)
    lines.push_back(std::to_string(threads_without_events_) + " of " + std::to_string(threads_seen_) +
                    " threads are not sampled: their events (one per thread and CPU) would pass profil's descriptor limit (" +
                    (descriptor_limit_.empty() ? "ulimit -n" : descriptor_limit_) + ")");
  if (per_task_events_)
    lines.push_back("sampled on one event per thread and CPU: whole-CPU events are refused (kernel.perf_event_paranoid is " +
                    read_setting("/proc/sys/kernel/perf_event_paranoid") + "; root, CAP_PERFMON or a value of 0 or less "
                    "allow them), so up to a period of each thread's time on each CPU goes unsampled");
  bool lost = false;
  {
    std::lock_guard<FeedLock> hold(feed_.lock);
    lost = feed_.table.lost() != 0;
  }
  if (lost && !priority_.refusal.empty()) lines.push_back(priority_.refusal);
  return lines;
}

std::string PerfSource::resume_in_copy() {
  for (Ring& ring : rings_) {
    void* map = ::mmap(nullptr, ring.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, ring.fd, 0);
    if (map == MAP_FAILED) return std::string("mmap of a ring again: ") + std::strerror(errno);
    ring.mapping = map;
    ring.reader = perf::RingReader(map, ring.bytes);
  }
  return "";
}

void PerfSource::reader_loop() {
  priority_ = raise_thread_priority();
  if (enable_at_start_) {
    enable_at_start_ = false;
    for (int fd : fds_) ::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  }
  reader_started_.store(true);
  reader_started_.notify_all();
  std::vector<pollfd> polls;
  for (const Ring& ring : rings_) polls.push_back({ring.fd, POLLIN, 0});
  if (reader_.wake_fd() >= 0) polls.push_back({reader_.wake_fd(), POLLIN, 0});
  while (!reader_.stopping()) {
    // Woken at half a ring (event_spec); at least every 100 ms for the snapshots'
    // sake and for rings that fill slowly; sooner while some samples get
    // interpreter frames (ProcessTable::interpreter_poll_ms; read 100 ms
    // late after the fact, a 3 : 1 pair of Python functions alternating
    // every 2 ms had a third of one's C callees under the other; read
    // within 1 ms, a twentieth).
    int timeout_ms = feed_.table.interpreter_poll_ms();
    if (const uint64_t end = end_at_ns_.load(); end != 0) {
      const uint64_t now = monotonic_ns();
      if (now >= end) {
        close_in_reader_.store(true);
        break;
      }
      timeout_ms = static_cast<int>(std::min<uint64_t>(timeout_ms, (end - now + 999'999) / 1'000'000));
    }
    // Read every millisecond, the rings need not wake the reader (at half
    // a ring): the wake pipe alone is polled, and each wake-up does not
    // queue on and off every ring's wait queue (issue 31's cost).
    const size_t first = timeout_ms <= 1 && reader_.wake_fd() >= 0 ? rings_.size() : 0;
    const int ready = ::poll(polls.data() + first, polls.size() - first, timeout_ms);
    read_round();
    // A ring whose process tree has ended polls as hung up at once, every
    // time (perf_poll): then the wake pipe alone, for 10 ms, so that the
    // reader does not spin until its owner stops it.
    const bool hung_up = ready > 0 && first == 0 && std::all_of(polls.begin(), polls.begin() + static_cast<long>(rings_.size()),
                                                  [](const pollfd& p) { return (p.revents & POLLHUP) != 0; });
    if (hung_up && reader_.wake_fd() >= 0) {
      pollfd wake{reader_.wake_fd(), POLLIN, 0};
      ::poll(&wake, 1, 10);
    }
  }
  if (close_in_reader_.load()) disable_read_close();
}

namespace {

// What the unwinding of a sample reads first: its fields, the first 2 KiB
// of its stack copy (the frames of most stacks) and its last line (the
// copy's dyn_size). Asked for while the task records are walked, they are
// in this core's cache when the sample is parsed and unwound: each was a
// miss in the sampled thread's core (issue 32).
void prefetch_sample(const perf::Record& r) {
  constexpr size_t kBytes = 2048 + 256;
  for (size_t at = 0; at < std::min(r.size, kBytes); at += 64) __builtin_prefetch(r.bytes + at);
  __builtin_prefetch(r.bytes + r.size - 8);
}

}  // namespace

void PerfSource::read_round() {
  std::lock_guard<FeedLock> hold(feed_.lock);
  ProcessTable& table = feed_.table;
  // Every ring's records up to the head read now. Task records first, in
  // time order across the rings (an exec on one CPU, its mappings on
  // another), then the samples: each unwound with the mappings of its
  // process image.
  struct Pending {
    uint64_t time;
    uint32_t pid;
    std::vector<uint8_t> bytes;
    size_t ring;
  };
  std::vector<Pending> tasks;
  std::vector<uint64_t> heads(rings_.size());
  for (size_t i = 0; i < rings_.size(); ++i) {
    Ring& ring = rings_[i];
    heads[i] = ring.reader.head();
    uint64_t tail = ring.reader.tail();
    perf::walk_records(ring.reader.data(), ring.reader.data_size(), heads[i], &tail, scratch_.data(), scratch_.size(),
                       [&](const perf::Record& r) {
                         if (r.header.type == PERF_RECORD_SAMPLE) {
                           prefetch_sample(r);
                           return;
                         }
                         perf::SampleId who;
                         if (!perf::parse_sample_id(format_, r, &who)) return;
                         tasks.push_back({who.time, who.pid, std::vector<uint8_t>(r.bytes, r.bytes + r.size), i});
                       });
  }
  std::stable_sort(tasks.begin(), tasks.end(), [](const Pending& a, const Pending& b) { return a.time < b.time; });
  // A ring's lost records, counted once its records of this round are:
  // as the tree's samples among them (lost_share.h).
  std::vector<std::pair<size_t, perf::Lost>> lost;
  for (const Pending& p : tasks) {
    perf::Record r;
    std::memcpy(&r.header, p.bytes.data(), sizeof r.header);
    r.bytes = p.bytes.data();
    r.size = p.bytes.size();
    if (r.header.type == PERF_RECORD_THROTTLE) {
      throttled_.fetch_add(1);  // the CPU's, whoever ran
    } else if (r.header.type == PERF_RECORD_LOST) {
      if (perf::Lost l; perf::parse_lost(format_, r, &l)) lost.emplace_back(p.ring, l);
    } else if (kept(r, p.pid, p.time)) {  // in time order: a fork's child before its own
      apply_task_record(format_, r, &table);
    }
  }
  // The Python frames the BPF program read at the samples up to the heads
  // (each written before its sample: python_bpf.h).
  if (PythonStackReads* at_sample = table.python_reads().at_sample) at_sample->drain();
  for (size_t i = 0; i < rings_.size(); ++i) {
    Ring& ring = rings_[i];
    uint64_t tail = ring.reader.tail();
    perf::walk_records(ring.reader.data(), ring.reader.data_size(), heads[i], &tail, scratch_.data(), scratch_.size(),
                       [&](const perf::Record& r) {
                         perf::Sample s;
                         if (r.header.type != PERF_RECORD_SAMPLE || !perf::parse_sample(format_, r, &s))
                           return ring.lost_share.other_record();
                         if (!sample_kept(s.who)) {
                           ++others_samples_;
                           return ring.lost_share.other_record();
                         }
                         ring.lost_share.tree_sample(s.who.pid, s.who.tid);
                         const bool kernel = (r.header.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
                         table.on_sample(s, kernel);
                       });
    ring.reader.consume_to(heads[i]);
  }
  for (const auto& [ring, l] : lost)
    if (const perf::Lost samples = rings_[ring].lost_share.samples_of(l); samples.lost != 0) table.on_lost(samples);
}

}  // namespace profiling::outside
