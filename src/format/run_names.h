// The names of the files in a run's directory, written by the preload
// runtime and read back by profil run. One module for both sides, so that
// they cannot drift apart (issue 21: runtime/preload.cc built them with
// memcpy and cmd_run.cc took them apart by offset):
//
//   <prog>.<pid>[.run-<token>][.<n>].profraw   a process's dump
//   <dump name>.tmp.<pid>                      its temporary, or its
//                                              placeholder while empty
//   processes.run-<token>.ledger               the run's ledger
//
// <prog> is the program's short name (argv[0]'s, as the user called it),
// each '/' made '_', cut at kMaxProgramInName bytes ("program" when it has
// none); <token> the last part of the run id (PROFIL_RUN_ID), so that
// profil run opens only the files its own run named (issue 11); <n>, from
// 1, when the name was already taken (an exec'd image of the same name
// keeps the pid); the temporary's <pid> is the writer's (a parent and its
// forked child never share one; base::AtomicFile, below this layer, names
// the temporaries it writes and adopts the same way).
//
// ASYNC-SIGNAL-SAFE: the format_* functions and run_token (the runtime names
// its dump from signal handlers): into the caller's buffer, no allocation.
// Parsing is for the tools.
#ifndef PROFIL_FORMAT_RUN_NAMES_H
#define PROFIL_FORMAT_RUN_NAMES_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace profiling::format {

// profil run's run id ends in "-<token>", 8 hex digits (make_run_id).
inline constexpr size_t kRunTokenSize = 8;
// A name stays well under NAME_MAX (255) with its token, numbers and suffixes.
inline constexpr size_t kMaxProgramInName = 100;
inline constexpr char kLedgerPrefix[] = "processes.run-";
inline constexpr char kLedgerSuffix[] = ".ledger";
// Room for a ledger's name and its NUL.
inline constexpr size_t kLedgerNameSize = sizeof kLedgerPrefix - 1 + kRunTokenSize + sizeof kLedgerSuffix;

// The token of a run id: what follows its last '-', when that is
// kRunTokenSize characters; nullptr otherwise (no run id, or not one of
// profil run's).
const char* run_token(const char* run_id);

// Each writes the name and a NUL into out (size bytes) and returns its
// length; 0, with out empty, when it does not fit.
// "<prog>.<pid>[.run-<token>][.<copy>].profraw": program may be null or
// empty ("program"); token null for none; copy 0 for none.
size_t format_dump_name(char* out, size_t size, const char* program, int64_t pid, const char* token,
                        unsigned copy);
// "<name>.tmp.<pid>".
size_t format_temporary_name(char* out, size_t size, const char* name, int64_t pid);
// "processes.run-<token>.ledger".
size_t format_ledger_name(char* out, size_t size, const char* token);

// "snapshots.run-<token>.request": the file profil run --inside --every
// grows by a byte to ask each process for a dump (runtime/snapshot_request.h);
// the processes get its path from PROFIL_SNAPSHOTS. Tool side only.
std::string snapshot_request_name(std::string_view token);

// A dump's name taken apart.
struct DumpName {
  std::string program;
  int64_t pid = 0;
  std::string token;  // "" without a run id
  unsigned copy = 0;  // the <n> of a name taken twice; 0 for none
  int64_t writer = 0;  // a temporary's <pid>; 0 for the dump's own name

  bool temporary() const { return writer != 0; }
  // "<prog>.<pid>[.<n>]": what the profiles made from the dump are named
  // (<stem>.pb.gz): the token only marks which run wrote it.
  std::string stem() const;
};

// nullopt for a name the runtime does not write. Without a token,
// "<prog>.<a>.<b>.profraw" may be program <prog>.<a>, pid <b>, or program
// <prog>, pid <a>, copy <b>: `pid`, when the caller knows it (the dump's
// header), picks the second reading when <a> is that pid; else the first
// is taken.
std::optional<DumpName> parse_dump_name(std::string_view name, int64_t pid = 0);

}  // namespace profiling::format

#endif  // PROFIL_FORMAT_RUN_NAMES_H
