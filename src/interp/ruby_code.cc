#include "interp/ruby_code.h"

namespace profiling::interp {

bool read_ruby_string(const RubyLayout& l, MemoryReader& memory, uint64_t address, std::string* out) {
  uint64_t chars = 0, length = 0;
  if (!ruby_string_at(l, memory, address, &chars, &length)) return false;
  out->resize(length);
  return length == 0 || memory.read(chars, out->data(), length);
}

uint32_t RubyCodeNamer::identify(uint64_t address) {
  RubyCode code;
  if (!read_ruby_iseq_head(layout_, memory_, address, &code.head)) return kNoCode;
  const RubyIseqHead& head = code.head;
  if (const auto it = by_address_.find(address); it != by_address_.end()) {
    const RubyIseqHead& known = codes_[it->second].head;
    if (known.body == head.body && known.label_object == head.label_object && known.path_object == head.path_object)
      return it->second;
  }
  if (!read_ruby_string(layout_, memory_, head.label_object, &code.name)) return kNoCode;
  if (!read_ruby_string(layout_, memory_, ruby_path_string(layout_, memory_, head.path_object), &code.file))
    code.file = "";
  code.address = address;
  code.first_line = head.first_line;
  const auto id = static_cast<uint32_t>(codes_.size());
  codes_.push_back(std::move(code));
  by_address_[address] = id;
  return id;
}

int RubyCodeNamer::line(const RubyCode& code, uint64_t pc) {
  // A pc's line never changes while its iseq lives (the body identifies
  // it): the hot frames' pcs repeat, so most samples read no table.
  const auto [known, added] = lines_.try_emplace({code.head.body, pc}, 0);
  if (added) known->second = ruby_pc_line(layout_, memory_, code.head, pc);
  return known->second;
}

}  // namespace profiling::interp
