// The per-version tables. Every number below was printed by gdb from the
// DWARF of pyenv's builds on this machine (shared libpython with debug
// information), with src/interp/derive_python_offsets.sh:
//   src/interp/derive_python_offsets.sh /root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0 3.11
// which runs, per field, gdb -batch -ex 'printf "%d", (long)&((T*)0)->field'
// (the same numbers as `ptype /o`). The patch release a table was read from
// is named in its comment; CPython keeps these structs stable within a minor
// version (Debian's 3.11.2 reads with the 3.11.7 table: python_test.cc).
// PyBytesObject.ob_size is PyVarObject's, 16 in every version; FRAME_OWNED_BY_CSTACK
// is 3 in 3.12 and 3.13 (Include/internal/pycore_frame.h).
// The GIL's fields (issue 31) by the same gdb command:
//   (long)&((_PyRuntimeState*)0)->gilstate.tstate_current        3.7-3.11
//   (long)&((PyInterpreterState*)0)->ceval.gil,
//   (long)&((struct _gil_runtime_state*)0)->last_holder, ->locked   3.12
#include "interp/python_layout.h"

#include <algorithm>
#include <cstring>

namespace profiling::interp {
namespace {

// The read sizes: one read of a frame, a code object or a thread state
// covers every field the walk or the namer takes from it.
void finish(PythonLayout* l) {
  auto top = [](std::initializer_list<int32_t> offsets) {
    int32_t most = 0;
    for (int32_t o : offsets) most = std::max(most, o);
    return most + 8;
  };
  l->tstate_size =
      top({l->tstate_next, l->tstate_interp, l->tstate_thread_id, l->tstate_native_thread_id, l->tstate_frame});
  l->frame_size = top({l->frame_back, l->frame_code, l->frame_instruction, l->frame_is_entry, l->frame_owner});
  l->code_size = top({l->code_filename, l->code_name, l->code_qualname, l->code_firstlineno, l->code_linetable});
}

// ≤3.10: tstate->frame is a PyFrameObject; f_back, f_code, f_lasti.
PythonLayout frame_object(int major, int minor, int32_t rt_head, int32_t ts_next, int32_t ts_interp,
                          int32_t ts_thread_id, int32_t ts_frame, int32_t f_lasti, int32_t co_filename, int32_t co_name,
                          int32_t co_firstlineno, int32_t co_linetable) {
  PythonLayout l;
  l.major = static_cast<uint8_t>(major);
  l.minor = static_cast<uint8_t>(minor);
  l.model = PythonFrameModel::kFrameObject;
  l.line_table = l.major == 2 ? PythonLineTable::kLnotab27
                 : minor <= 9 ? PythonLineTable::kLnotab
                              : PythonLineTable::kLinetable310;
  l.string27 = l.major == 2;
  l.runtime_interpreters_head = rt_head;
  l.interp_next = 0;
  l.interp_threads_head = 8;  // PyInterpreterState.tstate_head, 8 in 2.7-3.10
  l.tstate_next = ts_next;
  l.tstate_interp = ts_interp;
  l.tstate_thread_id = ts_thread_id;
  l.tstate_frame = ts_frame;
  l.frame_back = 24;  // PyFrameObject.f_back, f_code: 24, 32 in 2.7-3.10
  l.frame_code = 32;
  l.frame_instruction = f_lasti;
  l.code_filename = co_filename;
  l.code_name = co_name;
  l.code_firstlineno = co_firstlineno;
  l.code_linetable = co_linetable;
  l.unicode_ascii_size = 48;  // sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject): 48, 72 in 3.6-3.11
  l.unicode_compact_size = 72;
  if (l.string27) l.bytes_data = 36;  // PyStringObject.ob_sval (ob_shash, ob_sstate before it)
  finish(&l);
  return l;
}

}  // namespace

bool python_layout_for(int major, int minor, PythonLayout* out) {
  if (major == 2 && minor == 7) {
    // 2.7.18: PyThreadState next 0, interp 8, frame 16, thread_id 144; f_lasti 120;
    // PyCodeObject co_filename 80, co_name 88, co_firstlineno 96, co_lnotab 104.
    *out = frame_object(2, 7, -1, 0, 8, 144, 16, 120, 80, 88, 96, 104);
    return true;
  }
  if (major != 3) return false;
  switch (minor) {
    case 6:  // 3.6.15: PyThreadState next 8 (prev first), interp 16, frame 24, thread_id 152;
             // f_lasti 120; co_filename 96, co_name 104, co_firstlineno 36, co_lnotab 112.
      *out = frame_object(3, 6, -1, 8, 16, 152, 24, 120, 96, 104, 36, 112);
      return true;
    case 7:  // 3.7.16: _PyRuntimeState.interpreters.head 24; thread_id 176; f_lasti 104;
             // gilstate.tstate_current 1480.
      *out = frame_object(3, 7, 24, 8, 16, 176, 24, 104, 96, 104, 36, 112);
      out->runtime_gil_holder = 1480;
      return true;
    case 8:  // 3.8.18: interpreters.head 32; co_filename 104, co_name 112, co_firstlineno 40, co_lnotab 120;
             // gilstate.tstate_current 1368.
      *out = frame_object(3, 8, 32, 8, 16, 176, 24, 104, 104, 112, 40, 120);
      out->runtime_gil_holder = 1368;
      return true;
    case 9:  // 3.9.18: as 3.8.18 but gilstate.tstate_current 568.
      *out = frame_object(3, 9, 32, 8, 16, 176, 24, 104, 104, 112, 40, 120);
      out->runtime_gil_holder = 568;
      return true;
    case 10:  // 3.10.13: f_lasti 96 (in code units now); co_linetable 120; gilstate.tstate_current 568.
      *out = frame_object(3, 10, 32, 8, 16, 176, 24, 96, 104, 112, 40, 120);
      out->runtime_gil_holder = 568;
      return true;
    case 11:
    case 12: {
      PythonLayout l;
      l.major = 3;
      l.minor = static_cast<uint8_t>(minor);
      l.line_table = PythonLineTable::kLocations311;
      l.runtime_interpreters_head = 40;  // 3.11.7 and 3.12.1 alike
      l.interp_next = 0;
      l.tstate_next = 8;
      l.tstate_interp = 16;
      l.tstate_frame = 56;  // PyThreadState.cframe
      l.code_filename = 112;
      l.code_name = 120;
      l.code_qualname = 128;
      l.code_linetable = 136;
      if (minor == 11) {
        // 3.11.7: PyInterpreterState.threads.head 16; PyThreadState thread_id 152,
        // native_thread_id 160; _PyCFrame.current_frame 8 (after use_tracing);
        // _PyInterpreterFrame f_code 32, previous 48, prev_instr 56, is_entry 68, owner 69;
        // PyCodeObject co_firstlineno 72, co_code_adaptive 184.
        l.model = PythonFrameModel::kInterpFrame311;
        l.interp_threads_head = 16;
        l.tstate_thread_id = 152;
        l.tstate_native_thread_id = 160;
        l.cframe_current_frame = 8;
        l.frame_code = 32;
        l.frame_back = 48;
        l.frame_instruction = 56;
        l.frame_is_entry = 68;
        l.frame_owner = 69;
        l.code_firstlineno = 72;
        l.code_code_adaptive = 184;
        l.runtime_gil_holder = 576;  // gilstate.tstate_current
        l.unicode_ascii_size = 48;
        l.unicode_compact_size = 72;
      } else {
        // 3.12.1: PyInterpreterState.threads.head 72; PyThreadState thread_id 136,
        // native_thread_id 144; _PyCFrame.current_frame 0; _PyInterpreterFrame f_code 0,
        // previous 8, prev_instr 56, owner 70; co_firstlineno 68, co_code_adaptive 192;
        // PyASCIIObject lost wstr: sizeof 40, PyCompactUnicodeObject 56.
        l.model = PythonFrameModel::kInterpFrame312;
        l.interp_threads_head = 72;
        l.tstate_thread_id = 136;
        l.tstate_native_thread_id = 144;
        l.cframe_current_frame = 0;
        l.frame_code = 0;
        l.frame_back = 8;
        l.frame_instruction = 56;
        l.frame_owner = 70;
        l.owner_cstack = 3;
        l.code_firstlineno = 68;
        l.code_code_adaptive = 192;
        // gilstate lost tstate_current (a thread-local now); ceval.gil 384,
        // _gil_runtime_state last_holder 8, locked 16.
        l.interp_ceval_gil = 384;
        l.gil_last_holder = 8;
        l.gil_locked = 16;
        l.unicode_ascii_size = 40;
        l.unicode_compact_size = 56;
      }
      finish(&l);
      *out = l;
      return true;
    }
    default:
      return false;
  }
}

namespace {
uint64_t u64_at(const uint8_t* bytes, size_t offset) {
  uint64_t v;
  std::memcpy(&v, bytes + offset, 8);
  return v;
}
}  // namespace

bool python_layout_from_debug_offsets(const uint8_t* bytes, size_t size, PythonLayout* out, const char** why) {
  // The offsets of _Py_DebugOffsets' own fields are 3.13.0's
  // (gdb -batch -ex 'ptype /o struct _Py_DebugOffsets' libpython3.13.so.1.0);
  // 3.14 inserts fields, so another version is refused rather than misread.
  if (size < kDebugOffsetsSize || std::memcmp(bytes, "xdebugpy", 8) != 0) {
    *why = "no _Py_DebugOffsets at the start of _PyRuntime (cookie \"xdebugpy\" missing)";
    return false;
  }
  const uint64_t version = u64_at(bytes, 8);
  if ((version >> 24) != 3 || ((version >> 16) & 0xff) != 13) {
    *why = "_Py_DebugOffsets of a version other than 3.13: its layout is not known here";
    return false;
  }
  if (u64_at(bytes, 16) != 0) {
    *why = "free-threaded CPython 3.13 (its frames are not read here)";
    return false;
  }
  auto at = [&](size_t offset) { return static_cast<int32_t>(u64_at(bytes, offset)); };
  PythonLayout l;
  l.major = 3;
  l.minor = 13;
  l.model = PythonFrameModel::kInterpFrame313;
  l.line_table = PythonLineTable::kLocations311;
  l.runtime_interpreters_head = at(40);
  l.interp_next = at(64);
  l.interp_threads_head = at(72);
  l.tstate_next = at(168);
  l.tstate_interp = at(176);
  l.tstate_frame = at(184);  // current_frame
  l.tstate_thread_id = at(192);
  l.tstate_native_thread_id = at(200);
  l.frame_back = at(232);
  l.frame_code = at(240);  // f_executable
  l.frame_instruction = at(248);
  l.frame_owner = at(264);
  l.owner_cstack = 3;
  l.code_filename = at(280);
  l.code_name = at(288);
  l.code_qualname = at(296);
  l.code_linetable = at(304);
  l.code_firstlineno = at(312);
  l.code_code_adaptive = at(344);
  l.unicode_state = at(544);
  l.unicode_length = at(552);
  l.unicode_ascii_size = at(560);
  // PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject (3.12+).
  l.unicode_compact_size = l.unicode_ascii_size + 16;
  // The GIL (3.13.0's interpreter_state.ceval_gil 112, gil_runtime_state
  // 120, its locked 136 and holder 144: offsets in PyInterpreterState of
  // its own _gil's fields, made offsets in the GIL struct here).
  l.interp_ceval_gil = at(112);
  l.gil_last_holder = at(144) - at(120);
  l.gil_locked = at(136) - at(120);
  l.bytes_size = at(520);
  l.bytes_data = at(528);
  finish(&l);
  *out = l;
  return true;
}

}  // namespace profiling::interp
