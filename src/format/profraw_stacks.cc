#include "format/profraw_stacks.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "format/format_error.h"
#include "format/profraw_layout.h"

namespace profiling::format {

void spread_stacks(std::string_view records, uint64_t count, size_t record_size, uint32_t known_flags,
                   Profile* profile) {
  std::vector<Sample> stacked;
  stacked.reserve(count);
  std::vector<uint64_t> callers;
  // sampled pc -> weight and observations of its stacks led by interpreter frames
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> interpreter_led;
  size_t offset = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (records.size() - offset < record_size) throw FormatError("truncated profraw (stack record)");
    profraw::StackRecord record{};
    std::memcpy(&record, records.data() + offset, record_size);  // version 3: no thread
    offset += record_size;
    if (record.depth == 0 || record.depth > profraw::kMaxStackDepth)
      throw FormatError("bad profraw stack depth " + std::to_string(record.depth));
    const uint32_t gil = (record.flags & profraw::kStackGilMask) >> profraw::kStackGilShift;
    if ((record.flags & ~known_flags) != 0 || gil > kGilReleased)
      throw FormatError("bad profraw stack flags " + std::to_string(record.flags));
    if ((records.size() - offset) / sizeof(uint64_t) < record.depth) throw FormatError("truncated profraw (stack)");
    const uint64_t leaf = load<uint64_t>(records, offset);
    callers.clear();
    for (uint32_t k = 1; k < record.depth; ++k) {
      // A return address follows its call: the call site is the byte
      // before, which symbolizes to the caller's line even when the call
      // is the function's last instruction (as perf and pprof do).
      const uint64_t return_address = load<uint64_t>(records, offset + k * sizeof(uint64_t));
      // An interpreter frame's address is a name, not a return address.
      callers.push_back(is_interpreter_frame(return_address) ? return_address
                        : return_address > 0                 ? return_address - 1
                                                             : 0);
    }
    offset += record.depth * sizeof(uint64_t);
    if (record.weight == 0) continue;
    // Interpreter frames inside the sampled pc (issue 31, merged at the
    // dump) make the stack's leaf one of them: its weight is the pair's of
    // the first native pc (the sampled one).
    uint64_t sampled = leaf;
    for (uint32_t k = 0; is_interpreter_frame(sampled) && k + 1 < record.depth; ++k)
      sampled = is_interpreter_frame(callers[k]) ? callers[k] : callers[k] + 1;
    if (sampled != leaf) {
      auto& [weight, observations] = interpreter_led[sampled];
      saturating_add(weight, record.weight);
      saturating_add(observations, record.observations ? record.observations : 1);
    }
    const uint32_t id = profile->stacks.intern(callers, (record.flags & profraw::kStackTruncated) != 0);
    Sample sample{leaf, record.weight, 0, id, record.tid, static_cast<uint8_t>(gil)};
    // Version 4 wrote the field 0 (then unused); has_observations says
    // whether it means anything. At least one draw per count (the writer
    // may read a weight just added before its observation).
    if (profile->has_observations) sample.observations = record.observations ? record.observations : 1;
    stacked.push_back(sample);
  }
  if (offset != records.size()) throw FormatError("profraw stack records do not fill their length");
  coalesce_samples(&stacked);

  // Each pc: its stacks, and what its count has beyond them as a leaf of
  // unknown callers.
  uint32_t unknown_callers = StackTable::kNoCallers;
  std::vector<Sample> merged;
  merged.reserve(profile->samples.size() + stacked.size());
  auto flat = profile->samples.begin();
  auto with_stack = stacked.begin();
  while (flat != profile->samples.end() || with_stack != stacked.end()) {
    const uint64_t address = flat == profile->samples.end()           ? with_stack->address
                             : with_stack == stacked.end()            ? flat->address
                                                                      : std::min(flat->address, with_stack->address);
    uint64_t stack_weight = 0, stack_observations = 0;
    for (; with_stack != stacked.end() && with_stack->address == address; ++with_stack) {
      saturating_add(stack_weight, with_stack->count);
      saturating_add(stack_observations, with_stack->observations);
      merged.push_back(*with_stack);
    }
    if (flat != profile->samples.end() && flat->address == address) {
      if (const auto led = interpreter_led.find(address); led != interpreter_led.end()) {
        saturating_add(stack_weight, led->second.first);
        saturating_add(stack_observations, led->second.second);
      }
      if (flat->count > stack_weight) {
        if (unknown_callers == StackTable::kNoCallers) unknown_callers = profile->stacks.intern({}, true);
        Sample rest{address, flat->count - stack_weight, 0, unknown_callers};
        // The pc table's observations beyond the stacks' (a stack the
        // stack table had no room for); at least one, as a count is.
        rest.observations = !profile->has_observations                   ? 0
                            : flat->observations > stack_observations ? flat->observations - stack_observations
                                                                      : 1;
        merged.push_back(rest);
      }
      ++flat;
    }
  }
  coalesce_samples(&merged);  // by stack id within each address
  profile->samples.swap(merged);
}

void read_interpreter_frames(std::string_view records, uint64_t count, Profile* profile) {
  size_t offset = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (records.size() - offset < sizeof(profraw::InterpreterFrameRecord))
      throw FormatError("truncated profraw (interpreter frame record)");
    const auto record = load<profraw::InterpreterFrameRecord>(records, offset);
    offset += sizeof record;
    if (!is_interpreter_frame(record.address))
      throw FormatError("profraw interpreter frame at a native address");
    const uint64_t strings = uint64_t{record.function_length} + record.file_length;
    const uint64_t padded = (strings + 7) / 8 * 8;
    if (records.size() - offset < padded) throw FormatError("truncated profraw (interpreter frame names)");
    const std::string function(records.substr(offset, record.function_length));
    const std::string file(records.substr(offset + record.function_length, record.file_length));
    offset += padded;
    profile->frames[record.address] = {Frame{function, function, file, record.line}};
  }
  if (offset != records.size()) throw FormatError("profraw interpreter frames do not fill their length");
}

}  // namespace profiling::format
