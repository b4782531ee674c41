// Finding Ruby in a process, and its threads' execution contexts by thread
// id (issue 34).
//
// NOT async-signal-safe: host side (reads /proc, opens ELF files with
// libelf, allocates). One RubyThreads per process, used by one thread at a
// time (no lock inside).
//
// find_ruby: the libruby (or a ruby program linked statically) mapped in
// the process, its version (ruby_version, a dynamic symbol: "3.1.2"), the
// VM (ruby_current_vm_ptr) and the evaluation loop's native code
// (rb_vm_exec: each of its native frames runs the Ruby frames of one C call
// into the VM, ruby_walk.h). A version without a layout (ruby_layout.h) is
// named and left native: "Ruby 3.2: frames not read, left native".
//
// Threads: after the fact, a thread's execution context is found through
// the VM, not its TLS (ruby_current_ec is a TLS variable, which another
// process reads only through the thread's fs base): ruby_current_vm_ptr
// -> its main ractor -> the ractor's threads, each with its kernel tid
// (rb_thread_t.tid) and execution context. Other ractors' threads are not
// read (Ruby 3.1's ractors are experimental).
#ifndef PROFIL_INTERP_RUBY_PROCESS_H
#define PROFIL_INTERP_RUBY_PROCESS_H

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "interp/frames.h"
#include "interp/ruby_layout.h"

namespace profiling::interp {

struct RubyTarget {
  pid_t pid = 0;
  std::string image;    // the file as /proc/PID/maps names it
  std::string version;  // "3.1.2"
  uint64_t bias = 0;
  RubyLayout layout{};
  uint64_t vm_pointer = 0;  // &ruby_current_vm_ptr
  // rb_vm_exec's code, [start, end).
  uint64_t eval_loop_start = 0, eval_loop_end = 0;
};

// Whether a mapped file's base name is a libruby or a ruby program.
bool is_ruby_file(const std::string& base_name);

// The Ruby of pid, or nullopt with *why one line (no libruby mapped, its
// symbols missing, a version without a layout).
std::optional<RubyTarget> find_ruby(pid_t pid, std::string* why);

class RubyThreads {
 public:
  RubyThreads(const RubyTarget& target, MemoryReader& memory) : target_(target), memory_(memory) {}
  // The execution context of thread tid, 0 when it has none; the VM's
  // thread list is read again when tid is not known (a new thread).
  uint64_t execution_context(pid_t tid);
  // Where thread tid's execution context pointer is (&rb_thread_t.ec), 0
  // when tid is not a thread of the VM's: for a reader that reads it in a
  // batch with more (outside/ruby_frames.h).
  uint64_t context_slot(pid_t tid);
  // A thread ended: its rb_thread_t is freed, its tid may come back.
  void forget(pid_t tid) { by_tid_.erase(tid); }
  // The threads of the VM's list as last read: tid -> its rb_thread_t.
  const std::unordered_map<pid_t, uint64_t>& all() const { return by_tid_; }

 private:
  void refresh();

  RubyTarget target_;
  MemoryReader& memory_;
  std::unordered_map<pid_t, uint64_t> by_tid_;  // tid -> its rb_thread_t
};

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_RUBY_PROCESS_H
