#include "format/profraw.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <iterator>

#include "format/format_error.h"
#include "format/profraw_stacks.h"


namespace profiling::format {
namespace {

// One "start-end perms offset dev inode path" line of proc(5)'s maps.
bool parse_maps_line(std::string_view line, Mapping* mapping, bool* executable) {
  auto hex = [](std::string_view text, uint64_t* out) {
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *out, 16);
    return error == std::errc() && end == text.data() + text.size() && !text.empty();
  };
  auto next_field = [&line]() {
    size_t begin = line.find_first_not_of(' ');
    if (begin == std::string_view::npos) {
      line = {};
      return std::string_view{};
    }
    line.remove_prefix(begin);
    size_t end = std::min(line.find(' '), line.size());
    std::string_view field = line.substr(0, end);
    line.remove_prefix(end);
    return field;
  };
  std::string_view range = next_field(), perms = next_field(), offset = next_field();
  std::string_view device = next_field(), inode = next_field();
  size_t dash = range.find('-');
  if (dash == std::string_view::npos || perms.size() != 4 || device.find(':') == std::string_view::npos ||
      inode.empty())
    return false;
  if (!hex(range.substr(0, dash), &mapping->start) || !hex(range.substr(dash + 1), &mapping->limit) ||
      !hex(offset, &mapping->file_offset) || mapping->limit < mapping->start)
    return false;
  size_t path_begin = line.find_first_not_of(' ');
  mapping->path = path_begin == std::string_view::npos ? std::string() : std::string(line.substr(path_begin));
  *executable = perms[2] == 'x';
  return true;
}

}  // namespace

std::string describe_clock(uint32_t clock) {
  switch (clock) {
    case 0: return "cpu";
    case 1: return "perf";
    case 2: return "wall";
    case 3: return "perf-signal";
    default: return "";
  }
}

std::vector<Mapping> executable_mappings(std::string_view maps, std::string_view program) {
  std::vector<Mapping> result;
  size_t line_number = 0;
  while (!maps.empty()) {
    size_t end = std::min(maps.find('\n'), maps.size());
    std::string_view line = maps.substr(0, end);
    maps.remove_prefix(std::min(end + 1, maps.size()));
    ++line_number;
    if (line.empty()) continue;
    Mapping mapping;
    bool executable = false;
    if (!parse_maps_line(line, &mapping, &executable))
      throw FormatError("maps line " + std::to_string(line_number) + " is not a /proc/PID/maps line");
    if (!executable) continue;
    if (mapping.path.empty()) mapping.path = "[anon]";
    result.push_back(std::move(mapping));
  }
  std::sort(result.begin(), result.end(),
            [](const Mapping& a, const Mapping& b) { return a.start < b.start; });
  if (!program.empty()) {
    // The main executable first (Profile's convention); stable for the rest.
    std::stable_partition(result.begin(), result.end(),
                          [&](const Mapping& m) { return m.path == program; });
  }
  return result;
}

profraw::Header read_profraw_header(std::string_view bytes) {
  using profraw::Header;
  if (bytes.size() < sizeof(profraw::kMagic) ||
      std::memcmp(bytes.data(), profraw::kMagic, sizeof(profraw::kMagic)) != 0)
    throw FormatError("not a profraw file (bad magic)");
  if (bytes.size() < offsetof(Header, header_size) + sizeof(uint32_t))
    throw FormatError("truncated profraw header");
  const uint32_t version = load<uint32_t>(bytes, offsetof(Header, version));
  if (version < 1 || version > profraw::kVersion)
    throw FormatError("unsupported profraw version " + std::to_string(version));
  const uint32_t header_size = load<uint32_t>(bytes, offsetof(Header, header_size));
  const uint32_t expected_size = version == 1   ? profraw::kHeaderSizeV1
                                 : version == 2 ? profraw::kHeaderSizeV2
                                 : version == 3 ? profraw::kHeaderSizeV3
                                 : version <= 5 ? profraw::kHeaderSizeV5
                                                : static_cast<uint32_t>(sizeof(Header));
  if (header_size != expected_size)
    throw FormatError("bad profraw header size " + std::to_string(header_size));
  if (bytes.size() < header_size)
    throw FormatError("truncated profraw header (" + std::to_string(bytes.size()) + " of " +
                      std::to_string(header_size) + " bytes)");
  Header header{};
  std::memcpy(&header, bytes.data(), header_size);
  if (version == 1) header.start_clock = header.clock;  // one clock throughout
  return header;
}

std::vector<profraw::LedgerRecord> read_ledger(std::string_view bytes) {
  std::vector<profraw::LedgerRecord> records;
  for (size_t at = 0; at + sizeof(profraw::LedgerRecord) <= bytes.size(); at += sizeof(profraw::LedgerRecord)) {
    profraw::LedgerRecord record;
    std::memcpy(&record, bytes.data() + at, sizeof record);
    if (std::memcmp(record.magic, profraw::kLedgerMagic, sizeof record.magic) != 0) continue;
    if (record.kind != static_cast<uint32_t>(profraw::LedgerKind::start) &&
        record.kind != static_cast<uint32_t>(profraw::LedgerKind::end) &&
        record.kind != static_cast<uint32_t>(profraw::LedgerKind::not_entered) &&
        record.kind != static_cast<uint32_t>(profraw::LedgerKind::unwritten))
      continue;
    if (record.kind == static_cast<uint32_t>(profraw::LedgerKind::end) &&
        !profraw::is_end_reason(record.end_reason))
      continue;
    if (record.kind == static_cast<uint32_t>(profraw::LedgerKind::not_entered) &&
        (record.end_reason < static_cast<uint32_t>(profraw::NotEntered::static_program) ||
         record.end_reason > static_cast<uint32_t>(profraw::NotEntered::seccomp_filter)))
      continue;
    if (record.pid <= 0) continue;
    record.name[sizeof record.name - 1] = '\0';
    records.push_back(record);
  }
  return records;
}

ProfrawData read_profraw(std::string_view bytes) {
  const profraw::Header header = read_profraw_header(bytes);
  // Sizes first, in 64-bit arithmetic bounded by the real size, so no
  // product or sum can wrap.
  const uint64_t available = bytes.size() - header.header_size;
  if (header.program_length > available) throw FormatError("truncated profraw (program path)");
  uint64_t rest = available - header.program_length;
  const size_t pair_size = header.version >= 5 ? sizeof(profraw::Pair) : profraw::kPairSizeV4;
  if (header.sample_count > rest / pair_size) throw FormatError("truncated profraw (samples)");
  rest -= header.sample_count * pair_size;
  if (header.maps_length > rest) throw FormatError("truncated profraw (maps)");
  rest -= header.maps_length;
  if (header.unsampled_count > rest / sizeof(profraw::Unsampled))
    throw FormatError("truncated profraw (unsampled records)");
  rest -= header.unsampled_count * sizeof(profraw::Unsampled);
  if (header.stacks_length > rest) throw FormatError("truncated profraw (stacks)");
  rest -= header.stacks_length;
  if (header.thread_count > rest / sizeof(profraw::ThreadRecord)) throw FormatError("truncated profraw (threads)");
  rest -= uint64_t{header.thread_count} * sizeof(profraw::ThreadRecord);
  if (header.interp_frames_length > rest) throw FormatError("truncated profraw (interpreter frames)");
  rest -= header.interp_frames_length;
  if (header.interp_frame_count > header.interp_frames_length / sizeof(profraw::InterpreterFrameRecord))
    throw FormatError("profraw interpreter frame count exceeds its bytes");
  if (rest > 0)
    throw FormatError(header.version == 1   ? "profraw has trailing bytes after the maps"
                      : header.version == 2 ? "profraw has trailing bytes after the unsampled records"
                      : header.version == 3 ? "profraw has trailing bytes after the stacks"
                      : header.version <= 5 ? "profraw has trailing bytes after the threads"
                                            : "profraw has trailing bytes after the interpreter frames");
  const size_t stack_record_size = header.version >= 4 ? sizeof(profraw::StackRecord) : profraw::kStackRecordSizeV3;
  // A record is at least its header and one PC: no count can claim more
  // than the bytes hold.
  if (header.stack_count > header.stacks_length / (stack_record_size + sizeof(uint64_t)))
    throw FormatError("profraw stack count " + std::to_string(header.stack_count) + " exceeds its stack bytes");
  if (!profraw::is_end_reason(header.end_reason))
    throw FormatError("bad profraw end reason " + std::to_string(header.end_reason));
  if (header.hz == 0 || header.period_ns == 0) throw FormatError("profraw has no sampling rate");

  ProfrawData data;
  size_t offset = header.header_size;
  Profile& profile = data.profile;
  profile.program.assign(bytes.data() + offset, header.program_length);
  offset += header.program_length;
  profile.has_observations = header.version >= 5;
  profile.samples.reserve(header.sample_count);
  for (uint64_t i = 0; i < header.sample_count; ++i, offset += pair_size) {
    profraw::Pair pair{};
    std::memcpy(&pair, bytes.data() + offset, pair_size);  // before version 5: no observations
    if (pair.count == 0) continue;
    Sample sample{pair.pc, pair.count};
    // A count has at least one draw behind it (a hand-made file may say 0).
    if (profile.has_observations) sample.observations = pair.observations ? pair.observations : 1;
    profile.samples.push_back(sample);
  }
  // The table never holds one pc twice, but a hand-made file might: summed
  // (saturating) in place, not in a second copy of every sample.
  coalesce_samples(&profile.samples);
  data.maps.assign(bytes.data() + offset, header.maps_length);
  offset += header.maps_length;
  for (uint32_t i = 0; i < header.unsampled_count; ++i, offset += sizeof(profraw::Unsampled)) {
    const auto record = load<profraw::Unsampled>(bytes, offset);
    if (record.cause < 1 || record.cause > 7)
      throw FormatError("bad profraw unsampled cause " + std::to_string(record.cause));
    if (record.cpu_ns != 0) data.unsampled.push_back(record);
  }
  data.stacks_captured = (header.stack_flags & profraw::kStacksCaptured) != 0 || header.stack_count != 0;
  data.max_depth = header.max_depth;
  profile.stacks_dropped = header.stacks_dropped;
  if (data.stacks_captured)
    spread_stacks(bytes.substr(offset, header.stacks_length), header.stack_count, stack_record_size,
                  header.version >= 7 ? profraw::kStackTruncated | profraw::kStackGilMask : profraw::kStackTruncated,
                  &profile);
  offset += header.stacks_length;
  for (uint32_t i = 0; i < header.thread_count; ++i, offset += sizeof(profraw::ThreadRecord)) {
    const auto record = load<profraw::ThreadRecord>(bytes, offset);
    if (record.tid == 0) continue;
    const std::string name(record.name, strnlen(record.name, sizeof record.name));
    profile.thread_names[record.tid] = name.empty() ? profraw::kEndedThreadName : name;
  }
  read_interpreter_frames(bytes.substr(offset, header.interp_frames_length), header.interp_frame_count, &profile);
  data.interpreter_frames = header.interp_frame_count != 0;

  profile.pid = header.pid;
  profile.clock = describe_clock(header.clock);
  profile.period_ns = header.period_ns;
  profile.time_nanos = header.start_ns;
  profile.process_start_ns = header.start_ns;  // the preload starts with the process (and again in a child)
  // In unsigned arithmetic: the difference of two int64 times from a corrupt
  // file may not fit int64 (found by fuzz/decode_profraw_fuzzer.cc).
  profile.duration_ns = header.end_ns > header.start_ns
                            ? static_cast<uint64_t>(header.end_ns) - static_cast<uint64_t>(header.start_ns)
                            : 0;
  profile.dropped = header.dropped;
  profile.mappings = executable_mappings(data.maps, profile.program);

  data.ppid = header.ppid;
  data.hz = header.hz;
  data.end_reason = static_cast<profraw::EndReason>(header.end_reason);
  data.signal = header.signal;
  data.cpu_ns = header.cpu_ns;
  data.start_clock = describe_clock(header.start_clock);
  data.signals = header.signals;
  data.run_id.assign(header.run_id, strnlen(header.run_id, profraw::kRunIdSize));
  return data;
}

Profile decode_profraw(std::string_view bytes) { return read_profraw(bytes).profile; }

const char* unsampled_cause_name(uint32_t cause) {
  switch (static_cast<profraw::UnsampledCause>(cause)) {
    case profraw::UnsampledCause::signals_blocked: return "signals blocked";
    case profraw::UnsampledCause::descriptor_closed: return "sampler descriptor closed";
    case profraw::UnsampledCause::unknown: return "unknown";
    case profraw::UnsampledCause::between_ticks: return "ran between kernel ticks";
    case profraw::UnsampledCause::ring_full: return "ring buffer full";
    case profraw::UnsampledCause::in_kernel: return "in the kernel since its last sample";
    case profraw::UnsampledCause::ended_within_period: return "counted at thread exit, not sampled";
  }
  return "";
}

void add_unsampled_rows(const ProfrawData& data, Profile* profile, UnsampledCarry* carry) {
  if (profile->period_ns == 0) return;
  for (const profraw::Unsampled& record : data.unsampled) {
    // Rounded, in a way no cpu_ns (a corrupt file's) can wrap; or the
    // rest carried (a cause the reader checked: below std::size(carry->ns)).
    uint64_t count;
    if (carry != nullptr && record.cause < std::size(carry->ns)) {
      uint64_t& rest = carry->ns[record.cause];
      count = record.cpu_ns / profile->period_ns;
      rest += record.cpu_ns % profile->period_ns;
      count += rest / profile->period_ns;
      rest %= profile->period_ns;
    } else {
      count = record.cpu_ns / profile->period_ns +
              (record.cpu_ns % profile->period_ns >= profile->period_ns - profile->period_ns / 2);
    }
    if (count == 0) continue;
    const uint64_t address = unsampled_address(record.cause);
    auto at = std::lower_bound(profile->samples.begin(), profile->samples.end(), address,
                               [](const Sample& s, uint64_t a) { return s.address < a; });
    if (at != profile->samples.end() && at->address == address)
      at->count = at->count > UINT64_MAX - count ? UINT64_MAX : at->count + count;
    else
      profile->samples.insert(at, Sample{address, count});
    const std::string name = std::string("[unsampled: ") + unsampled_cause_name(record.cause) + "]";
    profile->frames[address] = {Frame{name, name, "", 0}};
  }
}

}  // namespace profiling::format
