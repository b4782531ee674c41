#include "interp/python_code.h"

#include <cstring>

#include "interp/python_lines.h"

namespace profiling::interp {
namespace {

// Bounds on what is read for one name or table: a larger size is a
// misread, not a name.
constexpr uint64_t kMaxString = 1 << 16;
constexpr uint64_t kMaxLineTable = 1 << 22;

uint64_t u64_at(const uint8_t* bytes, int32_t offset) {
  uint64_t v;
  std::memcpy(&v, bytes + offset, sizeof v);
  return v;
}

void append_utf8(uint32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  }
}

// A PyBytes (3.x) or PyString (2.7): its bytes.
bool read_bytes(const PythonLayout& layout, MemoryReader& memory, uint64_t address, uint64_t limit, std::string* out) {
  int64_t size = 0;
  if (address == 0 || !memory.read(address + layout.bytes_size, &size, sizeof size)) return false;
  if (size < 0 || static_cast<uint64_t>(size) > limit) return false;
  out->resize(static_cast<size_t>(size));
  return size == 0 || memory.read(address + layout.bytes_data, out->data(), out->size());
}

}  // namespace

bool read_python_string(const PythonLayout& layout, MemoryReader& memory, uint64_t address, std::string* out) {
  out->clear();
  if (layout.string27) return read_bytes(layout, memory, address, kMaxString, out);
  uint8_t head[128];
  if (address == 0 || layout.unicode_compact_size > static_cast<int32_t>(sizeof head) ||
      !memory.read(address, head, static_cast<size_t>(layout.unicode_compact_size)))
    return false;
  int64_t length;
  std::memcpy(&length, head + layout.unicode_length, sizeof length);
  uint32_t state;
  std::memcpy(&state, head + layout.unicode_state, sizeof state);
  // PyASCIIObject.state: interned (2 bits), kind (3), compact (1), ascii (1)
  // from 3.3 to 3.13.
  const uint32_t kind = (state >> 2) & 7;
  const bool compact = (state >> 5) & 1;
  const bool ascii = (state >> 6) & 1;
  if (!compact || length < 0 || static_cast<uint64_t>(length) > kMaxString || (kind != 1 && kind != 2 && kind != 4))
    return false;
  if (ascii) {
    out->resize(static_cast<size_t>(length));
    return length == 0 || memory.read(address + layout.unicode_ascii_size, out->data(), out->size());
  }
  std::string raw(static_cast<size_t>(length) * kind, '\0');
  if (!raw.empty() && !memory.read(address + layout.unicode_compact_size, raw.data(), raw.size())) return false;
  for (int64_t i = 0; i < length; ++i) {
    uint32_t c = 0;
    if (kind == 1) {
      c = static_cast<uint8_t>(raw[i]);
    } else if (kind == 2) {
      uint16_t u;
      std::memcpy(&u, raw.data() + 2 * i, 2);
      c = u;
    } else {
      std::memcpy(&c, raw.data() + 4 * i, 4);
    }
    append_utf8(c, out);
  }
  return true;
}

bool PythonCodeNamer::read_head(uint64_t address, PythonCode* head) {
  uint8_t bytes[512];
  if (address == 0 || layout_.code_size > static_cast<int32_t>(sizeof bytes) ||
      !memory_.read(address, bytes, static_cast<size_t>(layout_.code_size)))
    return false;
  // ob_type is PyObject's second word in every version.
  if (code_type_ != 0 && u64_at(bytes, 8) != code_type_) return false;
  head->address = address;
  head->filename_object = u64_at(bytes, layout_.code_filename);
  head->name_object = u64_at(bytes, layout_.code_qualname >= 0 ? layout_.code_qualname : layout_.code_name);
  head->line_table_object = u64_at(bytes, layout_.code_linetable);
  int32_t first_line;
  std::memcpy(&first_line, bytes + layout_.code_firstlineno, sizeof first_line);
  head->first_line = first_line;
  head->instructions = layout_.code_code_adaptive >= 0 ? address + layout_.code_code_adaptive : 0;
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
      !read_bytes(layout_, memory_, head.line_table_object, kMaxLineTable, &head.line_table))
    return kNoCode;
  const uint32_t id = static_cast<uint32_t>(codes_.size());
  codes_.push_back(std::move(head));
  by_address_[address] = id;
  return id;
}

int PythonCodeNamer::line(const PythonCode& code, uint64_t instruction) const {
  int64_t offset;
  switch (layout_.line_table) {
    case PythonLineTable::kLnotab27:
    case PythonLineTable::kLnotab:
      offset = static_cast<int64_t>(instruction);
      break;
    case PythonLineTable::kLinetable310:
      offset = 2 * static_cast<int64_t>(instruction);
      break;
    case PythonLineTable::kLocations311:
    default:
      offset = static_cast<int64_t>(instruction - code.instructions);
      break;
  }
  return python_line(layout_.line_table, code.line_table, code.first_line, offset);
}

}  // namespace profiling::interp
