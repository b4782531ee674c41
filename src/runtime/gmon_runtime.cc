// The gmon runtime that `gcc -pg` programs call: __monstartup/monstartup,
// moncontrol, _mcleanup, and the arc recorder behind mcount/__fentry__
// (mcount_x86_64.S). A program built with -pg and linked with -lprofil uses
// these instead of glibc's: gcrt1.o's __gmon_start__ calls
// __monstartup(&__executable_start, &etext) and atexit(_mcleanup) through the
// PLT, and -lprofil comes before libc.
//
// What differs from glibc (gmon/gmon.c, gmon/mcount.c), on purpose:
//   - arcs: a lock-free table (gmon_arcs.h), so calls made by threads at the
//     same time are all counted (glibc drops them while another thread is
//     inside mcount); a full table says so once and writes only exact counts;
//   - histogram: the sampler's histogram sink (sampler.h), so every thread is
//     sampled on the configured clock and rate (glibc's ITIMER_PROF is one
//     process timer at the kernel tick), and the file's rate is
//     sampler::active_hz(), the rate the counts are really in;
//   - fork: the child starts from empty bins and arcs and writes its own
//     file (gmon_output.h), and its own CPU time is sampled (a child has no
//     interval timers after fork, so glibc's child file shows 0.00 s);
//   - the output directory is opened at start and kept (a chdir does not
//     move the file), PROFDIR is honoured, the file is written atomically.
// The histogram sink has one owner at a time: a -pg program that calls
// profil() or sprofil() itself takes it over until moncontrol(1) takes it
// back (glibc's moncontrol is built on profil(), so there too the later
// call wins).
//
// ASYNC-SIGNAL-SAFE: profil_gmon_record_arc, and the writing of the file at
// the process's end (take_the_write, write_file, on_process_end), which runs
// from _exit and fatal signals too. The rest runs at start-up and exit. This
// file is compiled without -pg.
#include <fcntl.h>
#include <pthread.h>
#include <sys/gmon.h>  // glibc declares the entry points; ours replace them
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "profil/profil.h"  // moncontrol is not in <sys/gmon.h>
#include "runtime/export.h"
#include "base/errno_saver.h"
#include "base/io.h"
#include "runtime/gmon_arcs.h"
#include "runtime/gmon_file.h"
#include "runtime/gmon_output.h"
#include "runtime/gmon_runtime.h"
#include "runtime/process_end.h"
#include "runtime/process_hooks.h"
#include "sampler/sampler.h"

namespace profiling::runtime {
namespace {

// glibc's granularity: HISTFRACTION 2 with 16-bit counters, one bin per
// 4 bytes of text; profil scale 32768 maps [(pc - low) / 2] * 32768 / 65536.
constexpr uint32_t kBytesPerBin = 4;
constexpr uint32_t kScale = 65536 * 2 / kBytesPerBin;

// Plain data, constant-initialized and never destroyed: _mcleanup runs from
// atexit, possibly after this library's static destructors, and
// __gmon_start__ may run before its dynamic initializers.
struct GmonState {
  uint64_t low = 0, high = 0;
  uint16_t* bins = nullptr;
  size_t nbins = 0;
  int recording = 0;  // __atomic: read by every mcount
  int started = 0;
  int cleaned_up = 0;
  int openbsd_owns_output = 0;
  pid_t owner = 0;
  int dirfd = -1;       // where the file goes: $PROFDIR or the starting directory
  int dir_error = 0;    // why it could not be opened
  char* dir_name = nullptr;
  int histogram_error = 0;
  // Fixed at start (and in a fork child) so that the file can be written
  // from a signal handler: the load bias, the rate, the file's name and the
  // process they belong to (a vfork child shares them and must not write).
  uint64_t bias = 0;
  uint32_t rate_hz = 0;
  pid_t name_pid = 0;
  char name[256] = {};
};

constinit GmonState g_gmon;
constinit ArcTable g_arcs;

bool start_histogram() {
  sampler::HistogramSpec spec;
  sampler::Region region;
  region.bins = g_gmon.bins;
  region.nbins = g_gmon.nbins;
  region.offset = g_gmon.low;
  region.scale = kScale;
  region.width = sampler::BinWidth::u16;
  spec.regions.push_back(region);
  const int error = sampler::set_histogram(spec);
  if (error == 0) __atomic_store_n(&g_gmon.rate_hz, sampler::active_hz(), __ATOMIC_RELEASE);
  if (error != 0 && g_gmon.histogram_error == 0) {
    g_gmon.histogram_error = error;
    std::fprintf(stderr, "profil: gmon: sampling could not start (%s); the profile will have call counts only\n",
                 std::strerror(error));
  }
  return error == 0;
}

// pthread_atfork child handler: the child's file holds only what the child
// does after the fork. The child has one thread, so nothing records while
// the tables are emptied.
void choose_name() {
  const bool forked_child = ::getpid() != g_gmon.owner;
  const std::string name = gmon_out_name(::secure_getenv("GMON_OUT_PREFIX"), ::getpid(), forked_child);
  std::snprintf(g_gmon.name, sizeof g_gmon.name, "%s", name.c_str());
  g_gmon.name_pid = ::getpid();
}

void clear_in_child() {
  if (g_gmon.bins != nullptr) std::memset(g_gmon.bins, 0, g_gmon.nbins * sizeof(uint16_t));
  g_arcs.clear();
  choose_name();
}

// ASYNC-SIGNAL-SAFE. Stops recording and writes the file, once: the first
// of _mcleanup (exit) and the process-end hook (_exit, a fatal signal).
// false when it was not this call's to write.
bool take_the_write() {
  if (g_gmon.bins == nullptr || ::getpid() != g_gmon.name_pid) return false;
  if (__atomic_exchange_n(&g_gmon.cleaned_up, 1, __ATOMIC_ACQ_REL) != 0) return false;  // twice: once
  __atomic_store_n(&g_gmon.recording, 0, __ATOMIC_RELEASE);
  return __atomic_load_n(&g_gmon.openbsd_owns_output, __ATOMIC_ACQUIRE) == 0;  // else it writes the file
}

// ASYNC-SIGNAL-SAFE.
bool write_file() {
  GmonImage image;
  image.low_pc = g_gmon.low - g_gmon.bias;
  image.high_pc = g_gmon.high - g_gmon.bias;
  image.bins = g_gmon.bins;
  image.nbins = g_gmon.nbins;
  image.rate_hz = __atomic_load_n(&g_gmon.rate_hz, __ATOMIC_ACQUIRE);
  if (image.rate_hz == 0) image.rate_hz = 100;  // never sampled: any rate, gprof divides by it
  image.arcs = &g_arcs;
  image.bias = g_gmon.bias;
  return write_gnu_gmon(g_gmon.dirfd, g_gmon.name, image);
}

// ASYNC-SIGNAL-SAFE: _exit, _Exit, quick_exit, a fatal signal. The file is
// written as exit would have written it; a line on failure.
void on_process_end(ProcessEnd, int) {
  if (!take_the_write()) return;
  base::ErrnoSaver errno_saver;
  sampler::deliver_pending_samples();  // the ring's samples since its last drain
  if (g_gmon.dirfd >= 0 && write_file()) return;
  report_end_write_failure(g_gmon.name);
}

size_t slots_override() {
  const char* value = ::secure_getenv("PROFIL_GMON_ARCS");
  if (value == nullptr || *value == '\0') return 0;
  char* end = nullptr;
  unsigned long long n = std::strtoull(value, &end, 10);
  if (*end != '\0' || n == 0) return 0;
  return static_cast<size_t>(n);
}

void open_directory() {
  const char* profdir = ::secure_getenv("PROFDIR");
  const char* dir = profdir != nullptr && *profdir != '\0' ? profdir : ".";
  g_gmon.dir_name = ::strdup(dir);
  g_gmon.dirfd = open_output_directory(dir);
  if (g_gmon.dirfd < 0) g_gmon.dir_error = errno;
}

}  // namespace

const ArcTable* gmon_arc_table(uint64_t* bias) {
  if (!g_arcs.attached()) return nullptr;
  *bias = g_gmon.bias;
  return &g_arcs;
}

size_t gmon_arc_slots() { return g_arcs.attached() ? g_arcs.slots() : 0; }

void gmon_output_taken_by_openbsd() { __atomic_store_n(&g_gmon.openbsd_owns_output, 1, __ATOMIC_RELEASE); }

}  // namespace profiling::runtime

using namespace profiling;
using profiling::runtime::g_arcs;
using profiling::runtime::g_gmon;

extern "C" {

// Called by mcount / __fentry__ with the caller's return address and ours.
// ASYNC-SIGNAL-SAFE, wait-free; general registers only (the stubs do not
// save the vector registers that carry floating-point arguments).
__attribute__((visibility("hidden"), no_instrument_function, target("general-regs-only"))) void
profil_gmon_record_arc(uint64_t from, uint64_t self) {
  if (__atomic_load_n(&g_gmon.recording, __ATOMIC_ACQUIRE) == 0) return;
  g_arcs.record(from, self);
}

PROFIL_EXPORT void __monstartup(unsigned long lowpc, unsigned long highpc) __THROW {
  if (__atomic_exchange_n(&g_gmon.started, 1, __ATOMIC_ACQ_REL) != 0) return;  // twice: harmless
  runtime::ensure_process_hooks();
  g_gmon.low = lowpc & ~uint64_t{runtime::kBytesPerBin - 1};
  g_gmon.high = (highpc + runtime::kBytesPerBin - 1) & ~uint64_t{runtime::kBytesPerBin - 1};
  g_gmon.owner = ::getpid();
  runtime::open_directory();
  g_gmon.bias = runtime::load_bias_of(g_gmon.low);
  runtime::choose_name();
  g_gmon.nbins = (g_gmon.high - g_gmon.low) / runtime::kBytesPerBin;
  g_gmon.bins = static_cast<uint16_t*>(std::calloc(g_gmon.nbins ? g_gmon.nbins : 1, sizeof(uint16_t)));
  const size_t slots = runtime::ArcTable::slots_for_text(g_gmon.high - g_gmon.low, runtime::slots_override());
  auto* table = static_cast<runtime::ArcSlot*>(std::calloc(slots, sizeof(runtime::ArcSlot)));
  if (g_gmon.bins == nullptr || table == nullptr ||
      !g_arcs.attach(table, slots, g_gmon.low, g_gmon.high)) {
    // glibc: "monstartup: out of memory" and no profile.
    std::fprintf(stderr, "profil: gmon: cannot profile [%#lx, %#lx): %s\n", lowpc, highpc,
                 table == nullptr || g_gmon.bins == nullptr ? "out of memory" : "text range too large");
    std::free(table);
    std::free(g_gmon.bins);
    g_gmon.bins = nullptr;
    return;
  }
  pthread_atfork(nullptr, nullptr, runtime::clear_in_child);
  // Every way out writes the file (issue 11): _exit and fatal signals too.
  runtime::at_process_end(runtime::on_process_end);
  runtime::install_crash_handlers();
  moncontrol(1);
}

PROFIL_EXPORT void monstartup(unsigned long lowpc, unsigned long highpc) __THROW { __monstartup(lowpc, highpc); }

PROFIL_EXPORT void moncontrol(int mode) __THROW {
  if (g_gmon.bins == nullptr || __atomic_load_n(&g_gmon.cleaned_up, __ATOMIC_ACQUIRE) != 0) return;
  if (__atomic_load_n(&g_gmon.openbsd_owns_output, __ATOMIC_ACQUIRE) != 0) {
    runtime::openbsd_profil_set_running(mode != 0);
    __atomic_store_n(&g_gmon.recording, mode != 0, __ATOMIC_RELEASE);
    return;
  }
  if (mode) {
    runtime::start_histogram();
    __atomic_store_n(&g_gmon.recording, 1, __ATOMIC_RELEASE);
  } else {
    __atomic_store_n(&g_gmon.recording, 0, __ATOMIC_RELEASE);
    sampler::clear_histogram();
  }
}

PROFIL_EXPORT void _mcleanup(void) __THROW {
  if (!runtime::take_the_write()) return;
  sampler::clear_histogram();
  const std::string name = g_gmon.name;
  if (g_gmon.dirfd < 0) {
    std::fprintf(stderr, "profil: %s: %s (%s not written)\n", g_gmon.dir_name ? g_gmon.dir_name : ".",
                 std::strerror(g_gmon.dir_error), name.c_str());
    return;
  }
  if (const uint64_t dropped = g_arcs.dropped(); dropped != 0)
    std::fprintf(stderr,
                 "profil: %s: the arc table (%zu slots) overflowed: %llu calls were not counted and their "
                 "arcs are left out; the counts written are exact (set PROFIL_GMON_ARCS to more slots)\n",
                 runtime::shown_path(g_gmon.dirfd, name).c_str(), g_arcs.slots(),
                 static_cast<unsigned long long>(dropped));
  if (!runtime::write_file())
    std::fprintf(stderr, "profil: %s: %s (not written; an existing file of that name is left as it was)\n",
                 runtime::shown_path(g_gmon.dirfd, name).c_str(), std::strerror(errno));
}

}  // extern "C"
