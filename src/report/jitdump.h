// jit-PID.dump files (issue 34): the binary record of a JIT's code that V8
// writes with node --perf-prof (and the JVM's agents, .NET, LuaJIT's and
// others'), as perf reads it: tools/perf/Documentation/jitdump-
// specification.txt in the Linux tree. A file header ("JiTD", version,
// its size, e_machine, pid, time, flags), then records of a 16-byte head
// (id, size with the head, time) and a payload:
//   JIT_CODE_LOAD (0): pid, tid, vma, code address, code size, code index,
//     the name (NUL-terminated), the code's bytes;
//   JIT_CODE_MOVE (1): pid, tid, vma, old and new address, size, the index
//     of the load it moves;
//   JIT_CODE_DEBUG_INFO (2): the code address, a count, then entries
//     (address, line, column, file name NUL-terminated), written BEFORE the
//     load of the code they describe; each address 64 bytes past the code
//     it names, as perf reads them (jitdump.cc: kElfTextOffset);
//   JIT_CODE_CLOSE (3), JIT_CODE_UNWINDING_INFO (4): nothing to name.
// The records' times are the writer's clock (CLOCK_MONOTONIC as the
// specification recommends; V8's header time is another clock), kept for
// a reader that has the samples' times; the spec has no unload record: a
// JIT that reuses memory writes another load over it.
//
// The file is read while the process may still append to it: a record cut
// at the end is left out. Only a file in this machine's byte order is read
// (x86-64: little-endian), as the specification lets a reader do.
//
// NOT async-signal-safe: host side.
#ifndef PROFIL_REPORT_JITDUMP_H
#define PROFIL_REPORT_JITDUMP_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace profiling::report {

// A source line of JIT code: from address on (to the next entry's), line of
// files[file].
struct JitLine {
  uint64_t address;
  uint32_t line;
  uint32_t file;
};

// One piece of code the JIT loaded (or moved: then its load's name again).
struct JitCode {
  uint64_t start = 0, size = 0;
  int64_t time_ns = 0;  // the record's time, the writer's clock
  std::string name;
  std::vector<JitLine> lines;  // by address; empty without debug info
};

struct Jitdump {
  uint32_t pid = 0;  // the header's
  std::vector<JitCode> codes;  // in the file's order
  std::vector<std::string> files;  // JitLine::file indexes here
};

// "jit-PID.dump".
std::string jitdump_name(int64_t pid);

// false, with *problem, for bytes that are not a jitdump this machine can
// read (magic, version, header size); records past a cut or a bad size are
// left out (the file being written, or damaged).
bool parse_jitdump(std::string_view bytes, Jitdump* out, std::string* problem);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_JITDUMP_H
