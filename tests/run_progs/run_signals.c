/* A program that uses the signals libprofil needs for itself (issue 9: a
 * profiler must not change what the program sees). Not built for profiling;
 * tests/run_signals_test.cc runs each mode with and without `profil run`
 * and expects the same output and status.
 *
 *   own-sigprof   installs a SIGPROF handler as coreutils sort does (clean
 *                 up, then SIG_DFL and raise), burns 0.3 s of CPU, exits 0
 *   itimer        its own SIGPROF handler and ITIMER_PROF at 100 Hz for
 *                 1 s of CPU; prints "signals N foreign F cpu S", F
 *                 counting SIGPROFs that were not its timer's (SI_KERNEL)
 *   query         sigaction(SIGPROF/SIGSEGV, NULL) reports what the
 *                 program set (SIG_DFL first), an ignored SIGPROF sent to
 *                 itself is ignored
 *   raise-segv    raise(SIGSEGV): must die of it (prints nothing after)
 *   kill-prof     kill(getpid(), SIGPROF) with the default action: dies
 *   segv-handler  its own SIGSEGV handler recovers from a real fault
 *   exec-ignored  SIGPROF ignored, then exec of "disposition": the new
 *                 image must find SIGPROF still ignored (execve(2))
 *   disposition   prints SIGPROF's disposition
 *   exit-race     9 threads burn CPU, then all call exit(3) at once
 *   raw-exit      burns 0.6 s, then a raw exit_group system call (as Go
 *                 programs end): no exit handler, no _exit
 *   sigkill       burns 0.6 s, then SIGKILLs itself
 *   drop-privileges  becomes nobody (run as root), burns 0.2 s, prints done
 *   sigpipe       burns 0.2 s, then writes into a pipe nobody reads: SIGPIPE
 *   signalfd      blocks every signal and reads them from a signalfd of
 *                 them all, as daemons do: burns 0.3 s, raises SIGUSR1,
 *                 prints "got N" for each signal the signalfd holds
 *   sigwait       the same, taking them with sigtimedwait (no wait)
 *   sigwait-daemon  blocks every signal, starts two workers (which inherit
 *                 the mask) that burn 0.3 s each and then send SIGUSR1 and
 *                 SIGUSR2 to the process; main takes them with sigwait,
 *                 prints them (and any other it takes), and "workers_cpu
 *                 S" on stderr */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <pthread.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

static double process_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile double sink;
static void burn(double seconds) {
  double start = thread_cpu();
  while (thread_cpu() - start < seconds)
    for (int i = 0; i < 10000; ++i) sink += i * 0.5;
}

static void sort_like_cleanup(int signo) {
  /* coreutils sort: remove temporary files, then die of the signal. */
  signal(signo, SIG_DFL);
  raise(signo);
}

static volatile sig_atomic_t prof_signals, foreign_signals;
static void count_sigprof(int signo) {
  (void)signo;
  ++prof_signals;
}
/* ITIMER_PROF's signals come with si_code SI_KERNEL; anything else (a
 * POSIX timer's SI_TIMER, a perf counter's POLL_IN) is not the program's. */
static void count_itimer(int signo, siginfo_t *info, void *context) {
  (void)signo;
  (void)context;
  if (info->si_code == SI_KERNEL)
    ++prof_signals;
  else
    ++foreign_signals;
}

static const char *describe(int signo) {
  struct sigaction old;
  if (sigaction(signo, NULL, &old) != 0) return "error";
  if (old.sa_flags & SA_SIGINFO) return "handler";
  if (old.sa_handler == SIG_DFL) return "SIG_DFL";
  if (old.sa_handler == SIG_IGN) return "SIG_IGN";
  return "handler";
}

static sigjmp_buf recover;
static void on_segv(int signo) {
  (void)signo;
  siglongjmp(recover, 1);
}

static pthread_barrier_t all_ready;
static void *burn_then_exit(void *arg) {
  (void)arg;
  burn(0.05);
  pthread_barrier_wait(&all_ready);
  exit(0);
}

static void *burn_then_signal(void *signo) {
  burn(0.3);
  double *spent = malloc(sizeof *spent);
  *spent = thread_cpu();
  kill(getpid(), *(int *)signo);
  return spent;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "sigwait-daemon") == 0) {
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    /* One signal each: two SIGUSR1 sent before the first is taken would
     * be one. */
    static int signals[2] = {SIGUSR1, SIGUSR2};
    pthread_t workers[2];
    for (int i = 0; i < 2; ++i) pthread_create(&workers[i], NULL, burn_then_signal, &signals[i]);
    int signo = 0, got_usr1 = 0, got_usr2 = 0;
    while (!(got_usr1 && got_usr2) && sigwait(&all, &signo) == 0) {
      if (signo == SIGUSR1) got_usr1 = 1;
      else if (signo == SIGUSR2) got_usr2 = 1;
      else printf("got %d\n", signo);
    }
    printf("got %d and %d\n", SIGUSR1, SIGUSR2);
    double cpu = 0;
    for (int i = 0; i < 2; ++i) {
      void* spent = NULL;
      pthread_join(workers[i], &spent);
      cpu += *(double*)spent;
      free(spent);
    }
    fprintf(stderr, "workers_cpu %.4f\n", cpu);
    return 0;
  }
  if (strcmp(mode, "signalfd") == 0 || strcmp(mode, "sigwait") == 0) {
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    const int fd = strcmp(mode, "signalfd") == 0 ? signalfd(-1, &all, SFD_NONBLOCK) : -1;
    burn(0.3);
    raise(SIGUSR1);
    if (fd >= 0) {
      struct signalfd_siginfo info;
      while (read(fd, &info, sizeof info) == (ssize_t)sizeof info) printf("got %u\n", info.ssi_signo);
    } else {
      const struct timespec now = {0, 0};
      int signo;
      while ((signo = sigtimedwait(&all, NULL, &now)) > 0) printf("got %d\n", signo);
    }
    return 0;
  }
  if (strcmp(mode, "own-sigprof") == 0) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = sort_like_cleanup;
    sigemptyset(&action.sa_mask);
    struct sigaction old;
    sigaction(SIGPROF, NULL, &old);
    if (old.sa_handler != SIG_IGN) sigaction(SIGPROF, &action, NULL);
    burn(0.3);
    printf("done\n");
    return 0;
  }
  if (strcmp(mode, "itimer") == 0) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = count_itimer;
    action.sa_flags = SA_RESTART | SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(SIGPROF, &action, NULL);
    struct itimerval every_10ms = {{0, 10000}, {0, 10000}};
    double start = process_cpu();
    setitimer(ITIMER_PROF, &every_10ms, NULL);
    burn(1.0);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    printf("signals %d foreign %d cpu %.4f\n", (int)prof_signals, (int)foreign_signals, process_cpu() - start);
    return 0;
  }
  if (strcmp(mode, "query") == 0) {
    printf("SIGPROF %s SIGSEGV %s\n", describe(SIGPROF), describe(SIGSEGV));
    signal(SIGPROF, SIG_IGN);
    printf("SIGPROF %s\n", describe(SIGPROF));
    kill(getpid(), SIGPROF);
    signal(SIGPROF, count_sigprof);
    printf("SIGPROF %s\n", describe(SIGPROF));
    kill(getpid(), SIGPROF);
    printf("handled %d\n", (int)prof_signals);
    signal(SIGPROF, SIG_DFL);
    printf("SIGPROF %s\n", describe(SIGPROF));
    return 0;
  }
  if (strcmp(mode, "raise-segv") == 0) {
    burn(0.05);
    raise(SIGSEGV);
    printf("continued past raise(SIGSEGV)\n");
    return 0;
  }
  if (strcmp(mode, "kill-prof") == 0) {
    burn(0.05);
    kill(getpid(), SIGPROF);
    printf("continued past kill(SIGPROF)\n");
    return 0;
  }
  if (strcmp(mode, "segv-handler") == 0) {
    signal(SIGSEGV, on_segv);
    if (sigsetjmp(recover, 1) == 0) {
      volatile int *volatile nowhere = NULL;
      *nowhere = 1;
      printf("no fault\n");
      return 1;
    }
    printf("recovered\n");
    burn(0.05);
    return 0;
  }
  if (strcmp(mode, "exec-ignored") == 0) {
    signal(SIGPROF, SIG_IGN);
    execl("/proc/self/exe", argv[0], "disposition", (char *)NULL);
    return 127;
  }
  if (strcmp(mode, "disposition") == 0) {
    printf("SIGPROF %s\n", describe(SIGPROF));
    return 0;
  }
  if (strcmp(mode, "raw-exit") == 0) {
    burn(0.6);
    syscall(SYS_exit_group, 4);
  }
  if (strcmp(mode, "raw-exit-now") == 0) syscall(SYS_exit_group, 0);  /* before any sample or checkpoint */
  if (strcmp(mode, "sigpipe") == 0) {
    int fds[2];
    if (pipe(fds) != 0) return 10;
    close(fds[0]);
    burn(0.2);
    (void)!write(fds[1], "x", 1);
    return 11; /* not reached */
  }
  if (strcmp(mode, "drop-privileges") == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) return 9;
    burn(0.2);
    printf("done\n");
    return 0;
  }
  if (strcmp(mode, "sigkill") == 0) {
    burn(0.6);
    kill(getpid(), SIGKILL);
  }
  if (strcmp(mode, "exit-race") == 0) {
    enum { kThreads = 9 };
    pthread_t threads[kThreads];
    pthread_barrier_init(&all_ready, NULL, kThreads);
    for (int i = 0; i < kThreads; ++i) pthread_create(&threads[i], NULL, burn_then_exit, NULL);
    for (int i = 0; i < kThreads; ++i) pthread_join(threads[i], NULL);
    return 3; /* not reached: a thread's exit ends the process */
  }
  fprintf(stderr, "usage: run_signals MODE\n");
  return 2;
}
