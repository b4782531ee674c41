// A thread's slot taken and given back (thread_attach.h). NOT
// async-signal-safe: runs under the sampler's control lock.
#include "sampler/thread_attach.h"

#include <atomic>

#include "sampler/engine.h"
#include "sampler/running_engine.h"
#include "sampler/unsampled.h"

namespace profiling::sampler {

void release_clock(ThreadClock& c) {
  // What the engine still holds of the thread (the ring's records) is read
  // before the thread's accounting is closed.
  if (!c.ignored) running_engine().thread_detaching(c);
  account_released(c);
  if (!c.ignored) running_engine().thread_released(c);
  c.has_timer = false;
  c.perf_fd = -1;
  c.ignored = false;
  c.in_use = false;
  c.tid = 0;
}

bool attach(pid_t tid) {
  if (ThreadClock* stale = find_clock(tid)) {
    if (stale->ignored) return true;
    release_clock(*stale);  // tid reused
  }
  ThreadClock* slot = free_slot();
  if (slot == nullptr) return false;
  const size_t index = slot_index(*slot);
  const int64_t cpu_now = read_clock_ns(thread_cpu_clock(tid));
  slot->cpu_at_attach_ns = cpu_now > 0 ? static_cast<uint64_t>(cpu_now) : 0;
  internal::g_clock_ticks[index].store(0, std::memory_order_relaxed);
  internal::g_clock_flushed[index].store(false, std::memory_order_relaxed);
  internal::g_clock_last_pc[index].store(0, std::memory_order_relaxed);
  internal::g_clock_lost[index].store(0, std::memory_order_relaxed);
  slot->tid = tid;
  if (!running_engine().thread_attached(*slot)) {
    slot->tid = 0;
    return false;
  }
  slot->in_use = true;
  note_slot_used(slot);
  internal::g_tid_hint[static_cast<uint32_t>(tid) % internal::kTidHints].store(static_cast<uint16_t>(index + 1),
                                                                              std::memory_order_release);
  running_engine().arm_thread(*slot, true);
  return true;
}

void ignore_thread(pid_t tid) {
  ThreadClock* slot = find_clock(tid);
  if (slot != nullptr) {
    release_clock(*slot);
  } else {
    slot = free_slot();
    if (slot == nullptr) return;
  }
  slot->tid = tid;
  slot->ignored = true;
  slot->in_use = true;
  note_slot_used(slot);
}

}  // namespace profiling::sampler
