/* The target of tests/outside_test.cc: a program sampled from outside
 * (profil run --outside, profil attach). Modes:
 *   spin SECONDS            burn SECONDS of CPU in spin_work, print "cpu S"
 *   serve SECONDS           print "ready", then for SECONDS: the main thread
 *                           sleeps in poll, and after 0.3 s two threads start
 *                           that burn CPU in late_thread_work; at the end print
 *                           what an attached profiler could have changed:
 *                           descriptors, threads, SIGPROF's disposition,
 *                           mappings naming profil (before and after)
 *   exec SECONDS            spin SECONDS, then exec itself in spin mode
 *   kill SECONDS            spin SECONDS, print "cpu S", then SIGKILL itself
 *   children N              fork N children one after another, each burning
 *                           0.5 ms of CPU in spin_work, then print the CPU
 *                           the kernel accounted to them and to itself:
 *                           "pid P children S self S"
 *   pool SECONDS            print "ready", then for SECONDS a thread pool
 *                           that grows and shrinks all the time: 1 to 64
 *                           threads at once, each living a few microseconds
 *   leave SECONDS           print "ready", wait for SIGUSR1, then fork a
 *                           child that burns SECONDS of CPU, tells the
 *                           parent, and burns on (killed, else 120 s); the parent
 *                           prints "child PID" and exits, leaving it running
 *   title SECONDS           write a process title over argv[0] as postgres
 *                           does ("outside_target: user db [local] idle"),
 *                           print "ready", then spin SECONDS
 *   clock SECONDS           for SECONDS of CPU, call clock_gettime in a
 *                           loop (the vDSO's code), then print "cpu S"
 * Built dynamic (outside_target) and static (outside_target_static). */
#define _GNU_SOURCE
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double thread_cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static double process_cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((noinline)) double spin_work(double seconds) {
  volatile double x = 0;
  const double until = thread_cpu() + seconds;
  while (thread_cpu() < until)
    for (int i = 0; i < 20000; ++i) x += i * 0.5;
  return x;
}

static double g_serve_until;
__attribute__((noinline)) double late_thread_work(void) {
  volatile double x = 0;
  while (now() < g_serve_until)
    for (int i = 0; i < 20000; ++i) x += i * 0.25;
  return x;
}
static void* late_thread(void* arg) {
  (void)arg;
  late_thread_work();
  return NULL;
}

static int count_dir(const char* path) {
  DIR* d = opendir(path);
  int n = 0;
  if (!d) return -1;
  for (struct dirent* e; (e = readdir(d));)
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n - (strcmp(path, "/proc/self/fd") == 0);  /* opendir's own */
}
static int maps_naming_profil(void) {
  FILE* f = fopen("/proc/self/maps", "r");
  char line[4096];
  int n = 0;
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, "profil")) ++n;
  if (f) fclose(f);
  return n;
}
static void state(const char* when) {
  struct sigaction sa;
  sigaction(SIGPROF, NULL, &sa);
  printf("%s fds %d maps_profil %d sigprof %s cpu %.4f\n", when, count_dir("/proc/self/fd"), maps_naming_profil(),
         sa.sa_handler == SIG_DFL ? "default" : "changed", process_cpu());
}

static void* pool_work(void* arg) {
  volatile double x = 0;
  for (int i = 0; i < 5000; ++i) x = x * 1.0000001 + 1;
  return arg;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "spin";
  const double seconds = argc > 2 ? atof(argv[2]) : 1.0;
  if (strcmp(mode, "spin") == 0 || strcmp(mode, "exec") == 0 || strcmp(mode, "kill") == 0) {
    spin_work(seconds);
    printf("cpu %.4f\n", process_cpu());
    fflush(stdout);
    if (strcmp(mode, "kill") == 0) raise(SIGKILL);
    if (strcmp(mode, "exec") == 0) {
      char self[4096] = {0};
      if (readlink("/proc/self/exe", self, sizeof self - 1) > 0) execl(self, argv[0], "spin", argv[2], (char*)NULL);
      return 1;
    }
    return 0;
  }
  if (strcmp(mode, "title") == 0) {
    /* The argv strings are contiguous; the title fills them, NUL padded
     * (postgres' ps_status.c, PS_USE_CLOBBER_ARGV). */
    char* end = argv[argc - 1] + strlen(argv[argc - 1]);
    const char title[] = "outside_target: user db [local] idle";
    const size_t room = (size_t)(end - argv[0]);
    memset(argv[0], 0, room);
    memcpy(argv[0], title, sizeof title - 1 < room ? sizeof title - 1 : room);
    printf("ready\n");
    fflush(stdout);
    spin_work(seconds);
    return 0;
  }
  if (strcmp(mode, "clock") == 0) {
    struct timespec t;
    const double until = process_cpu() + seconds;
    for (;;) {
      for (int i = 0; i < 1000; ++i) clock_gettime(CLOCK_MONOTONIC, &t);
      if (process_cpu() >= until) break;
    }
    printf("cpu %.4f\n", process_cpu());
    return 0;
  }
  if (strcmp(mode, "pool") == 0) {
    printf("ready\n");
    fflush(stdout);
    const double end = now() + seconds;
    unsigned seed = 1;
    while (now() < end) {
      pthread_t threads[64];
      const int n = 1 + (int)(rand_r(&seed) % 64);
      for (int i = 0; i < n; ++i) pthread_create(&threads[i], NULL, pool_work, NULL);
      for (int i = 0; i < n; ++i) pthread_join(threads[i], NULL);
    }
    return 0;
  }
  if (strcmp(mode, "children") == 0) {
    for (int i = 0; i < (int)seconds; ++i) {
      const pid_t child = fork();
      if (child == 0) {
        spin_work(0.0005);
        _exit(0);
      }
      if (child > 0) waitpid(child, NULL, 0);
    }
    struct rusage children, self;
    getrusage(RUSAGE_CHILDREN, &children);
    getrusage(RUSAGE_SELF, &self);
    printf("pid %d children %.6f self %.6f\n", (int)getpid(),
           children.ru_utime.tv_sec + children.ru_stime.tv_sec +
               (children.ru_utime.tv_usec + children.ru_stime.tv_usec) * 1e-6,
           self.ru_utime.tv_sec + self.ru_stime.tv_sec + (self.ru_utime.tv_usec + self.ru_stime.tv_usec) * 1e-6);
    return 0;
  }
  if (strcmp(mode, "leave") == 0) {
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    printf("ready\n");
    fflush(stdout);
    int signo = 0;
    sigwait(&usr1, &signo);
    int told[2];
    if (pipe(told) != 0) return 1;
    const pid_t child = fork();
    if (child == 0) {
      spin_work(seconds);
      if (write(told[1], "x", 1) != 1) _exit(1);
      for (int i = 0; i < 120; ++i) spin_work(1.0);  /* killed long before, or a lost test's child ends */
      _exit(0);
    }
    char byte;
    if (child < 0 || read(told[0], &byte, 1) != 1) return 1;
    printf("child %d\n", (int)child);
    fflush(stdout);
    return 0;
  }
  if (strcmp(mode, "serve") == 0) {
    state("start");
    printf("ready\n");
    fflush(stdout);
    const double start = now();
    g_serve_until = start + seconds;
    pthread_t threads[2];
    int started = 0;
    while (now() < g_serve_until) {
      poll(NULL, 0, 50);
      if (!started && now() > start + 0.3) {
        for (int i = 0; i < 2; ++i) pthread_create(&threads[i], NULL, late_thread, NULL);
        started = 1;
      }
    }
    if (started)
      for (int i = 0; i < 2; ++i) pthread_join(threads[i], NULL);
    state("end");
    return 0;
  }
  return 2;
}
