// The namer on code objects built in this process's memory: compact
// PyUnicode of each kind to UTF-8, 2.7's PyString, and the cache rule — an
// address reused by another code object gets a new id and the old id keeps
// its name.
#include "interp/python_code.h"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "interp/readers.h"

namespace profiling::interp {
namespace {

class Objects {
 public:
  explicit Objects(const PythonLayout& layout) : layout_(layout) {}

  // A compact PyUnicode of code units of the given kind (1, 2, 4).
  uint64_t unicode(const std::vector<uint32_t>& units, int kind) {
    bool ascii = kind == 1;
    for (uint32_t u : units) ascii = ascii && u < 0x80;
    const int32_t data = ascii ? layout_.unicode_ascii_size : layout_.unicode_compact_size;
    uint8_t* bytes = buffer(static_cast<size_t>(data) + units.size() * kind + 4);
    const int64_t length = static_cast<int64_t>(units.size());
    std::memcpy(bytes + layout_.unicode_length, &length, 8);
    const uint32_t state = (static_cast<uint32_t>(kind) << 2) | (1u << 5) | (ascii ? 1u << 6 : 0);
    std::memcpy(bytes + layout_.unicode_state, &state, 4);
    for (size_t i = 0; i < units.size(); ++i) std::memcpy(bytes + data + i * kind, &units[i], kind);
    return reinterpret_cast<uint64_t>(bytes);
  }
  // A PyBytes (or 2.7 PyString).
  uint64_t bytes_object(const std::string& value) {
    uint8_t* bytes = buffer(static_cast<size_t>(layout_.bytes_data) + value.size() + 1);
    const int64_t size = static_cast<int64_t>(value.size());
    std::memcpy(bytes + layout_.bytes_size, &size, 8);
    std::memcpy(bytes + layout_.bytes_data, value.data(), value.size());
    return reinterpret_cast<uint64_t>(bytes);
  }
  // Fills the code object at `code` (layout.code_size bytes).
  void code(uint8_t* code, uint64_t type, uint64_t filename, uint64_t name, int32_t first_line, uint64_t line_table) {
    std::memset(code, 0, static_cast<size_t>(layout_.code_size));
    std::memcpy(code + 8, &type, 8);
    std::memcpy(code + layout_.code_filename, &filename, 8);
    std::memcpy(code + layout_.code_name, &name, 8);
    if (layout_.code_qualname >= 0) std::memcpy(code + layout_.code_qualname, &name, 8);
    std::memcpy(code + layout_.code_firstlineno, &first_line, 4);
    std::memcpy(code + layout_.code_linetable, &line_table, 8);
  }

 private:
  uint8_t* buffer(size_t size) {
    buffers_.emplace_back(size, 0);
    return buffers_.back().data();
  }
  PythonLayout layout_;
  std::deque<std::vector<uint8_t>> buffers_;
};

std::vector<uint32_t> units(const std::u32string& text) { return {text.begin(), text.end()}; }

TEST(PythonCode, UnicodeKindsToUtf8) {
  PythonLayout layout;
  ASSERT_TRUE(python_layout_for(3, 12, &layout));
  Objects objects(layout);
  LocalMemory memory;
  std::string out;
  ASSERT_TRUE(read_python_string(layout, memory, objects.unicode(units(U"leaf"), 1), &out));
  EXPECT_EQ(out, "leaf");
  ASSERT_TRUE(read_python_string(layout, memory, objects.unicode(units(U"größe"), 1), &out));
  EXPECT_EQ(out, "größe");
  ASSERT_TRUE(read_python_string(layout, memory, objects.unicode(units(U"函数"), 2), &out));
  EXPECT_EQ(out, "函数");
  ASSERT_TRUE(read_python_string(layout, memory, objects.unicode(units(U"f\U0001F600"), 4), &out));
  EXPECT_EQ(out, "f\xF0\x9F\x98\x80");
  PythonLayout old;
  ASSERT_TRUE(python_layout_for(2, 7, &old));
  ASSERT_TRUE(read_python_string(old, memory, Objects(old).bytes_object("method"), &out));
  EXPECT_EQ(out, "method");
}

TEST(PythonCode, ReusedAddressGetsANewId) {
  PythonLayout layout;
  ASSERT_TRUE(python_layout_for(3, 11, &layout));
  Objects objects(layout);
  LocalMemory memory;
  const uint64_t type = 0x1234;
  std::vector<uint8_t> code(static_cast<size_t>(layout.code_size));
  const uint64_t file = objects.unicode(units(U"/a.py"), 1);
  // A line table: one entry, 4 code units, one-line form at the first line.
  const uint64_t table = objects.bytes_object(std::string("\xd3\x00\x05", 3));
  objects.code(code.data(), type, file, objects.unicode(units(U"first"), 1), 7, table);
  PythonCodeNamer namer(layout, memory, type);
  const uint64_t address = reinterpret_cast<uint64_t>(code.data());
  const uint32_t first = namer.identify(address);
  ASSERT_NE(first, PythonCodeNamer::kNoCode);
  EXPECT_EQ(namer.identify(address), first);  // the same object: the cached id
  EXPECT_EQ(namer.code(first).name, "first");
  EXPECT_EQ(namer.code(first).file, "/a.py");
  EXPECT_EQ(namer.line(namer.code(first), namer.code(first).instructions + 2), 7);
  // Freed and another code object made at the same address.
  objects.code(code.data(), type, file, objects.unicode(units(U"second"), 1), 7, table);
  const uint32_t second = namer.identify(address);
  ASSERT_NE(second, PythonCodeNamer::kNoCode);
  EXPECT_NE(second, first);
  EXPECT_EQ(namer.code(second).name, "second");
  EXPECT_EQ(namer.code(first).name, "first");  // older samples keep their name
  // Not a code object (another type) at all.
  objects.code(code.data(), type + 1, file, objects.unicode(units(U"x"), 1), 7, table);
  EXPECT_EQ(namer.identify(address), PythonCodeNamer::kNoCode);
}

}  // namespace
}  // namespace profiling::interp
