#include "outside/process_table.h"

#include <algorithm>
#include <cstdio>
#include <unordered_set>

#include "format/profile.h"
#include "outside/proc_process.h"
#include "perf/event.h"
#include "outside/sample_counts.h"
#include "outside/sample_stack.h"
#include "outside/sample_times.h"

namespace profiling::outside {

// One image of one process: a pid from its start (or exec) to its next
// exec or its end.
struct ProcessTable::Image {
  pid_t pid = 0, ppid = 0;
  int generation = 0;
  uint64_t start_time = 0;  // CLOCK_MONOTONIC ns
  uint64_t began = 0;       // when the process began, CLOCK_MONOTONIC ns: before start_time when attached
  uint64_t end_time = 0;
  bool ended = false;
  format::profraw::EndReason end_reason = format::profraw::EndReason::exit;
  std::string name, program;
  bool awaiting_program = false;  // exec'd: its first file mapping is the program
  CodeMap code;
  // Since the last take.
  uint64_t window_start = 0;
  format::StackTable stacks;
  SampleCounts counts;
  SampleTimes times;  // each sample's (issue 33)
  uint64_t count = 0;    // CPU samples
  uint64_t blocked = 0;  // periods of blocked threads (the wall clock)
  uint64_t lost = 0;
  // Threads that ended in this image, and the CPU time their samples did
  // not take (thread_time.h).
  format::profraw::Unsampled ended_within_period{};
  InterpreterLookup interpreter;  // its CPython or Ruby, when it runs one
  std::unordered_set<uint64_t> kernel_addresses;  // of its kernel frames since the last take
};

static std::string hex(const uint8_t* bytes, size_t n) {
  std::string out(2 * n, '0');
  // Each writes its NUL over the next digit, the last over the string's own.
  for (size_t i = 0; i < n; ++i) std::snprintf(&out[2 * i], 3, "%02x", bytes[i]);
  return out;
}

ProcessTable::ProcessTable(Options options) : options_(options) {}
ProcessTable::~ProcessTable() = default;

ProcessTable::Image* ProcessTable::current(pid_t pid) {
  auto it = images_.find(pid);
  return it == images_.end() || it->second.empty() ? nullptr : it->second.back().get();
}

ProcessTable::Image* ProcessTable::image_at(pid_t pid, uint64_t time) {
  auto it = images_.find(pid);
  if (it == images_.end() || it->second.empty()) return nullptr;
  Image* found = it->second.front().get();
  for (auto& image : it->second)
    if (image->start_time <= time) found = image.get();
  return found;
}

ProcessTable::Image& ProcessTable::start_image(pid_t pid, uint64_t time, const Image* from) {
  auto& list = images_[pid];
  auto image = std::make_unique<Image>();
  image->pid = pid;
  image->start_time = image->window_start = image->began = time;
  image->generation = list.empty() ? 0 : list.back()->generation + 1;
  if (from != nullptr) {
    image->ppid = from->pid;
    image->name = from->name;
    image->program = from->program;
    image->code = from->code.forked();
  }
  list.push_back(std::move(image));
  return *list.back();
}

void ProcessTable::add_running(pid_t pid, uint64_t now_ns) {
  if (current(pid) != nullptr) return;
  RunningProcess process = read_running_process(pid);
  Image& image = start_image(pid, now_ns, nullptr);
  image.name = std::move(process.name);
  image.program = std::move(process.program);
  image.ppid = process.ppid;
  if (process.started_ns != 0 && process.started_ns < image.began) image.began = process.started_ns;
  for (auto& [tid, comm] : process.thread_names) thread_names_[tid] = std::move(comm);
  image.code.add_from_proc(files_, pid, process.maps);
}

void ProcessTable::on_mmap(const perf::Mmap& m) {
  const auto pid = static_cast<pid_t>(m.pid);
  Image* image = image_at(pid, m.who.time);
  if (image == nullptr) image = &start_image(pid, m.who.time, nullptr);
  const std::string path = m.filename;
  if (image->awaiting_program && !path.empty() && path[0] == '/') {
    image->program = path;
    image->awaiting_program = false;
    // A comm is cut at 15 bytes (TASK_COMM_LEN): the exec'd file's base
    // name completes it when it begins with it (a process gone before its
    // cmdline could be read).
    const std::string file = base_name(path);
    if (image->name.size() == 15 && file.size() > 15 && file.compare(0, 15, image->name) == 0) image->name = file;
  }
  if (!m.executable) return;
  image->code.add(files_.map(pid, m.address, m.address + m.length, m.file_offset, path,
                             m.build_id_size != 0 ? hex(m.build_id, m.build_id_size) : ""));
}

void ProcessTable::on_comm(const perf::Comm& c) {
  thread_names_[static_cast<pid_t>(c.tid)] = c.name;
  if (!c.exec || c.pid != c.tid) return;
  const auto pid = static_cast<pid_t>(c.pid);
  Image* old = current(pid);
  pid_t ppid = 0;
  if (old != nullptr) {
    ppid = old->ppid;
    if (!old->ended) {
      old->ended = true;
      old->end_reason = format::profraw::EndReason::exec;
      old->end_time = c.who.time;
    }
  }
  Image& image = start_image(pid, c.who.time, nullptr);
  image.ppid = ppid;
  // argv[0]'s base name, as the preload names dumps, while the process
  // still shows this image (its comm is the one the exec set); else the
  // comm: the exec'd file's base name, cut at 15 bytes.
  image.name = c.name;
  const std::string comm = read_comm("/proc/" + std::to_string(pid) + "/comm");
  if (comm == c.name) {
    const std::string argv0_name = process_name(pid);
    if (!argv0_name.empty()) image.name = argv0_name;
  }
  image.awaiting_program = true;
}

void ProcessTable::on_fork(const perf::Task& t) {
  // A new thread or process starts with its creator's name (clone(2)
  // copies the comm); a rename comes as a COMM record.
  if (auto creator = thread_names_.find(static_cast<pid_t>(t.ptid)); creator != thread_names_.end())
    thread_names_.try_emplace(static_cast<pid_t>(t.tid), creator->second);
  if (t.pid == t.ppid) return;  // a new thread
  Image* parent = current(static_cast<pid_t>(t.ppid));
  if (current(static_cast<pid_t>(t.pid)) != nullptr) return;
  start_image(static_cast<pid_t>(t.pid), t.time, parent);
}

void ProcessTable::on_exit(const perf::Task& t) {
  ended_threads_.push_back(static_cast<pid_t>(t.tid));
  threads_.exited(t.tid);
  if (t.pid != t.tid) return;  // a thread
  Image* image = current(static_cast<pid_t>(t.pid));
  if (image == nullptr || image->ended) return;
  image->ended = true;
  image->end_reason = format::profraw::EndReason::exit;
  image->end_time = t.time;
}

void ProcessTable::on_lost(const perf::Lost& l) {
  lost_ += l.lost;
  threads_.sampled(l.who.tid, l.lost);  // already said as ring_full time
  if (Image* image = image_at(static_cast<pid_t>(l.who.pid), l.who.time)) image->lost += l.lost;
}

void ProcessTable::on_read(const perf::Read& r) { threads_.on_read(r); }

void ProcessTable::settle_ended_threads() {
  threads_.settle(options_.sampling.period_ns(), [&](pid_t pid, uint64_t exit_time, uint32_t tid, uint64_t unsampled_ns) {
    Image* image = image_at(pid, exit_time);
    if (image == nullptr) return;
    // Its interpreter's thread state is freed, and its tid may come back.
    if (InterpreterFrames* frames = image->interpreter.found()) frames->forget_thread(static_cast<pid_t>(tid));
    if (unsampled_ns == 0) return;
    format::profraw::Unsampled& u = image->ended_within_period;
    if (u.threads < std::size(u.tids)) u.tids[u.threads] = static_cast<int32_t>(tid);
    ++u.threads;
    u.cpu_ns += unsampled_ns;
  });
}

void ProcessTable::on_sample(const perf::Sample& s, bool kernel, uint64_t blocked_periods) {
  ++samples_;
  const auto pid = static_cast<pid_t>(s.who.pid);
  const auto tid = static_cast<pid_t>(s.who.tid);
  Image* image = image_at(pid, s.who.time);
  if (image == nullptr) {
    ++unknown_samples_;
    return;
  }
  const uint64_t periods = blocked_periods != 0 ? blocked_periods : 1;
  const auto tally = [&](uint64_t leaf, uint32_t stack, uint8_t gil = format::kGilUnknown) {
    SampleCounts::Tally& t = image->counts[{leaf, stack, tid, gil}];
    t.periods += periods;
    image->times.add(s.who.time, leaf, periods, stack, tid, gil);
    ++t.observations;
    if (blocked_periods != 0)
      image->blocked += periods;
    else
      ++image->count;
  };
  if (blocked_periods == 0) threads_.sampled(s.who.tid, 1);
  if (!options_.sampling.stacks) {
    // The PC alone (--no-stacks): no callers, as the inside writes it.
    tally(kernel ? format::kKernelAddress : s.ip, format::StackTable::kNoCallers);
    return;
  }
  SampleStack stack = unwind_sample(s, kernel, image->code, options_.sampling.max_depth);
  image->kernel_addresses.insert(stack.kernel_frames.begin(), stack.kernel_frames.end());
  Image& i = *image;
  InterpreterFrames* frames = options_.sampling.interpreter_frames ? i.interpreter.find(i.pid, i.code.code(), &python_, &ruby_) : nullptr;
  if (frames) frames->merge(tid, s.who.time, stack.truncated, &stack.leaf, &stack.callers);
  if (frames) interpreter_poll_ms_.store(frames->read_late() ? 1 : 100, std::memory_order_relaxed);
  // ...and whether the thread held CPython's GIL (issue 31).
  tally(stack.leaf, image->stacks.intern(stack.callers, stack.truncated), frames ? frames->gil() : format::kGilUnknown);
}

// The thread's latest name; one the records never named (a thread of a
// process attached to between its start and the read of its task list)
// from /proc while it runs.
std::string ProcessTable::thread_name(pid_t pid, pid_t tid) {
  auto [it, inserted] = thread_names_.try_emplace(tid);
  if (inserted)
    it->second = read_comm("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/comm");
  return it->second;
}

// One image's profile since the last take; its accumulators start again.
ImageProfile ProcessTable::profile_of(pid_t pid, Image& image, uint64_t now_ns) {
  ImageProfile p;
  p.name = image.name.empty() ? base_name(image.program) : image.name;
  p.generation = image.generation;
  p.ended = image.ended;
  format::ProfrawData& d = p.data;
  format::Profile& profile = d.profile;
  profile.program = image.program;
  profile.pid = pid;
  profile.clock = options_.sampling.wall ? "wall" : "perf";
  // An event's count is no time (issue 33): event_period events a sample.
  const Event& event = options_.sampling.event;
  profile.period_ns = event.is_time() ? options_.sampling.period_ns() : 0;
  if (!event.is_time()) profile.event = event.name, profile.event_period = event.period;
  const uint64_t until = image.ended ? std::max(image.end_time, image.window_start) : now_ns;
  profile.duration_ns = until > image.window_start ? until - image.window_start : 0;
  profile.time_nanos = static_cast<int64_t>(image.window_start) + options_.realtime_offset_ns;
  profile.process_start_ns = static_cast<int64_t>(image.began) + options_.realtime_offset_ns;
  image.code.list_into(&profile);
  bool kernel = false;
  // Each ring record is one sample of one period, a blocked thread seen by
  // the wall clock's poller one sample of the periods since its last look
  // (issue 22).
  profile.has_observations = true;
  for (const auto& [key, tally] : image.counts) {
    const auto& [leaf, stack, tid, gil] = key;
    format::Sample sample{leaf, tally.periods, 0, stack, tid};
    sample.observations = tally.observations, sample.gil = gil;
    profile.samples.push_back(sample);
    kernel = kernel || leaf == format::kKernelAddress;
    if (tid != 0 && !profile.thread_names.contains(tid))
      if (std::string name = thread_name(pid, tid); !name.empty()) profile.thread_names[tid] = std::move(name);
  }
  image.times.take_into(&profile.timeline, image.stacks, options_.realtime_offset_ns);
  profile.stacks = std::move(image.stacks);
  if (const InterpreterFrames* frames = image.interpreter.found()) frames->name_frames(&profile.frames);
  if (kernel) profile.frames[format::kKernelAddress] = {format::Frame{format::kKernelFrame, format::kKernelFrame, "", 0}};
  if (!image.kernel_addresses.empty()) {
    if (!kernel_symbols_) kernel_symbols_ = std::make_unique<KernelSymbols>(KernelSymbols::read());
    for (const uint64_t address : image.kernel_addresses) profile.frames[address] = {kernel_symbols_->frame_of(address)};
    image.kernel_addresses.clear();
  }
  format::coalesce_samples(&profile.samples);
  d.ppid = image.ppid;
  d.hz = options_.sampling.hz;
  d.end_reason = image.ended ? image.end_reason : format::profraw::EndReason::checkpoint;
  d.cpu_ns = image.count * profile.period_ns;
  d.stacks_captured = options_.sampling.stacks;
  d.max_depth = options_.sampling.max_depth;
  d.start_clock = profile.clock;
  if (image.lost != 0 && event.is_time()) {
    format::profraw::Unsampled u{};
    u.cause = static_cast<uint32_t>(format::profraw::UnsampledCause::ring_full);
    u.cpu_ns = image.lost * options_.sampling.period_ns();
    d.unsampled.push_back(u);
  }
  if (image.ended_within_period.cpu_ns != 0) {
    image.ended_within_period.cause = static_cast<uint32_t>(
        options_.kernel_sampled ? format::profraw::UnsampledCause::ended_within_period
                                : format::profraw::UnsampledCause::in_kernel);
    d.unsampled.push_back(image.ended_within_period);
  }
  image.stacks = format::StackTable();
  image.counts.clear();
  image.count = image.blocked = image.lost = 0;
  image.ended_within_period = {};
  image.window_start = now_ns;
  return p;
}

std::vector<ImageProfile> ProcessTable::take(uint64_t now_ns, bool final) {
  settle_ended_threads();
  std::vector<ImageProfile> out;
  for (auto& [pid, list] : images_) {
    for (auto& image : list) {
      if (image->count == 0 && image->blocked == 0 && image->lost == 0 && image->ended_within_period.cpu_ns == 0 &&
          !final)
        continue;
      out.push_back(profile_of(pid, *image, now_ns));
    }
    // Ended images are done with, but the last of a pid stays: a sample
    // of its last moments may still be read from another CPU's ring —
    // until the take after the one that wrote its end (hours attached to
    // a server that forks: one image kept per child ever seen grew profil
    // without bound, issue 32).
    if (final) list.clear();
    else
      while (list.size() > 1 && list.front()->ended) list.erase(list.begin());
    if (!list.empty() && list.back()->ended && list.back()->end_time < last_take_ns_) list.clear();
  }
  std::erase_if(images_, [](const auto& entry) { return entry.second.empty(); });
  // The names of threads that ended before this take: their samples are
  // written (a tid's next thread is named anew by its FORK or from /proc).
  for (pid_t tid : ended_threads_) thread_names_.erase(tid);
  ended_threads_.clear();
  last_take_ns_ = now_ns;
  return out;
}

// Called once every ring has been read past the moment the images ended,
// so that no sample of theirs is still to come.
std::vector<ImageProfile> ProcessTable::take_ended(uint64_t now_ns) {
  settle_ended_threads();
  std::vector<ImageProfile> out;
  for (auto it = images_.begin(); it != images_.end();) {
    auto& list = it->second;
    for (auto image = list.begin(); image != list.end();) {
      if (!(*image)->ended) {
        ++image;
        continue;
      }
      out.push_back(profile_of(it->first, **image, now_ns));
      image = list.erase(image);
    }
    it = list.empty() ? images_.erase(it) : std::next(it);
  }
  return out;
}

std::vector<pid_t> ProcessTable::running() const {
  std::vector<pid_t> pids;
  for (const auto& [pid, list] : images_)
    if (!list.empty() && !list.back()->ended) pids.push_back(pid);
  return pids;
}

}  // namespace profiling::outside
