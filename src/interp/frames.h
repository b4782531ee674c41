// The interpreter-frames layer: what any language runtime's frame walker
// gives the samplers, whatever the runtime (CPython today; Ruby and others
// join by writing a walker that fills the same RawFrame array).
//
// ASYNC-SIGNAL-SAFE: everything declared here. MemoryReader::read of the
// readers in this folder (readers.h) is one syscall or one memcpy; the
// walkers that take a MemoryReader allocate nothing, take no lock, touch no
// stdio and throw nothing, so they run in a signal handler inside the program
// (reading its own memory with fault-safe loads) and in profil's reader
// thread (reading another process's memory).
//
// A walk gives raw frames, innermost first: the address of the runtime's code
// object and where in it the thread is, as the runtime keeps it. Naming them
// (function, file, lines) is host-side work done later, once per code object
// (python_code.h for CPython).
//
// Merging with the native stack: kEntryFrame marks the OUTERMOST interpreter
// frame run by one C call of the evaluation loop (CPython's
// _PyEval_EvalFrameDefault, PyEval_EvalFrameEx on 2.7). Reading a native
// stack innermost first, its first eval-loop frame stands for the raw frames
// up to and including the first kEntryFrame, the next eval-loop frame for
// the frames after it up to the next kEntryFrame, and so on. The number of
// eval-loop native frames must equal the number of kEntryFrame frames (plus
// one when the walk was cut, kWalkTruncated): a sample where it does not is
// one whose Python frames do not fit its native stack.
#ifndef PROFIL_INTERP_FRAMES_H
#define PROFIL_INTERP_FRAMES_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace profiling::interp {

// Reads another moment's or process's memory. A reader is called once per
// frame with the whole frame struct: process_vm_readv costs ~1 µs a call.
class MemoryReader {
 public:
  // Copies [address, address + size) into out; false when any of it cannot
  // be read (out is then unspecified).
  virtual bool read(uint64_t address, void* out, size_t size) = 0;

 protected:
  ~MemoryReader() = default;
};

// One word through a reader, and one word of bytes already read (the
// walkers read a struct at once and pick its fields).
inline bool read_u64(MemoryReader& memory, uint64_t address, uint64_t* value) {
  return memory.read(address, value, sizeof *value);
}
inline uint64_t u64_at(const uint8_t* bytes, int64_t offset) {
  uint64_t value;
  std::memcpy(&value, bytes + offset, sizeof value);
  return value;
}

enum RawFrameFlags : uint32_t {
  kEntryFrame = 1u << 0,  // the outermost frame of one eval-loop C call
};

struct RawFrame {
  uint64_t code = 0;         // the code object's address
  uint64_t instruction = 0;  // CPython ≤3.10: f_lasti; 3.11+: address of the instruction
  uint32_t flags = 0;        // RawFrameFlags
};

enum class WalkStatus : uint8_t {
  kComplete,   // every frame of the thread is in the array
  kTruncated,  // the array was full: more outer frames were not read
  kReadError,  // a read failed midway (the thread changed under us, or a bad
               // layout): the frames before it are in the array
  kLoop,       // the chain did not end within a bound (a cycle read mid-change)
};

struct WalkResult {
  uint32_t count = 0;
  WalkStatus status = WalkStatus::kComplete;
};

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_FRAMES_H
