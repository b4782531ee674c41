// The slots kept in step with /proc/self/task (task_sync.h). NOT
// async-signal-safe: runs under the sampler's control lock.
#include "sampler/task_sync.h"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>

#include "sampler/running_engine.h"
#include "sampler/thread_attach.h"
#include "sampler/thread_slots.h"

namespace profiling::sampler {

using internal::g_clocks;
using internal::kMaxThreads;

void attach_listed_threads() {
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] == '.') continue;
      pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
      if (tid > 0) attach(tid);
    }
    ::closedir(dir);
  } else {
    attach(current_tid());
  }
}

void sync_with_task_list() {
  if (!internal::g_run.running || internal::g_run.suspended) return;
  // Static: 16 KiB each, and the finder runs on a small stack. The control
  // lock serializes the callers.
  static pid_t present[kMaxThreads];
  static bool has_clock[kMaxThreads];
  size_t count = 0;
  bool complete = true;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (tid <= 0) continue;
    if (count == kMaxThreads) {
      complete = false;
      break;
    }
    present[count++] = tid;
  }
  ::closedir(dir);
  std::sort(present, present + count);
  std::fill(has_clock, has_clock + count, false);
  // One pass over the slots: a clock whose thread is gone is released (only
  // when the list is complete), one whose thread is there is marked.
  for (size_t i = 0; i < internal::g_slots_high; ++i) {
    ThreadClock& c = g_clocks[i];
    if (!c.in_use) continue;
    const pid_t* at = std::lower_bound(present, present + count, c.tid);
    if (at != present + count && *at == c.tid)
      has_clock[at - present] = true;
    else if (complete)
      release_clock(c);
  }
  for (size_t i = 0; i < count; ++i)
    if (!has_clock[i]) attach(present[i]);
}

}  // namespace profiling::sampler
