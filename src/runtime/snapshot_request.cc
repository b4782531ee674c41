// The tool's request for a snapshot dump (snapshot_request.h).
// ASYNC-SIGNAL-SAFE: snapshot_requested() runs in the sampling handler.
#include "runtime/snapshot_request.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "base/errno_saver.h"

namespace profiling::runtime {
namespace {

char g_request_path[PATH_MAX];
// The file's size last answered; -1: none yet (its size at start is not a
// request: a process exec'd mid-run starts from the size it finds).
std::atomic<long long> g_seen_size{-1};

long long request_size() {
  struct stat st{};
  // The raw system call: no libc wrapper state, nothing a handler could
  // interrupt half-way.
  if (::syscall(SYS_newfstatat, AT_FDCWD, g_request_path, &st, 0) != 0) return -1;
  return static_cast<long long>(st.st_size);
}

}  // namespace

void read_snapshot_request_setting() {
  const char* path = ::secure_getenv("PROFIL_SNAPSHOTS");
  if (path == nullptr || path[0] != '/' || std::strlen(path) >= sizeof g_request_path) return;
  std::strcpy(g_request_path, path);
  g_seen_size.store(request_size(), std::memory_order_relaxed);
}

bool snapshot_requests_on() { return g_request_path[0] != '\0'; }

bool snapshot_requested() {
  if (g_request_path[0] == '\0') return false;
  const base::ErrnoSaver keep_errno;
  const long long size = request_size();
  long long seen = g_seen_size.load(std::memory_order_relaxed);
  if (size < 0 || size == seen) return false;
  return g_seen_size.compare_exchange_strong(seen, size, std::memory_order_relaxed);
}

}  // namespace profiling::runtime
