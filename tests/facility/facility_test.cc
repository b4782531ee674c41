// The profil(2) facility end to end, in real processes: each scenario runs
// in a forked child (profiling state is per process) and reports numbers
// back through a pipe; the assertions run here.
//
// Tolerances: CPU-time timers fire on kernel ticks, so counts are close to
// deterministic; shares between code paths are binomial, and are asserted
// within 4 standard deviations of the sample count, plus one tick.
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/profil.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "profil/profil.h"
#include "profil/profil.hpp"

extern "C" {
extern char __executable_start[];
extern char etext[];
// Hot functions in sections of their own, so their address ranges are known
// (the linker defines __start_/__stop_ for C-identifier section names).
extern char __start_profil_hot_a[], __stop_profil_hot_a[];
extern char __start_profil_hot_b[], __stop_profil_hot_b[];
}

namespace {

// profil(NULL, ...) turns profiling off (every page); <unistd.h> declares the
// buffer nonnull, so the null goes through a volatile to keep the call.
void stop_profil() {
  unsigned short* volatile off = nullptr;
  profil(off, 0, 0, 0);
}

// Stops profil() and returns the ticks the stop itself delivered: the
// periods the kernel had not reported yet, all at the thread's last sampled
// PC (tens of ms beside a busy loop), which may lie outside the function
// a test counts.
double stop_profil_counting_the_flush() {
  profil_stats before{}, after{};
  profil_get_stats(&before);
  stop_profil();
  profil_get_stats(&after);
  return static_cast<double>(after.ticks - before.ticks);
}

double thread_cpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((noinline, section("profil_hot_a"))) double hot_a(long n) {
  double x = 0;
  for (long i = 0; i < n; ++i) x += static_cast<double>(i) * 0.5;
  return x;
}

__attribute__((noinline, section("profil_hot_b"))) double hot_b(long n) {
  double x = 1;
  for (long i = 0; i < n; ++i) x += static_cast<double>(i) * 0.25;
  return x;
}

// Runs fn for `seconds` of this thread's CPU time; returns the CPU time used.
// Reading a thread's CPU clock is a system call (no vDSO path), and ticks
// that land in it are attributed to libc: call it rarely (every ~0.2 ms).
double burn(double seconds, double (*fn)(long)) {
  volatile double sink = 0;
  double start = thread_cpu();
  double now = start;
  while ((now = thread_cpu()) - start < seconds) sink = sink + fn(200000);
  return now - start;
}

uintptr_t text_low() { return reinterpret_cast<uintptr_t>(__executable_start); }
uintptr_t text_high() { return reinterpret_cast<uintptr_t>(etext); }
uintptr_t a_low() { return reinterpret_cast<uintptr_t>(__start_profil_hot_a); }
uintptr_t a_high() { return reinterpret_cast<uintptr_t>(__stop_profil_hot_a); }
uintptr_t b_low() { return reinterpret_cast<uintptr_t>(__start_profil_hot_b); }
uintptr_t b_high() { return reinterpret_cast<uintptr_t>(__stop_profil_hot_b); }

// A whole-program region: low..high of everything the executable maps,
// hot sections included, at 2 bytes per bin.
struct Whole {
  uintptr_t low = std::min({text_low(), a_low(), b_low()});
  uintptr_t high = std::max({text_high(), a_high(), b_high()});
  std::vector<unsigned short> bins = std::vector<unsigned short>((high - low) / 2 + 1);
  int start(unsigned scale = 65536) {
    return profil(bins.data(), bins.size() * 2, low, scale);
  }
  uint64_t in(uintptr_t lo, uintptr_t hi) const {
    uint64_t sum = 0;
    for (size_t i = 0; i < bins.size(); ++i) {
      uintptr_t a = low + 2 * i;
      if (a >= lo && a < hi) sum += bins[i];
    }
    return sum;
  }
  uint64_t total() const { return in(0, UINTPTR_MAX); }
};

// A few bins starting at hot_a: at scale 2 one bin spans 64 KiB, so all of
// hot_a is bin 0.
struct AtHotA {
  std::vector<unsigned short> bins = std::vector<unsigned short>(4);
  int start(unsigned scale) { return profil(bins.data(), bins.size() * 2, a_low(), scale); }
  uint64_t total() const {
    uint64_t sum = 0;
    for (auto b : bins) sum += b;
    return sum;
  }
};

// The child's report: up to 16 numbers.
struct Report {
  double v[16] = {};
  int status = 0;
};

// Runs scenario in a child process; returns its report and exit status.
Report in_child(const std::function<void(Report&)>& scenario) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Report r;
    scenario(r);
    ssize_t n = write(fds[1], &r, sizeof r);
    _exit(n == sizeof r ? 0 : 99);
  }
  close(fds[1]);
  Report r;
  ssize_t n = read(fds[0], &r, sizeof r);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(n, static_cast<ssize_t>(sizeof r)) << "child died: status " << status;
  r.status = status;
  return r;
}

double binomial_tolerance(double n, double p) { return 4 * std::sqrt(n * p * (1 - p)) + 2; }

// The same for weighted counts: `signals` samples carried `counts` ticks, so
// the independent draws are the signals, each worth counts/signals ticks
// (the kernel tick limits CPU-time timers to 250 signals a second here).
double weighted_tolerance(double counts, double signals, double p) {
  const double weight = signals > 0 ? std::max(1.0, counts / signals) : 1.0;
  return weight * binomial_tolerance(counts / weight, p) + weight;
}

double signals_so_far() {
  profil_stats s;
  profil_get_stats(&s);
  return static_cast<double>(s.signals);
}

TEST(Facility, CountsMeasureCpuTimeAt1000Hz) {
  // The kernel tick (CONFIG_HZ 250 here) caps CPU-time timers below
  // 1000 signals/s; overrun-weighted samples still count 1000 per second.
  Report r = in_child([](Report& r) {
    profil_set_clock(PROFIL_CLOCK_CPU, 1000);
    Whole w;
    r.v[0] = w.start();
    r.v[1] = burn(1.0, hot_a);
    stop_profil();
    r.v[2] = static_cast<double>(w.total());
    profil_stats s;
    profil_get_stats(&s);
    r.v[3] = static_cast<double>(s.signals);
    r.v[4] = static_cast<double>(w.in(a_low(), a_high()));
  });
  ASSERT_EQ(r.v[0], 0);
  const double per_second = r.v[2] / r.v[1];
  // The kernel reports a CPU-time timer's expirations when it checks it, at
  // a tick that finds the thread running; what ran since the last check is
  // not reported when profiling stops. On a busy machine checks come
  // rarely (12 in a CPU-second seen), so the shortfall allowed is two mean
  // gaps between signals beyond the 10 %.
  const double mean_weight = r.v[3] > 0 ? r.v[2] / r.v[3] : 0;
  EXPECT_LE(per_second, 1100) << "signals " << r.v[3];
  // (Beside two busy loops 863 per CPU-second was seen with 2 mean gaps of
  // 7 counts: the kernel's lag is not bounded by the gaps it does report;
  // 20 % covers what was measured.)
  EXPECT_GE(per_second, 800 - 2 * mean_weight / r.v[1]) << "signals " << r.v[3];
  EXPECT_GT(r.v[4] / r.v[2], 0.9) << "the hot function holds the samples";
}

TEST(Facility, PerfClockDelivers4000HzOnEveryThread) {
  Report r = in_child([](Report& r) {
    if (profil_set_clock(PROFIL_CLOCK_PERF, 4000) != 0) { r.v[0] = -1; return; }
    Whole w;
    r.v[0] = w.start();
    r.v[5] = profil_active_clock();
    profil_stats before;
    profil_get_stats(&before);
    double cpu_b = 0;
    pthread_t t;
    pthread_create(&t, nullptr, [](void* out) -> void* {
      *static_cast<double*>(out) = burn(0.5, hot_b);
      return nullptr;
    }, &cpu_b);
    r.v[1] = burn(0.5, hot_a);
    pthread_join(t, nullptr);
    stop_profil();
    profil_stats after;
    profil_get_stats(&after);
    r.v[2] = cpu_b;
    r.v[3] = static_cast<double>(w.in(a_low(), a_high()));
    r.v[4] = static_cast<double>(w.in(b_low(), b_high()));
    r.v[6] = static_cast<double>(after.signals - before.signals);
  });
  if (r.v[0] == -1 || static_cast<int>(r.v[5]) != PROFIL_CLOCK_PERF) GTEST_SKIP() << "perf_event_open refused here";
  ASSERT_EQ(r.v[0], 0);
  // >= 95 % of 4000 samples per CPU-second, in each thread.
  EXPECT_GE(r.v[3] / r.v[1], 0.95 * 4000) << "main thread";
  EXPECT_GE(r.v[4] / r.v[2], 0.95 * 4000) << "second thread";
  RecordProperty("signals_per_cpu_second", std::to_string(r.v[6] / (r.v[1] + r.v[2])));
}

// Makes perf_event_open fail with EACCES in this process, as a kernel with
// perf_event_paranoid 3 (or a container's seccomp profile) would.
bool deny_perf_event_open() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

TEST(Facility, AutoClockFallsBackToCpuTimersWithAReason) {
  Report r = in_child([](Report& r) {
    r.v[0] = deny_perf_event_open();
    profil_set_clock(PROFIL_CLOCK_AUTO, 1000);
    Whole w;
    r.v[1] = w.start();
    r.v[2] = profil_active_clock();
    double cpu = burn(0.3, hot_a);
    stop_profil();
    r.v[3] = static_cast<double>(w.total()) / cpu;
    const char* why = profil_clock_fallback_reason();
    r.v[4] = why != nullptr && std::strstr(why, "perf_event_open") != nullptr &&
             std::strstr(why, "Permission denied") != nullptr;
  });
  ASSERT_EQ(r.v[0], 1) << "seccomp unavailable";
  EXPECT_EQ(r.v[1], 0);
  EXPECT_EQ(r.v[2], PROFIL_CLOCK_CPU);
  // The requested rate, less what a busy machine's kernel reports late (see
  // CountsMeasureCpuTimeAt1000Hz).
  EXPECT_LE(r.v[3], 1100) << "the fallback samples at the requested rate";
  EXPECT_GE(r.v[3], 800) << "the fallback samples at the requested rate";
  EXPECT_EQ(r.v[4], 1) << "the reason names the call and the error";
}

TEST(Facility, TwoBusyThreadsAreSampledInProportionToTheirCpuTime) {
  Report r = in_child([](Report& r) {
    profil_set_clock(PROFIL_CLOCK_CPU, 1000);
    Whole w;
    w.start();
    double cpu_b = 0;
    pthread_t t;
    pthread_create(&t, nullptr, [](void* out) -> void* {
      *static_cast<double*>(out) = burn(0.3, hot_b);
      return nullptr;
    }, &cpu_b);
    r.v[0] = burn(0.6, hot_a);
    pthread_join(t, nullptr);
    stop_profil();
    r.v[1] = cpu_b;
    r.v[2] = static_cast<double>(w.in(a_low(), a_high()));
    r.v[3] = static_cast<double>(w.in(b_low(), b_high()));
    r.v[4] = signals_so_far();
    profil_stats st;
    profil_get_stats(&st);
    r.v[5] = static_cast<double>(st.ticks);
  });
  const double n = r.v[2] + r.v[3];
  const double expected_a = r.v[0] / (r.v[0] + r.v[1]);
  ASSERT_GT(n, 600);
  EXPECT_NEAR(r.v[2], n * expected_a, weighted_tolerance(n, r.v[4], expected_a));
  // And all of it at the requested rate: every weighted tick, wherever its
  // PC fell (a tick in the threads' clock reads lands in libc), per CPU-second.
  EXPECT_NEAR(r.v[5] / (r.v[0] + r.v[1]), 1000, 100);
}

TEST(Facility, ScaleZeroTurnsProfilingOff) {
  // glibc keeps sampling into bin 0 at scale 0; the pages say it is off.
  Report r = in_child([](Report& r) {
    profil_set_clock(PROFIL_CLOCK_CPU, 1000);
    Whole w;
    r.v[0] = w.start(0);
    burn(0.2, hot_a);
    r.v[1] = static_cast<double>(w.total());
  });
  EXPECT_EQ(r.v[0], 0);
  EXPECT_EQ(r.v[1], 0);
}

TEST(Facility, ArgumentErrors) {
  Report r = in_child([](Report& r) {
    unsigned short bins[16];
    errno = 0;
    r.v[0] = profil(bins, sizeof bins, 0, 65537);
    r.v[1] = errno;
    // A read-only buffer is EFAULT at the call.
    void* ro = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    errno = 0;
    r.v[2] = profil(static_cast<unsigned short*>(ro), 4096, text_low(), 65536);
    r.v[3] = errno;
    // An unmapped one too.
    munmap(ro, 4096);
    errno = 0;
    r.v[4] = profil(static_cast<unsigned short*>(ro), 4096, text_low(), 65536);
    r.v[5] = errno;
    // Solaris' range ends at 0xffff.
    profil_set_personality(PROFIL_PERSONALITY_SOLARIS);
    errno = 0;
    r.v[6] = profil(bins, sizeof bins, 0, 0x10000);
    r.v[7] = errno;
    // OpenBSD: a second buffer is EALREADY, the same one is fine.
    profil_set_personality(PROFIL_PERSONALITY_OPENBSD);
    unsigned short other[16];
    r.v[8] = profil(bins, sizeof bins, text_low(), 65536);
    errno = 0;
    r.v[9] = profil(other, sizeof other, text_low(), 65536);
    r.v[10] = errno;
    r.v[11] = profil(bins, sizeof bins, text_low(), 32768);
    stop_profil();
    r.v[12] = profil(other, sizeof other, text_low(), 65536);  // after off: allowed
    stop_profil();
  });
  EXPECT_EQ(r.v[0], -1);
  EXPECT_EQ(r.v[1], EINVAL);
  EXPECT_EQ(r.v[2], -1);
  EXPECT_EQ(r.v[3], EFAULT);
  EXPECT_EQ(r.v[4], -1);
  EXPECT_EQ(r.v[5], EFAULT);
  EXPECT_EQ(r.v[6], -1);
  EXPECT_EQ(r.v[7], EINVAL);
  EXPECT_EQ(r.v[8], 0);
  EXPECT_EQ(r.v[9], -1);
  EXPECT_EQ(r.v[10], EALREADY);
  EXPECT_EQ(r.v[11], 0);
  EXPECT_EQ(r.v[12], 0);
}

TEST(Facility, PersonalityFromEnvironmentAndOffRules) {
  Report r = in_child([](Report& r) {
    r.v[0] = profil_get_personality();
    r.v[1] = profil_personality_from_name("osf1");
    r.v[2] = profil_personality_from_name("vms");
    // OSF/1 and Solaris: scale 1 turns profiling off.
    profil_set_clock(PROFIL_CLOCK_CPU, 1000);
    for (int i = 0; i < 2; ++i) {
      profil_set_personality(i == 0 ? PROFIL_PERSONALITY_OSF1 : PROFIL_PERSONALITY_SOLARIS);
      Whole w;
      w.start(1);
      burn(0.1, hot_a);
      r.v[3 + i] = static_cast<double>(w.total());
      stop_profil();
    }
    // bsd: scale 1 is on: all of hot_a lands in bin 0.
    // Long enough that the kernel checks the timer while hot_a runs even
    // on a busy machine (it may go ~100 ms without a check).
    profil_set_personality(PROFIL_PERSONALITY_BSD);
    AtHotA h;
    h.start(1);
    burn(0.5, hot_a);
    stop_profil();
    r.v[5] = h.bins[0];
  });
  EXPECT_EQ(r.v[0], PROFIL_PERSONALITY_BSD);
  EXPECT_EQ(r.v[1], PROFIL_PERSONALITY_OSF1);
  EXPECT_EQ(r.v[2], -1);
  EXPECT_EQ(r.v[3], 0);
  EXPECT_EQ(r.v[4], 0);
  EXPECT_GT(r.v[5], 0);
}

TEST(Facility, BinsSaturateInsteadOfWrapping) {
  // glibc lets a bin wrap to 0; here it stays at 65535.
  Report r = in_child([](Report& r) {
    profil_set_clock(PROFIL_CLOCK_CPU, 4000);
    AtHotA h;
    h.bins[0] = 65500;
    h.start(2);
    // Until the bin reaches its top (35 ticks), however late the clock's
    // first ticks come on a loaded machine (a CI run once had none in
    // 0.2 s of CPU), then 800 ticks more, which a wrapping bin would not
    // survive at 65535.
    double cpu = 0;
    while (h.bins[0] < 65535 && cpu < 10) cpu += burn(0.1, hot_a);
    burn(0.2, hot_a);
    stop_profil();
    r.v[0] = h.bins[0];
    r.v[1] = cpu;
  });
  EXPECT_LT(r.v[1], 10) << "the bin never reached 65535 in 10 s of CPU";
  EXPECT_EQ(r.v[0], 65535);
}

TEST(Facility, SolarisStopsWhenACountReaches32767) {
  Report r = in_child([](Report& r) {
    profil_set_personality(PROFIL_PERSONALITY_SOLARIS);
    profil_set_clock(PROFIL_CLOCK_CPU, 4000);
    AtHotA h;
    h.bins[0] = 32700;
    h.start(2);
    burn(0.2, hot_a);  // 800 ticks: reaches 32767, then stops
    r.v[0] = h.bins[0];
    const uint64_t total = h.total();
    burn(0.1, hot_a);
    r.v[1] = static_cast<double>(h.total() - total);  // nothing after the stop
    stop_profil();
  });
  EXPECT_EQ(r.v[0], 32767);
  EXPECT_EQ(r.v[1], 0);
}

TEST(Facility, ABufferThatGoesAwayTurnsProfilingOffAndTheProcessLives) {
  // glibc's profil crashes the program here.
  Report r = in_child([](Report& r) {
    profil_set_clock(PROFIL_CLOCK_CPU, 1000);
    const size_t size = 4096;  // at scale 2, 2048 bins of 64 KiB: all of the program
    void* buffer = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    r.v[0] = profil(static_cast<unsigned short*>(buffer), size, a_low() & ~uintptr_t{0xffff}, 2);
    burn(0.05, hot_a);
    munmap(buffer, size);
    burn(0.3, hot_a);  // samples now fault: profiling turns itself off
    profil_stats s;
    profil_get_stats(&s);
    r.v[1] = static_cast<double>(s.buffer_faults);
    r.v[2] = 1;  // still alive
  });
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.v[0], 0);
  EXPECT_EQ(r.v[2], 1);
  EXPECT_EQ(r.v[1], 1) << "one fault, then profiling is off";
}

TEST(Facility, ABufferThatGoesAwayInAThreadThatBlocksEverySignalIsStillAReturnedFault) {
  // Issue 32: su blocks every signal while it waits for its shell, and a
  // blocked SIGSEGV is not held for a fault: the kernel kills (force_sig).
  // The fault guard's loads must recover there too (sampler/fault_signals.h).
  Report r = in_child([](Report& r) {
    profil_set_clock(PROFIL_CLOCK_CPU, 1000);
    const size_t size = 4096;
    void* buffer = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    r.v[0] = profil(static_cast<unsigned short*>(buffer), size, a_low() & ~uintptr_t{0xffff}, 2);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, nullptr);
    burn(0.05, hot_a);
    munmap(buffer, size);
    burn(0.3, hot_a);  // a sample's store faults with SIGSEGV blocked
    profil_stats s;
    profil_get_stats(&s);
    r.v[1] = static_cast<double>(s.buffer_faults);
    sigset_t now;
    sigprocmask(SIG_BLOCK, nullptr, &now);
    r.v[2] = sigismember(&now, SIGSEGV);  // the program's mask as it set it
    r.v[3] = 1;                            // still alive
  });
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.v[0], 0);
  EXPECT_EQ(r.v[3], 1);
  EXPECT_EQ(r.v[1], 1) << "one fault, then profiling is off";
  EXPECT_EQ(r.v[2], 1);
}

TEST(Facility, ForkKeepsProfilingInParentAndChild) {
  // POSIX gives a child no interval timers, so glibc's child is silent.
  Report r = in_child([](Report& r) {
    profil_set_clock(PROFIL_CLOCK_CPU, 1000);
    Whole w;
    w.start();
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_t child = fork();
    if (child == 0) {
      const uint64_t before = w.in(b_low(), b_high());
      double cpu = burn(0.3, hot_b);
      // Stopped before it is read, as the parent's is: the stop delivers
      // the periods the kernel had not reported yet (on a busy machine a
      // CPU-time timer reports late: 786 per CPU-second read while running).
      const double flushed = stop_profil_counting_the_flush();
      double got[3] = {static_cast<double>(w.in(b_low(), b_high()) - before), cpu, flushed};
      if (write(fds[1], got, sizeof got) != sizeof got) _exit(1);
      _exit(0);
    }
    double cpu = burn(0.3, hot_a);
    double got[3] = {};
    if (read(fds[0], got, sizeof got) != sizeof got) return;
    int status = 0;
    waitpid(child, &status, 0);
    const double flushed = stop_profil_counting_the_flush();
    r.v[0] = static_cast<double>(w.in(a_low(), a_high())) / cpu;
    r.v[1] = got[0] / got[1];
    r.v[2] = status;
    r.v[3] = flushed / cpu;
    r.v[4] = got[2] / got[1];
  });
  // The rate within ±15 %; what the stop delivered may have landed
  // outside the function (a thread's last sample in burn's own loop), so
  // it counts toward the lower bound only.
  EXPECT_LE(r.v[0], 1150) << "parent";
  EXPECT_GE(r.v[0] + r.v[3], 850) << "parent (" << r.v[3] << " per CPU-second delivered at the stop)";
  EXPECT_LE(r.v[1], 1150) << "child";
  EXPECT_GE(r.v[1] + r.v[4], 850) << "child (" << r.v[4] << " per CPU-second delivered at the stop)";
  EXPECT_EQ(r.v[2], 0);
}

TEST(Facility, ExecTurnsProfilingOffAndTheNewProgramLives) {
  // glibc's ITIMER_PROF survives exec and the new program dies of SIGPROF.
  const std::string target = std::string(std::getenv("PROFIL_BUILD_DIR")) + "/bin/facility_exec_target";
  Report r = in_child([&](Report& r) {
    profil_set_clock(PROFIL_CLOCK_CPU, 4000);
    Whole w;
    w.start();
    burn(0.05, hot_a);
    pid_t child = fork();
    if (child == 0) {
      burn(0.05, hot_a);  // the child samples, so a signal may be pending at exec
      execl(target.c_str(), target.c_str(), "0.5", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    r.v[0] = status;
    stop_profil();
  });
  const int status = static_cast<int>(r.v[0]);
  EXPECT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

TEST(Facility, BlockedThreadsAreNeverInterrupted) {
  // A thread in poll() or read() while another burns CPU: per-thread
  // CPU-time timers signal only the thread whose CPU time ran, so the
  // sleeper sees no EINTR (poll returns EINTR even under SA_RESTART).
  Report r = in_child([](Report& r) {
    profil_set_clock(PROFIL_CLOCK_CPU, 1000);
    Whole w;
    w.start();
    int fds[2];
    if (pipe(fds) != 0) return;
    struct Sleeper { int fd; int poll_result; int poll_errno; ssize_t read_result; int read_errno; } s{fds[0], 0, 0, 0, 0};
    pthread_t t;
    pthread_create(&t, nullptr, [](void* p) -> void* {
      auto* s = static_cast<Sleeper*>(p);
      pollfd pfd{s->fd, POLLIN, 0};
      s->poll_result = poll(&pfd, 1, -1);
      s->poll_errno = s->poll_result < 0 ? errno : 0;
      char c;
      s->read_result = read(s->fd, &c, 1);
      s->read_errno = s->read_result < 0 ? errno : 0;
      return nullptr;
    }, &s);
    burn(0.4, hot_a);
    if (write(fds[1], "x", 1) != 1) return;
    pthread_join(t, nullptr);
    stop_profil();
    r.v[0] = s.poll_result;
    r.v[1] = s.poll_errno;
    r.v[2] = static_cast<double>(s.read_result);
    r.v[3] = s.read_errno;
  });
  EXPECT_EQ(r.v[0], 1) << "poll errno " << r.v[1];
  EXPECT_EQ(r.v[2], 1) << "read errno " << r.v[3];
}

TEST(Facility, AProgramsOwnSigprofHandlerIsNotTrampled) {
  Report r = in_child([](Report& r) {
    struct sigaction action{};
    action.sa_handler = [](int) {};
    sigaction(SIGPROF, &action, nullptr);
    Whole w;
    errno = 0;
    r.v[0] = w.start();
    r.v[1] = errno;
    struct sigaction now{};
    sigaction(SIGPROF, nullptr, &now);
    r.v[2] = now.sa_handler == action.sa_handler;
  });
  EXPECT_EQ(r.v[0], -1);
  EXPECT_EQ(r.v[1], EBUSY);
  EXPECT_EQ(r.v[2], 1);
}

TEST(Sprofil, RegionsOverflowAndTheRealPeriod) {
  Report r = in_child([](Report& r) {
    profil_set_clock(PROFIL_CLOCK_CPU, 1000);
    std::vector<unsigned int> a((a_high() - a_low()) / 4 + 1), b((b_high() - b_low()) / 4 + 1);
    unsigned int overflow = 0;
    struct prof regions[3] = {
        {a.data(), a.size() * 4, a_low(), 65536},
        {b.data(), b.size() * 4, b_low(), 65536},
        {&overflow, sizeof overflow, 0, 2},
    };
    timeval tv{};
    r.v[0] = sprofil(regions, 3, &tv, PROF_UINT);
    r.v[1] = tv.tv_sec * 1e6 + tv.tv_usec;
    // Alternate between the two regions often: glibc sends the first sample
    // after each region change to the overflow bin.
    double cpu_a = 0, cpu_b = 0;
    for (int i = 0; i < 60; ++i) {
      cpu_a += burn(0.006, hot_a);
      cpu_b += burn(0.003, hot_b);
    }
    r.v[9] = signals_so_far();
    profil_stats before{}, after{};
    profil_get_stats(&before);
    r.v[8] = sprofil(nullptr, 0, nullptr, 0);
    profil_get_stats(&after);
    // Stopping delivers what the kernel had not reported yet, at the last
    // sampled PC: one weight of its own (tens of ms beside a busy loop).
    r.v[10] = static_cast<double>(after.ticks - before.ticks);
    uint64_t sa = 0, sb = 0;
    for (unsigned v : a) sa += v;
    for (unsigned v : b) sb += v;
    r.v[2] = static_cast<double>(sa);
    r.v[3] = static_cast<double>(sb);
    r.v[4] = overflow;
    r.v[5] = cpu_a;
    r.v[6] = cpu_b;
    // Off: nothing more is counted.
    burn(0.05, hot_a);
    uint64_t sa2 = 0;
    for (unsigned v : a) sa2 += v;
    r.v[7] = static_cast<double>(sa2 - sa);
  });
  ASSERT_EQ(r.v[0], 0);
  EXPECT_EQ(r.v[1], 1000) << "tvp reports the period really sampled at (1 ms at 1000 Hz)";
  const double n = r.v[2] + r.v[3] + r.v[4];
  const double in_regions = r.v[2] + r.v[3];
  // Only the loop's clock_gettime calls (in the vDSO) fall outside, and
  // the unreported time delivered when sampling stopped, when the last
  // sample was there (weighted draws: a late timer's signal carries its
  // overrun).
  EXPECT_LT(r.v[4], 0.1 * n + weighted_tolerance(n, r.v[9], 0.1) + r.v[10])
      << "overflow " << r.v[4] << " of " << n << " (" << r.v[10] << " delivered at the stop)";
  const double p = r.v[5] / (r.v[5] + r.v[6]);
  EXPECT_NEAR(r.v[2], in_regions * p, weighted_tolerance(in_regions, r.v[9], p));
  EXPECT_EQ(r.v[7], 0);
  EXPECT_EQ(r.v[8], 0);
}

TEST(Sprofil, ArgumentErrors) {
  Report r = in_child([](Report& r) {
    unsigned short bins[8];
    struct prof bad_scale = {bins, sizeof bins, 0x1000, 65537};
    errno = 0;
    r.v[0] = sprofil(&bad_scale, 1, nullptr, 0);
    r.v[1] = errno;
    struct prof bad_buffer = {reinterpret_cast<void*>(8), 64, 0x1000, 65536};
    errno = 0;
    r.v[2] = sprofil(&bad_buffer, 1, nullptr, 0);
    r.v[3] = errno;
    errno = 0;
    r.v[4] = sprofil(&bad_buffer, -1, nullptr, 0);
    r.v[5] = errno;
  });
  EXPECT_EQ(r.v[0], -1);
  EXPECT_EQ(r.v[1], EINVAL);
  EXPECT_EQ(r.v[2], -1);
  EXPECT_EQ(r.v[3], EFAULT);
  EXPECT_EQ(r.v[4], -1);
  EXPECT_EQ(r.v[5], EINVAL);
}

TEST(Pcsample, RecordsRawPcsUntilFull) {
  Report r = in_child([](Report& r) {
    profil_set_clock(PROFIL_CLOCK_CPU, 1000);
    std::vector<uintptr_t> first(100000), second(50);
    r.v[0] = pcsample(first.data(), static_cast<long>(first.size()));
    double cpu = burn(1.0, hot_a);
    r.v[1] = pcsample(second.data(), static_cast<long>(second.size()));  // count of the first
    burn(0.3, hot_a);
    r.v[2] = pcsample(nullptr, 0);  // stops; the second buffer filled up at 50
    size_t in_a = 0;
    for (long i = 0; i < static_cast<long>(r.v[1]); ++i)
      if (first[i] >= a_low() && first[i] < a_high()) ++in_a;
    r.v[3] = static_cast<double>(in_a);
    r.v[4] = cpu;
    errno = 0;
    r.v[5] = pcsample(second.data(), -1);
    r.v[6] = errno;
  });
  EXPECT_EQ(r.v[0], 0);
  // One PC per tick. The first buffer holds the ticks the kernel reported
  // while it was installed; on a busy machine the kernel reports a CPU-time
  // timer's expirations up to ~100 ms late (they land in the second
  // buffer), hence the lower bound.
  EXPECT_LE(r.v[1] / r.v[4], 1100) << "one PC per tick";
  EXPECT_GE(r.v[1] / r.v[4], 750) << "one PC per tick";
  EXPECT_GT(r.v[3] / r.v[1], 0.75) << "most PCs are in hot_a (the rest: the loop's clock reads)";
  EXPECT_EQ(r.v[2], 50);
  EXPECT_EQ(r.v[5], -1);
  EXPECT_EQ(r.v[6], EINVAL);
}

// The wall clock: a thread blocked in poll() is sampled without being
// interrupted (poll and nanosleep run their full time and return 0, where a
// signal would end them with EINTR), its samples land in libc's poll at one
// per millisecond of wall time, and a running thread is sampled by CPU time
// as on the cpu clock. On the cpu clock the blocked thread has no samples.
// The seconds the calling thread has waited on a run queue, woken but not
// running (schedstat's run_delay): time the kernel reports as running, so
// no wall clock counts it as blocked.
double run_queue_seconds() {
  char text[128] = {};
  const int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  const ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
  if (fd >= 0) close(fd);
  unsigned long long on_cpu = 0, delay = 0;
  return n > 0 && std::sscanf(text, "%llu %llu", &on_cpu, &delay) == 2 ? delay / 1e9 : 0;
}

Report blocked_and_running(profil_clock clock) {
  return in_child([clock](Report& r) {
    profil_set_clock(clock, 1000);
    std::vector<uintptr_t> pcs(200000);
    pcsample(pcs.data(), static_cast<long>(pcs.size()));
    struct Blocked {
      double poll_seconds = 0, sleep_seconds = 0;
      int poll_result = -2, sleep_result = -2;
    } blocked;
    pthread_t thread;
    pthread_create(
        &thread, nullptr,
        [](void* opaque) -> void* {
          auto* b = static_cast<Blocked*>(opaque);
          timespec t0, t1;
          clock_gettime(CLOCK_MONOTONIC, &t0);
          const double waited = run_queue_seconds();  // within [t0, t1]: poll_seconds stays >= 0.3
          b->poll_result = poll(nullptr, 0, 300);
          const double waited_after = run_queue_seconds();
          clock_gettime(CLOCK_MONOTONIC, &t1);
          // Blocked in poll: its length less the wait for a CPU after it
          // (tens of ms beside two busy loops, where the bound is 18).
          b->poll_seconds = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9 -
                            (waited_after - waited);
          timespec nap{0, 100'000'000};
          b->sleep_result = nanosleep(&nap, nullptr);
          clock_gettime(CLOCK_MONOTONIC, &t0);
          b->sleep_seconds = (t0.tv_sec - t1.tv_sec) + (t0.tv_nsec - t1.tv_nsec) * 1e-9;
          return nullptr;
        },
        &blocked);
    timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    const double cpu = burn(0.3, hot_a);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    pthread_join(thread, nullptr);
    const long n = pcsample(nullptr, 0);
    long in_poll = 0, in_a = 0;
    for (long i = 0; i < n; ++i) {
      if (pcs[i] >= a_low() && pcs[i] < a_high()) {
        ++in_a;
        continue;
      }
      Dl_info info;
      if (dladdr(reinterpret_cast<void*>(pcs[i]), &info) != 0 && info.dli_sname != nullptr &&
          std::strstr(info.dli_sname, "poll") != nullptr)
        ++in_poll;
    }
    r.v[0] = blocked.poll_result;
    r.v[1] = blocked.poll_seconds;
    r.v[2] = blocked.sleep_result;
    r.v[3] = blocked.sleep_seconds;
    r.v[4] = static_cast<double>(in_poll);
    r.v[5] = static_cast<double>(in_a);
    r.v[6] = cpu;
    r.v[7] = profil_active_clock();
    r.v[8] = (w1.tv_sec - w0.tv_sec) + (w1.tv_nsec - w0.tv_nsec) * 1e-9;
  });
}

TEST(WallClock, BlockedThreadsSampledWithoutInterruption) {
  const Report r = blocked_and_running(PROFIL_CLOCK_WALL);
  EXPECT_EQ(r.v[7], PROFIL_CLOCK_WALL);
  EXPECT_EQ(r.v[0], 0) << "poll ran to its timeout, not EINTR";
  EXPECT_GE(r.v[1], 0.3);
  EXPECT_EQ(r.v[2], 0) << "nanosleep was not interrupted";
  EXPECT_GE(r.v[3], 0.1);
  // One count per millisecond the thread spent in poll. The watcher samples
  // a thread's state once a period and weighs it by the time since its last
  // look, so the error is the two edges (a period each, more if the watcher
  // was late: 5 % of the interval allowed for that on a loaded machine).
  const double expected_poll = r.v[1] * 1000;
  EXPECT_NEAR(r.v[4], expected_poll, 0.05 * expected_poll + 3);
  // The running thread: its CPU time, as on the cpu clock (PCs in hot_a;
  // the rest are its clock reads). Time it waited for a CPU on a busy
  // machine is not counted (the kernel reports a runnable thread as
  // running), but wall time is the ceiling whatever the kernel does.
  EXPECT_GE(r.v[5], 0.75 * r.v[6] * 1000);
  EXPECT_LE(r.v[5], 1.05 * r.v[8] * 1000 + 3);
  std::printf("wall clock: poll %.0f counts for %.3f s, hot_a %.0f counts for %.3f s CPU in %.3f s\n", r.v[4], r.v[1],
              r.v[5], r.v[6], r.v[8]);
}

TEST(WallClock, TheCpuClockDoesNotSeeBlockedThreads) {
  const Report r = blocked_and_running(PROFIL_CLOCK_CPU);
  EXPECT_EQ(r.v[0], 0);
  EXPECT_EQ(r.v[4], 0) << "no CPU time in poll";
  EXPECT_NEAR(r.v[5], r.v[6] * 1000, 0.25 * r.v[6] * 1000);
}

TEST(CxxApi, ScopedProfileCountsItsRange) {
  Report r = in_child([](Report& r) {
    profil_set_clock(PROFIL_CLOCK_CPU, 1000);
    uint64_t in_a = 0, total = 0;
    double cpu;
    {
      profiling::ScopedProfile scope(a_low(), a_high(), 4);
      cpu = burn(0.3, hot_a);
      scope.stop();
      in_a = scope.count_in(a_low(), a_high());
      total = scope.total();
    }
    r.v[0] = static_cast<double>(in_a) / cpu;
    r.v[1] = static_cast<double>(total - in_a);
  });
  EXPECT_NEAR(r.v[0], 1000, 150);
  EXPECT_EQ(r.v[1], 0);
}

}  // namespace
