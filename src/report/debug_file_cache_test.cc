// Uncompressed copies of compressed debug files on a real program: the
// inline fixture (tests/report_fixtures/inline.c, -O2 -g) stripped, its
// debug file compressed (objcopy --compress-debug-sections) under a debug
// root by build id, as Debian's -dbg packages install theirs
// (tests/report.cmake).
#include "report/debug_file_cache.h"

#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "format/profile.h"
#include "report/symbolizer.h"

namespace profiling::report {
namespace {

namespace fs = std::filesystem;

const std::string kDir = REPORT_FIXTURE_DIR;
const std::string kProgram = kDir + "/report_fixture_inline";
const std::string kStripped = kDir + "/report_fixture_inline_stripped";

// A directory of its own for a test: the debug root and the cache.
class DebugFileCacheTest : public testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/profil-debug-cache-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    id_ = read_build_id(kStripped);
    ASSERT_EQ(id_.size(), 40u);
    const char* cache = std::getenv("XDG_CACHE_HOME");
    if (cache) saved_cache_ = cache;
    setenv("XDG_CACHE_HOME", cache_home().c_str(), 1);
  }
  void TearDown() override {
    if (saved_cache_)
      setenv("XDG_CACHE_HOME", saved_cache_->c_str(), 1);
    else
      unsetenv("XDG_CACHE_HOME");
    fs::remove_all(dir_);
  }

  // <dir>/root/.build-id/xx/yyyy.debug: the debug file named fixture.
  std::string install_debug_file(const std::string& fixture) {
    const std::string root = dir_ + "/root";
    const fs::path target = root + "/.build-id/" + id_.substr(0, 2) + "/" + id_.substr(2) + ".debug";
    fs::create_directories(target.parent_path());
    fs::copy_file(kDir + "/" + fixture, target, fs::copy_options::overwrite_existing);
    return root;
  }
  std::string cache_home() const { return dir_ + "/cache"; }
  std::string copy_path() const { return cache_home() + "/profil/debug/" + id_ + ".debug"; }

  std::string dir_, id_;
  std::optional<std::string> saved_cache_;
};

struct Symbolized {
  std::vector<std::string> rows;  // per named address: its frames, each "function file:line"
  size_t inlined = 0;             // addresses with a function inlined twice deep (square in middle in outer)
  std::string copy;               // Symbolizer::debug_copy
};

// Every address of program's code, symbolized as profil report does.
Symbolized symbolize_code(const std::string& program, const std::string& debug_root, bool distribution_dwarf = true) {
  Symbolized out;
  Symbolizer symbolizer(debug_root);
  symbolizer.read_distribution_dwarf(distribution_dwarf);
  format::Mapping mapping;
  mapping.path = program;
  for (const LoadSegment& segment : symbolizer.segments(mapping)) {
    if (!segment.executable) continue;
    // Mapped at its link-time address: runtime address = file address.
    mapping.start = segment.vaddr;
    mapping.limit = segment.vaddr + segment.mem_size;
    mapping.file_offset = segment.file_offset;
  }
  EXPECT_NE(mapping.limit, 0u) << program << " has no executable segment";
  for (uint64_t address = mapping.start; address < mapping.limit; ++address) {
    const Symbol symbol = symbolizer.symbolize(&mapping, address);
    if (!symbol.known) continue;
    std::string row = std::to_string(address);
    const std::vector<format::Frame> frames = symbolizer.frames(&mapping, symbol);
    for (const format::Frame& frame : frames)
      row += " " + frame.function + " " + frame.file + ":" + std::to_string(frame.line);
    if (frames.size() == 3 && frames[0].function == "square" && frames[0].line > 0) ++out.inlined;
    out.rows.push_back(row);
  }
  out.copy = symbolizer.debug_copy(mapping);
  return out;
}

// The unstripped program: its DWARF in it, uncompressed; no debug file.
const Symbolized& expected() {
  static const Symbolized symbolized = symbolize_code(kProgram, "/nonexistent");
  return symbolized;
}

void expect_uncompressed_copy(const std::string& path, const std::string& id) {
  EXPECT_EQ(read_build_id(path), id);
  base::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid()) << path;
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd.get(), ELF_C_READ, nullptr);
  ASSERT_NE(elf, nullptr);
  size_t names = 0, debug_sections = 0;
  ASSERT_EQ(elf_getshdrstrndx(elf, &names), 0);
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr section;
    ASSERT_NE(gelf_getshdr(scn, &section), nullptr);
    const std::string name = elf_strptr(elf, names, section.sh_name);
    EXPECT_EQ(section.sh_flags & SHF_COMPRESSED, 0u) << name;
    EXPECT_FALSE(name.starts_with(".zdebug")) << name;
    if (name.starts_with(".debug_")) ++debug_sections;
  }
  EXPECT_GE(debug_sections, 4u);  // info, abbrev, line, str at least
  elf_end(elf);
}

// Overwrites the deflated bytes of path's .debug_info (its header, and so
// its build id, left whole): libdw finds no DWARF there any more.
void damage_compressed_dwarf(const std::string& path) {
  uint64_t offset = 0, size = 0;
  {
    base::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    elf_version(EV_CURRENT);
    Elf* elf = elf_begin(fd.get(), ELF_C_READ, nullptr);
    ASSERT_NE(elf, nullptr);
    size_t names = 0;
    ASSERT_EQ(elf_getshdrstrndx(elf, &names), 0);
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr section;
      ASSERT_NE(gelf_getshdr(scn, &section), nullptr);
      if (std::string(elf_strptr(elf, names, section.sh_name)) != ".debug_info") continue;
      ASSERT_NE(section.sh_flags & SHF_COMPRESSED, 0u);
      offset = section.sh_offset + sizeof(Elf64_Chdr);
      size = section.sh_size - sizeof(Elf64_Chdr);
    }
    elf_end(elf);
  }
  ASSERT_GT(size, 0u);
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(static_cast<std::streamoff>(offset));
  file << std::string(size, '\xff');
}

TEST(DebugFileCacheFixture, TheUnstrippedProgramHasInlineFramesAndLines) {
  EXPECT_GT(expected().rows.size(), 10u);
  EXPECT_GT(expected().inlined, 0u);
  EXPECT_TRUE(expected().copy.empty());  // its DWARF is in the object, not compressed
}

TEST_F(DebugFileCacheTest, TheCopyNamesAsTheCompressedFileAndIsReadAgain) {
  const std::string root = install_debug_file("report_fixture_inline_zlib.debug");
  const Symbolized first = symbolize_code(kStripped, root);
  EXPECT_EQ(first.rows, expected().rows);
  EXPECT_EQ(first.inlined, expected().inlined);
  EXPECT_EQ(first.copy, copy_path());
  expect_uncompressed_copy(copy_path(), id_);

  // A second report reads the copy made by the first, not a new one, and
  // not the compressed file: its DWARF, damaged now, is not read.
  const std::string installed = root + "/.build-id/" + id_.substr(0, 2) + "/" + id_.substr(2) + ".debug";
  damage_compressed_dwarf(installed);
  struct stat before, after;
  ASSERT_EQ(stat(copy_path().c_str(), &before), 0);
  const Symbolized second = symbolize_code(kStripped, root);
  ASSERT_EQ(stat(copy_path().c_str(), &after), 0);
  EXPECT_EQ(second.rows, expected().rows);
  EXPECT_EQ(second.copy, copy_path());
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  // Nothing else is left in the directory (no temporary).
  EXPECT_EQ(std::distance(fs::directory_iterator(cache_home() + "/profil/debug"), fs::directory_iterator()), 1);
  // Without the copy the damage shows: no line, no inline frame.
  std::ofstream(dir_ + "/file") << "not a directory";
  setenv("XDG_CACHE_HOME", (dir_ + "/file").c_str(), 1);
  const Symbolized damaged = symbolize_code(kStripped, root);
  EXPECT_NE(damaged.rows, expected().rows);
  EXPECT_EQ(damaged.inlined, 0u);
}

TEST_F(DebugFileCacheTest, LegacyZdebugSectionsAreInflatedAndRenamed) {
  const std::string root = install_debug_file("report_fixture_inline_zlib_gnu.debug");
  const Symbolized symbolized = symbolize_code(kStripped, root);
  EXPECT_EQ(symbolized.rows, expected().rows);
  EXPECT_EQ(symbolized.copy, copy_path());
  expect_uncompressed_copy(copy_path(), id_);
}

TEST_F(DebugFileCacheTest, AProgramGoneIsNamedFromTheCopy) {
  // The profile's build id finds the debug file, which stands for the
  // program itself (Symbolizer's debug-file-only objects).
  const std::string root = install_debug_file("report_fixture_inline_zlib.debug");
  Symbolizer symbolizer(root);
  format::Mapping mapping;
  mapping.path = dir_ + "/gone";
  mapping.build_id = id_;
  EXPECT_FALSE(symbolizer.segments(mapping).empty());
  EXPECT_EQ(symbolizer.debug_copy(mapping), copy_path());
  expect_uncompressed_copy(copy_path(), id_);
}

TEST_F(DebugFileCacheTest, ACacheThatCannotBeWrittenGivesTheSameNames) {
  const std::string root = install_debug_file("report_fixture_inline_zlib.debug");
  // A regular file where the directory would be (ENOTDIR whatever the
  // user, root included).
  std::ofstream(dir_ + "/file") << "not a directory";
  setenv("XDG_CACHE_HOME", (dir_ + "/file").c_str(), 1);
  const Symbolized unwritable = symbolize_code(kStripped, root);
  EXPECT_EQ(unwritable.rows, expected().rows);
  EXPECT_EQ(unwritable.inlined, expected().inlined);
  EXPECT_TRUE(unwritable.copy.empty());

  // No cache directory at all: neither XDG_CACHE_HOME nor HOME.
  const char* home = std::getenv("HOME");
  const std::string saved_home = home ? home : "";
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  EXPECT_EQ(debug_file_cache_dir(), "");
  const Symbolized none = symbolize_code(kStripped, root);
  if (home) setenv("HOME", saved_home.c_str(), 1);
  EXPECT_EQ(none.rows, expected().rows);
  EXPECT_TRUE(none.copy.empty());
}

TEST_F(DebugFileCacheTest, ADamagedCopyIsReplaced) {
  const std::string root = install_debug_file("report_fixture_inline_zlib.debug");
  ASSERT_EQ(symbolize_code(kStripped, root).copy, copy_path());
  const auto good_size = fs::file_size(copy_path());
  // Cut short (a crash before the rename cannot leave one, a disk
  // failure can), then not an ELF file at all.
  for (const bool truncate : {true, false}) {
    if (truncate)
      fs::resize_file(copy_path(), good_size / 2);
    else
      std::ofstream(copy_path(), std::ios::trunc) << "garbage";
    const Symbolized again = symbolize_code(kStripped, root);
    EXPECT_EQ(again.rows, expected().rows) << (truncate ? "truncated" : "garbage");
    EXPECT_EQ(again.copy, copy_path());
    EXPECT_EQ(fs::file_size(copy_path()), good_size);
    expect_uncompressed_copy(copy_path(), id_);
  }
}

TEST_F(DebugFileCacheTest, RunsMakeNoCopy) {
  // profil run's conversion reads no distribution DWARF
  // (read_distribution_dwarf(false)): inflating it to make a copy would
  // cost every run what the copy saves reports.
  const std::string root = install_debug_file("report_fixture_inline_zlib.debug");
  const Symbolized run = symbolize_code(kStripped, root, false);
  EXPECT_FALSE(run.rows.empty());
  EXPECT_TRUE(run.copy.empty());
  EXPECT_FALSE(fs::exists(copy_path()));
}

TEST_F(DebugFileCacheTest, AnUncompressedDebugFileIsReadAsItIs) {
  // objcopy --only-keep-debug without compression: nothing to gain.
  const std::string root = install_debug_file("report_fixture_inline_plain.debug");
  const Symbolized symbolized = symbolize_code(kStripped, root);
  EXPECT_EQ(symbolized.rows, expected().rows);
  EXPECT_TRUE(symbolized.copy.empty());
  EXPECT_FALSE(fs::exists(cache_home()));
}

}  // namespace
}  // namespace profiling::report
