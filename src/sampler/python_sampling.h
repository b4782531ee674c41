// CPython frames read at the sample, inside the program (issue 31,
// `profil run --inside`): the signal handler, on the sampled thread, after
// its native unwind, reads the thread's own Python frame chain with
// fault-safe loads and stores it with the native stack, as raw frames
// (interp/frames.h: code object, instruction, flags). Naming them and
// merging them into the native stack is the dump's work
// (runtime/python_inside.h), never the handler's.
//
// ASYNC-SIGNAL-SAFE: deliver_stack_with_python, SelfMemory::read and the
// encoding helpers. set_python_sampling is host side (the preload runtime's
// start, before sampling starts); what it publishes is never freed.
//
// The thread's PyThreadState, found without a lock: the interpreters' thread
// lists (3.7+: _PyRuntime.interpreters.head; 2.7, 3.6: interp_head, through
// the exported PyInterpreterState_Head(), a function that only returns it)
// are walked with fault-safe loads for the state whose thread_id is
// pthread_self() — every version keeps it there (PyThread_get_thread_ident),
// so one rule serves 2.7 to 3.13 — and the answer is kept per thread (TLS)
// and checked at each sample by reading that field again (one load). Not
// 3.12+'s _Py_tss_tstate: a thread-local of libpython's, whose TLS offset
// is known only through its module's TLS block (static python3.11 and a
// libpython differ), and absent before 3.12. A list read while a thread is
// added or removed may fault (a load that fails ends the walk: no frames for
// that sample) or loop (bounded). A state freed while its memory still
// holds this thread's id (a thread that makes and drops states, as
// PyGILState_Ensure does for a foreign thread) is taken until the memory is
// reused: its frames then read as a misfit, never as a crash.
//
// The GIL (issue 31: a thread's label says whether it held it): after the
// walk, whether the thread holds the GIL, read from the holder
// interp/python_gil.h names (one 8-16 byte read: 2.7/3.6
// _PyThreadState_Current, 3.7-3.11 _PyRuntime.gilstate.tstate_current,
// 3.12+ the main interpreter's ceval.gil, last_holder and locked). 3.12+
// makes its GIL as the interpreter starts, after sampling starts: the holder's
// address is found at the first sample that can and kept (g_gil_holder);
// before, samples have no state. The thread is in its own handler, so its
// side cannot change under the read.
//
// Stored stacks: native frames, then kPythonMarker (its low byte the walk's
// status in bits 0-5, the GIL's state, format::kGil*, in bits 6-7), then
// two words per Python frame, innermost first: the code
// object's address with its tag in the top 16 bits (code_tag, below), and
// the instruction (56 bits, sign-extended: ≤3.10's
// f_lasti may be -1) with the frame's flags in the top byte. No return
// address a native unwind gives is that high. The marker is part of the
// stored stack, so samples held and released stay apart in the table.
#ifndef PROFIL_SAMPLER_PYTHON_SAMPLING_H
#define PROFIL_SAMPLER_PYTHON_SAMPLING_H

#include <atomic>
#include <cstdint>

#include "interp/frames.h"
#include "interp/python_layout.h"
#include "interp/python_merge.h"
#include "unwind/stack_table.h"

namespace profiling::sampler {

struct PythonSampling {
  interp::PythonLayout layout;
  uint64_t interpreters_head = 0;                 // &_PyRuntime.interpreters.head (3.7+), else 0
  uint64_t (*interp_head_function)() = nullptr;  // PyInterpreterState_Head (2.7, 3.6)
  interp::EvalLoop loop;
  uint64_t runtime = 0;         // &_PyRuntime (3.7+), else 0: the GIL's holder is found from it
  uint64_t tstate_current = 0;  // &_PyThreadState_Current (2.7, 3.6), else 0
};

// Python frames read per sample at most (deeper stacks keep their
// innermost: the walk says kTruncated, and the merge counts a misfit).
inline constexpr uint32_t kMaxInsidePythonFrames = 128;
inline constexpr uint32_t kPythonWords = 1 + 2 * kMaxInsidePythonFrames;

inline constexpr uint64_t kPythonMarker = 0xFFFF'FFFF'FFFF'FF00ull;
inline bool is_python_marker(uint64_t word) { return (word & ~uint64_t{0xff}) == kPythonMarker; }
inline uint64_t python_marker(interp::WalkStatus status, uint8_t gil) {
  return kPythonMarker | (static_cast<uint64_t>(status) & 0x3f) | (uint64_t{gil & 3u} << 6);
}
inline interp::WalkStatus marker_status(uint64_t marker) { return static_cast<interp::WalkStatus>(marker & 0x3f); }
inline uint8_t marker_gil(uint64_t marker) { return static_cast<uint8_t>((marker >> 6) & 3); }
inline uint64_t encode_instruction(const interp::RawFrame& frame) {
  return (frame.instruction & 0x00FF'FFFF'FFFF'FFFFull) | (uint64_t{frame.flags & 0xff} << 56);
}
// A code object's tag: 15 bits of a hash of its (qualified) name object's
// address and its first line, stored above the code object's address (a
// user address on x86-64 has 47 bits), never 0 (0: no tag, the fields
// could not be read). The dump names a (code address, tag) pair, and only
// from a code object there whose tag is the same (runtime/python_inside.h):
// a code object freed and its address reused by another is no longer
// named after the first (a loaded suite run: three() of
// tests/python_progs/shares.py shown as "<module>", an imported module's
// top-level code that had run at its address before).
inline constexpr uint64_t kCodeAddressMask = (uint64_t{1} << 48) - 1;
inline uint64_t code_tag(uint64_t name_object, int32_t first_line) {
  const uint64_t mixed = (name_object ^ (uint64_t{static_cast<uint32_t>(first_line)} << 40)) * 0x9E3779B97F4A7C15ull;
  return (mixed >> 48) | 1;
}
inline void decode_instruction(uint64_t word, interp::RawFrame* frame) {
  frame->instruction = static_cast<uint64_t>(static_cast<int64_t>(word << 8) >> 8);
  frame->flags = static_cast<uint32_t>(word >> 56);
}

// Publishes python (nullptr: none): every later sample with stacks reads
// the sampled thread's Python frames. Host side, once.
void set_python_sampling(const PythonSampling* python);
extern std::atomic<const PythonSampling*> g_python;

// The process's own memory through base/safe_access.h's fault-safe loads
// (8 bytes each, no system call): an address unmapped or freed under us
// reads false, never a crash (the fault guard, sampler.h's
// install_fault_guard, must be installed).
class SelfMemory final : public interp::MemoryReader {
 public:
  bool read(uint64_t address, void* out, size_t size) override;
};

// The sampled stack of the interrupted context, its Python frames after it
// (the format above), added to table (sinks.h's deliver_stack with Python).
void deliver_stack_with_python(const PythonSampling& python, unwind::StackTable* table, const void* context,
                               uint32_t weight);

// The same for any runtime whose frames are stored so (Ruby's too:
// ruby_sampling.h): append(runtime, pcs, depth) puts the frames after the
// native stack pcs[0..depth) (room for kPythonWords more) and returns the
// new depth; append_marked_frames writes a walk in the format above, gil
// a format::kGil* (Ruby's: unknown).
using AppendFrames = uint32_t (*)(const void* runtime, uint64_t* pcs, uint32_t depth);
void deliver_stack_with_frames(AppendFrames append, const void* runtime, unwind::StackTable* table,
                               const void* context, uint32_t weight);
uint32_t append_marked_frames(const interp::RawFrame* raw, interp::WalkResult walk, uint64_t* pcs, uint32_t depth,
                              uint8_t gil = 0);

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_PYTHON_SAMPLING_H
