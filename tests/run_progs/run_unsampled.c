/* The test program of the unsampled-time tests (tests/run_test.cc, Run.*
 * Unsampled*, Run.Closefrom*): threads and closes that a sampler cannot see
 * through. Each part runs for a fixed amount of its thread's CPU time
 * (never wall time) and the program prints what it measured:
 *   cpu <name> <tid> <seconds>     a thread's CPU time
 *   process <seconds>              the process's CPU time at the end
 * Modes (argv[1]):
 *   blocked    a worker thread blocks every signal (as xz's workers do,
 *              with pthread_sigmask: the sampler still reaches it)
 *   rawblocked the same with the raw rt_sigprocmask system call, which
 *              the signal clocks cannot see past
 *              and burns 0.5 s while main burns 0.5 s;
 *   deep       burns 0.3 s under 64 frames of 1 KiB each
 *   closefrom  burns 0.2 s, calls closefrom(3) (as daemons do), burns 0.6 s;
 *   dup2       the same, pointing descriptors 3..63 at /dev/null with dup2
 *              (which closes each target first);
 *   rawclose   the same with a raw close_range system call, which no
 *              interposed function sees;
 *   forkblocked  burns 0.2 s, forks; the child runs a worker that blocks
 *              every signal (0.4 s, then the thread ends) beside its main
 *              thread (0.1 s) and prints "cpu child_process <pid> <s>";
 *              the parent waits for it;
 *   ringfull   the only thread blocks every signal for 0.3 s of CPU (on the
 *              perf clock nothing reads the rings meanwhile: the drain
 *              timer's signal stays pending), then unblocks and burns
 *              0.2 s more;
 *   sparse     a worker thread (a fresh stack) burns 0.5 s under a frame
 *              holding a 10 KiB array it never touches but for its first
 *              bytes: pages of its stack that are not resident, which the
 *              kernel's stack copies (the perf ring's) cannot cross;
 *   deferred   prints (to stderr) "rings_at_start <n>", the perf ring mappings it has
 *              in main (a process opens its rings after its first period
 *              of CPU time: none yet), burns CPU in 5 ms steps until one
 *              appears (2 s at most) and prints "rings_after <n>", then
 *              burns 0.3 s;
 *   blockfirst the only thread blocks SIGPROF at once, prints (to stderr)
 *              "rings_after_block <n>", burns 0.3 s in masked_burn,
 *              unblocks. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double clock_seconds(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Runs for `seconds` of this thread's CPU time. */
static void burn(double seconds) {
  volatile double sink = 0;
  const double start = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
  while (clock_seconds(CLOCK_THREAD_CPUTIME_ID) - start < seconds)
    for (long i = 0; i < 20000; ++i) sink += (double)i * 0.5;
}

static void report(const char* name) {
  printf("cpu %s %ld %.6f\n", name, (long)syscall(SYS_gettid), clock_seconds(CLOCK_THREAD_CPUTIME_ID));
}

/* The raw system call, as the Go runtime masks: what still blocks the
 * sampler's signals (pthread_sigmask and sigprocmask keep the program's
 * SIGPROF apart from the kernel's mask: src/sampler/program_mask.h). */
static void raw_setmask(const sigset_t* set, sigset_t* old) {
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, set, old, sizeof(unsigned long));
}

/* pthread_sigmask, as xz's workers block every signal: the ring still
 * samples and drains them. */
static void* blocked_worker(void* seconds) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, NULL);
  burn(seconds ? *(double*)seconds : 0.5);
  report(seconds ? "child_worker" : "worker");
  return NULL;
}

/* The raw system call: a thread the signal clocks cannot sample. */
static void* raw_blocked_worker(void* seconds) {
  sigset_t all;
  sigfillset(&all);
  raw_setmask(&all, NULL);
  burn(seconds ? *(double*)seconds : 0.5);
  report(seconds ? "child_worker" : "worker");
  return NULL;
}

/* The array's untouched pages lie between burn's frame and the return
 * address of sparse_frame. noipa and the pointer's escape keep the frame. */
__attribute__((noipa)) static void sparse_frame(double seconds) {
  volatile char big[10240];  /* within the ring's 12.8 KiB stack copies at 1000 Hz */
  big[0] = 1;
  burn(seconds);
  __asm__ volatile("" : : "r"(big) : "memory");
}

static void* sparse_worker(void* unused) {
  (void)unused;
  sparse_frame(0.5);
  report("worker");
  return NULL;
}

/* The process's perf ring buffers: mappings of perf events. */
static int perf_mappings(void) {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) return -1;
  char line[512];
  int n = 0;
  while (fgets(line, sizeof line, maps) != NULL)
    if (strstr(line, "[perf_event]") != NULL) ++n;
  fclose(maps);
  return n;
}

__attribute__((noipa)) static void masked_burn(double seconds) { burn(seconds); }

/* 64 frames of 1 KiB each between main and burn: 64 KiB of stack, more
 * than any perf ring record carries (mode deep). */
__attribute__((noipa)) static double deep_frame(int depth, double seconds) {
  volatile char pad[1024];
  pad[0] = (char)depth;
  if (depth == 0) {
    burn(seconds);
    return pad[0];
  }
  return deep_frame(depth - 1, seconds) + pad[0];
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "blocked";
  if (strcmp(mode, "blocked") == 0 || strcmp(mode, "rawblocked") == 0) {
    pthread_t worker;
    if (pthread_create(&worker, NULL, strcmp(mode, "blocked") == 0 ? blocked_worker : raw_blocked_worker, NULL) != 0)
      return 2;
    burn(0.5);
    pthread_join(worker, NULL);
  } else if (strcmp(mode, "closefrom") == 0 || strcmp(mode, "dup2") == 0 || strcmp(mode, "rawclose") == 0) {
    burn(0.2);
    fflush(stdout);
    if (strcmp(mode, "closefrom") == 0) {
      closefrom(3);
    } else if (strcmp(mode, "dup2") == 0) {
      int null = open("/dev/null", O_RDWR);
      for (int fd = 3; fd < 64; ++fd)
        if (fd != null) dup2(null, fd);
    } else {
      syscall(SYS_close_range, 3u, ~0u, 0);
    }
    burn(0.6);
  } else if (strcmp(mode, "ringfull") == 0) {
    sigset_t all, old;
    sigfillset(&all);
    /* The rings first (a single-threaded process maps them after its
     * first period), then nothing drains them for 0.3 s. */
    const double start = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
    while (perf_mappings() == 0 && clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - start < 2.0) burn(0.002);
    raw_setmask(&all, &old);
    burn(0.3);
    raw_setmask(&old, NULL);
    burn(0.2);
  } else if (strcmp(mode, "sparse") == 0) {
    pthread_t worker;
    if (pthread_create(&worker, NULL, sparse_worker, NULL) != 0) return 2;
    pthread_join(worker, NULL);
  } else if (strcmp(mode, "forkblocked") == 0) {
    burn(0.2);
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) return 2;
    if (child == 0) {
      static double seconds = 0.4;
      pthread_t worker;
      if (pthread_create(&worker, NULL, blocked_worker, &seconds) != 0) _exit(2);
      burn(0.1);
      pthread_join(worker, NULL);
      printf("cpu child_process %ld %.6f\n", (long)getpid(), clock_seconds(CLOCK_PROCESS_CPUTIME_ID));
      fflush(stdout);
      exit(0);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 3;
  } else if (strcmp(mode, "deferred") == 0) {
    fprintf(stderr, "rings_at_start %d\n", perf_mappings());
    const double start = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
    int rings = 0;
    while ((rings = perf_mappings()) == 0 && clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - start < 2.0) burn(0.005);
    fprintf(stderr, "rings_after %d\n", rings);
    burn(0.3);
  } else if (strcmp(mode, "deep") == 0) {
    deep_frame(64, 0.3);
  } else if (strcmp(mode, "blockfirst") == 0) {
    sigset_t profiling, old;
    sigemptyset(&profiling);
    sigaddset(&profiling, SIGPROF);
    sigprocmask(SIG_BLOCK, &profiling, &old);
    sigset_t now;
    sigprocmask(SIG_BLOCK, NULL, &now);
    fprintf(stderr, "rings_after_block %d sigprof_blocked %d\n", perf_mappings(), sigismember(&now, SIGPROF));
    masked_burn(0.3);
    sigprocmask(SIG_SETMASK, &old, NULL);
  } else {
    fprintf(stderr, "run_unsampled: unknown mode %s\n", mode);
    return 2;
  }
  report("main");
  printf("process %.6f\n", clock_seconds(CLOCK_PROCESS_CPUTIME_ID));
  return 0;
}
