// ASYNC-SIGNAL-SAFE: thread_name() (the dump reads it from signal
// handlers); remember_ending_thread_name() runs in the ending thread.
#include "sampler/thread_names.h"

#include <fcntl.h>
#include <sys/prctl.h>

#include <atomic>
#include <cstring>

namespace profiling::sampler {
namespace internal {
__thread pid_t t_thread_id __attribute__((tls_model("initial-exec")));
}  // namespace internal

namespace {

struct EndedThread {
  std::atomic<int32_t> tid;  // 0 while its name is written
  char name[kThreadNameSize];
};
// A ring: the latest kEndedThreads ends. Zero pages until threads end:
// constinit, since without it GCC 12 zeroes each atomic tid in a static
// constructor, writing all 80 KB (20 page faults) at every process's start.
constinit EndedThread g_ended[kEndedThreads]{};
constinit std::atomic<uint32_t> g_ended_count{0};

// "/proc/self/task/<tid>/comm" without snprintf (not async-signal-safe).
void comm_path(int32_t tid, char (&path)[48]) {
  char digits[12];
  int n = 0;
  for (uint32_t v = static_cast<uint32_t>(tid); n == 0 || v != 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  char* p = path;
  for (const char* s = "/proc/self/task/"; *s; ++s) *p++ = *s;
  while (n > 0) *p++ = digits[--n];
  for (const char* s = "/comm"; *s; ++s) *p++ = *s;
  *p = '\0';
}

}  // namespace

void remember_ending_thread_name() {
  char name[kThreadNameSize] = {};
  if (::prctl(PR_GET_NAME, name) != 0) return;
  const uint32_t n = g_ended_count.fetch_add(1, std::memory_order_relaxed);
  EndedThread& slot = g_ended[n % kEndedThreads];
  slot.tid.store(0, std::memory_order_relaxed);
  std::memcpy(slot.name, name, sizeof name);
  slot.name[kThreadNameSize - 1] = '\0';
  slot.tid.store(current_thread_id(), std::memory_order_release);
}

bool thread_name(int32_t tid, char (&name)[kThreadNameSize]) {
  std::memset(name, 0, sizeof name);
  char path[48];
  comm_path(tid, path);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    const ssize_t n = ::read(fd, name, sizeof name - 1);
    ::close(fd);
    if (n > 0) {
      name[n] = '\0';
      if (name[n - 1] == '\n') name[n - 1] = '\0';
      return true;
    }
    std::memset(name, 0, sizeof name);
  }
  // The latest end of that tid first (a tid may be reused).
  const uint32_t count = g_ended_count.load(std::memory_order_acquire);
  const uint32_t kept = count < kEndedThreads ? count : kEndedThreads;
  for (uint32_t k = 1; k <= kept; ++k) {
    const EndedThread& slot = g_ended[(count - k) % kEndedThreads];
    if (slot.tid.load(std::memory_order_acquire) != tid) continue;
    std::memcpy(name, slot.name, sizeof name);
    name[kThreadNameSize - 1] = '\0';
    return true;
  }
  return false;
}

}  // namespace profiling::sampler
