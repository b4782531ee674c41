// Whether a CPython thread holds the GIL (issue 31: "a thread's label says
// whether it held the GIL in the sample where the version tells"): where a
// process keeps its GIL's holder, and the state of one thread read from it.
//
// Where the holder is (python_layout.h's fields, from each version's headers):
//   2.7, 3.6   _PyThreadState_Current: the holder's PyThreadState, NULL
//              while the GIL is released (PyEval_SaveThread swaps in NULL);
//   3.7-3.11   _PyRuntime.gilstate.tstate_current, the same;
//   3.12, 3.13 the main interpreter's ceval.gil points to the GIL struct in
//              use (its own _gil): last_holder stays set after a release,
//              so held is last_holder == the thread and locked == 1.
// Other versions (3.14, free-threaded 3.13): not known, no state.
// A thread of a 3.12+ subinterpreter with a GIL of its own is compared with
// the main interpreter's GIL (not told apart yet).
//
// ASYNC-SIGNAL-SAFE, all of it (reads through the reader alone, bounded
// loops): from outside find_python_gil runs once per process on the host,
// and inside (`--inside`, sampler/python_sampling.h) the sampling handler
// finds the holder at its first sample that can and reads the state at
// each one (docs/python.md).
#ifndef PROFIL_INTERP_PYTHON_GIL_H
#define PROFIL_INTERP_PYTHON_GIL_H

#include <cstdint>

#include "format/profile.h"
#include "interp/frames.h"
#include "interp/python_process.h"

namespace profiling::interp {

struct PythonGil {
  uint64_t holder = 0;  // the address of the holder's PyThreadState pointer; 0: not known
  int32_t locked = -1;  // 3.12+: where `locked` (an int) is, from holder (0-8); -1: none
  bool known() const { return holder != 0; }
};

// Where the GIL holder of a process with layout l is read, given its
// &_PyRuntime (3.7+) and &_PyThreadState_Current (2.7, 3.6), each 0 when
// unknown; false (gil unknown) for a version that does not tell, or a 3.12+
// process whose GIL is not made yet (ask again later).
bool find_python_gil(const PythonLayout& l, uint64_t runtime, uint64_t tstate_current, MemoryReader& memory,
                     PythonGil* gil);
// The same for target (python_process.h).
inline bool find_python_gil(const PythonTarget& target, MemoryReader& memory, PythonGil* gil) {
  return find_python_gil(target.layout, target.runtime, target.tstate_current, memory, gil);
}

// format::kGilHeld or kGilReleased for the thread whose PyThreadState is
// thread_state; kGilUnknown where gil is not known or the read fails.
inline uint8_t python_gil_state(const PythonGil& gil, MemoryReader& memory, uint64_t thread_state) {
  if (!gil.known() || thread_state == 0) return format::kGilUnknown;
  uint8_t bytes[16];
  if (!memory.read(gil.holder, bytes, gil.locked >= 0 ? 16 : 8)) return format::kGilUnknown;
  if (u64_at(bytes, 0) != thread_state) return format::kGilReleased;
  if (gil.locked < 0) return format::kGilHeld;
  int32_t locked;
  std::memcpy(&locked, bytes + gil.locked, sizeof locked);
  return locked > 0 ? format::kGilHeld : format::kGilReleased;
}

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_PYTHON_GIL_H
