// encode_pprof (pprof.h): a Profile, its symbolizer's names and the frames
// it carries, as gzip'd profile.proto.
#include "format/pprof.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "format/pprof_gzip.h"
#include "format/pprof_wire.h"
#include "profile.pb.h"

namespace profiling::format {
namespace {

namespace pb = perftools::profiles;
using pprof_wire::append_varint;
using pprof_wire::kSampleField;

// profile.proto's strings are proto3 `string`s, which must be UTF-8 (the Go
// and C++ parsers refuse anything else); a path that is not is written with
// each stray byte as U+FFFD.
std::string valid_utf8(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = length > 0 && i + length <= s.size();
    for (size_t k = 1; ok && k < length; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 0x2;
    if (ok && length > 1) {
      // No overlong forms, surrogates or code points past U+10FFFF.
      uint32_t cp = c & (0xff >> (length + 1));
      for (size_t k = 1; k < length; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
      static const uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= kMinimum[length] && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);
    }
    if (ok) {
      out.append(s, i, length);
      i += length;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

// profile.proto keeps every string once, in string_table; index 0 is "".
class StringTable {
 public:
  explicit StringTable(pb::Profile* profile) : profile_(profile) { intern(""); }
  int64_t intern(const std::string& s) {
    auto [it, inserted] = index_.emplace(s, static_cast<int64_t>(profile_->string_table_size()));
    if (inserted) profile_->add_string_table(valid_utf8(s));
    return it->second;
  }

 private:
  pb::Profile* profile_;
  std::unordered_map<std::string, int64_t> index_;
};

int64_t checked_int64(uint64_t v, const char* what) {
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail(std::string(what) + " too large for profile.proto's int64");
  return static_cast<int64_t>(v);
}

void add_comment(pb::Profile& out, StringTable& strings, const char* key, const std::string& value) {
  out.add_comment(strings.intern(std::string("profil.") + key + "=" + value));
}

}  // namespace

std::string encode_pprof(const Profile& profile, const PprofSymbolizer& symbolize,
                         const std::function<bool(const Mapping&)>& inline_frames_read) {
  pb::Profile out;
  StringTable strings(&out);
  auto value_type = [&](pb::ValueType* type, const char* name, const char* unit) {
    type->set_type(strings.intern(name));
    type->set_unit(strings.intern(unit));
  };
  // The second value: CPU (or wall) time, or the events of an event's
  // profile (issue 33: "page-faults"/"count", never converted to time).
  const bool event = !profile.event.empty();
  const char* value_name = event ? profile.event.c_str() : "cpu";
  const char* value_unit = event ? "count" : "nanoseconds";
  const uint64_t per_count = event ? profile.event_period : profile.period_ns;
  value_type(out.add_sample_type(), "samples", "count");
  value_type(out.add_sample_type(), value_name, value_unit);
  // The draws behind the counts (issue 22), after today's types so that a
  // reader of the first or second value reads what it did. pprof shows the
  // last type unless told: the default stays the second.
  if (profile.has_observations) {
    value_type(out.add_sample_type(), kObservationsType, "count");
    out.set_default_sample_type(strings.intern(value_name));
  }
  value_type(out.mutable_period_type(), value_name, value_unit);
  out.set_period(checked_int64(per_count, "period"));
  out.set_duration_nanos(checked_int64(profile.duration_ns, "duration"));
  out.set_time_nanos(profile.time_nanos);
  // A sum of several processes says which programs, how many processes of
  // each (its program is their description, made again when read).
  if (!profile.program.empty() && profile.programs.empty()) add_comment(out, strings, "program", profile.program);
  for (const ProgramProcesses& p : profile.programs)
    add_comment(out, strings, "processes", std::to_string(p.processes) + " " + p.program);
  if (profile.pid) add_comment(out, strings, "pid", std::to_string(profile.pid));
  if (!profile.clock.empty()) add_comment(out, strings, "clock", profile.clock);
  if (event) add_comment(out, strings, "event", profile.event);
  if (profile.dropped) add_comment(out, strings, "dropped", std::to_string(profile.dropped));
  // Profil's own samples are not samples of the file (no consumer should
  // show them as the program's rows): only their count, for the header.
  if (profile.own_samples) add_comment(out, strings, "own_samples", std::to_string(profile.own_samples));

  for (size_t i = 0; i < profile.mappings.size(); ++i) {
    const Mapping& m = profile.mappings[i];
    pb::Mapping* mapping = out.add_mapping();
    mapping->set_id(i + 1);
    mapping->set_memory_start(m.start);
    mapping->set_memory_limit(m.limit);
    mapping->set_file_offset(m.file_offset);
    mapping->set_filename(strings.intern(m.path));
    mapping->set_build_id(strings.intern(m.build_id));
    // A file's complete names stay complete when written again (merge,
    // report --format pprof), and so read the same.
    if (m.symbolized) {
      mapping->set_has_functions(true);
      mapping->set_has_inline_frames(true);
    }
  }

  // The samples summed per (leaf, process, stack), in a copy: the profile
  // may not be coalesced, and is not ours to sort.
  std::vector<Sample> samples = profile.samples;
  if (coalesce_samples(&samples)) fail("sample count overflows 64 bits");
  std::erase_if(samples, [](const Sample& s) { return s.count == 0; });  // as the reader drops them

  // One location per distinct address, leaves and callers alike (a
  // caller's address is its call site), in address order; one more, named
  // "[truncated]", is the root of every stack whose unwind stopped early,
  // so that pprof's views show such stacks apart and the reader gets the
  // mark back.
  std::vector<uint64_t> addresses;
  bool any_truncated = false;
  std::vector<bool> stack_used(profile.stacks.size() + 1, false);
  for (const Sample& s : samples) {
    addresses.push_back(s.address);
    if (s.stack < stack_used.size()) stack_used[s.stack] = true;
  }
  // Each chain's frames once, however many samples share it.
  for (uint32_t id = 1; id < stack_used.size(); ++id) {
    if (!stack_used[id]) continue;
    for (uint64_t caller : profile.stacks.callers(id)) addresses.push_back(caller);
    any_truncated = any_truncated || profile.stacks.truncated(id);
  }
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  auto location_id = [&addresses](uint64_t address) {
    return static_cast<uint64_t>(std::lower_bound(addresses.begin(), addresses.end(), address) - addresses.begin()) + 1;
  };

  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> function_ids;
  auto add_line = [&](pb::Location* location, pb::Mapping* mapping, const PprofFrame& frame) {
    auto key = std::make_tuple(frame.function, frame.system_name, frame.file);
    auto [it, inserted] = function_ids.emplace(key, function_ids.size() + 1);
    if (inserted) {
      pb::Function* function = out.add_function();
      function->set_id(it->second);
      function->set_name(strings.intern(frame.function.empty() ? frame.system_name : frame.function));
      function->set_system_name(strings.intern(frame.system_name.empty() ? frame.function : frame.system_name));
      function->set_filename(strings.intern(frame.file));
    }
    pb::Line* line = location->add_line();
    line->set_function_id(it->second);
    line->set_line(frame.line);
    if (!mapping) return;
    if (!frame.function.empty() || !frame.system_name.empty()) mapping->set_has_functions(true);
    if (!frame.file.empty()) mapping->set_has_filenames(true);
    if (frame.line > 0) mapping->set_has_line_numbers(true);
  };
  for (size_t i = 0; i < addresses.size(); ++i) {
    const uint64_t address = addresses[i];
    pb::Location* location = out.add_location();
    location->set_id(i + 1);
    location->set_address(address);
    const Mapping* m = profile.mapping_for(address);
    pb::Mapping* mapping = nullptr;
    std::vector<PprofFrame> frames;
    if (m) {
      size_t mapping_index = static_cast<size_t>(m - profile.mappings.data());
      location->set_mapping_id(mapping_index + 1);
      mapping = out.mutable_mapping(static_cast<int>(mapping_index));
      if (symbolize) frames = symbolize(*m, address);
    }
    // Names read from a file whose objects are gone here must survive being
    // written again (report --format pprof, merge).
    if (frames.empty()) {
      if (const std::vector<Frame>* carried = profile.frames_for(address)) frames = *carried;
    }
    // Set by the symbolizer's answer only: a file written again without
    // one keeps the flags it was read with (Mapping::symbolized).
    if (mapping && symbolize && (frames.size() > 1 || (inline_frames_read && inline_frames_read(*m))))
      mapping->set_has_inline_frames(true);
    for (const PprofFrame& frame : frames) {
      if (frame.function.empty() && frame.system_name.empty() && frame.file.empty()) continue;
      add_line(location, mapping, frame);
    }
  }
  const uint64_t truncated_id = addresses.size() + 1;
  if (any_truncated) {
    pb::Location* location = out.add_location();
    location->set_id(truncated_id);
    add_line(location, nullptr, PprofFrame{kTruncatedFrame, kTruncatedFrame, "", 0});
  }

  // The samples are serialized one at a time after the rest of the
  // message (a message's fields may come in any order; repeated ones are
  // concatenated): held whole, deep stacks cost 8 bytes per frame of every
  // sample (issue 11's bound).
  const int64_t pid_key = std::any_of(samples.begin(), samples.end(), [](const Sample& s) { return s.pid != 0; })
                              ? strings.intern("pid")
                              : 0;
  // Threads (issue 22): "thread_id" a numeric label, "thread_name" a string
  // one, as `go tool pprof -tagfocus`/-traces and other producers' thread
  // labels read them.
  const bool threads = std::any_of(samples.begin(), samples.end(), [](const Sample& s) { return s.tid != 0; });
  const int64_t tid_key = threads ? strings.intern("thread_id") : 0;
  const int64_t thread_name_key = threads && !profile.thread_names.empty() ? strings.intern("thread_name") : 0;
  std::map<int32_t, int64_t> thread_name_string;
  for (const auto& [tid, name] : profile.thread_names) thread_name_string[tid] = strings.intern(name);
  // The timeline (issue 33): each sample's times, as numeric labels
  // "time_ns" (one a sample taken, in time order), and "time_weight"
  // beside them, in the same order, where one stands for other than one
  // period. go tool pprof reads several values of one key
  // (profile.Sample.NumLabel is a map to slices) and sums the samples as
  // ever.
  const int64_t time_key = profile.timeline.empty() ? 0 : strings.intern(kTimeLabel);
  const int64_t weight_key = profile.timeline.empty() ? 0 : strings.intern(kTimeWeightLabel);
  struct Timed {
    Sample key;  // address, pid, tid, stack (the profile's id); count the weight
    int64_t time;
  };
  std::vector<Timed> timed;
  for (const TimedSample& t : profile.timeline.samples) {
    const uint32_t stack = profile.stacks.find(profile.timeline.stacks.callers(t.stack), profile.timeline.stacks.truncated(t.stack));
    if (stack != UINT32_MAX) timed.push_back({Sample{t.address, t.weight, t.pid, stack, t.tid}, t.time_ns});
  }
  auto key_less = [](const Sample& a, const Sample& b) {
    return std::tie(a.address, a.pid, a.tid, a.stack) < std::tie(b.address, b.pid, b.tid, b.stack);
  };
  std::stable_sort(timed.begin(), timed.end(), [&](const Timed& a, const Timed& b) { return key_less(a.key, b.key); });
  size_t next_timed = 0;
  std::string raw;
  if (!out.SerializeToString(&raw)) fail("cannot serialize the profile (larger than 2 GiB?)");
  pb::Sample message;
  std::string bytes;
  for (const Sample& s : samples) {
    pb::Sample* sample = &message;
    sample->Clear();
    sample->add_location_id(location_id(s.address));
    for (uint64_t caller : profile.stacks.callers(s.stack)) sample->add_location_id(location_id(caller));
    if (profile.stacks.truncated(s.stack)) sample->add_location_id(truncated_id);
    sample->add_value(checked_int64(s.count, "sample count"));
    uint64_t value = 0;
    if (__builtin_mul_overflow(s.count, per_count, &value)) fail("sample CPU time or events overflow 64 bits");
    sample->add_value(checked_int64(value, "sample CPU time or events"));
    if (profile.has_observations) sample->add_value(checked_int64(s.observations, "sample observations"));
    if (s.pid != 0) {
      pb::Label* label = sample->add_label();
      label->set_key(pid_key);
      label->set_num(s.pid);
    }
    if (s.tid != 0) {
      pb::Label* label = sample->add_label();
      label->set_key(tid_key);
      label->set_num(s.tid);
      if (auto name = thread_name_string.find(s.tid); name != thread_name_string.end()) {
        label = sample->add_label();
        label->set_key(thread_name_key);
        label->set_str(name->second);
      }
    }
    while (next_timed < timed.size() && key_less(timed[next_timed].key, s)) ++next_timed;
    const size_t first_timed = next_timed;
    bool weighted = false;
    for (; next_timed < timed.size() && !key_less(s, timed[next_timed].key); ++next_timed) {
      pb::Label* label = sample->add_label();
      label->set_key(time_key);
      label->set_num(timed[next_timed].time);
      weighted = weighted || timed[next_timed].key.count != 1;
    }
    for (size_t i = first_timed; weighted && i < next_timed; ++i) {
      pb::Label* label = sample->add_label();
      label->set_key(weight_key);
      label->set_num(checked_int64(timed[i].key.count, "sample weight"));
    }
    bytes.clear();
    sample->SerializeToString(&bytes);
    append_varint(&raw, kSampleField << 3 | 2);  // length-delimited (protobuf encoding guide)
    append_varint(&raw, bytes.size());
    raw += bytes;
    if (raw.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
      fail("cannot serialize the profile (larger than 2 GiB)");
  }
  return gzip(raw);
}

}  // namespace profiling::format
