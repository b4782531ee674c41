// Where CPython keeps what a frame walk and the naming of code objects read:
// field offsets of one interpreter version, as a plain struct (no pointer,
// no heap) that a signal handler may read and a BPF map may hold.
//
// Two sources: a table per minor version kept in python_layout.cc (2.7,
// 3.6-3.12; each entry says where its numbers come from), and for 3.13 the
// interpreter's own _Py_DebugOffsets at the start of _PyRuntime. A version
// without either is refused with its name: never a guess.
//
// python_layout_for and python_layout_from_debug_offsets are host side
// (no allocation either, but they are not meant for a handler).
#ifndef PROFIL_INTERP_PYTHON_LAYOUT_H
#define PROFIL_INTERP_PYTHON_LAYOUT_H

#include <cstddef>
#include <cstdint>

namespace profiling::interp {

// How frames are chained in this version.
enum class PythonFrameModel : uint8_t {
  kFrameObject,     // ≤3.10: PyFrameObject per eval-loop call; instruction = f_lasti
  kInterpFrame311,  // 3.11: _PyInterpreterFrame via tstate->cframe, is_entry
  kInterpFrame312,  // 3.12: via tstate->cframe, shim frames owned by the C stack
  kInterpFrame313,  // 3.13+: via tstate->current_frame, shim frames
};

enum class PythonLineTable : uint8_t {
  kLnotab27,      // 2.7: co_lnotab, unsigned line increments, f_lasti in bytes
  kLnotab,        // 3.6-3.9: co_lnotab, signed line increments, f_lasti in bytes
  kLinetable310,  // 3.10: co_linetable (start delta, line delta), f_lasti in code units
  kLocations311,  // 3.11+: location table, instruction pointer into co_code_adaptive
};

struct PythonLayout {
  uint8_t major = 0, minor = 0;
  PythonFrameModel model = PythonFrameModel::kFrameObject;
  PythonLineTable line_table = PythonLineTable::kLnotab;
  bool string27 = false;  // names are PyStringObject (2.7), else PyUnicode

  // _PyRuntimeState.interpreters.head, -1 on 2.7 and 3.6 (interp_head).
  int32_t runtime_interpreters_head = -1;
  int32_t interp_next = 0, interp_threads_head = 0;
  int32_t tstate_next = 0, tstate_interp = 0, tstate_thread_id = 0;
  int32_t tstate_native_thread_id = -1;  // 3.11+
  // ≤3.10: tstate->frame; 3.11/3.12: tstate->cframe; 3.13: tstate->current_frame.
  int32_t tstate_frame = 0;
  int32_t cframe_current_frame = -1;  // 3.11/3.12: _PyCFrame.current_frame
  int32_t tstate_size = 0;            // bytes enough for every tstate field above

  int32_t frame_back = 0;         // f_back / previous
  int32_t frame_code = 0;         // f_code / f_executable
  int32_t frame_instruction = 0;  // f_lasti (int) / prev_instr / instr_ptr
  int32_t frame_is_entry = -1;    // 3.11
  int32_t frame_owner = -1;       // 3.11+ (a char)
  int32_t frame_size = 0;         // one read covers every field above
  int8_t owner_cstack = -1;       // 3.12+: FRAME_OWNED_BY_CSTACK

  int32_t code_filename = 0, code_name = 0, code_qualname = -1, code_firstlineno = 0;
  int32_t code_linetable = 0;       // co_lnotab / co_linetable
  int32_t code_code_adaptive = -1;  // 3.11+: where the instructions start in the code object
  int32_t code_size = 0;            // one read covers every code field above

  // The GIL's holder (issue 31, python_gil.h), -1 where a version does not
  // tell. 2.7/3.6: the symbol _PyThreadState_Current (no offset). 3.7-3.11:
  // _PyRuntime.gilstate.tstate_current, NULL while no thread holds it.
  // 3.12+: PyInterpreterState.ceval.gil points to the GIL in use, whose
  // last_holder and locked (1 while taken) say it.
  int32_t runtime_gil_holder = -1;
  int32_t interp_ceval_gil = -1, gil_last_holder = -1, gil_locked = -1;

  // Strings. PyUnicode: compact objects (code objects' names are).
  int32_t unicode_state = 32, unicode_length = 16;
  int32_t unicode_ascii_size = 0;    // sizeof(PyASCIIObject): ASCII data follows
  int32_t unicode_compact_size = 0;  // sizeof(PyCompactUnicodeObject): other data follows
  // PyBytes (3.x) or PyString (2.7): ob_size and the bytes.
  int32_t bytes_size = 16, bytes_data = 32;
};

// The table entry of major.minor; false when there is none (3.13+ have
// their layout from the process: python_layout_from_debug_offsets).
bool python_layout_for(int major, int minor, PythonLayout* out);

// The start of _PyRuntime in a 3.13 process (its _Py_DebugOffsets; read
// kDebugOffsetsSize bytes). false with *why set (a static string) when the
// cookie is wrong, the version is not 3.13 (the struct's own layout changes
// between minor versions) or the build is free-threaded.
inline constexpr size_t kDebugOffsetsSize = 584;
bool python_layout_from_debug_offsets(const uint8_t* bytes, size_t size, PythonLayout* out, const char** why);

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_PYTHON_LAYOUT_H
