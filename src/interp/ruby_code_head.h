// What a Ruby 3.1 instruction sequence says of itself, read without
// copying into anything but the caller's buffers (issue 34): its head (the
// body, the objects of its label and path, its first line, its line
// table), a String's characters, a pathobj's path String, and a pc's line
// (the body's line table through its succinct index, iseq.c's
// succ_index_lookup).
//
// ASYNC-SIGNAL-SAFE: no allocation, no lock, no stdio, no exception; only
// MemoryReader::read. The preload runtime's dump names its own process's
// iseqs with these (runtime/ruby_inside.h), in whatever signal handler it
// runs; the host-side namer (ruby_code.h) is built on them too.
#ifndef PROFIL_INTERP_RUBY_CODE_HEAD_H
#define PROFIL_INTERP_RUBY_CODE_HEAD_H

#include <cstddef>
#include <cstdint>

#include "interp/frames.h"
#include "interp/ruby_layout.h"

namespace profiling::interp {

// A String longer than this is read cut (a label or a path never is).
inline constexpr uint64_t kMaxRubyString = 4096;

struct RubyIseqHead {
  // Identity: what an iseq cannot change while alive (ruby_code.h).
  uint64_t body = 0, label_object = 0, path_object = 0;
  int first_line = 0;
  // What a pc's line is read from.
  uint64_t encoded = 0, line_table = 0, succ_index_table = 0;
  uint32_t line_table_size = 0;
};

// The head of the iseq at address; false when it cannot be read.
bool read_ruby_iseq_head(const RubyLayout& layout, MemoryReader& memory, uint64_t address, RubyIseqHead* head);

// Where a String's characters are and how many (cut at kMaxRubyString);
// false when address is not a String.
bool ruby_string_at(const RubyLayout& layout, MemoryReader& memory, uint64_t address, uint64_t* chars,
                    uint64_t* length);

// The path String of a location's pathobj (a String, or an Array [path,
// realpath]); 0 when it is neither.
uint64_t ruby_path_string(const RubyLayout& layout, MemoryReader& memory, uint64_t pathobj);

// The line of pc in the iseq; its first line when the table cannot be read.
int ruby_pc_line(const RubyLayout& layout, MemoryReader& memory, const RubyIseqHead& head, uint64_t pc);

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_RUBY_CODE_HEAD_H
