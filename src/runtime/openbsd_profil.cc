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

#include "profil/profil.h"
#include "runtime/export.h"
#include "runtime/gmon_output.h"
#include "runtime/gmon_runtime.h"
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
  bool written = false;
  int dirfd = -1;
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
  return 0;
}

// The child's file holds what the child did after the fork.
void clear_in_child() {
  if (g_profile.buf != nullptr) std::memset(g_profile.buf + kHeaderSize, 0, g_profile.samplesize);
}

void write_at_exit() {
  std::lock_guard lock(g_mutex);
  OpenbsdProfile& p = g_profile;
  if (p.buf == nullptr || p.written) return;
  p.written = true;
  if (p.running) sampler::clear_histogram();
  p.running = false;

  const std::string name = openbsd_out_name(program_invocation_short_name, ::getpid());
  const std::string shown = shown_path(p.dirfd, name);
  const sampler::Region region = region_of(p);
  const uint64_t bias = load_bias_of(p.offset);
  format::GmonData data;
  format::GmonHistogram histogram;
  histogram.low_pc = p.offset - bias;
  const uint64_t end = sampler::region_end(region);
  histogram.high_pc = end == UINT64_MAX ? UINT64_MAX : end - bias;
  histogram.rate_hz = sampler::active_hz();
  histogram.bins.resize(region.nbins);
  if (region.nbins != 0) std::memcpy(histogram.bins.data(), region.bins, region.nbins * sizeof(uint16_t));
  if (!histogram.bins.empty()) data.histograms.push_back(std::move(histogram));

  uint64_t dropped = 0;
  data.arcs = gmon_recorded_arcs(&dropped);
  const size_t room = (p.buflen - kHeaderSize - p.samplesize) / kRawArcSize;
  if (data.arcs.size() > room) {
    // Keep the busiest arcs; every count written is still exact.
    std::sort(data.arcs.begin(), data.arcs.end(),
              [](const format::GmonArc& a, const format::GmonArc& b) { return a.count > b.count; });
    std::fprintf(stderr,
                 "profil: %s: the buffer has room for %zu of the %zu arcs recorded; the %zu least called are "
                 "left out\n",
                 shown.c_str(), room, data.arcs.size(), data.arcs.size() - room);
    data.arcs.resize(room);
  }
  if (dropped != 0)
    std::fprintf(stderr,
                 "profil: %s: the arc table (%zu slots) overflowed: %llu calls were not counted and their "
                 "arcs are left out; the counts written are exact (set PROFIL_GMON_ARCS to more slots)\n",
                 shown.c_str(), gmon_arc_slots(), static_cast<unsigned long long>(dropped));

  std::string bytes, error;
  if (!format::try_encode_gmon(data, format::GmonFlavor::bsd, &bytes, &error)) {
    std::fprintf(stderr, "profil: %s: %s\n", shown.c_str(), error.c_str());
    return;
  }
  const uint32_t totarc = static_cast<uint32_t>(data.arcs.size() * kRawArcSize);
  std::memcpy(bytes.data() + kTotarcOffset, &totarc, sizeof totarc);  // little-endian host
  // "the C-run-time completes the data in the buffer to final format": the
  // bytes fit (bins take at most samplesize, arcs at most the room left).
  if (bytes.size() <= p.buflen) std::memcpy(p.buf, bytes.data(), bytes.size());
  write_profile_file(p.dirfd, name, bytes);
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
  if (g_profile.buf == nullptr || g_profile.written || running == g_profile.running) return;
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
  if (p.written) return runtime::fail(EALREADY);  // after exit processing
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
    static bool registered = false;
    if (!registered) {
      registered = true;
      pthread_atfork(nullptr, nullptr, runtime::clear_in_child);
      std::atexit(runtime::write_at_exit);
    }
    runtime::gmon_output_taken_by_openbsd();
  }
  p.offset = offset;
  p.scale = scale;
  if (int error = runtime::start_sampling(p); error != 0) return runtime::fail(error);
  return 0;
}
