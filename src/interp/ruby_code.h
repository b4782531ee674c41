// Naming Ruby frames after the fact (issue 34): from an instruction
// sequence's address (rb_iseq_t, ruby_walk.h's RawFrame::code) its label
// (the method's name, "block in work", "<main>", "<class:Worker>"), file
// and first line, and the line of any pc in it (the body's line table:
// insns_info and its succinct index, iseq.c's succ_index_lookup).
// What is read, and how, is ruby_code_head.h's (shared with the preload's
// dump); this adds the caches and the strings.
//
// The class is not prefixed: Ruby 3.1 keeps a class's name only among its
// instance variables (__classpath__, an st_table keyed by an ID), not in
// the class itself (3.3+: rb_classext_t.classpath).
//
// NOT async-signal-safe: host side, allocates; one namer per reader, used by
// one thread at a time (no lock inside).
//
// The cache rule is python_code.h's: an iseq is identified by its address
// AND what it cannot change while alive (its body's address, its label's and
// path's objects); identify() re-reads them and makes a new id when they
// differ, and ids are never reused.
#ifndef PROFIL_INTERP_RUBY_CODE_H
#define PROFIL_INTERP_RUBY_CODE_H

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "interp/frames.h"
#include "interp/ruby_code_head.h"
#include "interp/ruby_layout.h"

namespace profiling::interp {

struct RubyCode {
  uint64_t address = 0;
  std::string name, file;
  int first_line = 0;
  RubyIseqHead head;  // identity, and what a pc's line is read from (ruby_code_head.h)
};

// A Ruby String's bytes (out cut at 4 KiB); false when it is not one.
bool read_ruby_string(const RubyLayout& layout, MemoryReader& memory, uint64_t address, std::string* out);

class RubyCodeNamer {
 public:
  static constexpr uint32_t kNoCode = UINT32_MAX;
  RubyCodeNamer(const RubyLayout& layout, MemoryReader& memory) : layout_(layout), memory_(memory) {}

  // The id of the iseq at address now, kNoCode when what is there cannot be
  // read as one.
  uint32_t identify(uint64_t address);
  const RubyCode& code(uint32_t id) const { return codes_[id]; }
  // The line of pc (RawFrame::instruction) in code; its first line when the
  // table cannot be read.
  int line(const RubyCode& code, uint64_t pc);

 private:

  struct PairHash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& p) const { return p.first * 31 ^ p.second; }
  };

  RubyLayout layout_;
  MemoryReader& memory_;
  std::vector<RubyCode> codes_;
  std::unordered_map<uint64_t, uint32_t> by_address_;
  std::unordered_map<std::pair<uint64_t, uint64_t>, int, PairHash> lines_;  // (body, pc) -> line
};

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_RUBY_CODE_H
