// corpus_trace [--no-follow] REPORT PROGRAM [ARGS...]: runs PROGRAM as the
// corpus's unprofiled reference and writes to REPORT what it cost:
//   total <user+sys µs of the whole process tree>
//   process <pid> <name> <cpu µs>      (one line per process)
// and exits with PROGRAM's status (128+N when signal N killed it, as a
// shell reports it).
//
// The total is getrusage(RUSAGE_CHILDREN) once every process of the tree
// has been reaped: the tracer is the tree's subreaper
// (PR_SET_CHILD_SUBREAPER, prctl(2)), so a daemon's orphaned child is
// reaped here and counted too. The per-process CPU times come from ptrace
// (ptrace(2)): every process and thread is followed (PTRACE_O_TRACEFORK,
// VFORK, CLONE) and stopped once as it exits (PTRACE_O_TRACEEXIT), when its
// runtime in /proc/TID/schedstat (sched-stats.rst: the first field is the
// time spent on the CPU, ns) is final; a process's time is the sum of its
// threads'. The name is what profil run names a profile by,
// program_invocation_short_name: the base name of argv[0] (read from
// /proc/PID/cmdline at the exit stop, before the memory is released).
// Signals the tree receives are passed on unchanged.
//
// --no-follow traces PROGRAM's own threads but not its child processes
// (PTRACE_O_TRACECLONE alone does not follow a clone whose exit signal is
// SIGCHLD, nor a vfork): around `profil
// run`, it gives the total of the tree and profil's own CPU time (its
// conversion work), whose difference is what the profiled program used,
// without a ptrace stop for each of the sampler's signals in the program.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kMaxProcesses = 4096 };
struct Process {
  pid_t pid;
  char name[128];
  unsigned long long cpu_ns;
};
static struct Process processes[kMaxProcesses];
static int process_count;

// Threads running under the tracer. A thread's first stop is the SIGSTOP
// of its automatic attach (it may come before its creator's fork or clone
// event): that one is not the program's signal and is not passed on.
enum { kMaxThreads = 65536 };
static pid_t running[kMaxThreads];
static int running_count;

static int is_running(pid_t tid) {
  for (int i = 0; i < running_count; ++i)
    if (running[i] == tid) return 1;
  return 0;
}

static void set_running(pid_t tid, int on) {
  for (int i = 0; i < running_count; ++i)
    if (running[i] == tid) {
      if (!on) running[i] = running[--running_count];
      return;
    }
  if (on && running_count < kMaxThreads) running[running_count++] = tid;
}

static int read_file(const char* path, char* buffer, size_t size) {
  FILE* f = fopen(path, "r");
  if (f == NULL) return -1;
  size_t n = fread(buffer, 1, size - 1, f);
  fclose(f);
  buffer[n] = '\0';
  return (int)n;
}

static pid_t tgid_of(pid_t tid) {
  char path[64], text[4096];
  snprintf(path, sizeof path, "/proc/%d/status", tid);
  if (read_file(path, text, sizeof text) < 0) return tid;
  const char* line = strstr(text, "\nTgid:");
  return line != NULL ? (pid_t)atoi(line + 6) : tid;
}

static struct Process* process_of(pid_t pid) {
  for (int i = 0; i < process_count; ++i)
    if (processes[i].pid == pid) return &processes[i];
  if (process_count == kMaxProcesses) return NULL;
  struct Process* p = &processes[process_count++];
  p->pid = pid;
  p->name[0] = '\0';
  p->cpu_ns = 0;
  return p;
}

// The thread TID is at its exit stop: add its CPU time to its process.
static void account_exit(pid_t tid) {
  char path[64], text[4096];
  pid_t pid = tgid_of(tid);
  struct Process* p = process_of(pid);
  if (p == NULL) return;
  snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", pid, tid);
  if (read_file(path, text, sizeof text) > 0) p->cpu_ns += strtoull(text, NULL, 10);
  snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
  int n = read_file(path, text, sizeof text);
  if (n > 0) {
    const char* slash = strrchr(text, '/');  // argv[0] ends at the first NUL
    snprintf(p->name, sizeof p->name, "%.127s", slash != NULL ? slash + 1 : text);
  }
}

int main(int argc, char** argv) {
  int follow = 1;
  if (argc > 1 && strcmp(argv[1], "--no-follow") == 0) {
    follow = 0;
    ++argv;
    --argc;
  }
  if (argc < 3) {
    fprintf(stderr, "usage: corpus_trace [--no-follow] REPORT PROGRAM [ARGS...]\n");
    return 2;
  }
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    perror("corpus_trace: PR_SET_CHILD_SUBREAPER");
    return 2;
  }
  pid_t child = fork();
  if (child < 0) {
    perror("corpus_trace: fork");
    return 2;
  }
  if (child == 0) {
    if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0) _exit(126);
    raise(SIGSTOP);  // wait here until the tracer has set its options
    execvp(argv[2], argv + 2);
    fprintf(stderr, "corpus_trace: %s: %s\n", argv[2], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  int status, child_status = 0;
  if (waitpid(child, &status, 0) != child || !WIFSTOPPED(status)) {
    fprintf(stderr, "corpus_trace: %s did not stop for the tracer\n", argv[2]);
    return 2;
  }
  set_running(child, 1);
  // TRACEEXEC too: without it every execve would add a SIGTRAP.
  long options = PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL;
  if (follow) options |= PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK;
  if (ptrace(PTRACE_SETOPTIONS, child, NULL, (void*)options) != 0 || ptrace(PTRACE_CONT, child, NULL, NULL) != 0) {
    perror("corpus_trace: ptrace");
    return 2;
  }
  for (;;) {
    pid_t tid = waitpid(-1, &status, __WALL);
    if (tid < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: the whole tree is gone
    }
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
      set_running(tid, 0);
      if (tid == child) child_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      continue;
    }
    if (!WIFSTOPPED(status)) continue;
    int sig = WSTOPSIG(status), event = status >> 16, deliver = 0;
    if (event == PTRACE_EVENT_EXIT) {
      account_exit(tid);
    } else if (event == 0) {
      if (is_running(tid))
        deliver = sig;
      else if (sig != SIGSTOP)
        deliver = sig;  // cannot be an attach stop
      set_running(tid, 1);
    }
    ptrace(PTRACE_CONT, tid, NULL, (void*)(long)deliver);
  }
  struct rusage usage;
  getrusage(RUSAGE_CHILDREN, &usage);
  long long total_us = (long long)usage.ru_utime.tv_sec * 1000000 + usage.ru_utime.tv_usec +
                       (long long)usage.ru_stime.tv_sec * 1000000 + usage.ru_stime.tv_usec;
  FILE* report = fopen(argv[1], "w");
  if (report == NULL) {
    perror(argv[1]);
    return 2;
  }
  fprintf(report, "total %lld\n", total_us);
  for (int i = 0; i < process_count; ++i)
    fprintf(report, "process %d %s %llu\n", processes[i].pid, processes[i].name[0] ? processes[i].name : "?",
            processes[i].cpu_ns / 1000);
  fclose(report);
  return child_status;
}
