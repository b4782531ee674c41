// ASYNC-SIGNAL-SAFE (python_sampling.h): everything here but
// set_python_sampling runs in the sampling signal handler. No allocation, no
// lock, no stdio; the program's memory is read only through
// profil_safe_load_u64.
#include "sampler/python_sampling.h"

#include <pthread.h>

#include <cstring>

#include "base/safe_access.h"
#include "format/profile.h"
#include "interp/python_code_head.h"
#include "interp/python_gil.h"
#include "interp/python_walk.h"
#include "sampler/sampler.h"
#include "sampler/sinks.h"
#include "sampler/thread_names.h"
#include "unwind/memory.h"
#include "unwind/unwinder.h"

namespace profiling::sampler {

std::atomic<const PythonSampling*> g_python{nullptr};

void set_python_sampling(const PythonSampling* python) { g_python.store(python, std::memory_order_release); }

bool SelfMemory::read(uint64_t address, void* out, size_t size) {
  auto* bytes = static_cast<uint8_t*>(out);
  uint64_t word;
  if (size < sizeof word) {
    if (profil_safe_load_u64(reinterpret_cast<const void*>(address), &word) != 0) return false;
    std::memcpy(bytes, &word, size);
    return true;
  }
  size_t at = 0;
  for (; at + sizeof word <= size; at += sizeof word) {
    if (profil_safe_load_u64(reinterpret_cast<const void*>(address + at), &word) != 0) return false;
    std::memcpy(bytes + at, &word, sizeof word);
  }
  if (at < size) {  // the tail: the last 8 bytes again
    if (profil_safe_load_u64(reinterpret_cast<const void*>(address + size - sizeof word), &word) != 0) return false;
    std::memcpy(bytes + size - sizeof word, &word, sizeof word);
  }
  return true;
}

using interp::read_u64;

namespace {

// The thread's PyThreadState as last found (0: none yet): checked at each
// use by its thread_id (python_sampling.h).
__thread uint64_t t_thread_state __attribute__((tls_model("initial-exec")));

uint64_t find_thread_state(const PythonSampling& python, interp::MemoryReader& memory) {
  const interp::PythonLayout& l = python.layout;
  const uint64_t self = static_cast<uint64_t>(::pthread_self());
  uint64_t id = 0;
  if (t_thread_state != 0 && read_u64(memory, t_thread_state + l.tstate_thread_id, &id) && id == self)
    return t_thread_state;
  t_thread_state = 0;
  uint64_t interp = 0;
  if (python.interpreters_head != 0) {
    if (!read_u64(memory, python.interpreters_head, &interp)) return 0;
  } else if (python.interp_head_function != nullptr) {
    interp = python.interp_head_function();
  }
  // Bounds against a list read mid-change that loops.
  for (int i = 0; interp != 0 && i < 64; ++i) {
    uint64_t state = 0;
    if (!read_u64(memory, interp + l.interp_threads_head, &state)) return 0;
    for (int j = 0; state != 0 && j < 4096; ++j) {
      if (!read_u64(memory, state + l.tstate_thread_id, &id)) break;
      if (id == self) return t_thread_state = state;
      if (!read_u64(memory, state + l.tstate_next, &state)) break;
    }
    if (!read_u64(memory, interp + l.interp_next, &interp)) return 0;
  }
  return 0;
}

// The GIL holder's address, found once (python_sampling.h); 0: not yet.
// locked is stored before holder is published.
std::atomic<uint64_t> g_gil_holder{0};
std::atomic<int32_t> g_gil_locked{-1};

// Whether the thread whose PyThreadState is state holds the GIL (format::kGil*).
uint8_t gil_state(const PythonSampling& python, interp::MemoryReader& memory, uint64_t state) {
  interp::PythonGil gil;
  gil.holder = g_gil_holder.load(std::memory_order_acquire);
  if (gil.holder != 0) {
    gil.locked = g_gil_locked.load(std::memory_order_relaxed);
  } else {
    if (!interp::find_python_gil(python.layout, python.runtime, python.tstate_current, memory, &gil))
      return format::kGilUnknown;
    g_gil_locked.store(gil.locked, std::memory_order_relaxed);
    g_gil_holder.store(gil.holder, std::memory_order_release);
  }
  return interp::python_gil_state(gil, memory, state);
}

// Each frame's code object's tag above its address (python_sampling.h's
// code_tag): two loads a frame. A field that cannot be read leaves no tag.
void tag_code_objects(const interp::PythonLayout& l, interp::MemoryReader& memory, interp::RawFrame* raw,
                      uint32_t count) {
  const int32_t name_at = interp::code_name_offset(l);
  for (uint32_t i = 0; i < count; ++i) {
    uint64_t name = 0;
    int32_t first_line = 0;
    if (raw[i].code == 0 || (raw[i].code & ~kCodeAddressMask) != 0 || !read_u64(memory, raw[i].code + name_at, &name) ||
        !memory.read(raw[i].code + l.code_firstlineno, &first_line, sizeof first_line))
      continue;
    raw[i].code |= code_tag(name, first_line) << 48;
  }
}

// Appends the thread's Python frames to pcs[0..depth) (room for
// kPythonWords more); returns the new depth. A stack without an eval-loop
// frame (a native thread, the interpreter starting or ending) gets none.
uint32_t append_python_frames(const PythonSampling& python, uint64_t* pcs, uint32_t depth) {
  bool in_loop = false;
  for (uint32_t k = 0; k < depth && !in_loop; ++k) in_loop = python.loop.contains(pcs[k]);
  if (!in_loop) return depth;
  SelfMemory memory;
  const uint64_t state = find_thread_state(python, memory);
  if (state == 0) return depth;
  interp::RawFrame raw[kMaxInsidePythonFrames];
  const interp::WalkResult walk = interp::walk_python_frames(python.layout, memory, state, raw, kMaxInsidePythonFrames);
  tag_code_objects(python.layout, memory, raw, walk.count);
  return append_marked_frames(raw, walk, pcs, depth, walk.count == 0 ? format::kGilUnknown : gil_state(python, memory, state));
}

uint32_t append_python(const void* python, uint64_t* pcs, uint32_t depth) {
  return append_python_frames(*static_cast<const PythonSampling*>(python), pcs, depth);
}

}  // namespace

uint32_t append_marked_frames(const interp::RawFrame* raw, interp::WalkResult walk, uint64_t* pcs, uint32_t depth,
                              uint8_t gil) {
  if (walk.count == 0) return depth;
  pcs[depth++] = python_marker(walk.status, gil);
  for (uint32_t i = 0; i < walk.count; ++i) {
    pcs[depth++] = raw[i].code;
    pcs[depth++] = encode_instruction(raw[i]);
  }
  return depth;
}

__attribute__((noinline)) void deliver_stack_with_frames(AppendFrames append, const void* runtime,
                                                         unwind::StackTable* table, const void* context,
                                                         uint32_t weight) {
  uint32_t depth = g_stack_depth.load(std::memory_order_relaxed);
  if (depth > kMaxStackDepth) depth = kMaxStackDepth;
  auto* pcs = static_cast<uint64_t*>(__builtin_alloca((depth + kPythonWords) * sizeof(uint64_t)));
  const unwind::LiveMemory memory;
  const unwind::Stack stack = unwind::unwind(g_code_table.load(std::memory_order_acquire), memory,
                                             unwind::registers_from_ucontext(context), pcs, depth);
  const uint32_t stored = append(runtime, pcs, stack.depth);
  table->add(pcs, stored, stack.truncated, weight, current_thread_id());
}

void deliver_stack_with_python(const PythonSampling& python, unwind::StackTable* table, const void* context,
                               uint32_t weight) {
  deliver_stack_with_frames(append_python, &python, table, context, weight);
}

}  // namespace profiling::sampler
