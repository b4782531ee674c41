// A thread's /proc/PID/task/TID/syscall file (proc(5)), read and parsed, and
// the periods a look at the blocked threads stands for: what the wall
// clock's two samplers of blocked threads share — the inside's watcher
// thread (sampler/wall_sampler.h) and the outside's poller
// (outside/wall_poller.h). Pure helpers: no state, no lock.
//
// ASYNC-SIGNAL-SAFE (all of it): pread(2) and arithmetic, no allocation;
// the watcher reads these files between the fault-safe loads of a walk.
#ifndef PROFIL_BASE_PROC_SYSCALL_H
#define PROFIL_BASE_PROC_SYSCALL_H

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace profiling::base {

// The user stack pointer and program counter of a thread off the CPU, from
// its /proc/<pid>/task/<tid>/syscall text (proc(5)):
//   "running"                                   on a CPU: no registers
//   "<nr>"                                      a lone number: none either
//   "-1 0x<sp> 0x<pc>"                          off the CPU, not in a system call
//   "<nr> 0x<a1> ... 0x<a6> 0x<sp> 0x<pc>"      blocked in system call nr
// The kernel gives no other register (task_current_syscall()): a blocked
// thread's stack is unwound from these two alone.
struct BlockedRegisters {
  uint64_t pc = 0;
  uint64_t sp = 0;
};
// false (and *regs untouched) when the thread is running or the text is not
// one the kernel writes.
bool blocked_registers_from_syscall_text(std::string_view text, BlockedRegisters* regs);

// The syscall text of a thread (proc(5): /proc/PID/task/TID/syscall), read
// from offset 0 each time: seq_file generates it anew for a read at 0, so
// one descriptor serves the read before a walk and the one after. Its
// length, or 0. Used by the inside's watcher and the outside's poller.
size_t read_syscall_text(int fd, char (&text)[256]);

// The periods a look at the blocked threads stands for: the wall time since
// the previous look in periods, rounded, the remainder carried, so that a
// late wake-up stands for the time it missed and none is counted twice.
// Shared by the inside's watcher and the outside's poller.
class LookPeriods {
 public:
  explicit LookPeriods(uint64_t now_ns) : last_(now_ns) {}
  int64_t since_last(uint64_t now_ns, uint64_t period_ns) {
    const auto period = static_cast<int64_t>(period_ns);
    const int64_t elapsed = static_cast<int64_t>(now_ns - last_) + remainder_;
    const int64_t periods = (elapsed + period / 2) / period;
    remainder_ = elapsed - periods * period;
    last_ = now_ns;
    return periods;
  }

 private:
  uint64_t last_;
  int64_t remainder_ = 0;
};

}  // namespace profiling::base

#endif  // PROFIL_BASE_PROC_SYSCALL_H
