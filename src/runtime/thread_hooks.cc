// pthread_create, interposed: every thread the program creates attaches its
// own sampling clock as its first act and releases it as its last (a
// pthread key destructor runs on return and on pthread_exit). Under
// `profil run` each thread also gets an alternate signal stack, so that its
// stack overflow writes the profile as the main thread's does.
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>

#include <new>

#include "runtime/export.h"
#include "runtime/preload.h"
#include "sampler/program_mask.h"
#include "sampler/signal_front.h"
#include "sampler/sampler.h"

// Tells the sampler that this wrapper is linked, so no thread finder is
// needed (sampler/thread_finder.h).
namespace profiling::sampler {
extern const bool g_thread_creation_interposed;
const bool g_thread_creation_interposed = true;
}  // namespace profiling::sampler

namespace profiling::runtime {
namespace {

struct ThreadStart {
  void* (*routine)(void*);
  void* arg;
  // The creator's SIGPROF as the program sees it (sampler/program_mask.h):
  // a new thread inherits its creator's mask (pthread_create(3)).
  bool blocks_sampling_signal;
};

pthread_key_t g_exit_key;
pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

// The key's value: the thread's alternate stack, or the key's own address
// (non-null, so the destructor runs) when it has none of ours.
void on_thread_exit(void* value) {
  sampler::thread_exiting();
  if (value != &g_exit_key) remove_alternate_stack(value);
}
void create_key() { pthread_key_create(&g_exit_key, on_thread_exit); }

void* thread_trampoline(void* opaque) {
  ThreadStart start = *static_cast<ThreadStart*>(opaque);
  delete static_cast<ThreadStart*>(opaque);
  if (start.blocks_sampling_signal) {
    // A program with a SIGPROF handler of its own gets the block for real:
    // it may lift it with the raw system call, which no wrapper sees (cgo
    // creates threads from pthread_sigmask's full mask, then the Go runtime
    // unblocks with rt_sigprocmask; kept apart, Go's own profiler lost
    // half its samples). Without one, nothing of the program's needs
    // SIGPROF, and the block stays the program's view only, so the
    // thread's drains still reach it (xz's workers).
    if (sampler::front_program_has_handler(SIGPROF))
      sampler::set_kernel_blocks_sampling_signal(true);
    else
      sampler::set_program_blocks_sampling_signal(true);
  }
  void* stack = preload_active() ? install_alternate_stack() : nullptr;
  pthread_setspecific(g_exit_key, stack != nullptr ? stack : &g_exit_key);
  sampler::thread_started();
  return start.routine(start.arg);
}

}  // namespace
}  // namespace profiling::runtime

extern "C" PROFIL_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                                            void* (*routine)(void*), void* arg) {
  using create_fn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static auto real = reinterpret_cast<create_fn>(::dlsym(RTLD_NEXT, "pthread_create"));
  using namespace profiling::runtime;
  // Deferred perf rings open now: the new thread inherits only events that
  // exist when it is created (sampler/perf_ring.cc).
  profiling::sampler::before_thread_creation();
  pthread_once(&g_key_once, create_key);
  auto* start = new (std::nothrow) ThreadStart{routine, arg, profiling::sampler::program_blocks_sampling_signal()};
  if (start == nullptr) return real(thread, attr, routine, arg);
  int result = real(thread, attr, thread_trampoline, start);
  if (result != 0) delete start;
  return result;
}
