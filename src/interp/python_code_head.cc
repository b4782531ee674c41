// ASYNC-SIGNAL-SAFE (python_code_head.h): buffers of the caller's or on the
// stack, reads through the MemoryReader alone.
#include "interp/python_code_head.h"

#include <cstring>

namespace profiling::interp {
namespace {

uint64_t u64_at(const uint8_t* bytes, int32_t offset) {
  uint64_t v;
  std::memcpy(&v, bytes + offset, sizeof v);
  return v;
}

// Appends code point c as UTF-8 at out[*at]; false when it does not fit.
bool put_utf8(uint32_t c, char* out, size_t capacity, size_t* at) {
  uint8_t bytes[4];
  size_t n;
  if (c < 0x80) {
    bytes[0] = static_cast<uint8_t>(c);
    n = 1;
  } else if (c < 0x800) {
    bytes[0] = static_cast<uint8_t>(0xc0 | (c >> 6));
    bytes[1] = static_cast<uint8_t>(0x80 | (c & 0x3f));
    n = 2;
  } else if (c < 0x10000) {
    bytes[0] = static_cast<uint8_t>(0xe0 | (c >> 12));
    bytes[1] = static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3f));
    bytes[2] = static_cast<uint8_t>(0x80 | (c & 0x3f));
    n = 3;
  } else {
    bytes[0] = static_cast<uint8_t>(0xf0 | (c >> 18));
    bytes[1] = static_cast<uint8_t>(0x80 | ((c >> 12) & 0x3f));
    bytes[2] = static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3f));
    bytes[3] = static_cast<uint8_t>(0x80 | (c & 0x3f));
    n = 4;
  }
  if (capacity - *at < n) return false;
  std::memcpy(out + *at, bytes, n);
  *at += n;
  return true;
}

}  // namespace

bool read_code_head(const PythonLayout& layout, MemoryReader& memory, uint64_t address, uint64_t code_type,
                    CodeHead* head) {
  uint8_t bytes[512];
  if (address == 0 || layout.code_size <= 0 || layout.code_size > static_cast<int32_t>(sizeof bytes) ||
      !memory.read(address, bytes, static_cast<size_t>(layout.code_size)))
    return false;
  // ob_type is PyObject's second word in every version.
  if (code_type != 0 && u64_at(bytes, 8) != code_type) return false;
  head->filename_object = u64_at(bytes, layout.code_filename);
  head->name_object = u64_at(bytes, code_name_offset(layout));
  head->line_table_object = u64_at(bytes, layout.code_linetable);
  int32_t first_line;
  std::memcpy(&first_line, bytes + layout.code_firstlineno, sizeof first_line);
  head->first_line = first_line;
  head->instructions = layout.code_code_adaptive >= 0 ? address + layout.code_code_adaptive : 0;
  return true;
}

int64_t python_bytes_size(const PythonLayout& layout, MemoryReader& memory, uint64_t address, uint64_t limit) {
  int64_t size = 0;
  if (address == 0 || !memory.read(address + layout.bytes_size, &size, sizeof size)) return -1;
  return size < 0 || static_cast<uint64_t>(size) > limit ? -1 : size;
}

bool read_python_bytes(const PythonLayout& layout, MemoryReader& memory, uint64_t address, void* out, size_t size) {
  return size == 0 || memory.read(address + layout.bytes_data, out, size);
}

int64_t read_python_string_into(const PythonLayout& layout, MemoryReader& memory, uint64_t address, char* out,
                                size_t capacity) {
  if (layout.string27) {
    const int64_t size = python_bytes_size(layout, memory, address, kMaxPythonString);
    if (size < 0) return -1;
    if (static_cast<uint64_t>(size) > capacity) return kPythonStringTooLong;
    if (!read_python_bytes(layout, memory, address, out, static_cast<size_t>(size))) return -1;
    return size;
  }
  uint8_t head[128];
  if (address == 0 || layout.unicode_compact_size <= 0 ||
      layout.unicode_compact_size > static_cast<int32_t>(sizeof head) ||
      !memory.read(address, head, static_cast<size_t>(layout.unicode_compact_size)))
    return -1;
  int64_t length;
  std::memcpy(&length, head + layout.unicode_length, sizeof length);
  uint32_t state;
  std::memcpy(&state, head + layout.unicode_state, sizeof state);
  // PyASCIIObject.state: interned (2 bits), kind (3), compact (1), ascii (1)
  // from 3.3 to 3.13.
  const uint32_t kind = (state >> 2) & 7;
  const bool compact = (state >> 5) & 1;
  const bool ascii = (state >> 6) & 1;
  if (!compact || length < 0 || static_cast<uint64_t>(length) > kMaxPythonString ||
      (kind != 1 && kind != 2 && kind != 4))
    return -1;
  if (ascii) {
    if (static_cast<uint64_t>(length) > capacity) return kPythonStringTooLong;
    return length == 0 || memory.read(address + layout.unicode_ascii_size, out, static_cast<size_t>(length)) ? length
                                                                                                               : -1;
  }
  // The characters a chunk at a time, through a stack buffer.
  uint8_t chunk[256];
  const uint64_t data = address + layout.unicode_compact_size;
  size_t at = 0;
  for (int64_t i = 0; i < length;) {
    const int64_t n = length - i < static_cast<int64_t>(sizeof chunk / kind) ? length - i : sizeof chunk / kind;
    if (!memory.read(data + static_cast<uint64_t>(i) * kind, chunk, static_cast<size_t>(n) * kind)) return -1;
    for (int64_t j = 0; j < n; ++j) {
      uint32_t c = 0;
      if (kind == 1) {
        c = chunk[j];
      } else if (kind == 2) {
        uint16_t u;
        std::memcpy(&u, chunk + 2 * j, 2);
        c = u;
      } else {
        std::memcpy(&c, chunk + 4 * j, 4);
      }
      if (!put_utf8(c, out, capacity, &at)) return kPythonStringTooLong;
    }
    i += n;
  }
  return static_cast<int64_t>(at);
}

int64_t python_line_offset(const PythonLayout& layout, uint64_t instructions, uint64_t instruction) {
  switch (layout.line_table) {
    case PythonLineTable::kLnotab27:
    case PythonLineTable::kLnotab:
      return static_cast<int64_t>(instruction);
    case PythonLineTable::kLinetable310:
      return 2 * static_cast<int64_t>(instruction);
    case PythonLineTable::kLocations311:
    default:
      return static_cast<int64_t>(instruction - instructions);
  }
}

}  // namespace profiling::interp
