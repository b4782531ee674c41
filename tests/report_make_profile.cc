// Writes a profile with exact, chosen counts for the golden report tests:
// runs a fixture program with "addresses" (it prints its functions' runtime
// addresses and its /proc/self/maps), then records `count` samples at each
// named function (plus an optional byte offset) as a profraw file (the
// layout of src/format/profraw.h), or as pprof / gmon through the report
// library's writers. The addresses and maps are real; only the counts are
// chosen, so the expected report is exact.
//
//   report_make_profile [--as profraw|pprof|gmon|bsd-gmon] [--period NS] [--pid PID] OUT PROGRAM SPEC...
//   SPEC: FRAME=count | FRAME<-FRAME<-...=count (a stack, leaf first, each
//         frame called from the next; a last frame "?" marks it truncated)
//         A count may end in @TID:NAME: the samples' thread and its name
//         (profraw version 4's thread records, pprof's thread labels).
//         A count N/M is N weighted samples in M observations (signals:
//         profraw version 5, pprof's observations/count; issue 22); M is N
//         unless given.
//   FRAME: name | name+offset | @nowhere (no mapping). A caller frame is its
//         call site (default offset 4); the profraw holds its return address
//         (one byte further), as the unwinder records it.
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "format/file_io.h"
#include "format/gmon.h"
#include "format/profile.h"
#include "format/profraw.h"
#include "report/export.h"

using namespace profiling;

int main(int argc, char** argv) {
  std::string as = "profraw";
  uint64_t period_ns = 1'000'000;
  int64_t pid = 0;  // profraw: 4242 unless given
  int i = 1;
  for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
    if (std::strcmp(argv[i], "--as") == 0) as = argv[i + 1];
    else if (std::strcmp(argv[i], "--period") == 0) period_ns = std::stoull(argv[i + 1]);
    else if (std::strcmp(argv[i], "--pid") == 0) pid = std::stoll(argv[i + 1]);
  }
  if (argc - i < 2) {
    std::fprintf(stderr, "usage: report_make_profile [--as KIND] [--period NS] OUT PROGRAM SPEC...\n");
    return 2;
  }
  std::string out = argv[i], program = argv[i + 1];
  std::string command = "'" + program + "' addresses";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return 1;
  std::string text;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) text.append(buffer, got);
  if (pclose(pipe) != 0) {
    std::fprintf(stderr, "report_make_profile: %s failed\n", command.c_str());
    return 1;
  }
  std::map<std::string, uint64_t> functions;
  std::string maps;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("sym ", 0) == 0) {
      size_t space = line.rfind(' ');
      functions[line.substr(4, space - 4)] = std::stoull(line.substr(space + 1), nullptr, 16);
    } else if (line.rfind("map ", 0) == 0) {
      maps += line.substr(4) + "\n";
    }
  }
  std::vector<format::Sample> samples;
  format::StackTable stacks;
  std::map<int32_t, std::string> thread_names;
  auto resolve = [&](std::string name, uint64_t default_offset, uint64_t* address) {
    uint64_t offset = default_offset;
    size_t plus = name.rfind('+');
    if (plus != std::string::npos && plus > 0 && name.find('(') == std::string::npos) {
      offset = std::stoull(name.substr(plus + 1), nullptr, 0);
      name = name.substr(0, plus);
    }
    if (name == "@nowhere") {
      *address = 0x10 + offset;
    } else if (functions.count(name)) {
      *address = functions[name] + offset;
    } else {
      std::fprintf(stderr, "report_make_profile: %s prints no address for %s\n", program.c_str(), name.c_str());
      return false;
    }
    return true;
  };
  for (int s = i + 2; s < argc; ++s) {
    std::string spec = argv[s];
    size_t equals = spec.rfind('=');
    if (equals == std::string::npos) return 2;
    std::vector<std::string> frames;
    std::string rest = spec.substr(0, equals);
    for (size_t lt; (lt = rest.find("<-")) != std::string::npos; rest = rest.substr(lt + 2))
      frames.push_back(rest.substr(0, lt));
    frames.push_back(rest);
    const bool truncated = frames.size() > 1 && frames.back() == "?";
    if (truncated) frames.pop_back();
    std::string count_text = spec.substr(equals + 1);
    int32_t tid = 0;
    if (const size_t at = count_text.find('@'); at != std::string::npos) {
      const std::string thread = count_text.substr(at + 1);
      const size_t colon = thread.find(':');
      tid = std::stoi(thread.substr(0, colon));
      if (colon != std::string::npos) thread_names[tid] = thread.substr(colon + 1);
      count_text.resize(at);
    }
    uint64_t observations = 0;
    if (const size_t slash = count_text.find('/'); slash != std::string::npos) {
      observations = std::stoull(count_text.substr(slash + 1));
      count_text.resize(slash);
    }
    uint64_t count = std::stoull(count_text), address = 0;
    if (observations == 0) observations = count;
    std::vector<uint64_t> callers;
    for (size_t k = 0; k < frames.size(); ++k) {
      if (!resolve(frames[k], k == 0 ? 0 : 4, &address)) return 1;
      if (k > 0) callers.push_back(address);
    }
    if (!resolve(frames[0], 0, &address)) return 1;
    format::Sample sample{address, count, 0, stacks.intern(callers, truncated), tid};
    sample.observations = observations;
    samples.push_back(sample);
  }
  // The executable's path as the process saw it (the maps entry holding main).
  std::string program_path = program;
  for (const format::Mapping& m : format::executable_mappings(maps))
    if (functions.count("main") && m.contains(functions["main"])) program_path = m.path;

  std::string bytes;
  if (as == "profraw") {
    format::profraw::Header header{};
    std::memcpy(header.magic, format::profraw::kMagic, sizeof header.magic);
    header.version = format::profraw::kVersion;
    header.header_size = sizeof header;
    header.pid = pid != 0 ? pid : 4242;
    header.ppid = 1;
    header.clock = 0;
    header.period_ns = period_ns;
    header.hz = static_cast<uint32_t>(1'000'000'000 / period_ns);
    header.start_ns = 1'700'000'000'000'000'000;
    header.end_ns = header.start_ns + 2'000'000'000;
    header.end_reason = static_cast<uint32_t>(format::profraw::EndReason::exit);
    header.sample_count = samples.size();
    header.program_length = static_cast<uint32_t>(program_path.size());
    header.maps_length = maps.size();
    // With stacks (any SPEC with "<-"), the stack records after the
    // maps, as the runtime writes them: the leaf, then return addresses.
    std::string records;
    for (const format::Sample& s : samples) {
      if (stacks.empty()) break;
      const auto callers = stacks.callers(s.stack);
      format::profraw::StackRecord record{static_cast<uint32_t>(callers.size() + 1),
                                          stacks.truncated(s.stack) ? format::profraw::kStackTruncated : 0u,
                                          s.count, s.tid, static_cast<uint32_t>(s.observations)};
      records.append(reinterpret_cast<const char*>(&record), sizeof record);
      records.append(reinterpret_cast<const char*>(&s.address), sizeof s.address);
      for (uint64_t call_site : callers) {
        const uint64_t return_address = call_site + 1;
        records.append(reinterpret_cast<const char*>(&return_address), sizeof return_address);
      }
      ++header.stack_count;
    }
    header.stacks_length = records.size();
    for (const auto& [tid, name] : thread_names) {
      format::profraw::ThreadRecord thread{};
      thread.tid = tid;
      std::strncpy(thread.name, name.c_str(), sizeof thread.name - 1);
      records.append(reinterpret_cast<const char*>(&thread), sizeof thread);
      ++header.thread_count;
    }
    if (!stacks.empty()) header.stack_flags = format::profraw::kStacksCaptured;
    bytes.append(reinterpret_cast<const char*>(&header), sizeof header);
    bytes += program_path;
    for (const format::Sample& s : samples) {
      format::profraw::Pair pair{s.address, s.count, s.observations};
      bytes.append(reinterpret_cast<const char*>(&pair), sizeof pair);
    }
    bytes += maps;
    bytes += records;
  } else {
    format::Profile profile;
    profile.program = program_path;
    profile.period_ns = period_ns;
    profile.clock = "cpu";
    profile.pid = pid;
    profile.duration_ns = 2'000'000'000;
    profile.mappings = format::executable_mappings(maps, program_path);
    profile.samples = samples;
    profile.has_observations = true;
    profile.stacks = stacks;
    profile.thread_names = thread_names;
    report::Symbolizer symbolizer;
    try {
      bytes = as == "pprof" ? report::export_pprof(profile, &symbolizer) : report::export_gmon(profile, symbolizer);
      // The 4.4BSD layout (NetBSD's gmonhdr) of the same histogram.
      if (as == "bsd-gmon") bytes = format::encode_gmon(format::decode_gmon(bytes), format::GmonFlavor::bsd);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "report_make_profile: %s\n", e.what());
      return 1;
    }
  }
  format::write_file_atomically(out, bytes);
  return 0;
}
