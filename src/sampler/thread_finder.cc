// The thread finder (see thread_finder.h).
#include "sampler/thread_finder.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <cerrno>
#include <cstdio>

#include "sampler/sampler.h"

namespace profiling::sampler {

// Defined by runtime/thread_hooks.cc, the pthread_create wrapper: linked
// into libprofil.so, absent from libprofil.a (a weak reference pulls no
// archive member, so in a static program its address is null).
extern const bool g_thread_creation_interposed __attribute__((weak));

namespace {

bool g_launched = false;  // control lock

void* find_threads(void*) {
  // No home for the program's process-directed signals, and not sampled.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  thread_not_sampled();
  for (;;) {
    timespec until{};
    if (::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &until) != 0) return nullptr;
    until.tv_nsec += kScanEveryCpuNs;
    until.tv_sec += until.tv_nsec / 1'000'000'000;
    until.tv_nsec %= 1'000'000'000;
    int error;
    while ((error = ::clock_nanosleep(CLOCK_PROCESS_CPUTIME_ID, TIMER_ABSTIME, &until, nullptr)) == EINTR) {
    }
    if (error != 0) return nullptr;
    attach_new_threads();
  }
}

}  // namespace

void start_thread_finder() {
  if (g_launched || &g_thread_creation_interposed != nullptr) return;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_t thread;
  if (pthread_create(&thread, &attr, find_threads, nullptr) == 0) {
    g_launched = true;
    pthread_setname_np(thread, "profil-threads");
  } else {
    std::fprintf(stderr, "profil: the thread finder could not start; threads created from now on are not sampled\n");
  }
  pthread_attr_destroy(&attr);
}

void restart_thread_finder_in_child() {
  if (!g_launched) return;
  g_launched = false;
  start_thread_finder();
}

bool thread_finder_running() { return g_launched; }

}  // namespace profiling::sampler
