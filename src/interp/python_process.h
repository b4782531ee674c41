// Finding CPython in a process, and its threads' states by thread id.
//
// NOT async-signal-safe: host side (reads /proc, opens ELF files with
// libelf, allocates). One PythonThreads per process, used by one thread at a
// time (no lock inside).
//
// find_python: the python binary or libpython mapped in the process
// (/proc/PID/maps, the files read through /proc/PID/root so a container's are
// its own), its version (Py_Version, a dynamic symbol of 3.11+, else the
// number in the file's name: libpython3.9.so.1.0, python2.7), and where the
// interpreters start: _PyRuntime (3.7+, dynamic or .symtab symbol) or
// interp_head (.symtab only) and _PyThreadState_Current (2.7, 3.6). Addresses
// carry the load bias of the file's mapping (position-independent code).
//
// Thread ids: 3.11+ keep the kernel's tid in PyThreadState.native_thread_id.
// Older versions keep only thread_id, the pthread_t, which with glibc is the
// address of the thread's struct pthread; the kernel tid is a field of it
// (`tid`), at an offset glibc does not export. It is found at run time in
// profil's own process: the offset where pthread_self()'s struct holds
// gettid(), in this thread and in a second one started for the purpose
// (glibc_pthread_tid_offset()); the program must use a glibc with the same
// struct pthread (a container with another glibc gives no thread, as a read
// tid is taken only if it is one of the process's tasks).
#ifndef PROFIL_INTERP_PYTHON_PROCESS_H
#define PROFIL_INTERP_PYTHON_PROCESS_H

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "interp/frames.h"
#include "interp/python_layout.h"

namespace profiling::interp {

struct PythonTarget {
  pid_t pid = 0;
  std::string image;  // the file as /proc/PID/maps names it
  uint64_t bias = 0;  // its load bias
  int major = 0, minor = 0;
  PythonLayout layout;
  uint64_t runtime = 0;         // &_PyRuntime (3.7+)
  uint64_t interp_head = 0;     // &interp_head (2.7, 3.6)
  uint64_t tstate_current = 0;  // &_PyThreadState_Current (2.7, 3.6)
  uint64_t code_type = 0;       // &PyCode_Type (0: not found)
  // The evaluation loop's code, [start, end): _PyEval_EvalFrameDefault
  // (3.6+) or PyEval_EvalFrameEx (2.7); 0, 0 when its symbol is missing.
  uint64_t eval_loop_start = 0, eval_loop_end = 0;
};

// The CPython of pid, or nullopt with *why one line: no python mapped, its
// symbols missing (a stripped 2.7 or 3.6 lacks interp_head), a version
// without a layout ("CPython 3.14: no frame layout for this version").
std::optional<PythonTarget> find_python(pid_t pid, std::string* why);

// The offset of the kernel tid in glibc's struct pthread, -1 when it could
// not be found (computed once).
int glibc_pthread_tid_offset();

class PythonThreads {
 public:
  PythonThreads(const PythonTarget& target, MemoryReader& memory) : target_(target), memory_(memory) {}
  // The PyThreadState of thread tid, 0 when it has none; the interpreters'
  // lists are read again when tid is not known (a new thread).
  // An answer is kept until the next refresh: a thread that ended must be
  // forgotten (its PyThreadState is freed, its tid may be reused).
  uint64_t thread_state(pid_t tid);
  void forget(pid_t tid);
  // Every thread state now: (tid, PyThreadState address); tid 0 when it
  // could not be told.
  std::vector<std::pair<pid_t, uint64_t>> all();

 private:
  void refresh();
  pid_t tid_of(const uint8_t* tstate);

  PythonTarget target_;
  MemoryReader& memory_;
  std::unordered_map<pid_t, uint64_t> by_tid_;
  std::vector<std::pair<pid_t, uint64_t>> states_;
};

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_PYTHON_PROCESS_H
