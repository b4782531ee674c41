#include "outside/python_bpf.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <linux/types.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

#include "outside/bpf/python_stacks_abi.h"
#include "python_stacks.skel.h"  // generated at build time (CMakeLists.txt)

namespace profiling::outside {
namespace {

static_assert(PROFIL_PY_GIL_HELD == format::kGilHeld && PROFIL_PY_GIL_RELEASED == format::kGilReleased &&
              PROFIL_PY_GIL_UNKNOWN == format::kGilUnknown);

// A thread's records kept at most while none of its samples takes them:
// a round's (the reader reads the rings every 100 ms at least:
// ProcessTable::interpreter_poll_ms; 100 ms of a thread at 10 kHz).
constexpr size_t kRecordsPerThread = 1024;

// The ring's size: a round's records (ProcessTable::interpreter_poll_ms,
// 100 ms at most between two drains) of every CPU sampled at the rate, at
// ~1 KiB a record (a 40-frame stack; the header is 24 bytes, a frame 24),
// a power of two (the kernel's rule for a BPF ring) from 256 KiB to 8 MiB.
// Not 8 MiB at every rate (issue 31's cost: creating and mapping 8 MiB took
// ~2.5 ms of every run; 256 KiB at 1 kHz on 2 CPUs). A record the ring has
// no room for is counted (Counters::ring_full) and its sample read after
// the fact.
uint32_t ring_bytes_for(uint64_t period_ns) {
  const long cpus = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  const uint64_t per_round = static_cast<uint64_t>(cpus) * (100'000'000 / std::max<uint64_t>(period_ns, 1)) * 1024;
  uint32_t bytes = 256 << 10;
  while (bytes < per_round && bytes < (8u << 20)) bytes *= 2;
  return bytes;
}

// libbpf's own lines go nowhere: open() says in one clause what failed.
int quiet(enum libbpf_print_level, const char*, va_list) { return 0; }

std::string failed(const char* what, int error) {
  return std::string(what) + ": " + std::strerror(error < 0 ? -error : error);
}

}  // namespace

// The initial pid namespace's inode (PROC_PID_INIT_INO, include/linux/proc_ns.h).
constexpr uint64_t kInitialPidNamespace = 0xEFFFFFFCu;

std::unique_ptr<PythonStackReads> PythonStackReads::open(uint64_t period_ns, std::string* why) {
  libbpf_set_print(quiet);
  // Tids as profil sees them (its pid namespace), not the kernel's root ones.
  struct stat ns {};
  if (::stat("/proc/self/ns/pid", &ns) != 0) {
    *why = failed("/proc/self/ns/pid", errno);
    return nullptr;
  }
  // The hash maps are not preallocated (issue 31's cost: python_threads'
  // 65536 entries, as it then was, took 1.3 ms of the map's creation, and as long to free,
  // at each run); a kernel before 6.1 refuses that to a perf_event
  // program, and gets them preallocated.
  const uint32_t ring_bytes = ring_bytes_for(period_ns);
  std::unique_ptr<PythonStackReads> reads = load(ns.st_dev, ns.st_ino, ring_bytes, /*preallocated=*/false, why);
  if (reads == nullptr) reads = load(ns.st_dev, ns.st_ino, ring_bytes, /*preallocated=*/true, why);
  if (reads == nullptr) return nullptr;
  // The program runs within microseconds of the sample's time (after it, on
  // 6.x kernels); a thread's samples are a period apart at least.
  reads->pairing_window_ns_ = std::min<uint64_t>(period_ns / 4, 250'000);
  reads->ring_ = ring_buffer__new(bpf_map__fd(reads->skeleton_->maps.python_stacks), on_record, reads.get(), nullptr);
  if (reads->ring_ == nullptr) {
    *why = failed("mapping the BPF ring", errno);
    return nullptr;
  }
  return reads;
}

std::unique_ptr<PythonStackReads> PythonStackReads::load(uint64_t pidns_dev, uint64_t pidns_ino, uint32_t ring_bytes,
                                                         bool preallocated, std::string* why) {
  std::unique_ptr<PythonStackReads> reads(new PythonStackReads);
  reads->skeleton_ = python_stacks__open();
  if (reads->skeleton_ == nullptr) {
    *why = failed("opening the BPF program", errno);
    return nullptr;
  }
  reads->skeleton_->rodata->pidns_dev = pidns_dev;
  reads->skeleton_->rodata->pidns_ino = pidns_ino;
  reads->skeleton_->rodata->init_pidns = pidns_ino == kInitialPidNamespace;
  bpf_map__set_max_entries(reads->skeleton_->maps.python_stacks, ring_bytes);
  if (!preallocated)
    for (bpf_map* map : {reads->skeleton_->maps.python_processes, reads->skeleton_->maps.python_threads,
                         reads->skeleton_->maps.ruby_processes})
      bpf_map__set_map_flags(map, bpf_map__map_flags(map) | BPF_F_NO_PREALLOC);
  if (const int error = python_stacks__load(reads->skeleton_); error != 0) {
    *why = failed("loading the BPF program", error);
    return nullptr;
  }
  return reads;
}

PythonStackReads::~PythonStackReads() {
  if (ring_ != nullptr) ring_buffer__free(ring_);
  if (skeleton_ != nullptr) python_stacks__destroy(skeleton_);
}

bool PythonStackReads::attach(int event_fd, std::string* why) {
  if (::ioctl(event_fd, PERF_EVENT_IOC_SET_BPF, bpf_program__fd(skeleton_->progs.python_stack)) == 0) return true;
  *why = failed("PERF_EVENT_IOC_SET_BPF", errno);
  return false;
}

bool PythonStackReads::add_process(pid_t pid, const interp::PythonLayout& l) {
  if (l.frame_size <= 0 || l.frame_size > PROFIL_BPF_MAX_FRAME_READ) return false;
  profil_py_layout value{};
  value.tstate_frame = l.tstate_frame;
  value.cframe_current_frame = l.cframe_current_frame;
  value.frame_back = l.frame_back;
  value.frame_code = l.frame_code;
  value.frame_instruction = l.frame_instruction;
  value.frame_is_entry = l.frame_is_entry;
  value.frame_owner = l.frame_owner;
  value.frame_size = l.frame_size;
  value.owner_cstack = l.owner_cstack;
  value.lasti32 = l.model == interp::PythonFrameModel::kFrameObject;
  const auto key = static_cast<__u32>(pid);
  return bpf_map_update_elem(bpf_map__fd(skeleton_->maps.python_processes), &key, &value, BPF_ANY) == 0;
}

void PythonStackReads::set_gil(pid_t pid, const interp::PythonGil& gil) {
  const auto key = static_cast<__u32>(pid);
  const int fd = bpf_map__fd(skeleton_->maps.python_processes);
  profil_py_layout value{};
  if (bpf_map_lookup_elem(fd, &key, &value) != 0) return;
  const bool readable = gil.locked < 0 || gil.locked == 8;
  value.gil_holder = readable ? gil.holder : 0;
  value.gil_locked = gil.locked == 8;
  bpf_map_update_elem(fd, &key, &value, BPF_EXIST);
}

void PythonStackReads::forget_process(pid_t pid) {
  const auto key = static_cast<__u32>(pid);
  bpf_map_delete_elem(bpf_map__fd(skeleton_->maps.python_processes), &key);
}

void PythonStackReads::add_thread(pid_t tid, uint64_t thread_state) {
  const auto key = static_cast<__u32>(tid);
  const __u64 value = thread_state;
  bpf_map_update_elem(bpf_map__fd(skeleton_->maps.python_threads), &key, &value, BPF_ANY);
}

void PythonStackReads::forget_thread(pid_t tid) {
  const auto key = static_cast<__u32>(tid);
  bpf_map_delete_elem(bpf_map__fd(skeleton_->maps.python_threads), &key);
  records_.erase(tid);
}

int PythonStackReads::on_record(void* self, void* data, size_t size) {
  auto* reads = static_cast<PythonStackReads*>(self);
  const auto* r = static_cast<const profil_py_record*>(data);
  const size_t header = offsetof(profil_py_record, frames);
  if (size < header || r->count > PROFIL_BPF_MAX_FRAMES || size < header + r->count * sizeof(profil_py_frame)) return 0;
  std::deque<Record>& queue = reads->records_[static_cast<pid_t>(r->tid)];
  if (queue.size() == kRecordsPerThread) {
    reads->recycle(queue.front());
    queue.pop_front();
  }
  Record& record = queue.emplace_back();
  if (!reads->spare_.empty()) {
    record.frames.swap(reads->spare_.back());
    reads->spare_.pop_back();
  }
  record.time = r->time;
  record.walk.count = r->count;
  record.walk.status = static_cast<interp::WalkStatus>(r->status);
  record.gil = r->gil <= PROFIL_PY_GIL_RELEASED ? static_cast<uint8_t>(r->gil) : uint8_t{PROFIL_PY_GIL_UNKNOWN};
  record.frames.resize(r->count);
  for (uint32_t i = 0; i < r->count; ++i)
    record.frames[i] = interp::RawFrame{r->frames[i].code, r->frames[i].instruction, r->frames[i].flags};
  return 0;
}

void PythonStackReads::recycle(Record& record) {
  // Enough for a round's records of a few busy threads; the rest are freed.
  constexpr size_t kSpare = 1024;
  if (spare_.size() < kSpare && record.frames.capacity() != 0) spare_.push_back(std::move(record.frames));
}

void PythonStackReads::drain() { ring_buffer__consume(ring_); }

bool PythonStackReads::take(pid_t tid, uint64_t time, std::vector<interp::RawFrame>* frames, interp::WalkResult* walk,
                            uint8_t* gil) {
  const auto it = records_.find(tid);
  if (it == records_.end()) return false;
  std::deque<Record>& queue = it->second;
  // The sample's own record is the one nearest its time; those before it
  // are of samples lost or not merged, those after the window of later
  // samples.
  Record* nearest = nullptr;
  uint64_t nearest_gap = UINT64_MAX;
  size_t used = 0;
  for (Record& r : queue) {
    if (r.time > time + pairing_window_ns_) break;
    const uint64_t gap = r.time > time ? r.time - time : time - r.time;
    if (gap <= pairing_window_ns_ && gap < nearest_gap) {
      nearest = &r;
      nearest_gap = gap;
    }
    ++used;
  }
  if (nearest != nullptr) {
    // Swapped, not copied: the caller's old frames become the record's,
    // recycled below with it.
    frames->swap(nearest->frames);
    *walk = nearest->walk;
    if (gil != nullptr) *gil = nearest->gil;
  }
  for (size_t i = 0; i < used; ++i) recycle(queue[i]);
  queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(used));
  return nearest != nullptr;
}

bool PythonStackReads::take_oldest(pid_t tid, std::vector<interp::RawFrame>* frames, interp::WalkResult* walk,
                                   uint8_t* gil) {
  const auto it = records_.find(tid);
  if (it == records_.end() || it->second.empty()) return false;
  if (gil != nullptr) *gil = it->second.front().gil;
  frames->swap(it->second.front().frames);
  *walk = it->second.front().walk;
  recycle(it->second.front());
  it->second.pop_front();
  return true;
}

int PythonStackReads::ruby_processes_fd() const { return bpf_map__fd(skeleton_->maps.ruby_processes); }

PythonStackReads::Counters PythonStackReads::counters() const {
  Counters c;
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return c;
  std::vector<__u64> values(static_cast<size_t>(cpus));
  const int fd = bpf_map__fd(skeleton_->maps.counters);
  uint64_t* totals[] = {&c.records, &c.ring_full, &c.no_thread};
  for (__u32 key = 0; key < PROFIL_PY_COUNTERS; ++key) {
    if (bpf_map_lookup_elem(fd, &key, values.data()) != 0) continue;
    for (const __u64 v : values) *totals[key] += v;
  }
  return c;
}

}  // namespace profiling::outside
