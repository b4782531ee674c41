// ASYNC-SIGNAL-SAFE (ruby_code_head.h).
#include "interp/ruby_code_head.h"

#include <bit>

namespace profiling::interp {
namespace {

// A line table of more entries is not one (OTel's rubyInsnInfoSizeLimit).
constexpr uint32_t kMaxLineTable = 1u << 20;

}  // namespace

bool ruby_string_at(const RubyLayout& l, MemoryReader& memory, uint64_t address, uint64_t* chars, uint64_t* length) {
  uint8_t head[32];
  if (address == 0 || (address & 7) != 0 || !memory.read(address, head, sizeof head)) return false;
  const uint64_t flags = u64_at(head, 0);
  if ((flags & l.type_mask) != l.type_string) return false;
  if (flags & l.flag_noembed) {
    *length = u64_at(head, l.string_len);
    *chars = u64_at(head, l.string_ptr);
  } else {
    *length = (flags >> l.string_embed_len_shift) & l.string_embed_len_mask;
    *chars = address + l.string_embedded;
  }
  if (*length > kMaxRubyString) *length = kMaxRubyString;
  return true;
}

uint64_t ruby_path_string(const RubyLayout& l, MemoryReader& memory, uint64_t pathobj) {
  uint8_t head[40];
  if (pathobj == 0 || (pathobj & 7) != 0 || !memory.read(pathobj, head, sizeof head)) return 0;
  const uint64_t flags = u64_at(head, 0);
  if ((flags & l.type_mask) == l.type_string) return pathobj;
  if ((flags & l.type_mask) != l.type_array) return 0;
  // For an array the flag's bit says embedded (RARRAY_EMBED_FLAG).
  uint64_t first = 0;
  if (flags & l.flag_noembed) {
    if (((flags >> l.array_embed_len_shift) & l.array_embed_len_mask) == 0) return 0;
    first = u64_at(head, l.array_embedded);
  } else if (!memory.read(u64_at(head, l.array_ptr), &first, sizeof first)) {
    return 0;
  }
  return first;
}

bool read_ruby_iseq_head(const RubyLayout& l, MemoryReader& memory, uint64_t address, RubyIseqHead* head) {
  uint64_t body = 0;
  if (address == 0 || !memory.read(address + l.iseq_body, &body, sizeof body) || body == 0) return false;
  uint8_t b[160];
  static_assert(sizeof b >= 152);
  if (!memory.read(body, b, sizeof b)) return false;
  head->body = body;
  head->path_object = u64_at(b, l.body_pathobj);
  head->label_object = u64_at(b, l.body_label);
  const uint64_t first_line = u64_at(b, l.body_first_lineno);  // a Fixnum: (n << 1) | 1
  head->first_line = (first_line & 1) ? static_cast<int>(static_cast<int64_t>(first_line) >> 1) : 0;
  head->encoded = u64_at(b, l.body_encoded);
  head->line_table = u64_at(b, l.body_insns_info);
  head->line_table_size = static_cast<uint32_t>(u64_at(b, l.body_insns_info_size));
  head->succ_index_table = u64_at(b, l.body_succ_index_table);
  return true;
}

int ruby_pc_line(const RubyLayout& l, MemoryReader& memory, const RubyIseqHead& code, uint64_t pc) {
  const uint32_t size = code.line_table_size;
  if (code.line_table == 0 || size == 0 || size > kMaxLineTable || pc < code.encoded) return code.first_line;
  // The pc points past the instruction running (vm_backtrace.c calc_pos).
  uint64_t position = (pc - code.encoded) / 8;
  if (position > 0) --position;
  uint64_t index = 1;  // one past the entry wanted: succ_index_lookup's rank
  if (size > 1) {
    const uint64_t table = code.succ_index_table;
    if (table == 0) return code.first_line;
    if (position < l.succ_immediate) {
      // imm_part[i] holds 9 ranks of 7 bits.
      uint64_t part = 0;
      if (!memory.read(table + position / 9 * 8, &part, sizeof part)) return code.first_line;
      index = (part >> (7 * (position % 9))) & 0x7f;
    } else {
      const uint64_t bit = position - l.succ_immediate;
      const uint64_t block = table + l.succ_blocks + bit / 512 * l.succ_block_size;
      const uint64_t in_block = bit % 512, small = in_block / 64;
      uint32_t rank = 0;
      uint64_t small_ranks = 0, bits = 0;
      if (!memory.read(block, &rank, sizeof rank) ||
          !memory.read(block + l.succ_block_small_ranks, &small_ranks, sizeof small_ranks) ||
          !memory.read(block + l.succ_block_bits + small * 8, &bits, sizeof bits))
        return code.first_line;
      // small_block_rank_get: 9-bit ranks, the first small block's 0.
      const uint64_t small_rank = small == 0 ? 0 : (small_ranks >> (9 * (small - 1))) & 0x1ff;
      index = rank + small_rank + std::popcount(bits << (63 - in_block % 64));
    }
  }
  if (index == 0 || index > size) return code.first_line;
  int32_t line = 0;
  if (!memory.read(code.line_table + (index - 1) * l.insn_info_size + l.insn_info_line_no, &line, sizeof line))
    return code.first_line;
  return line > 0 ? line : code.first_line;
}

}  // namespace profiling::interp
