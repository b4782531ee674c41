// The run directory's names, written and read in one place (run_names.h):
// the runtime formats them in signal handlers, the tools parse them.
#include "format/run_names.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "base/io.h"

namespace profiling::format {
namespace {

constexpr std::string_view kDumpSuffix = ".profraw";
constexpr std::string_view kTemporaryInfix = ".tmp.";
constexpr std::string_view kTokenMark = ".run-";

// Appends to a caller's buffer, remembering when it did not fit.
// ASYNC-SIGNAL-SAFE.
class NameWriter {
 public:
  NameWriter(char* out, size_t size) : out_(out), size_(size) {}
  void put(char c) {
    if (length_ + 1 < size_) out_[length_] = c;
    ++length_;
  }
  void text(const char* s) {
    for (; *s != '\0'; ++s) put(*s);
  }
  void number(int64_t value) {
    char digits[24];
    base::format_decimal(static_cast<unsigned long long>(value), digits);
    text(digits);
  }
  // The length written, or 0 (out left empty) when it did not fit.
  size_t finish() {
    if (size_ == 0) return 0;
    if (length_ + 1 > size_) {
      out_[0] = '\0';
      return 0;
    }
    out_[length_] = '\0';
    return length_;
  }

 private:
  char* out_;
  size_t size_;
  size_t length_ = 0;
};

// A decimal number as the runtime writes one: digits, no leading zero,
// within int64_t.
bool parse_number(std::string_view text, int64_t* value) {
  if (text.empty() || text.size() > 18 || text[0] == '0') return false;
  int64_t v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *value = v;
  return true;
}

// "<head>.<number>": the head and the number.
bool split_number(std::string_view text, std::string_view* head, int64_t* number) {
  const size_t dot = text.rfind('.');
  if (dot == std::string_view::npos || !parse_number(text.substr(dot + 1), number)) return false;
  *head = text.substr(0, dot);
  return true;
}

// "<prog>.<pid>" into *name.
bool split_program(std::string_view text, DumpName* name) {
  std::string_view program;
  if (!split_number(text, &program, &name->pid)) return false;
  if (program.empty() || program.size() > kMaxProgramInName || program.find('/') != std::string_view::npos)
    return false;
  name->program = std::string(program);
  return true;
}

bool valid_token(std::string_view token) {
  return token.size() == kRunTokenSize && token.find_first_of("./") == std::string_view::npos &&
         token.find('\0') == std::string_view::npos;
}

bool valid_copy(int64_t copy) { return copy > 0 && copy <= UINT32_MAX; }

}  // namespace

const char* run_token(const char* run_id) {
  const char* dash = std::strrchr(run_id, '-');
  return dash != nullptr && std::strlen(dash + 1) == kRunTokenSize ? dash + 1 : nullptr;
}

size_t format_dump_name(char* out, size_t size, const char* program, int64_t pid, const char* token,
                        unsigned copy) {
  NameWriter name(out, size);
  if (program == nullptr || *program == '\0') program = "program";
  for (size_t i = 0; program[i] != '\0' && i < kMaxProgramInName; ++i) name.put(program[i] == '/' ? '_' : program[i]);
  name.put('.');
  name.number(pid);
  if (token != nullptr) {
    name.text(".run-");
    name.text(token);
  }
  if (copy != 0) {
    name.put('.');
    name.number(copy);
  }
  name.text(".profraw");
  return name.finish();
}

size_t format_temporary_name(char* out, size_t size, const char* dump_name, int64_t pid) {
  NameWriter name(out, size);
  name.text(dump_name);
  name.text(".tmp.");
  name.number(pid);
  return name.finish();
}

size_t format_ledger_name(char* out, size_t size, const char* token) {
  NameWriter name(out, size);
  name.text(kLedgerPrefix);
  name.text(token);
  name.text(kLedgerSuffix);
  return name.finish();
}

std::string DumpName::stem() const {
  std::string stem = program + "." + std::to_string(pid);
  if (copy != 0) stem += "." + std::to_string(copy);
  return stem;
}

std::optional<DumpName> parse_dump_name(std::string_view text, int64_t pid) {
  DumpName name;
  // "<dump name>.tmp.<writer>"
  const size_t temporary = text.rfind(std::string(kDumpSuffix) + std::string(kTemporaryInfix));
  if (temporary != std::string_view::npos &&
      parse_number(text.substr(temporary + kDumpSuffix.size() + kTemporaryInfix.size()), &name.writer))
    text = text.substr(0, temporary + kDumpSuffix.size());
  if (!text.ends_with(kDumpSuffix)) return std::nullopt;
  text.remove_suffix(kDumpSuffix.size());

  // "<prog>.<pid>.run-<token>[.<n>]": the token parts the pid from a copy
  // number. (A program's own name may hold ".run-": that reading failing,
  // the name is read as one without a token.)
  if (const size_t mark = text.rfind(kTokenMark); mark != std::string_view::npos) {
    const std::string_view token = text.substr(mark + kTokenMark.size(), kRunTokenSize);
    const std::string_view rest = text.substr(std::min(text.size(), mark + kTokenMark.size() + kRunTokenSize));
    int64_t copy = 0;
    DumpName with_token = name;
    if (valid_token(token) && (rest.empty() || (rest[0] == '.' && parse_number(rest.substr(1), &copy) &&
                                                valid_copy(copy))) &&
        split_program(text.substr(0, mark), &with_token)) {
      with_token.token = std::string(token);
      with_token.copy = static_cast<unsigned>(copy);
      return with_token;
    }
  }

  // "<prog>.<pid>[.<n>]": read as "<prog>.<pid>" unless the pid is known
  // and only the other reading has it (or only the other reading is one).
  DumpName plain = name, copied = name;
  const bool plain_ok = split_program(text, &plain);
  std::string_view head;
  int64_t copy = 0;
  const bool copied_ok = split_number(text, &head, &copy) && valid_copy(copy) && split_program(head, &copied);
  copied.copy = static_cast<unsigned>(copy);
  if (copied_ok && (!plain_ok || (pid > 0 && copied.pid == pid && plain.pid != pid))) return copied;
  if (plain_ok) return plain;
  return std::nullopt;
}

std::string snapshot_request_name(std::string_view token) {
  return "snapshots.run-" + std::string(token) + ".request";
}

}  // namespace profiling::format
