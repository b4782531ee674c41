// The CFI parser against binutils: every row readelf --debug-dump=frames-interp
// prints for a real object must be the rule parse_eh_frame derived for that
// address (for the columns the compact form keeps: CFA, rbp, ra).
#include "unwind/internal/cfi.h"

#include <elf.h>
#include <link.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace profiling::unwind::internal {
namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The .eh_frame section of an ELF file image.
bool find_eh_frame(const std::vector<uint8_t>& image, Section* out) {
  if (image.size() < sizeof(Elf64_Ehdr)) return false;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(image.data());
  if (eh->e_shoff == 0 || eh->e_shoff + eh->e_shnum * sizeof(Elf64_Shdr) > image.size()) return false;
  const auto* sh = reinterpret_cast<const Elf64_Shdr*>(image.data() + eh->e_shoff);
  const Elf64_Shdr& names = sh[eh->e_shstrndx];
  for (int i = 0; i < eh->e_shnum; ++i) {
    const char* name = reinterpret_cast<const char*>(image.data() + names.sh_offset + sh[i].sh_name);
    if (std::string(name) == ".eh_frame") {
      out->data = image.data() + sh[i].sh_offset;
      out->size = sh[i].sh_size;
      out->address = sh[i].sh_addr;
      return true;
    }
  }
  return false;
}

struct ExpectedRow {
  uint64_t address;
  std::string cfa, rbp, ra;
};
struct ExpectedFde {
  uint64_t start, end;
  std::vector<ExpectedRow> rows;  // empty: the CIE's initial rule, in initial
  ExpectedRow initial;
};

std::vector<ExpectedFde> readelf_rows(const std::string& path) {
  std::vector<ExpectedFde> fdes;
  const std::string command = "readelf --debug-dump=frames-interp '" + path + "' 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return fdes;
  char buffer[4096];
  int cfa_col = -1, rbp_col = -1, ra_col = -1;
  bool in_fde = false;
  std::map<std::string, ExpectedRow> cie_initial;  // by the CIE's offset
  std::string cie;
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) {
    std::string line(buffer);
    std::istringstream words(line);
    std::vector<std::string> w;
    // "r10 (r10)": a register rule printed with a space in it.
    for (std::string s; words >> s;) {
      if (!w.empty() && s[0] == '(') w.back() += " " + s;
      else w.push_back(s);
    }
    if (w.size() >= 4 && w[3] == "FDE") {
      const std::string pc = w.back();  // pc=START..END
      const size_t dots = pc.find("..");
      fdes.push_back({std::stoull(pc.substr(3, dots - 3), nullptr, 16), std::stoull(pc.substr(dots + 2), nullptr, 16), {},
                      cie_initial[w[4].substr(4)]});
      fdes.back().initial.address = fdes.back().start;
      in_fde = true;
      continue;
    }
    if (w.size() >= 4 && w[3] == "CIE") {
      in_fde = false;
      cie = w[0];
      continue;
    }
    if (w.empty()) continue;
    if (w[0] == "LOC") {
      cfa_col = rbp_col = ra_col = -1;
      for (size_t i = 0; i < w.size(); ++i) {
        if (w[i] == "CFA") cfa_col = static_cast<int>(i);
        if (w[i] == "rbp") rbp_col = static_cast<int>(i);
        if (w[i] == "ra") ra_col = static_cast<int>(i);
      }
      continue;
    }
    if (cfa_col < 0 || w.size() <= static_cast<size_t>(std::max({cfa_col, rbp_col, ra_col}))) continue;
    if (w[0].size() != 16 || w[0].find_first_not_of("0123456789abcdef") != std::string::npos) continue;
    ExpectedRow row{std::stoull(w[0], nullptr, 16), w[cfa_col], rbp_col >= 0 ? w[rbp_col] : "u",
                    ra_col >= 0 ? w[ra_col] : "u"};
    if (in_fde) fdes.back().rows.push_back(row);
    else if (!cie.empty() && !cie_initial.count(cie)) cie_initial[cie] = row;
  }
  pclose(pipe);
  return fdes;
}

std::string describe(const Row& row) {
  std::ostringstream out;
  out << "rule " << static_cast<int>(row.rule) << " cfa_offset " << row.cfa_offset << " rbp " << static_cast<int>(row.rbp)
      << " rbp_offset " << row.rbp_offset;
  return out.str();
}

// Does our row say what readelf's does, for the columns we keep?
bool agrees(const Row& row, const ExpectedRow& expected) {
  if (expected.ra == "u") return row.rule == Rule::kOutermost;
  if (expected.ra != "c-8") return row.rule == Rule::kFramePointer;
  if (expected.cfa == "exp") {
    if (row.rule != Rule::kPlt && row.rule != Rule::kCfaRbpDeref && row.rule != Rule::kFramePointer) return false;
  } else if (expected.cfa.rfind("rsp+", 0) == 0) {
    if (row.rule != Rule::kCfaRsp || row.cfa_offset != std::stoi(expected.cfa.substr(4))) return false;
  } else if (expected.cfa.rfind("rbp+", 0) == 0) {
    if (row.rule != Rule::kCfaRbp || row.cfa_offset != std::stoi(expected.cfa.substr(4))) return false;
  } else {
    return row.rule == Rule::kFramePointer;  // a CFA in another register
  }
  if (row.rule == Rule::kPlt || row.rule == Rule::kFramePointer) return true;
  if (expected.rbp == "u" || expected.rbp == "s") return row.rbp == RbpRule::kUnchanged;
  if (expected.rbp.rfind("c-", 0) == 0) return row.rbp == RbpRule::kAtCfa && row.rbp_offset == -std::stoi(expected.rbp.substr(2));
  if (expected.rbp == "exp") return row.rbp == RbpRule::kAtRbp;
  return true;  // rbp in another register: we keep it unchanged (never seen in Debian's objects)
}

void compare_with_readelf(const std::string& path, size_t* compared) {
  const std::vector<uint8_t> image = read_file(path);
  Section eh_frame;
  ASSERT_TRUE(find_eh_frame(image, &eh_frame)) << path;
  std::vector<FdeRows> ours;
  parse_eh_frame(eh_frame, &ours);
  std::map<uint64_t, const FdeRows*> by_start;
  for (const FdeRows& fde : ours) by_start[fde.start] = &fde;
  const std::vector<ExpectedFde> expected = readelf_rows(path);
  ASSERT_GT(expected.size(), 0u) << "readelf printed no FDE for " << path;
  EXPECT_EQ(ours.size(), expected.size()) << path;
  size_t mismatches = 0;
  for (const ExpectedFde& fde : expected) {
    auto it = by_start.find(fde.start);
    if (it == by_start.end()) {
      ADD_FAILURE() << path << ": no FDE parsed at " << std::hex << fde.start;
      continue;
    }
    EXPECT_EQ(it->second->end, fde.end);
    std::vector<ExpectedRow> rows = fde.rows;
    if (rows.empty()) rows.push_back(fde.initial);
    for (const ExpectedRow& want : rows) {
      const AddressRow* got = nullptr;
      for (const AddressRow& r : it->second->rows)
        if (r.address <= want.address) got = &r;
      ++*compared;
      if (got == nullptr || !agrees(got->row, want)) {
        if (++mismatches <= 10)
          ADD_FAILURE() << path << " at " << std::hex << want.address << ": readelf " << want.cfa << " rbp " << want.rbp
                        << " ra " << want.ra << ", ours " << (got ? describe(got->row) : "none");
      }
    }
  }
  EXPECT_EQ(mismatches, 0u) << path;
}

std::string object_of(const void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

TEST(Cfi, TheTestProgramMatchesReadelf) {
  size_t compared = 0;
  char path[4096];
  ASSERT_NE(realpath("/proc/self/exe", path), nullptr);
  compare_with_readelf(path, &compared);
  EXPECT_GT(compared, 100u);
}

TEST(Cfi, TheCLibraryMatchesReadelf) {
  // glibc's hand-written assembly: PLT-free but with DW_CFA_def_cfa_expression
  // (__restore_rt), remember/restore_state, rbp frames.
  const std::string libc = object_of(reinterpret_cast<const void*>(&qsort));
  ASSERT_FALSE(libc.empty());
  size_t compared = 0;
  compare_with_readelf(libc, &compared);
  EXPECT_GT(compared, 10000u);
}

TEST(Cfi, PltStubsAreTheKnownExpression) {
  // The test program's own .plt (or .plt.sec) FDE uses binutils' expression:
  // it must come out as Rule::kPlt, not a frame-pointer walk.
  const std::vector<uint8_t> image = read_file("/proc/self/exe");
  Section eh_frame;
  ASSERT_TRUE(find_eh_frame(image, &eh_frame));
  std::vector<FdeRows> ours;
  parse_eh_frame(eh_frame, &ours);
  size_t plt_rows = 0;
  for (const FdeRows& fde : ours)
    for (const AddressRow& r : fde.rows)
      if (r.row.rule == Rule::kPlt) {
        ++plt_rows;
        EXPECT_EQ(r.row.cfa_offset, 8);
        EXPECT_TRUE(r.row.rbp_offset == 11 || r.row.rbp_offset == 10) << r.row.rbp_offset;
      }
  EXPECT_GT(plt_rows, 0u);
}

TEST(Cfi, CompactRowsFillGapsAndMergeRepeats) {
  std::vector<FdeRows> fdes;
  const Row rsp8{0, 8, 0, Rule::kCfaRsp, RbpRule::kUnchanged};
  const Row rsp16{0, 16, 0, Rule::kCfaRsp, RbpRule::kUnchanged};
  fdes.push_back({0x1100, 0x1200, {{0x1100, rsp8}, {0x1101, rsp16}, {0x1150, rsp16}}});
  fdes.push_back({0x1000, 0x1010, {{0x1000, rsp8}}});
  const std::vector<Row> rows = compact_rows(fdes, 0x1000, 0x2000);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].start, 0u);
  EXPECT_EQ(rows[0].rule, Rule::kCfaRsp);
  EXPECT_EQ(rows[1].start, 0x10u);
  EXPECT_EQ(rows[1].rule, Rule::kNone);
  EXPECT_EQ(rows[2].start, 0x100u);
  EXPECT_EQ(rows[2].cfa_offset, 8);
  EXPECT_EQ(rows[3].start, 0x101u);  // 0x1150 repeats 0x1101's rule: merged
  EXPECT_EQ(rows[3].cfa_offset, 16);
  EXPECT_EQ(rows[4].start, 0x200u);
  EXPECT_EQ(rows[4].rule, Rule::kNone);
}

TEST(Cfi, TruncatedSectionsEndTheWalkWithoutReadingPastThem) {
  const std::vector<uint8_t> image = read_file("/proc/self/exe");
  Section eh_frame;
  ASSERT_TRUE(find_eh_frame(image, &eh_frame));
  for (size_t cut : {size_t{0}, size_t{3}, size_t{17}, eh_frame.size / 2, eh_frame.size - 1}) {
    // A copy of exactly `cut` bytes, so a read past it is caught by ASan and
    // at least cannot be correct by accident.
    std::vector<uint8_t> part(eh_frame.data, eh_frame.data + cut);
    Section partial{part.data(), part.size(), eh_frame.address};
    std::vector<FdeRows> out;
    parse_eh_frame(partial, &out);
    for (const FdeRows& fde : out) EXPECT_LE(fde.start, fde.end);
  }
}

// The loaded objects' memory as it is (they stay loaded during the test).
class DirectMemory final : public MemoryReader {
 public:
  bool read(uint64_t address, uint64_t* value) const override {
    std::memcpy(value, reinterpret_cast<const void*>(address), 8);
    return true;
  }
};

bool same_rule(const Row& a, const Row& b) {
  if (a.rule != b.rule) return false;
  if (a.rule == Rule::kNone || a.rule == Rule::kFramePointer || a.rule == Rule::kOutermost) return true;
  return a.cfa_offset == b.cfa_offset && a.rbp == b.rbp && (a.rbp == RbpRule::kUnchanged || a.rbp_offset == b.rbp_offset) &&
         (a.rule != Rule::kPlt || a.rbp_offset == b.rbp_offset);
}

// The unwinder's lookup (row_at: one FDE, interpreted on demand from the
// loaded bytes) gives the rule the whole-object parse gives (itself equal
// to readelf's, above), at the start and the middle of every row of every
// object this test has loaded: the program, libstdc++, libc, the loader,
// the vdso.
TEST(Cfi, OnDemandRowsEqualTheWholeObjectsRows) {
  // The objects as the unwinder lists them.
  const auto table = CodeTable::build();
  ASSERT_GE(table->object_count(), 3u);
  const DirectMemory memory;
  size_t compared = 0, unreadable = 0, mismatches = 0;
  for (const auto& listed : table->objects()) {
    const ObjectTable& object = *listed;
    if (object.eh_frame_hdr == 0) continue;
    const Section hdr{reinterpret_cast<const uint8_t*>(object.eh_frame_hdr),
                      static_cast<size_t>(object.eh_frame_limit - object.eh_frame_hdr), object.eh_frame_hdr};
    std::vector<FdeRows> fdes;
    parse_eh_frame_hdr(hdr, object.eh_frame_limit, &fdes);
    const std::vector<Row> rows = compact_rows(std::move(fdes), object.start, object.end);
    for (size_t i = 0; i < rows.size(); ++i) {
      const uint64_t from = object.start + rows[i].start;
      const uint64_t to = i + 1 < rows.size() ? object.start + rows[i + 1].start : object.end;
      for (const uint64_t pc : {from, from + (to - from) / 2}) {
        Row got{};
        const RowLookup result = row_at(memory, object.eh_frame_hdr, object.eh_frame_limit, pc, &got);
        ++compared;
        if (result == RowLookup::kNoFde) got = Row{0, 0, 0, Rule::kNone, RbpRule::kUnchanged};
        if (result == RowLookup::kUnreadable) {
          // Never for a loaded object.
          ++unreadable;
          continue;
        }
        if (!same_rule(got, rows[i]) && ++mismatches <= 10)
          ADD_FAILURE() << object.name << " at +" << std::hex << (pc - object.start) << ": whole " << describe(rows[i])
                        << ", on demand " << describe(got);
      }
    }
  }
  EXPECT_GT(compared, 20000u);
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(unreadable, 0u) << unreadable << " of " << compared << " unreadable";
}

}  // namespace
}  // namespace profiling::unwind::internal
