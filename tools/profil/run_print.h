// Every line `profil run` prints about a run, in one place: what the tests
// and the users read is worded here alone (issue 21), whichever part of the
// run (the wait, the conversion, the account of what was lost) has
// something to say. The lines go to stderr: the program's own output is
// left alone (docs/run.md).
#ifndef PROFIL_TOOLS_RUN_PRINT_H
#define PROFIL_TOOLS_RUN_PRINT_H

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "format/profraw.h"
#include "run_convert.h"
#include "run_diagnose.h"
#include "run_wait_print.h"

namespace profiling::cli {

// What the conversion could not write, one line each ("profil: <what>:
// <why>"), then the symbolizer's warnings.
void print_losses(const Conversion& c);

// The notes of the run's diagnosis (run_diagnose.h), one line each; each
// loss is added to c->losses.
void print_notes(const std::vector<RunNote>& notes, Conversion* c);

// The account of the conversion: one line for the run (one per process with
// `verbose`), then the unsampled CPU time of each process. `requested_clock`
// is the clock profil run asked for (--clock, PROFIL_CLOCK); `unwritten`,
// the processes that ended before a checkpoint with nothing written.
void print_conversion(const Conversion& c, const std::filesystem::path& dir, bool verbose,
                      const std::string& requested_clock, const std::vector<std::string>& unwritten = {});

// The programs the preload could not enter, one line each (the ledger's
// not_entered records).
void print_not_entered(const std::vector<format::profraw::LedgerRecord>& records);

// Stacks cut short, when they are more than 5 % of the run's.
void print_cut_stacks(const Conversion& c, uint32_t hz);

// "no profile was written", with why, when no process of the run was
// sampled: `killed` and `unrecorded` ended before a checkpoint with nothing
// written; `unfinished`, the pids of dumps left unfinished.
void print_nothing_written(const Conversion& c, const std::filesystem::path& dir, unsigned hz,
                           const std::vector<std::string>& killed, const std::vector<std::string>& unrecorded,
                           const std::map<int64_t, std::string>& unfinished);

// The same from outside, where every process is sampled from its start
// (outside_run.h): no process of the run, or the process `attached` to
// (profil attach), ran for a whole sampling period at hz; or the files of
// what was sampled could not be written (c's losses: a full disk).
void print_nothing_sampled_outside(const Conversion& c, unsigned hz, const std::string& attached = "", pid_t pid = 0);

// profil run --no-wait: the program has ended and the tool returns; what it
// left running is sampled on from outside by a copy of the tool (outside),
// or writes its dumps when it ends, for profil run --convert DIR (inside).
void print_left_running(const std::string& program, pid_t pid, const std::vector<std::string>& left, bool outside,
                        const std::string& dir);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_RUN_PRINT_H
