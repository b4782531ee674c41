/* The test program of tests/run.cmake: an ordinary PIE program, built
 * without -pg and not linked with libprofil, that spends known amounts of
 * CPU time in known places: its executable (main_work), its own shared
 * library (lib_work), a second thread (thread_work) and a forked child
 * (child_work). Each part runs for a fixed amount of its thread's CPU time
 * (never wall time) and prints what it measured, with the runtime address
 * range of its function, for the test to compare with the profile:
 *   range <name> <pid> <low> <high>
 *   cpu <name> <pid> <seconds>
 * Modes (argv[1]): all, segv, overflow, thread_overflow, term, handler,
 * ignore, oneshot, abort, quick, exec, dlopen, dlclose (dlopen, then
 * the plugin unloaded before the process ends). */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

double lib_work(long n);
void lib_work_range(void** low, void** high);

/* Each hot function in a section of its own: the linker's __start_/__stop_
 * symbols give its exact address range. */
extern char __start_run_main_hot[], __stop_run_main_hot[];
extern char __start_run_thread_hot[], __stop_run_thread_hot[];
extern char __start_run_child_hot[], __stop_run_child_hot[];

__attribute__((noinline, section("run_main_hot"))) double main_work(long n) {
  double x = 0;
  for (long i = 0; i < n; ++i) x += (double)i * 0.5;
  return x;
}

__attribute__((noinline, section("run_thread_hot"))) double thread_work(long n) {
  double x = 1;
  for (long i = 0; i < n; ++i) x += (double)i * 0.25;
  return x;
}

__attribute__((noinline, section("run_child_hot"))) double child_work(long n) {
  double x = 2;
  for (long i = 0; i < n; ++i) x += (double)i * 0.75;
  return x;
}

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Runs fn for `seconds` of this thread's CPU time; reading the clock is a
 * system call, so it is read only every ~0.1 ms of work. */
static double burn(double seconds, double (*fn)(long)) {
  volatile double sink = 0;
  double start = thread_cpu(), now;
  while ((now = thread_cpu()) - start < seconds) sink = sink + fn(100000);
  return now - start;
}

static void report(const char* name, double cpu, void* low, void* high) {
  printf("range %s %d %p %p\n", name, (int)getpid(), low, high);
  printf("cpu %s %d %.6f\n", name, (int)getpid(), cpu);
  fflush(stdout);
}

static double g_thread_cpu;

static void* thread_main(void* arg) {
  (void)arg;
  g_thread_cpu = burn(0.3, thread_work);
  return NULL;
}

/* Recursion until the stack overflows into its guard page (g_stop is
 * never set; it keeps the recursion from being provably infinite). */
static volatile int g_stop;
__attribute__((noinline)) static int recurse(volatile char* previous) {
  volatile char frame[512];
  frame[0] = previous ? previous[0] + 1 : 0;
  if (g_stop) return frame[0];
  return recurse(frame) + frame[1];
}

static void* recurse_in_thread(void* unused) {
  (void)unused;
  recurse(NULL);
  return NULL;
}

static volatile sig_atomic_t g_handled;
static void on_term(int signo) { g_handled = signo; }

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "all";
  if (strcmp(mode, "all") != 0) {
    /* the single-part modes: some main_work, then the ending under test */
    double cpu = burn(0.3, main_work);
    report("main_work", cpu, __start_run_main_hot, __stop_run_main_hot);
    if (strcmp(mode, "segv") == 0) {
      struct rlimit none = {0, 0};
      setrlimit(RLIMIT_CORE, &none); /* no core file from a test */
      volatile int* nowhere = NULL;
      *nowhere = 1;
    } else if (strcmp(mode, "overflow") == 0) {
      struct rlimit none = {0, 0};
      setrlimit(RLIMIT_CORE, &none);
      return recurse(NULL);
    } else if (strcmp(mode, "thread_overflow") == 0) {
      /* a second thread's stack (its own size, its own guard page) */
      struct rlimit none = {0, 0};
      setrlimit(RLIMIT_CORE, &none);
      pthread_t thread;
      pthread_create(&thread, NULL, recurse_in_thread, NULL);
      pthread_join(thread, NULL);
      return 1;
    } else if (strcmp(mode, "term") == 0) {
      raise(SIGTERM);
    } else if (strcmp(mode, "handler") == 0) {
      /* The program's own handler, installed after start, runs and the
       * program goes on; sigaction reports it back. */
      if (signal(SIGTERM, on_term) == SIG_ERR) return 10;
      struct sigaction seen;
      if (sigaction(SIGTERM, NULL, &seen) != 0 || seen.sa_handler != on_term) return 11;
      raise(SIGTERM);
      if (g_handled != SIGTERM) return 12;
      return 5;
    } else if (strcmp(mode, "ignore") == 0) {
      /* SIG_IGN reaches the kernel: the signal is ignored, nothing ends. */
      if (signal(SIGTERM, SIG_IGN) == SIG_ERR) return 13;
      raise(SIGTERM);
      return 6;
    } else if (strcmp(mode, "oneshot") == 0) {
      /* SA_RESETHAND: the handler runs once, the second signal meets the
       * default action (and the profile is written on the way). */
      struct sigaction once;
      memset(&once, 0, sizeof once);
      once.sa_handler = on_term;
      once.sa_flags = SA_RESETHAND;
      sigemptyset(&once.sa_mask);
      if (sigaction(SIGTERM, &once, NULL) != 0) return 14;
      raise(SIGTERM);
      if (g_handled != SIGTERM) return 15;
      struct sigaction now;
      if (sigaction(SIGTERM, NULL, &now) != 0 || now.sa_handler != SIG_DFL) return 16;
      raise(SIGTERM);
      return 17;
    } else if (strcmp(mode, "abort") == 0) {
      struct rlimit none = {0, 0};
      setrlimit(RLIMIT_CORE, &none);
      abort();
    } else if (strcmp(mode, "quick") == 0) {
      _exit(3);
    } else if (strcmp(mode, "dlopen") == 0 || strcmp(mode, "dlclose") == 0) {
      char plugin[4096];
      ssize_t n = readlink("/proc/self/exe", plugin, sizeof plugin - 64);
      if (n < 0) return 30;
      plugin[n] = '\0';
      strcpy(strrchr(plugin, '/'), "/../lib/libruntestplugin.so");
      void* handle = dlopen(plugin, RTLD_NOW);
      if (handle == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        return 31;
      }
      double (*work)(long) = (double (*)(long))dlsym(handle, "plugin_work");
      void (*range)(void**, void**) = (void (*)(void**, void**))dlsym(handle, "plugin_work_range");
      if (work == NULL || range == NULL) return 32;
      void *low, *high;
      range(&low, &high);
      report("plugin_work", burn(0.3, work), low, high);
      if (strcmp(mode, "dlclose") == 0 && dlclose(handle) != 0) return 33;
    } else if (strcmp(mode, "exec") == 0) {
      char target[4096];
      ssize_t n = readlink("/proc/self/exe", target, sizeof target - 32);
      if (n < 0) return 20;
      target[n] = '\0';
      strcpy(strrchr(target, '/') + 1, "run_exec_target");
      execl(target, "run_exec_target", (char*)NULL);
      perror(target);
      return 21;
    }
    return 0;
  }

  double cpu = burn(0.4, main_work);
  report("main_work", cpu, __start_run_main_hot, __stop_run_main_hot);

  /* the second thread and the library, side by side */
  pthread_t thread;
  if (pthread_create(&thread, NULL, thread_main, NULL) != 0) return 2;
  void *lib_low, *lib_high;
  lib_work_range(&lib_low, &lib_high);
  cpu = burn(0.3, lib_work);
  pthread_join(thread, NULL);
  report("lib_work", cpu, lib_low, lib_high);
  report("thread_work", g_thread_cpu, __start_run_thread_hot, __stop_run_thread_hot);

  pid_t child = fork();
  if (child < 0) return 3;
  if (child == 0) {
    cpu = burn(0.3, child_work);
    report("child_work", cpu, __start_run_child_hot, __stop_run_child_hot);
    exit(0);
  }
  int status;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 4;
  return 0;
}
