// The OpenBSD 2025 profil(2) as its own entry point, profil_openbsd():
//   int profil(void *buf, size_t buflen, size_t samplesize, u_long offset,
//              u_int scale, int dirfd);
// (seeds/openbsd-2025-profil.2.txt; OpenBSD sys/kern/subr_prof.c 1.43,
// sys_profil and prof_write). The buffer holds a struct gmonhdr, then
// samplesize bytes of 16-bit bins, then room for the arc table. At exit the
// profile is completed in the buffer (header, bins, struct rawarc records:
// the BSD gmon.out gprof reads) and the header, the bins and the arcs
// written are stored as gmon.<progname>.<pid>.out.
//
// Rules, as the kernel has them:
//   - scale > 65536: EINVAL; scale 0 stops sampling (the buffer stays
//     registered and a later call with it restarts);
//   - a buffer, once given, may not change (another buf or buflen):
//     EALREADY; the same buffer again changes offset and scale;
//   - the first call fixes the directory: dirfd, or -1 for $PROFDIR (as
//     OpenBSD's gcrt0 passes it) or else the current directory. The
//     directory is opened (or dirfd duplicated) at the call and kept, so a
//     later chdir() cannot move the file. EBADF for a dirfd that is not
//     open, ENOTDIR for one that is not a directory.
// Additions: EINVAL when the buffer cannot hold the header and the samples,
// EFAULT when it is not writable memory. Differences: the file is written by
// the library's atexit handler (there is no kernel to do it at _exit), so a
// program that ends in _exit() or a signal writes none; a forked child's
// buffer starts empty and the child writes its own file; the arcs are the
// ones libprofil's mcount recorded (a -pg program), so a program without -pg
// gets a file with the histogram alone (OpenBSD's kernel writes nothing when
// the C run-time recorded no arcs). If the arcs do not fit in the room left
// in the buffer, the ones that do are written, and stderr says so.
//
// With the gmon runtime (a -pg program) this buffer takes the profile over:
// the histogram counts into it, moncontrol() switches it, and _mcleanup
// writes no gmon.out.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "base/errno_saver.h"
#include "base/io.h"
#include "profil/profil.h"
#include "runtime/export.h"
#include "format/gmon.h"
#include "runtime/gmon_arcs.h"
#include "runtime/gmon_output.h"
#include "runtime/gmon_runtime.h"
#include "runtime/process_end.h"
#include "runtime/personality.h"
#include "runtime/process_hooks.h"
#include "sampler/bins.h"
#include "sampler/sampler.h"

namespace profiling::runtime {
namespace {

// struct gmonhdr on LP64 (OpenBSD <sys/gmon.h>): lpc, hpc, ncnt, version,
// profrate, totarc (bytes of arcs after the samples, set by the C run-time
// for the kernel), spare.
constexpr size_t kHeaderSize = format::gmon::kBsdHeaderSize;
constexpr size_t kTotarcOffset = 8 + 8 + 4 + 4 + 4;
constexpr size_t kRawArcSize = format::gmon::kBsdArcSize;

struct OpenbsdProfile {
  unsigned char* buf = nullptr;  // registered buffer, or null
  size_t buflen = 0;
  size_t samplesize = 0;
  uint64_t offset = 0;
  uint32_t scale = 0;
  bool running = false;
  int written = 0;  // __atomic: the first of exit, _exit and a fatal signal writes
  int dirfd = -1;
  // Fixed outside the end so that it can run in a signal handler: the PIE
  // bias of offset, the rate, the file's name and the process it is for.
  uint64_t bias = 0;
  uint32_t rate_hz = 0;
  pid_t name_pid = 0;
  char name[256] = {};
};

// Never destroyed (read by the atexit handler).
constinit std::mutex g_mutex;
constinit OpenbsdProfile g_profile;

int fail(int error) {
  errno = error;
  return -1;
}

sampler::Region region_of(const OpenbsdProfile& p) {
  sampler::Region region;
  region.bins = p.buf + kHeaderSize;
  region.nbins = p.samplesize / sizeof(uint16_t);
  region.offset = p.offset;
  region.scale = p.scale;
  region.width = sampler::BinWidth::u16;
  region.arithmetic = sampler::BinArithmetic::printed;  // the page's formula
  return region;
}

int start_sampling(OpenbsdProfile& p) {
  sampler::HistogramSpec spec;
  spec.regions.push_back(region_of(p));
  if (int error = sampler::set_histogram(spec); error != 0) return error;
  p.running = true;
  __atomic_store_n(&p.rate_hz, sampler::active_hz(), __ATOMIC_RELEASE);
  return 0;
}

void choose_name(OpenbsdProfile& p) {
  std::snprintf(p.name, sizeof p.name, "%s", openbsd_out_name(program_invocation_short_name, ::getpid()).c_str());
  p.name_pid = ::getpid();
}

// The child's file holds what the child did after the fork.
void clear_in_child() {
  if (g_profile.buf != nullptr) std::memset(g_profile.buf + kHeaderSize, 0, g_profile.samplesize);
  choose_name(g_profile);
}

// What completing the buffer found, for the lines exit prints.
struct Completion {
  size_t bytes = 0;      // header, bins and arcs: what the file holds
  size_t arcs = 0;       // arcs written
  size_t arcs_seen = 0;  // arcs recorded
  uint64_t dropped = 0;  // calls the arc table had no room for
  bool too_large = false;
};

void put_rawarc(unsigned char* at, uint64_t from, uint64_t self, uint64_t count) {
  std::memcpy(at, &from, 8);
  std::memcpy(at + 8, &self, 8);
  std::memcpy(at + 16, &count, 8);
}
uint64_t rawarc_count(const unsigned char* at) {
  uint64_t count;
  std::memcpy(&count, at + 16, 8);
  return count;
}

// Sifts arc i of a min-heap (by count) of n arcs at base down to its place.
void sift_down(unsigned char* base, size_t n, size_t i) {
  for (;;) {
    size_t least = i;
    for (size_t child = 2 * i + 1; child <= 2 * i + 2 && child < n; ++child)
      if (rawarc_count(base + child * kRawArcSize) < rawarc_count(base + least * kRawArcSize)) least = child;
    if (least == i) return;
    unsigned char swap[kRawArcSize];
    std::memcpy(swap, base + i * kRawArcSize, kRawArcSize);
    std::memcpy(base + i * kRawArcSize, base + least * kRawArcSize, kRawArcSize);
    std::memcpy(base + least * kRawArcSize, swap, kRawArcSize);
    i = least;
  }
}

// ASYNC-SIGNAL-SAFE. "The C-run-time completes the data in the buffer to
// final format" (the page): the gmonhdr, the bins as they are, then as many
// struct rawarc as the room after the samples holds — the busiest, chosen
// with a min-heap kept in that room, so nothing is allocated.
Completion complete_buffer(OpenbsdProfile& p) {
  Completion done;
  const sampler::Region region = region_of(p);
  const size_t bin_bytes = region.nbins * sizeof(uint16_t);
  if (kHeaderSize + bin_bytes > static_cast<size_t>(INT32_MAX)) {  // gprof reads ncnt as an int
    done.too_large = true;
    return done;
  }
  unsigned char* arcs_at = p.buf + kHeaderSize + bin_bytes;
  const size_t room = (p.buflen - kHeaderSize - p.samplesize) / kRawArcSize;
  uint64_t arc_bias = 0;
  if (const ArcTable* table = gmon_arc_table(&arc_bias)) {
    done.dropped = table->dropped();
    table->for_each([&](uint64_t from, uint64_t self, uint64_t count) {
      ++done.arcs_seen;
      if (done.arcs < room) {
        put_rawarc(arcs_at + done.arcs * kRawArcSize, from - arc_bias, self - arc_bias, count);
        if (++done.arcs == room) {  // full: from now on the least called gives way
          for (size_t i = room / 2; i-- > 0;) sift_down(arcs_at, room, i);
        }
      } else if (room > 0 && count > rawarc_count(arcs_at)) {
        put_rawarc(arcs_at, from - arc_bias, self - arc_bias, count);
        sift_down(arcs_at, room, 0);
      }
    });
  }
  // struct gmonhdr (LP64): lpc, hpc, ncnt, version, profrate, spare[3] whose
  // first word is totarc.
  const uint64_t end = sampler::region_end(region);
  const uint64_t low = p.offset - p.bias;
  const uint64_t high = end == UINT64_MAX ? UINT64_MAX : end - p.bias;
  const uint32_t ncnt = static_cast<uint32_t>(kHeaderSize + bin_bytes);
  const uint32_t version = format::gmon::kBsdVersion;
  uint32_t rate = __atomic_load_n(&p.rate_hz, __ATOMIC_ACQUIRE);
  if (rate == 0) rate = 100;  // never sampled: gprof divides by it
  const uint32_t totarc = static_cast<uint32_t>(done.arcs * kRawArcSize);
  unsigned char header[kHeaderSize] = {};
  std::memcpy(header, &low, 8);
  std::memcpy(header + 8, &high, 8);
  std::memcpy(header + 16, &ncnt, 4);
  std::memcpy(header + 20, &version, 4);
  std::memcpy(header + 24, &rate, 4);
  std::memcpy(header + kTotarcOffset, &totarc, 4);
  std::memcpy(p.buf, header, sizeof header);
  done.bytes = kHeaderSize + bin_bytes + done.arcs * kRawArcSize;
  return done;
}

// ASYNC-SIGNAL-SAFE: completes the buffer and writes it. false with errno.
bool write_file(OpenbsdProfile& p, Completion* done) {
  *done = complete_buffer(p);
  if (done->too_large) {
    errno = EFBIG;
    return false;
  }
  base::AtomicFile file;
  return file.open(p.dirfd, p.name) && file.write(p.buf, done->bytes) && file.commit();
}

// ASYNC-SIGNAL-SAFE: _exit, _Exit, quick_exit, a fatal signal (process_end.h).
void on_process_end(ProcessEnd, int) {
  OpenbsdProfile& p = g_profile;
  if (p.buf == nullptr || ::getpid() != p.name_pid) return;  // a vfork child shares our memory
  if (__atomic_exchange_n(&p.written, 1, __ATOMIC_ACQ_REL) != 0) return;
  base::ErrnoSaver errno_saver;
  // What the ring holds since its last drain is the histogram's too (beside
  // busy loops a run's every sample was still there: hot_loop had none).
  sampler::deliver_pending_samples();
  Completion done;
  if (write_file(p, &done)) return;
  report_end_write_failure(p.name);
}

void write_at_exit() {
  OpenbsdProfile& p = g_profile;
  if (p.buf == nullptr || ::getpid() != p.name_pid) return;
  if (__atomic_exchange_n(&p.written, 1, __ATOMIC_ACQ_REL) != 0) return;
  {
    std::lock_guard lock(g_mutex);
    if (p.running) sampler::clear_histogram();
    p.running = false;
  }
  const std::string shown = shown_path(p.dirfd, p.name);
  Completion done;
  const bool ok = write_file(p, &done);
  const int error = errno;
  if (done.arcs < done.arcs_seen)
    std::fprintf(stderr,
                 "profil: %s: the buffer has room for %zu of the %zu arcs recorded; the %zu least called are "
                 "left out\n",
                 shown.c_str(), done.arcs, done.arcs_seen, done.arcs_seen - done.arcs);
  if (done.dropped != 0)
    std::fprintf(stderr,
                 "profil: %s: the arc table (%zu slots) overflowed: %llu calls were not counted and their "
                 "arcs are left out; the counts written are exact (set PROFIL_GMON_ARCS to more slots)\n",
                 shown.c_str(), gmon_arc_slots(), static_cast<unsigned long long>(done.dropped));
  if (done.too_large)
    std::fprintf(stderr, "profil: %s: %zu bins are more than gprof can read (not written)\n", shown.c_str(),
                 p.samplesize / sizeof(uint16_t));
  else if (!ok)
    std::fprintf(stderr, "profil: %s: %s (not written; an existing file of that name is left as it was)\n",
                 shown.c_str(), std::strerror(error));
}

// The directory of the first call: dirfd, $PROFDIR, or the current one.
int open_directory(int dirfd, int* error) {
  if (dirfd != -1) {
    struct stat st;
    if (dirfd < 0 || ::fstat(dirfd, &st) != 0) {
      *error = EBADF;
      return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
      *error = ENOTDIR;
      return -1;
    }
    int kept = keep_directory_descriptor(dirfd);
    if (kept < 0) *error = errno;
    return kept;
  }
  const char* profdir = ::secure_getenv("PROFDIR");
  int kept = open_output_directory(profdir != nullptr && *profdir != '\0' ? profdir : ".");
  if (kept < 0) *error = errno;
  return kept;
}

}  // namespace

void openbsd_profil_set_running(bool running) {
  std::lock_guard lock(g_mutex);
  if (g_profile.buf == nullptr || __atomic_load_n(&g_profile.written, __ATOMIC_ACQUIRE) != 0 ||
      running == g_profile.running)
    return;
  if (running) {
    start_sampling(g_profile);
  } else {
    sampler::clear_histogram();
    g_profile.running = false;
  }
}

}  // namespace profiling::runtime

using namespace profiling;

extern "C" PROFIL_EXPORT int profil_openbsd(void* buf, size_t buflen, size_t samplesize, unsigned long offset,
                                            unsigned int scale, int dirfd) {
  runtime::ensure_process_hooks();
  std::lock_guard lock(runtime::g_mutex);
  runtime::OpenbsdProfile& p = runtime::g_profile;
  if (scale > sampler::kMaxScale) return runtime::fail(EINVAL);
  if (scale == 0) {  // stops the clock; the buffer stays registered
    if (p.running) sampler::clear_histogram();
    p.running = false;
    return 0;
  }
  if (p.buf != nullptr && (buf != p.buf || buflen != p.buflen)) return runtime::fail(EALREADY);
  if (__atomic_load_n(&p.written, __ATOMIC_ACQUIRE) != 0) return runtime::fail(EALREADY);  // after exit processing
  if (p.buf == nullptr) {
    if (buf == nullptr || buflen < runtime::kHeaderSize || samplesize > buflen - runtime::kHeaderSize)
      return runtime::fail(EINVAL);
    int error = 0;
    const int kept = runtime::open_directory(dirfd, &error);
    if (kept < 0) return runtime::fail(error);
    if (!runtime::memory_is_writable(buf, buflen)) {
      ::close(kept);
      return runtime::fail(EFAULT);
    }
    p.dirfd = kept;
    p.buf = static_cast<unsigned char*>(buf);
    p.buflen = buflen;
    p.samplesize = samplesize;
    runtime::choose_name(p);
    static bool registered = false;
    if (!registered) {
      registered = true;
      pthread_atfork(nullptr, nullptr, runtime::clear_in_child);
      std::atexit(runtime::write_at_exit);
      // The page has the kernel write the file whatever the way out: _exit
      // and fatal signals too (issue 11).
      runtime::at_process_end(runtime::on_process_end);
      runtime::install_crash_handlers();
    }
    runtime::gmon_output_taken_by_openbsd();
  }
  p.offset = offset;
  p.scale = scale;
  p.bias = runtime::load_bias_of(offset);
  if (int error = runtime::start_sampling(p); error != 0) return runtime::fail(error);
  return 0;
}
