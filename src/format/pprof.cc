#include "format/pprof.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/wire_format_lite.h>

#include "profile.pb.h"

namespace profiling::format {
namespace {

namespace pb = perftools::profiles;

// The most a gzip'd profile may inflate to: far above any real profile,
// low enough that a small "gzip bomb" cannot exhaust memory.
constexpr size_t kMaxInflatedSize = size_t{1} << 30;

[[noreturn]] void fail(const std::string& what) { throw FormatError(what); }

// protobuf logs to stderr (e.g. on invalid UTF-8) before a parse fails; the
// reader reports failures itself, in one line, so the log is muted meanwhile.
class QuietProtobuf {
 public:
  QuietProtobuf() : previous_(google::protobuf::SetLogHandler(nullptr)) {}
  ~QuietProtobuf() { google::protobuf::SetLogHandler(previous_); }

 private:
  google::protobuf::LogHandler* previous_;
};

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

std::string gzip(const std::string& raw) {
  z_stream stream{};
  // windowBits 15 + 16: a gzip wrapper, as `go tool pprof` expects.
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    fail("cannot initialize zlib");
  std::string out(deflateBound(&stream, raw.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  stream.avail_in = static_cast<uInt>(raw.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  int result = deflate(&stream, Z_FINISH);
  size_t written = stream.total_out;
  deflateEnd(&stream);
  if (result != Z_STREAM_END) fail("gzip compression failed");
  out.resize(written);
  return out;
}

// Inflates `compressed` into `out` (nullptr: only counts); returns the
// inflated size, or a size above kMaxInflatedSize as soon as it is exceeded.
size_t inflate_into(std::string_view compressed, std::string* out) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 16) != Z_OK) fail("cannot initialize zlib");
  struct End {
    z_stream* s;
    ~End() { inflateEnd(s); }
  } end{&stream};
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  size_t total = 0;
  char buffer[65536];
  for (;;) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof buffer;
    int result = inflate(&stream, Z_NO_FLUSH);
    size_t got = sizeof buffer - stream.avail_out;
    // A message never begins with a zero byte (field number 0 does not
    // exist): the commonest bomb, compressed zeros, is refused at once.
    if (total == 0 && got > 0 && buffer[0] == 0) fail("gzip data that is no profile.proto (it begins with a zero byte)");
    total += got;
    if (total > kMaxInflatedSize) return total;
    if (out) out->append(buffer, got);
    if (result == Z_STREAM_END) {
      // Several gzip members are one stream to gunzip; anything else after
      // the end is damage.
      if (stream.avail_in == 0) return total;
      if (stream.avail_in < 2 || stream.next_in[0] != 0x1f || stream.next_in[1] != 0x8b)
        fail("bytes after the end of the gzip stream");
      inflateReset(&stream);
      continue;
    }
    if (result == Z_BUF_ERROR && stream.avail_in == 0) fail("truncated gzip data");
    if (result != Z_OK) fail(std::string("corrupt gzip data") + (stream.msg ? std::string(": ") + stream.msg : ""));
  }
}

std::string gunzip(std::string_view compressed) {
  if (compressed.size() > std::numeric_limits<uInt>::max()) fail("gzip data larger than 4 GiB");
  // Inflated twice: once to learn the size without keeping anything, once
  // into a buffer of exactly that size. A "gzip bomb" is refused after the
  // first pass having cost 64 KiB, and a real profile costs its size, not
  // the doubling growth of a string appended to.
  size_t size = inflate_into(compressed, nullptr);
  if (size > kMaxInflatedSize) fail("gzip data inflates to more than " + std::to_string(kMaxInflatedSize >> 30) + " GiB");
  std::string out;
  out.reserve(size);
  inflate_into(compressed, &out);
  return out;
}

// profile.proto's field numbers for Profile.sample and Profile.location.
constexpr uint32_t kSampleField = 2, kLocationField = 4;

// Walks the top-level fields of a serialized message: visit(field number,
// payload of a length-delimited field (else empty), the whole field with
// its tag). False when the bytes are not a well-formed message.
template <typename Visit>
bool for_each_field(std::string_view bytes, Visit&& visit) {
  namespace io = google::protobuf::io;
  using google::protobuf::internal::WireFormatLite;
  io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  for (;;) {
    size_t start = static_cast<size_t>(in.CurrentPosition());
    if (start == bytes.size()) return true;
    uint32_t tag = in.ReadTag();
    if (tag == 0) return false;
    std::string_view payload;
    if (WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      uint32_t length = 0;
      if (!in.ReadVarint32(&length)) return false;
      size_t at = static_cast<size_t>(in.CurrentPosition());
      if (length > bytes.size() - at || !in.Skip(static_cast<int>(length))) return false;
      payload = bytes.substr(at, length);
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
    size_t end = static_cast<size_t>(in.CurrentPosition());
    visit(WireFormatLite::GetTagFieldNumber(tag), payload, bytes.substr(start, end - start));
  }
}

void append_varint(std::string* out, uint64_t value) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

int64_t checked_int64(uint64_t v, const char* what) {
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail(std::string(what) + " too large for profile.proto's int64");
  return static_cast<int64_t>(v);
}

void add_comment(pb::Profile& out, StringTable& strings, const char* key, const std::string& value) {
  out.add_comment(strings.intern(std::string("profil.") + key + "=" + value));
}

}  // namespace

bool looks_like_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string encode_pprof(const Profile& profile, const PprofSymbolizer& symbolize,
                         const std::function<bool(const Mapping&)>& inline_frames_read) {
  pb::Profile out;
  StringTable strings(&out);
  auto value_type = [&](pb::ValueType* type, const char* name, const char* unit) {
    type->set_type(strings.intern(name));
    type->set_unit(strings.intern(unit));
  };
  value_type(out.add_sample_type(), "samples", "count");
  value_type(out.add_sample_type(), "cpu", "nanoseconds");
  // The draws behind the counts (issue 22), after today's types so that a
  // reader of the first or second value reads what it did. pprof shows the
  // last type unless told: the default stays cpu.
  if (profile.has_observations) {
    value_type(out.add_sample_type(), kObservationsType, "count");
    out.set_default_sample_type(strings.intern("cpu"));
  }
  value_type(out.mutable_period_type(), "cpu", "nanoseconds");
  out.set_period(checked_int64(profile.period_ns, "period"));
  out.set_duration_nanos(checked_int64(profile.duration_ns, "duration"));
  out.set_time_nanos(profile.time_nanos);
  // A sum of several processes says which programs, how many processes of
  // each (its program is their description, made again when read).
  if (!profile.program.empty() && profile.programs.empty()) add_comment(out, strings, "program", profile.program);
  for (const ProgramProcesses& p : profile.programs)
    add_comment(out, strings, "processes", std::to_string(p.processes) + " " + p.program);
  if (profile.pid) add_comment(out, strings, "pid", std::to_string(profile.pid));
  if (!profile.clock.empty()) add_comment(out, strings, "clock", profile.clock);
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
    uint64_t nanoseconds = 0;
    if (__builtin_mul_overflow(s.count, profile.period_ns, &nanoseconds)) fail("sample CPU time overflows 64 bits");
    sample->add_value(checked_int64(nanoseconds, "sample CPU time"));
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
    // A pid or thread_id label outside 32 bits names no Linux task: left out.
    for (const pb::Label& label : s.label()) {
      const std::string& key = string_at(label.key(), "label key");
      const bool in_32_bits = label.str() == 0 && label.num() >= INT32_MIN && label.num() <= INT32_MAX;
      if (key == pid_key && in_32_bits) pid = static_cast<int32_t>(label.num());
      if (key == tid_key && in_32_bits) tid = static_cast<int32_t>(label.num());
      if (key == thread_name_key && label.str() != 0) thread_name = &string_at(label.str(), "label value");
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
  return profile;
}

}  // namespace profiling::format
