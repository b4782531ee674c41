// The gmon.out files encode_gmon writes, read by the real consumer: GNU gprof
// (binutils). A small C program is linked at a fixed address and as a PIE;
// its functions' link-time addresses come from its symbol table (libelf), the
// histogram puts known counts inside them, and gprof's flat profile must give
// each function counts / rate seconds and the call counts of the arcs.
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "format/file_io.h"
#include "format/gmon.h"

namespace profiling::format {
namespace {

struct Function {
  uint64_t address = 0, size = 0;
};

struct Executable {
  std::string path;
  bool pie = false;
  uint64_t text_low = 0, text_high = 0;
  std::map<std::string, Function> functions;
};

// Reads the .text range and the function symbols of an ELF file.
Executable read_executable(const std::string& path) {
  Executable exe;
  exe.path = path;
  elf_version(EV_CURRENT);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0) << path;
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  EXPECT_NE(elf, nullptr);
  GElf_Ehdr header;
  EXPECT_NE(gelf_getehdr(elf, &header), nullptr);
  exe.pie = header.e_type == ET_DYN;
  size_t string_section = 0;
  elf_getshdrstrndx(elf, &string_section);
  for (Elf_Scn* section = elf_nextscn(elf, nullptr); section; section = elf_nextscn(elf, section)) {
    GElf_Shdr shdr;
    gelf_getshdr(section, &shdr);
    const char* name = elf_strptr(elf, string_section, shdr.sh_name);
    if (name && std::string(name) == ".text") {
      exe.text_low = shdr.sh_addr;
      exe.text_high = shdr.sh_addr + shdr.sh_size;
    }
    if (shdr.sh_type != SHT_SYMTAB) continue;
    Elf_Data* data = elf_getdata(section, nullptr);
    size_t count = shdr.sh_entsize ? shdr.sh_size / shdr.sh_entsize : 0;
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym symbol;
      gelf_getsym(data, static_cast<int>(i), &symbol);
      if (GELF_ST_TYPE(symbol.st_info) != STT_FUNC || symbol.st_value == 0) continue;
      exe.functions[elf_strptr(elf, shdr.sh_link, symbol.st_name)] = {symbol.st_value, symbol.st_size};
    }
  }
  elf_end(elf);
  close(fd);
  return exe;
}

struct CommandResult {
  int status = -1;
  std::string output;
};

CommandResult run(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  result.status = pclose(pipe);
  return result;
}

// One line of gprof's flat profile.
struct FlatLine {
  double self_seconds = -1;
  long calls = -1;  // -1: blank (no arcs into the function)
};

std::map<std::string, FlatLine> parse_flat_profile(const std::string& output) {
  std::map<std::string, FlatLine> lines;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::vector<std::string> tokens;
    for (std::string t; fields >> t;) tokens.push_back(t);
    // "%time cumulative self [calls self/call total/call] name"
    if (tokens.size() != 4 && tokens.size() != 7) continue;
    try {
      std::stod(tokens[0]);
      FlatLine flat;
      flat.self_seconds = std::stod(tokens[2]);
      if (tokens.size() == 7) flat.calls = std::stol(tokens[3]);
      lines[tokens.back()] = flat;
    } catch (const std::exception&) {
    }
  }
  return lines;
}

class GprofTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/profil_gprof_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& bytes) {
    std::string path = (dir_ / name).string();
    write_file_atomically(path, bytes);
    return path;
  }
  CommandResult gprof(const std::string& options, const Executable& exe, const std::string& gmon) {
    return run(std::string(PROFIL_GPROF) + " " + options + " " + exe.path + " " + gmon);
  }

  std::filesystem::path dir_;
};

// Samples at runtime addresses (link-time + load_bias): 250 ticks well inside
// hot_function, 50 inside cold_function; an arc main -> hot_function taken 7
// times.
GmonData known_profile(const Executable& exe, uint64_t load_bias, uint32_t rate) {
  const Function& hot = exe.functions.at("hot_function");
  const Function& cold = exe.functions.at("cold_function");
  const Function& main = exe.functions.at("main");
  EXPECT_GT(hot.size, 24u);
  EXPECT_GT(cold.size, 24u);
  Profile profile;
  profile.samples = {{load_bias + hot.address + 8, 200},
                     {load_bias + hot.address + 16, 50},
                     {load_bias + cold.address + 12, 50}};
  GmonData data;
  data.histograms.push_back(histogram_from_samples(profile, load_bias, exe.text_low, exe.text_high, rate));
  data.arcs.push_back({main.address + 8, hot.address, 7});
  return data;
}

void expect_known_flat_profile(const CommandResult& result, double seconds_per_tick) {
  ASSERT_EQ(result.status, 0) << result.output;
  std::map<std::string, FlatLine> flat = parse_flat_profile(result.output);
  ASSERT_TRUE(flat.count("hot_function")) << result.output;
  ASSERT_TRUE(flat.count("cold_function")) << result.output;
  EXPECT_NEAR(flat["hot_function"].self_seconds, 250 * seconds_per_tick, 0.005) << result.output;
  EXPECT_EQ(flat["hot_function"].calls, 7) << result.output;
  EXPECT_NEAR(flat["cold_function"].self_seconds, 50 * seconds_per_tick, 0.005) << result.output;
  EXPECT_EQ(flat["cold_function"].calls, -1) << result.output;
  if (flat.count("main")) {
    EXPECT_EQ(flat["main"].self_seconds, 0) << result.output;
  }
}

TEST_F(GprofTest, GnuFormatFixedAddressProgram) {
  Executable exe = read_executable(PROFIL_TARGET_NOPIE);
  ASSERT_FALSE(exe.pie);
  std::string gmon = write("gmon.out", encode_gmon(known_profile(exe, 0, 100)));
  CommandResult result = gprof("-b -p", exe, gmon);
  EXPECT_NE(result.output.find("Each sample counts as 0.01 seconds."), std::string::npos) << result.output;
  expect_known_flat_profile(result, 0.01);
}

TEST_F(GprofTest, GnuFormatPieWithLoadBiasSubtracted) {
  Executable exe = read_executable(PROFIL_TARGET_PIE);
  ASSERT_TRUE(exe.pie);
  ASSERT_LT(exe.text_high, 0x100000u) << "a PIE's link-time addresses start near 0";
  std::string gmon = write("gmon.out", encode_gmon(known_profile(exe, 0x555555554000, 100)));
  expect_known_flat_profile(gprof("-b -p", exe, gmon), 0.01);
}

TEST_F(GprofTest, BsdFormatBothLinkModes) {
  for (const char* path : {PROFIL_TARGET_NOPIE, PROFIL_TARGET_PIE}) {
    SCOPED_TRACE(path);
    Executable exe = read_executable(path);
    uint64_t bias = exe.pie ? 0x7f0000000000 : 0;
    std::string gmon = write("bsd.out", encode_gmon(known_profile(exe, bias, 1000), GmonFlavor::bsd));
    CommandResult result = gprof("-b -p", exe, gmon);
    EXPECT_NE(result.output.find("Each sample counts as 0.001 seconds."), std::string::npos) << result.output;
    expect_known_flat_profile(result, 0.001);
  }
}

TEST_F(GprofTest, SeveralHistogramsThatDoNotOverlap) {
  Executable exe = read_executable(PROFIL_TARGET_NOPIE);
  const Function& hot = exe.functions.at("hot_function");
  const Function& cold = exe.functions.at("cold_function");
  Profile profile;
  profile.samples = {{hot.address + 8, 30}, {cold.address + 8, 20}};
  GmonData data;
  // One histogram per function, same bytes per bin (gprof requires one scale).
  data.histograms.push_back(histogram_from_samples(profile, 0, hot.address, hot.address + 16, 100));
  data.histograms.push_back(histogram_from_samples(profile, 0, cold.address, cold.address + 16, 100));
  CommandResult result = gprof("-b -p", exe, write("gmon.out", encode_gmon(data)));
  ASSERT_EQ(result.status, 0) << result.output;
  std::map<std::string, FlatLine> flat = parse_flat_profile(result.output);
  EXPECT_NEAR(flat["hot_function"].self_seconds, 0.30, 0.005) << result.output;
  EXPECT_NEAR(flat["cold_function"].self_seconds, 0.20, 0.005) << result.output;
}

// The rules encode_gmon and decode_gmon enforce are gprof's: a file with two
// overlapping histogram records (written by splicing two files, since the
// writer refuses) is refused by both.
TEST_F(GprofTest, GprofAndDecodeGmonBothRefuseOverlappingHistograms) {
  Executable exe = read_executable(PROFIL_TARGET_NOPIE);
  const Function& hot = exe.functions.at("hot_function");
  GmonData first, second;
  first.histograms.push_back(histogram_from_samples({}, 0, hot.address, hot.address + 16, 100));
  first.histograms[0].bins[0] = 1;
  second.histograms.push_back(histogram_from_samples({}, 0, hot.address + 8, hot.address + 24, 100));
  std::string bytes = encode_gmon(first) + encode_gmon(second).substr(gmon::kHeaderSize);
  CommandResult result = gprof("-b -p", exe, write("gmon.out", bytes));
  EXPECT_NE(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("overlapping histogram records"), std::string::npos) << result.output;
  EXPECT_THROW(decode_gmon(bytes), FormatError);
  first.histograms.push_back(second.histograms[0]);
  EXPECT_THROW(encode_gmon(first), FormatError);
}

TEST_F(GprofTest, GprofRefusesDifferentScalesAsDecodeGmonDoes) {
  Executable exe = read_executable(PROFIL_TARGET_NOPIE);
  const Function& hot = exe.functions.at("hot_function");
  const Function& cold = exe.functions.at("cold_function");
  GmonData first, second;
  first.histograms.push_back(histogram_from_samples({}, 0, hot.address, hot.address + 16, 100, 4));
  second.histograms.push_back(histogram_from_samples({}, 0, cold.address, cold.address + 16, 100, 8));
  std::string bytes = encode_gmon(first) + encode_gmon(second).substr(gmon::kHeaderSize);
  CommandResult result = gprof("-b -p", exe, write("gmon.out", bytes));
  EXPECT_NE(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("different scales"), std::string::npos) << result.output;
  EXPECT_THROW(decode_gmon(bytes), FormatError);
}

// What gprof itself writes (gprof -s sums profiles into gmon.sum, in the GNU
// format) decodes to the same histogram and the arc's count.
TEST_F(GprofTest, DecodesTheSumFileGprofWrites) {
  Executable exe = read_executable(PROFIL_TARGET_NOPIE);
  GmonData data = known_profile(exe, 0, 100);
  std::string gmon = write("gmon.out", encode_gmon(data));
  CommandResult result = run("cd " + dir_.string() + " && " + PROFIL_GPROF + " -s " + exe.path + " " + gmon + " " + gmon);
  ASSERT_EQ(result.status, 0) << result.output;
  GmonFlavor flavor = GmonFlavor::bsd;
  GmonData sum = decode_gmon(read_file((dir_ / "gmon.sum").string()), &flavor);
  EXPECT_EQ(flavor, GmonFlavor::gnu);
  ASSERT_EQ(sum.histograms.size(), 1u);
  EXPECT_EQ(sum.histograms[0].low_pc, data.histograms[0].low_pc);
  EXPECT_EQ(sum.histograms[0].high_pc, data.histograms[0].high_pc);
  EXPECT_EQ(sum.histograms[0].rate_hz, 100u);
  ASSERT_EQ(sum.histograms[0].bins.size(), data.histograms[0].bins.size());
  for (size_t i = 0; i < sum.histograms[0].bins.size(); ++i)
    ASSERT_EQ(sum.histograms[0].bins[i], 2 * data.histograms[0].bins[i]) << "bin " << i;
  // gprof writes arcs from the caller's symbol address, summed.
  ASSERT_EQ(sum.arcs.size(), 1u);
  EXPECT_EQ(sum.arcs[0].from_pc, exe.functions.at("main").address);
  EXPECT_EQ(sum.arcs[0].self_pc, exe.functions.at("hot_function").address);
  EXPECT_EQ(sum.arcs[0].count, 14u);
}

}  // namespace
}  // namespace profiling::format
