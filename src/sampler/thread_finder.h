// Threads created after sampling started, in a program without libprofil's
// pthread_create wrapper: a static program (libprofil.a has no interposers,
// src/CMakeLists.txt) or a dynamic one linked with libprofil.a.
//
// There, no code of ours runs when a thread starts, so a watcher thread
// looks for new threads in /proc/self/task and gives each its own clock. It
// wakes after every kScanEveryCpuNs of the process's CPU time
// (clock_nanosleep on CLOCK_PROCESS_CPUTIME_ID), not of wall time: an idle
// program is never woken, and a new thread loses at most that much CPU
// time (plus the kernel tick that checks the clock) before its own clock
// runs, however many threads share the CPU. The same pass deletes the
// clocks of threads that have exited (no key destructor tells us).
//
// Why not a process-wide CPU-time timer instead (glibc's ITIMER_PROF): it
// counts every thread's time, but the kernel chooses which thread takes
// the signal; in Linux 6.1 (Debian 12's) it is the main thread whenever
// that thread does not block the signal (complete_signal() in
// kernel/signal.c), so a main thread waiting in pthread_join would take
// every sample of its workers.
// Why not the wrapper itself: in a static link the real pthread_create is
// reachable only as glibc's private __pthread_create_2_1, and a reference
// to that breaks every dynamic link of libprofil.a.
//
// NOT async-signal-safe; under the sampler's control lock unless said.
#ifndef PROFIL_SAMPLER_THREAD_FINDER_H
#define PROFIL_SAMPLER_THREAD_FINDER_H

#include <cstdint>

namespace profiling::sampler {

inline constexpr int64_t kScanEveryCpuNs = 10'000'000;

// Starts the watcher once per process, where the wrapper is not linked.
void start_thread_finder();
// In a forked child (the watcher did not survive the fork): a new one, if
// the parent had one.
void restart_thread_finder_in_child();
// True while a watcher runs in this process.
bool thread_finder_running();

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_THREAD_FINDER_H
