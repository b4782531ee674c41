// Which thread a sample was taken in, and what that thread is called
// (issue 22: per-thread views; profraw version 4's thread records).
//
// current_thread_id() is ASYNC-SIGNAL-SAFE and cheap: the thread's id is
// kept in an initial-exec TLS slot (one %fs-relative load; no
// __tls_get_addr, which may allocate), set when the thread starts
// (thread_started) or at its first sample, so the handler makes the
// gettid system call once per thread, not once per sample.
//
// Names: a live thread's comm is read at the dump from
// /proc/self/task/TID/comm (proc(5)); a thread that ends before the dump
// leaves its name here as it ends (thread_exiting, the pthread key
// destructor of the runtime's pthread_create), in a fixed table that keeps
// the latest kEndedThreads. A thread that ended unseen (not created
// through pthread_create, or past the table) has no name: the dump marks
// it ended and reports call it "[ended]".
#ifndef PROFIL_SAMPLER_THREAD_NAMES_H
#define PROFIL_SAMPLER_THREAD_NAMES_H

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>

namespace profiling::sampler {

namespace internal {
extern __thread pid_t t_thread_id __attribute__((tls_model("initial-exec")));
}

// ASYNC-SIGNAL-SAFE. The calling thread's id (gettid(2)).
inline pid_t current_thread_id() {
  pid_t tid = internal::t_thread_id;
  if (tid == 0) [[unlikely]]
    tid = internal::t_thread_id = static_cast<pid_t>(::syscall(SYS_gettid));
  return tid;
}

// The forking thread's id is another in the child (fork_child): read again.
inline void forget_thread_id() { internal::t_thread_id = 0; }

inline constexpr unsigned kEndedThreads = 4096;
inline constexpr unsigned kThreadNameSize = 16;  // TASK_COMM_LEN, with its NUL

// The calling thread is ending: keep its name (prctl(PR_GET_NAME)).
void remember_ending_thread_name();

// ASYNC-SIGNAL-SAFE (open/read/close and the fixed table). Thread tid's
// name into name (NUL-terminated, at most 15 bytes): its comm while it
// runs, else the name it ended with. false: neither is known (name "").
bool thread_name(int32_t tid, char (&name)[kThreadNameSize]);

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_THREAD_NAMES_H
