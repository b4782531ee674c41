// decode_pprof (pprof.h): gzip'd or plain profile.proto into a Profile,
// checked as it is read (every id and string index), the large parts a
// message at a time.
#include "format/pprof.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <unordered_map>

#include <google/protobuf/stubs/logging.h>

#include "format/pprof_gzip.h"
#include "format/pprof_wire.h"
#include "profile.pb.h"

namespace profiling::format {
namespace {

namespace pb = perftools::profiles;
using pprof_wire::for_each_field;
using pprof_wire::kLocationField;
using pprof_wire::kSampleField;

// protobuf logs to stderr (e.g. on invalid UTF-8) before a parse fails; the
// reader reports failures itself, in one line, so the log is muted meanwhile.
class QuietProtobuf {
 public:
  QuietProtobuf() : previous_(google::protobuf::SetLogHandler(nullptr)) {}
  ~QuietProtobuf() { google::protobuf::SetLogHandler(previous_); }

 private:
  google::protobuf::LogHandler* previous_;
};

}  // namespace

Profile decode_pprof(std::string_view bytes) {
  std::string inflated;
  if (looks_like_gzip(bytes)) {
    inflated = gunzip(bytes);
    bytes = inflated;
  }
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    fail("profile larger than 2 GiB");
  // Locations and samples (a million of each in a large profile) are read
  // one message at a time into compact tables; the rest of the Profile
  // (mappings, functions, strings: small) is parsed as one message. Parsed
  // whole, the Profile's objects cost ~400 bytes per location (issue 11).
  QuietProtobuf quiet;
  std::string rest;
  // Counted here so that the tables are reserved once: grown by doubling,
  // each leaves its old copies behind in the heap (a million samples: 42 MB
  // of capacity and the freed halves before it).
  size_t sample_count = 0, location_count = 0;
  if (!for_each_field(bytes, [&](uint32_t field, std::string_view, std::string_view whole) {
        if (field == kSampleField)
          ++sample_count;
        else if (field == kLocationField)
          ++location_count;
        else
          rest.append(whole);
      }))
    fail("not a pprof profile (profile.proto does not parse)");
  pb::Profile in;
  if (!in.ParseFromString(rest)) fail("not a pprof profile (profile.proto does not parse)");
  std::string().swap(rest);

  auto string_at = [&](int64_t index, const char* what) -> const std::string& {
    if (index < 0 || index >= in.string_table_size())
      fail(std::string(what) + " refers to string " + std::to_string(index) + " of " +
           std::to_string(in.string_table_size()));
    return in.string_table(static_cast<int>(index));
  };
  if (in.string_table_size() == 0 || !in.string_table(0).empty())
    fail("string table does not begin with the empty string");

  Profile profile;
  for (int i = 0; i < in.comment_size(); ++i) {
    const std::string& comment = string_at(in.comment(i), "comment");
    if (comment.rfind("profil.", 0) != 0) continue;
    size_t equals = comment.find('=');
    if (equals == std::string::npos) continue;
    std::string key = comment.substr(7, equals - 7), value = comment.substr(equals + 1);
    if (key == "program") profile.program = value;
    if (key == "clock") profile.clock = value;
    if (key == "event") profile.event = value;
    if (key == "pid") std::from_chars(value.data(), value.data() + value.size(), profile.pid);
    if (key == "dropped") std::from_chars(value.data(), value.data() + value.size(), profile.dropped);
    if (key == "own_samples") std::from_chars(value.data(), value.data() + value.size(), profile.own_samples);
    if (key == "processes") {
      // "N PATH": the path may hold spaces, the count is all digits.
      ProgramProcesses p;
      auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), p.processes);
      if (error != std::errc() || end == value.data() + value.size() || *end != ' ') continue;
      p.program = value.substr(static_cast<size_t>(end - value.data()) + 1);
      profile.programs.push_back(std::move(p));
    }
  }
  if (!profile.programs.empty() && profile.program.empty()) profile.program = describe_programs(profile.programs);
  if (in.has_period_type() && string_at(in.period_type().unit(), "period unit") == "nanoseconds" &&
      in.period() > 0)
    profile.period_ns = static_cast<uint64_t>(in.period());
  // An event's profile (issue 33): its period is events per sample.
  if (!profile.event.empty() && in.period() > 0) profile.event_period = static_cast<uint64_t>(in.period());
  if (in.duration_nanos() > 0) profile.duration_ns = static_cast<uint64_t>(in.duration_nanos());
  profile.time_nanos = in.time_nanos();

  std::unordered_map<uint64_t, size_t> mapping_index;
  for (const pb::Mapping& m : in.mapping()) {
    Mapping mapping;
    mapping.start = m.memory_start();
    mapping.limit = m.memory_limit();
    mapping.file_offset = m.file_offset();
    mapping.path = string_at(m.filename(), "mapping filename");
    mapping.build_id = string_at(m.build_id(), "mapping build_id");
    mapping.symbolized = m.has_functions() && m.has_inline_frames();
    if (m.id() == 0) fail("mapping with id 0");
    if (!mapping_index.emplace(m.id(), profile.mappings.size()).second)
      fail("two mappings with id " + std::to_string(m.id()));
    profile.mappings.push_back(std::move(mapping));
  }
  if (profile.program.empty() && !profile.mappings.empty()) profile.program = profile.mappings.front().path;

  // A function's name and system name fill in for each other, as the
  // writer does, so that what is read once reads the same after rewriting.
  std::unordered_map<uint64_t, Frame> functions;
  for (const pb::Function& f : in.function()) {
    if (f.id() == 0) fail("function with id 0");
    Frame frame;
    frame.function = string_at(f.name(), "function name");
    frame.system_name = string_at(f.system_name(), "function system_name");
    frame.file = string_at(f.filename(), "function filename");
    if (frame.function.empty()) frame.function = frame.system_name;
    if (frame.system_name.empty()) frame.system_name = frame.function;
    if (!functions.emplace(f.id(), std::move(frame)).second) fail("two functions with id " + std::to_string(f.id()));
  }

  // Each location: its address and its named frames (a range of
  // location_lines), sorted by id for lookup.
  struct LocationEntry {
    uint64_t id, address;
    uint32_t first_line, line_count;  // kTruncatedMark: the "[truncated]" root (no lines)
  };
  constexpr uint32_t kTruncatedMark = 0x8000'0000;
  std::vector<LocationEntry> locations;
  locations.reserve(location_count);
  std::vector<std::pair<uint64_t, int64_t>> location_lines;  // (function id, line)
  location_lines.reserve(location_count);
  pb::Location l;
  bool parsed = for_each_field(bytes, [&](uint32_t field, std::string_view payload, std::string_view) {
    if (field != kLocationField) return;
    if (!l.ParseFromArray(payload.data(), static_cast<int>(payload.size())))
      fail("not a pprof profile (profile.proto does not parse)");
    if (l.id() == 0) fail("location with id 0");
    if (l.mapping_id() != 0 && !mapping_index.count(l.mapping_id()))
      fail("location " + std::to_string(l.id()) + " refers to missing mapping " + std::to_string(l.mapping_id()));
    // A location without an address is known by its lines alone: its own
    // address, or every such frame would take the first one's names.
    const uint64_t address = l.address() != 0 ? l.address() : kAddresslessBase + locations.size();
    LocationEntry entry{l.id(), address, static_cast<uint32_t>(location_lines.size()), 0};
    for (const pb::Line& line : l.line()) {
      if (line.function_id() == 0) continue;  // a line of no known function: nothing to name
      auto function = functions.find(line.function_id());
      if (function == functions.end())
        fail("location " + std::to_string(l.id()) + " refers to missing function " +
             std::to_string(line.function_id()));
      const Frame& named = function->second;
      if (named.function.empty() && named.file.empty()) continue;  // as the writer leaves such frames out
      location_lines.emplace_back(line.function_id(), line.line());
      ++entry.line_count;
    }
    // The root our writer gives a truncated stack: no mapping, one line.
    if (l.mapping_id() == 0 && entry.line_count == 1 &&
        functions.find(location_lines.back().first)->second.function == kTruncatedFrame) {
      location_lines.pop_back();
      entry.line_count = kTruncatedMark;
    }
    if (location_lines.size() > std::numeric_limits<uint32_t>::max()) fail("more than 2^32 location lines");
    locations.push_back(entry);
  });
  if (!parsed) fail("not a pprof profile (profile.proto does not parse)");
  std::sort(locations.begin(), locations.end(),
            [](const LocationEntry& a, const LocationEntry& b) { return a.id < b.id; });
  for (size_t i = 1; i < locations.size(); ++i)
    if (locations[i - 1].id == locations[i].id) fail("two locations with id " + std::to_string(locations[i].id));
  // Ids are 1..N in every writer we know: then a table finds each of a
  // deep stack's frames at once (4 bytes per id); else a binary search.
  std::vector<uint32_t> dense;  // id -> index + 1, 0 none
  if (!locations.empty() && locations.back().id <= 2 * locations.size() + 1024) {
    dense.assign(locations.back().id + 1, 0);
    for (size_t i = 0; i < locations.size(); ++i) dense[locations[i].id] = static_cast<uint32_t>(i + 1);
  }
  auto location = [&](uint64_t id) -> const LocationEntry* {
    if (!dense.empty()) return id < dense.size() && dense[id] ? &locations[dense[id] - 1] : nullptr;
    auto it = std::lower_bound(locations.begin(), locations.end(), id,
                               [](const LocationEntry& e, uint64_t v) { return e.id < v; });
    return it != locations.end() && it->id == id ? &*it : nullptr;
  };

  // The value to read: the sample type counted in "count" (pprof's CPU
  // profiles call it samples/count), else the first; and the observations
  // behind it, when the file has them (observations/count, issue 22).
  int value_index = 0, observations_index = -1;
  for (int i = in.sample_type_size() - 1; i >= 0; --i) {
    if (string_at(in.sample_type(i).unit(), "sample type unit") != "count") continue;
    if (string_at(in.sample_type(i).type(), "sample type") == kObservationsType && observations_index < 0)
      observations_index = i;
    else
      value_index = i;
  }
  if (observations_index == value_index) observations_index = -1;
  profile.has_observations = observations_index >= 0;
  for (int i = 0; i < in.sample_type_size(); ++i) string_at(in.sample_type(i).type(), "sample type");

  const std::string pid_key = "pid", tid_key = "thread_id", thread_name_key = "thread_name";
  std::vector<uint64_t> callers;
  std::vector<int64_t> times, weights;
  std::vector<const LocationEntry*> frames;
  std::vector<uint8_t> named_once(locations.size(), 0);
  pb::Sample sample;
  profile.samples.reserve(profile.samples.size() + sample_count);
  parsed = for_each_field(bytes, [&](uint32_t field, std::string_view payload, std::string_view) {
    if (field != kSampleField) return;
    const pb::Sample& s = sample;
    if (!sample.ParseFromArray(payload.data(), static_cast<int>(payload.size())))
      fail("not a pprof profile (profile.proto does not parse)");
    if (s.value_size() != in.sample_type_size())
      fail("sample has " + std::to_string(s.value_size()) + " values for " + std::to_string(in.sample_type_size()) +
           " sample types");
    frames.clear();
    for (uint64_t id : s.location_id()) {
      const LocationEntry* entry = location(id);
      if (!entry) fail("sample refers to missing location " + std::to_string(id));
      frames.push_back(entry);
    }
    if (s.location_id_size() == 0 || s.value_size() == 0) return;
    int64_t value = s.value(value_index);
    if (value < 0) fail("negative sample value " + std::to_string(value));
    int32_t pid = 0, tid = 0;
    const std::string* thread_name = nullptr;
    times.clear();
    weights.clear();
    // A pid or thread_id label outside 32 bits names no Linux task: left out.
    for (const pb::Label& label : s.label()) {
      const std::string& key = string_at(label.key(), "label key");
      const bool in_32_bits = label.str() == 0 && label.num() >= INT32_MIN && label.num() <= INT32_MAX;
      if (key == pid_key && in_32_bits) pid = static_cast<int32_t>(label.num());
      if (key == tid_key && in_32_bits) tid = static_cast<int32_t>(label.num());
      if (key == thread_name_key && label.str() != 0) thread_name = &string_at(label.str(), "label value");
      if (key == kTimeLabel && label.str() == 0) times.push_back(label.num());
      if (key == kTimeWeightLabel && label.str() == 0) weights.push_back(label.num());
    }
    // Leaf first, then its callers; a "[truncated]" root marks the stack.
    const LocationEntry* leaf = frames[0];
    callers.clear();
    bool truncated = false;
    for (size_t i = 1; i < frames.size(); ++i) {
      const LocationEntry* caller = frames[i];
      if (caller->line_count == kTruncatedMark && i + 1 == frames.size())
        truncated = true;
      else
        callers.push_back(caller->address);
    }
    if (value == 0) return;  // nothing sampled: no stack, and no names for its addresses
    Sample decoded{leaf->address, static_cast<uint64_t>(value), pid, profile.stacks.intern(callers, truncated), tid};
    if (observations_index >= 0) {
      const int64_t observations = s.value(observations_index);
      if (observations < 0) fail("negative sample observations " + std::to_string(observations));
      decoded.observations = static_cast<uint64_t>(observations);
    }
    profile.samples.push_back(decoded);
    // Its times (issue 33); weights only when there is one per time, and
    // none below 1 (else each time is one period, as a perf record is).
    if (!times.empty()) {
      const bool weighted = weights.size() == times.size() &&
                            std::all_of(weights.begin(), weights.end(), [](int64_t w) { return w > 0; });
      const uint32_t timeline_stack = profile.timeline.stacks.intern(callers, truncated);
      for (size_t i = 0; i < times.size(); ++i)
        profile.timeline.samples.push_back(
            {times[i], leaf->address, weighted ? static_cast<uint64_t>(weights[i]) : 1, timeline_stack, tid, pid});
    }
    if (tid != 0 && thread_name != nullptr) profile.thread_names.try_emplace(tid, *thread_name);
    for (const LocationEntry* named : frames) {
      if (named->line_count == 0 || named->line_count == kTruncatedMark) continue;
      // Each location's names once: a deep stack's frames are met again in
      // most samples.
      uint8_t& done = named_once[static_cast<size_t>(named - locations.data())];
      if (done) continue;
      done = 1;
      auto [it, inserted] = profile.frames.try_emplace(named->address);
      if (!inserted) continue;
      for (uint32_t k = named->first_line; k < named->first_line + named->line_count; ++k) {
        it->second.push_back(functions.find(location_lines[k].first)->second);
        it->second.back().line = location_lines[k].second;
      }
    }
  });
  if (!parsed) fail("not a pprof profile (profile.proto does not parse)");
  if (coalesce_samples(&profile.samples)) fail("sample counts overflow 64 bits");
  canonicalize_stacks(&profile);
  profile.timeline.sort_by_time();
  return profile;
}

}  // namespace profiling::format
