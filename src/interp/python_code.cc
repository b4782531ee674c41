#include "interp/python_code.h"

#include <cstring>

#include "interp/python_code_head.h"
#include "interp/python_lines.h"

namespace profiling::interp {

bool read_python_string(const PythonLayout& layout, MemoryReader& memory, uint64_t address, std::string* out) {
  // Names are short; a longer one is read again with room for the longest
  // (UTF-8 takes at most 4 bytes a character).
  out->resize(256);
  int64_t length = read_python_string_into(layout, memory, address, out->data(), out->size());
  if (length == kPythonStringTooLong) {
    out->resize(4 * kMaxPythonString);
    length = read_python_string_into(layout, memory, address, out->data(), out->size());
  }
  out->resize(length < 0 ? 0 : static_cast<size_t>(length));
  return length >= 0;
}

bool PythonCodeNamer::read_head(uint64_t address, PythonCode* head) {
  CodeHead code;
  if (!read_code_head(layout_, memory_, address, code_type_, &code)) return false;
  head->address = address;
  head->filename_object = code.filename_object;
  head->name_object = code.name_object;
  head->line_table_object = code.line_table_object;
  head->first_line = code.first_line;
  head->instructions = code.instructions;
  return true;
}

uint32_t PythonCodeNamer::identify(uint64_t address) {
  PythonCode head;
  if (!read_head(address, &head)) return kNoCode;
  auto found = by_address_.find(address);
  if (found != by_address_.end()) {
    const PythonCode& known = codes_[found->second];
    if (known.filename_object == head.filename_object && known.name_object == head.name_object &&
        known.line_table_object == head.line_table_object && known.first_line == head.first_line)
      return found->second;
  }
  if (!read_python_string(layout_, memory_, head.name_object, &head.name) ||
      !read_python_string(layout_, memory_, head.filename_object, &head.file) ||
      !read_line_table(head.line_table_object, &head.line_table))
    return kNoCode;
  const uint32_t id = static_cast<uint32_t>(codes_.size());
  codes_.push_back(std::move(head));
  by_address_[address] = id;
  return id;
}

bool PythonCodeNamer::read_line_table(uint64_t address, std::string* out) {
  const int64_t size = python_bytes_size(layout_, memory_, address, kMaxPythonLineTable);
  if (size < 0) return false;
  out->resize(static_cast<size_t>(size));
  return read_python_bytes(layout_, memory_, address, out->data(), out->size());
}

int PythonCodeNamer::line(const PythonCode& code, uint64_t instruction) const {
  return python_line(layout_.line_table, code.line_table, code.first_line,
                     python_line_offset(layout_, code.instructions, instruction));
}

}  // namespace profiling::interp
