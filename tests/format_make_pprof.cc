// Writes a pprof profile with known contents for format_pprof_protoc.sh:
//   format_make_pprof <output.pb.gz>
#include <cstdio>

#include "format/file_io.h"
#include "format/pprof.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <output.pb.gz>\n", argv[0]);
    return 2;
  }
  using namespace profiling::format;
  Profile profile;
  profile.program = "/opt/profil-test/bin/known-program";
  profile.period_ns = 1'000'000;  // 1 kHz
  profile.duration_ns = 3'000'000'000;
  profile.mappings.push_back(
      {0x555555554000, 0x555555600000, 0x1000, "/opt/profil-test/bin/known-program", "5eed0123456789abcdef"});
  profile.samples = {{0x555555554abc, 37}, {0x555555555000, 5}};
  // 37 samples in 3 signals (above the kernel tick), 5 in 5 (issue 22).
  profile.has_observations = true;
  profile.samples[0].observations = 3;
  profile.samples[1].observations = 5;
  // A name read from an earlier file, for an address the symbolizer cannot name.
  profile.frames[0x555555555000] = {{"carried_function", "carried_function", "carried.c", 7}};
  PprofSymbolizer symbolize = [](const Mapping&, uint64_t address) -> std::vector<PprofFrame> {
    if (address == 0x555555554abc) return {{"known_hot_function", "_Z18known_hot_functionv", "hot.cc", 42}};
    return {};
  };
  try {
    write_file_atomically(argv[1], encode_pprof(profile, symbolize));
  } catch (const FormatError& e) {
    std::fprintf(stderr, "profil: %s\n", e.what());
    return 1;
  }
  return 0;
}
