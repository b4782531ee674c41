// Naming CPython code objects after the fact: from a code object's address
// in the process, its qualified name (co_qualname 3.11+, else co_name: the
// class of a method is not prefixed before 3.11), file (co_filename), first
// line, and the line of any instruction in it (python_lines.h).
//
// NOT async-signal-safe: host side, allocates; one reader per namer, and a
// namer is used by one thread at a time (no lock inside).
//
// The cache rule (an address freed and reused by another code object must not
// rename older samples): a code object is identified by its address AND the
// fields it cannot change while alive (co_filename's and co_name's object
// addresses, co_firstlineno, the line table's address). identify() re-reads
// the code object's head (one read of layout.code_size bytes) and compares
// those fields with the cached entry of that address: the same, the cached id
// is returned; different, a new id is made and the address now maps to it.
// A sample must keep the id identify() gave it when it was taken (or as soon
// after as the reader gets to it), never the bare address: ids are never
// reused, so an older sample keeps the name it was taken under. A lead that
// calls identify() less often than once per sample (say once per address per
// batch of samples read together) accepts a reuse inside that batch.
#ifndef PROFIL_INTERP_PYTHON_CODE_H
#define PROFIL_INTERP_PYTHON_CODE_H

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "interp/frames.h"
#include "interp/python_layout.h"

namespace profiling::interp {

struct PythonCode {
  uint64_t address = 0;
  std::string name;  // qualified where the version keeps it
  std::string file;
  int first_line = 0;
  // Identity (see the cache rule above).
  uint64_t filename_object = 0, name_object = 0, line_table_object = 0;
  // The line table's bytes and what offsets in it count from.
  std::string line_table;
  uint64_t instructions = 0;  // 3.11+: address of co_code_adaptive
};

// A PyUnicode (compact: every code object's strings are) as UTF-8, or a
// PyString (2.7) as its bytes. false when it cannot be read or is not one.
bool read_python_string(const PythonLayout& layout, MemoryReader& memory, uint64_t address, std::string* out);

class PythonCodeNamer {
 public:
  static constexpr uint32_t kNoCode = UINT32_MAX;
  // code_type: the address of PyCode_Type in the process (0: not checked).
  PythonCodeNamer(const PythonLayout& layout, MemoryReader& memory, uint64_t code_type)
      : layout_(layout), memory_(memory), code_type_(code_type) {}

  // The id of the code object at address now, kNoCode when what is there
  // cannot be read as a code object.
  uint32_t identify(uint64_t address);
  const PythonCode& code(uint32_t id) const { return codes_[id]; }
  // The line the frame was at (RawFrame::instruction of this code's frame).
  int line(const PythonCode& code, uint64_t instruction) const;

 private:
  bool read_head(uint64_t address, PythonCode* head);
  bool read_line_table(uint64_t address, std::string* out);

  PythonLayout layout_;
  MemoryReader& memory_;
  uint64_t code_type_;
  std::vector<PythonCode> codes_;
  std::unordered_map<uint64_t, uint32_t> by_address_;
};

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_PYTHON_CODE_H
