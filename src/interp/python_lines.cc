#include "interp/python_lines.h"

namespace profiling::interp {
namespace {

// co_lnotab (Objects/lnotab_notes.txt of 2.7-3.9): pairs of (bytecode
// increment, line increment), the line increment signed from 3.6 on.
int lnotab_line(std::string_view table, int first_line, int64_t offset, bool signed_lines) {
  int line = first_line;
  int64_t address = 0;
  for (size_t i = 0; i + 1 < table.size(); i += 2) {
    address += static_cast<uint8_t>(table[i]);
    if (address > offset) break;
    line += signed_lines ? static_cast<int8_t>(table[i + 1]) : static_cast<uint8_t>(table[i + 1]);
  }
  return line;
}

// 3.10's co_linetable (Objects/lnotab_notes.txt of 3.10): pairs of (start
// delta, line delta) making ranges [start, end); a line delta of -128 is a
// range without a line.
int linetable310_line(std::string_view table, int first_line, int64_t offset) {
  int computed = first_line;
  int64_t end = 0;
  for (size_t i = 0; i + 1 < table.size(); i += 2) {
    const int64_t start = end;
    end += static_cast<uint8_t>(table[i]);
    const int8_t delta = static_cast<int8_t>(table[i + 1]);
    int line = -1;
    if (delta != -128) {
      computed += delta;
      line = computed;
    }
    if (offset >= start && offset < end) return line;
  }
  return -1;
}

unsigned scan_varint(std::string_view table, size_t* at) {
  unsigned value = 0, shift = 0;
  while (*at < table.size()) {
    const uint8_t byte = static_cast<uint8_t>(table[(*at)++]);
    value |= static_cast<unsigned>(byte & 63) << shift;
    shift += 6;
    if ((byte & 64) == 0 || shift > 30) break;
  }
  return value;
}

int scan_signed_varint(std::string_view table, size_t* at) {
  const unsigned value = scan_varint(table, at);
  return (value & 1) ? -static_cast<int>(value >> 1) : static_cast<int>(value >> 1);
}

// 3.11+'s location table (Objects/locations.md): entries whose first byte
// has bit 7 set, code (bits 3-6) and length in code units (bits 0-2, +1).
// Codes 13 (no columns) and 14 (long form) carry a signed varint line
// delta, 10-12 a delta of code - 10, 15 is "no location", 0-9 the same line.
int locations_line(std::string_view table, int first_line, int64_t offset) {
  int line = first_line;
  int64_t start = 0;
  size_t at = 0;
  while (at < table.size()) {
    const uint8_t head = static_cast<uint8_t>(table[at]);
    const int code = (head >> 3) & 15;
    const int64_t end = start + 2 * ((head & 7) + 1);
    size_t next = at + 1;
    if (code == 13 || code == 14) {
      line += scan_signed_varint(table, &next);
    } else if (code >= 10 && code <= 12) {
      line += code - 10;
    }
    if (offset >= start && offset < end) return code == 15 ? -1 : line;
    start = end;
    at = at + 1;
    while (at < table.size() && (static_cast<uint8_t>(table[at]) & 128) == 0) ++at;
  }
  return -1;
}

}  // namespace

int python_line(PythonLineTable kind, std::string_view table, int first_line, int64_t offset) {
  if (offset < 0) return first_line;
  switch (kind) {
    case PythonLineTable::kLnotab27:
      return lnotab_line(table, first_line, offset, false);
    case PythonLineTable::kLnotab:
      return lnotab_line(table, first_line, offset, true);
    case PythonLineTable::kLinetable310:
      return linetable310_line(table, first_line, offset);
    case PythonLineTable::kLocations311:
      return locations_line(table, first_line, offset);
  }
  return -1;
}

}  // namespace profiling::interp
