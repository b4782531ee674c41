// What a CPython code object says of itself, read into the caller's
// buffers: its head (the objects of its name, file and line table, its
// first line), its strings as UTF-8, its line table's bytes, and the offset
// a frame's instruction stands at (python_lines.h takes it).
//
// ASYNC-SIGNAL-SAFE: no allocation, no lock, no stdio, no exception; only
// MemoryReader::read. The preload runtime's dump names the code objects of
// its own process with these (runtime/python_inside.h), in whatever signal
// handler it runs; the host-side namer (python_code.h) is built on them too.
#ifndef PROFIL_INTERP_PYTHON_CODE_HEAD_H
#define PROFIL_INTERP_PYTHON_CODE_HEAD_H

#include <cstddef>
#include <cstdint>

#include "interp/frames.h"
#include "interp/python_layout.h"

namespace profiling::interp {

// Bounds on what is read for one name or table: a larger size is a
// misread, not a name.
inline constexpr uint64_t kMaxPythonString = 1 << 16;
inline constexpr uint64_t kMaxPythonLineTable = 1 << 22;

struct CodeHead {
  // The fields a code object cannot change while alive (python_code.h's
  // identity rule).
  uint64_t filename_object = 0, name_object = 0, line_table_object = 0;
  int first_line = 0;
  uint64_t instructions = 0;  // 3.11+: address of co_code_adaptive
};

// Where a code object holds the name it is shown by: its qualified name
// where the version has one (3.11+), else its name.
inline int32_t code_name_offset(const PythonLayout& layout) {
  return layout.code_qualname >= 0 ? layout.code_qualname : layout.code_name;
}

// The head of the code object at address; false when it cannot be read or
// (code_type != 0) its type is not PyCode_Type.
bool read_code_head(const PythonLayout& layout, MemoryReader& memory, uint64_t address, uint64_t code_type,
                    CodeHead* head);

// A PyUnicode (compact: every code object's strings are) as UTF-8, or a
// PyString (2.7) as its bytes, into out[0..capacity): the length written,
// kPythonStringTooLong when it does not fit, -1 when it cannot be read or
// is not one.
inline constexpr int64_t kPythonStringTooLong = -2;
int64_t read_python_string_into(const PythonLayout& layout, MemoryReader& memory, uint64_t address, char* out,
                                size_t capacity);

// A PyBytes (3.x) or PyString (2.7)'s size (limit at most), -1 when it
// cannot be read; and its bytes [0, size) into out.
int64_t python_bytes_size(const PythonLayout& layout, MemoryReader& memory, uint64_t address, uint64_t limit);
bool read_python_bytes(const PythonLayout& layout, MemoryReader& memory, uint64_t address, void* out, size_t size);

// The offset python_line() takes for a frame's RawFrame::instruction in
// the code whose instructions start at `instructions` (3.11+).
int64_t python_line_offset(const PythonLayout& layout, uint64_t instructions, uint64_t instruction);

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_PYTHON_CODE_HEAD_H
