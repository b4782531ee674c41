// Line tables of each kind, hand-built from the formats CPython documents
// (Objects/lnotab_notes.txt, Objects/locations.md); the real tables of every
// version are read in python_test.cc.
#include "interp/python_lines.h"

#include <gtest/gtest.h>

#include <string>

namespace profiling::interp {
namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

TEST(PythonLines, Lnotab) {
  // From line 10: bytes 0-5 line 10, 6-49 line 11, 50- line 8 (3.6+ signed).
  const std::string table = bytes({6, 1, 44, -3});
  EXPECT_EQ(python_line(PythonLineTable::kLnotab, table, 10, 0), 10);
  EXPECT_EQ(python_line(PythonLineTable::kLnotab, table, 10, 6), 11);
  EXPECT_EQ(python_line(PythonLineTable::kLnotab, table, 10, 49), 11);
  EXPECT_EQ(python_line(PythonLineTable::kLnotab, table, 10, 50), 8);
  EXPECT_EQ(python_line(PythonLineTable::kLnotab, table, 10, -1), 10);
  // 2.7: the increment is unsigned (253 lines on, not 3 back).
  EXPECT_EQ(python_line(PythonLineTable::kLnotab27, table, 10, 50), 11 + 253);
}

TEST(PythonLines, Linetable310) {
  // [0,4) line 10+1, [4,6) no line, [6,10) line 11+2.
  const std::string table = bytes({4, 1, 2, -128, 4, 2});
  EXPECT_EQ(python_line(PythonLineTable::kLinetable310, table, 10, 0), 11);
  EXPECT_EQ(python_line(PythonLineTable::kLinetable310, table, 10, 4), -1);
  EXPECT_EQ(python_line(PythonLineTable::kLinetable310, table, 10, 8), 13);
  EXPECT_EQ(python_line(PythonLineTable::kLinetable310, table, 10, 10), -1);
}

TEST(PythonLines, Locations311) {
  const std::string table = bytes({
      0x80 | (10 << 3) | 0, 0, 5,        // one-line form, delta 0, 1 unit: [0,2) line 20
      0x80 | (13 << 3) | 1, 6,           // no columns, delta +3 (varint 6), 2 units: [2,6) line 23
      0x80 | (15 << 3) | 0,              // no location, 1 unit: [6,8)
      0x80 | (14 << 3) | 2, 3, 0, 1, 2,  // long form, delta -1 (varint 3), 3 units: [8,14) line 22
      0x80 | (0 << 3) | 0, 4,            // short form, same line, 1 unit: [14,16) line 22
      0x80 | (11 << 3) | 0, 1, 2,        // one-line form, delta +1: [16,18) line 23
  });
  EXPECT_EQ(python_line(PythonLineTable::kLocations311, table, 20, 0), 20);
  EXPECT_EQ(python_line(PythonLineTable::kLocations311, table, 20, 4), 23);
  EXPECT_EQ(python_line(PythonLineTable::kLocations311, table, 20, 6), -1);
  EXPECT_EQ(python_line(PythonLineTable::kLocations311, table, 20, 12), 22);
  EXPECT_EQ(python_line(PythonLineTable::kLocations311, table, 20, 14), 22);
  EXPECT_EQ(python_line(PythonLineTable::kLocations311, table, 20, 16), 23);
  EXPECT_EQ(python_line(PythonLineTable::kLocations311, table, 20, 18), -1);
  EXPECT_EQ(python_line(PythonLineTable::kLocations311, table, 20, -2), 20);
}

}  // namespace
}  // namespace profiling::interp
