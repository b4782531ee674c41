// The gmon runtime that `gcc -pg` programs call: __monstartup/monstartup,
// moncontrol, _mcleanup and the arc recorder behind mcount (pg_mcount.S).
// A program built with -pg and linked with -lprofil uses these instead of
// glibc's: gcrt1.o's __gmon_start__ calls __monstartup(text start, etext)
// and atexit(_mcleanup) through the PLT, and libprofil comes before libc.
//
// Arcs: glibc keeps one global "busy" flag and drops every arc recorded
// while another thread is inside mcount. Here the arc table is lock-free
// (open addressing, CAS on the key, atomic counts), so every thread's calls
// are counted. A table that fills up drops the arcs that do not fit, says so
// once on stderr, and writes only the arcs it counted exactly.
//
// ASYNC-SIGNAL-SAFE: profil_pg_record_arc (called from mcount, possibly
// inside signal handlers). The rest runs at start-up and exit.
#include <fcntl.h>
#include <link.h>
#include <sys/gmon.h>  // glibc declares the entry points; ours replace them

#include "profil/profil.h"  // moncontrol is not in <sys/gmon.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/io.h"
#include "base/unique_fd.h"
#include "format/gmon.h"
#include "runtime/export.h"
#include "runtime/process_hooks.h"
#include "sampler/sampler.h"

namespace profiling::runtime {
namespace {

struct Arc {
  std::atomic<uint64_t> from;  // 0: empty
  std::atomic<uint64_t> self;
  std::atomic<uint64_t> count;
};

struct PgState {
  uint64_t low = 0, high = 0;
  // Plain heap pointers, never freed: _mcleanup runs from atexit after this
  // library's static destructors, and sampling may start before its
  // dynamic initializers (libc's _init calls __gmon_start__).
  uint16_t* bins = nullptr;
  size_t nbins = 0;
  Arc* arcs = nullptr;
  size_t arc_mask = 0;
  std::atomic<bool> recording{false};
  std::atomic<bool> overflowed{false};
  std::atomic<bool> started{false};
  std::atomic<bool> cleaned_up{false};
  pid_t owner = 0;
};

constinit PgState g_pg;

constexpr uint32_t kBytesPerBin = 4;  // glibc: HISTFRACTION 2 with 16-bit counters

void start_histogram() {
  sampler::HistogramSpec spec;
  sampler::Region r;
  r.bins = g_pg.bins;
  r.nbins = g_pg.nbins;
  r.offset = g_pg.low;
  r.scale = 65536 * 2 / kBytesPerBin;  // [(pc - low) / 2] * 32768 / 65536: 4 bytes a bin
  spec.regions.push_back(r);
  sampler::set_histogram(spec);
}

void clear_in_child() {
  // The child's file holds only what the child does after fork.
  std::memset(g_pg.bins, 0, g_pg.nbins * sizeof(uint16_t));
  for (size_t i = 0; i <= g_pg.arc_mask; ++i) {
    g_pg.arcs[i].from.store(0, std::memory_order_relaxed);
    g_pg.arcs[i].self.store(0, std::memory_order_relaxed);
    g_pg.arcs[i].count.store(0, std::memory_order_relaxed);
  }
  g_pg.overflowed.store(false);
}

// The load bias of the main program: what -pg addresses lose to match the
// ELF file's symbol values (0 for a fixed-address program).
uint64_t main_program_bias() {
  uint64_t bias = 0;
  dl_iterate_phdr([](dl_phdr_info* info, size_t, void* out) -> int {
    *static_cast<uint64_t*>(out) = info->dlpi_addr;
    return 1;  // the first object is the main program
  }, &bias);
  return bias;
}

std::string output_name() {
  std::string name;
  const char* prefix = std::getenv("GMON_OUT_PREFIX");
  if (prefix != nullptr && *prefix != '\0') {
    name = std::string(prefix) + "." + std::to_string(::getpid());
  } else if (::getpid() != g_pg.owner) {
    // A forked child must not overwrite its parent's gmon.out.
    name = "gmon.out." + std::to_string(::getpid());
  } else {
    name = "gmon.out";
  }
  return name;
}

}  // namespace
}  // namespace profiling::runtime

using namespace profiling;
using profiling::runtime::g_pg;

extern "C" {

// ASYNC-SIGNAL-SAFE.
__attribute__((visibility("hidden"), no_instrument_function)) void profil_pg_record_arc(uint64_t from,
                                                                                       uint64_t self) {
  if (!g_pg.recording.load(std::memory_order_relaxed)) return;
  if (self < g_pg.low || self >= g_pg.high) return;
  size_t slot = static_cast<size_t>(((from * 0x9E3779B97F4A7C15ull) ^ (self * 0xC2B2AE3D27D4EB4Full)) >> 17) &
                g_pg.arc_mask;
  for (size_t probe = 0; probe < 64; ++probe) {
    runtime::Arc& a = g_pg.arcs[slot];
    uint64_t seen = a.from.load(std::memory_order_acquire);
    if (seen == 0) {
      uint64_t expected = 0;
      // Claim the slot: from is the lock word; self is published before
      // any count is added, readers wait for it below.
      if (a.from.compare_exchange_strong(expected, from ^ (1ull << 63), std::memory_order_acq_rel)) {
        a.self.store(self, std::memory_order_release);
        a.from.store(from, std::memory_order_release);
        a.count.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      seen = expected;
    }
    while (seen == (from ^ (1ull << 63))) seen = a.from.load(std::memory_order_acquire);  // being claimed
    if (seen == from && a.self.load(std::memory_order_acquire) == self) {
      a.count.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    slot = (slot + 1) & g_pg.arc_mask;
  }
  g_pg.overflowed.store(true, std::memory_order_relaxed);
}

PROFIL_EXPORT void __monstartup(unsigned long lowpc, unsigned long highpc) __THROW {
  bool expected = false;
  if (!g_pg.started.compare_exchange_strong(expected, true)) return;  // twice: harmless
  runtime::ensure_process_hooks();
  g_pg.low = lowpc & ~uint64_t{runtime::kBytesPerBin - 1};
  g_pg.high = (highpc + runtime::kBytesPerBin - 1) & ~uint64_t{runtime::kBytesPerBin - 1};
  g_pg.owner = ::getpid();
  g_pg.nbins = (g_pg.high - g_pg.low) / runtime::kBytesPerBin + 1;
  g_pg.bins = static_cast<uint16_t*>(std::calloc(g_pg.nbins, sizeof(uint16_t)));
  // Arc table sized from the text like glibc's (one slot per 32 bytes of
  // text), a power of two between 2^12 and 2^22.
  size_t slots = 4096;
  while (slots < (g_pg.high - g_pg.low) / 32 && slots < (size_t{1} << 22)) slots <<= 1;
  g_pg.arcs = static_cast<runtime::Arc*>(std::calloc(slots, sizeof(runtime::Arc)));
  if (g_pg.arcs == nullptr || g_pg.bins == nullptr) return;
  g_pg.arc_mask = slots - 1;
  pthread_atfork(nullptr, nullptr, runtime::clear_in_child);
  moncontrol(1);
}

PROFIL_EXPORT void monstartup(unsigned long lowpc, unsigned long highpc) __THROW {
  __monstartup(lowpc, highpc);
}

PROFIL_EXPORT void moncontrol(int mode) __THROW {
  if (!g_pg.started.load() || g_pg.arcs == nullptr) return;
  if (mode) {
    runtime::start_histogram();
    g_pg.recording.store(true);
  } else {
    g_pg.recording.store(false);
    sampler::clear_histogram();
  }
}

PROFIL_EXPORT void _mcleanup(void) __THROW {
  if (!g_pg.started.load() || g_pg.arcs == nullptr) return;
  bool expected = false;
  if (!g_pg.cleaned_up.compare_exchange_strong(expected, true)) return;  // twice: once
  moncontrol(0);
  const uint64_t bias = runtime::main_program_bias();
  format::GmonData data;
  format::GmonHistogram h;
  h.low_pc = g_pg.low - bias;
  h.high_pc = g_pg.low - bias + g_pg.nbins * runtime::kBytesPerBin;
  h.rate_hz = sampler::active_hz();  // the rate the counts are really in
  h.bins.assign(g_pg.bins, g_pg.bins + g_pg.nbins);
  data.histograms.push_back(std::move(h));
  for (size_t i = 0; i <= g_pg.arc_mask; ++i) {
    const uint64_t from = g_pg.arcs[i].from.load();
    const uint64_t count = g_pg.arcs[i].count.load();
    if (from == 0 || count == 0) continue;
    data.arcs.push_back({from - bias, g_pg.arcs[i].self.load() - bias, count});
  }
  const std::string name = runtime::output_name();
  if (g_pg.overflowed.load())
    std::fprintf(stderr, "profil: %s: the arc table overflowed; calls that did not fit are not counted\n",
                 name.c_str());
  std::string bytes, error;
  if (!format::try_encode_gmon(data, format::GmonFlavor::gnu, &bytes, &error)) {
    std::fprintf(stderr, "profil: %s: %s\n", name.c_str(), error.c_str());
    return;
  }
  int dirfd = AT_FDCWD;
  base::UniqueFd dir;
  if (const char* profdir = std::getenv("PROFDIR"); profdir != nullptr && *profdir != '\0') {
    dir.reset(::open(profdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid()) {
      std::fprintf(stderr, "profil: %s: %s\n", profdir, std::strerror(errno));
      return;
    }
    dirfd = dir.get();
  }
  base::AtomicFile file;
  if (!file.open(dirfd, name.c_str()) || !file.write(bytes.data(), bytes.size()) || !file.commit())
    std::fprintf(stderr, "profil: %s: %s (the previous file, if any, is left as it was)\n", name.c_str(),
                 std::strerror(errno));
}

}  // extern "C"
