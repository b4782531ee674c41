// The /proc syscall file's reading and parsing (see proc_syscall.h).
#include "base/proc_syscall.h"

#include <unistd.h>

namespace profiling::base {
namespace {

// A "0x..." field of the syscall text: lower-case hex, at most 64 bits.
bool parse_hex_field(std::string_view field, uint64_t* value) {
  if (!field.starts_with("0x") || field.size() < 3 || field.size() > 18) return false;
  uint64_t v = 0;
  for (char c : field.substr(2)) {
    int digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else return false;
    v = v << 4 | static_cast<uint64_t>(digit);
  }
  *value = v;
  return true;
}

}  // namespace

size_t read_syscall_text(int fd, char (&text)[256]) {
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  return n > 0 ? static_cast<size_t>(n) : 0;
}

bool blocked_registers_from_syscall_text(std::string_view text, BlockedRegisters* regs) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text.empty() || text.starts_with("running")) return false;
  // The last two fields: sp, then pc.
  const size_t last_space = text.rfind(' ');
  if (last_space == std::string_view::npos) return false;  // a number alone: no registers
  const size_t sp_space = text.rfind(' ', last_space - 1);
  if (sp_space == std::string_view::npos || last_space == 0) return false;  // "nr pc": not a shape proc(5) lists
  BlockedRegisters parsed;
  if (!parse_hex_field(text.substr(last_space + 1), &parsed.pc) ||
      !parse_hex_field(text.substr(sp_space + 1, last_space - sp_space - 1), &parsed.sp))
    return false;
  *regs = parsed;
  return true;
}

}  // namespace profiling::base
