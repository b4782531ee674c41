// What a run could not profile, and why: a process that left no profile is
// either one that ended normally before it had anything to write (killed
// by a signal, never a loss: issue 20) or a loss profil run must own up to
// (docs/run.md, "Errors"). Telling them apart takes what the wait saw (the
// statuses profil run reaped itself), what the directory held (dumps, the
// ledger, placeholders) and the program's file; kept apart from the
// wording (run_print.h), issue 21.
#ifndef PROFIL_TOOLS_RUN_DIAGNOSE_H
#define PROFIL_TOOLS_RUN_DIAGNOSE_H

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "format/profraw.h"
#include "run_convert.h"
#include "run_reap.h"

namespace profiling::cli {

// Why a program that left no dump could not have written one, from its
// file: "" when nothing in it explains that.
std::string why_not_preloaded(const std::string& path, int depth = 0);

// One line about a profile that is missing: "profil: <what>: <why>". A loss
// also makes the run exit 1 when the program exited 0.
struct RunNote {
  std::string what, why;
  bool loss;
};

struct RunDiagnosis {
  std::vector<RunNote> notes;  // in the order they are printed
  // Those that ended before a checkpoint with nothing written, counted:
  // killed by a signal (profil run waited for them), "name (pid N, SIGX)"
  // each, or what ended them is not known (their parents took their
  // statuses), "name (pid N)".
  std::vector<std::string> killed, unrecorded;
  std::vector<std::string> unwritten() const;
};

// `program_path`: the file the program was started from; `unfinished`, the
// dumps left unfinished by pid (run_dumps.h, remove_unfinished_dumps);
// `records`, the run's ledger; `placeholders`, the processes that left an
// empty placeholder (remove_placeholders); `alive`, whether a process the
// run stopped waiting for still runs; `dir`, the run directory. A process
// whose dump was refused (its ledger record, or else a directory that is
// full or read-only now) is said as such, a loss: never as killed or
// ended by a raw exit_group (issue 32).
RunDiagnosis diagnose_run(const Conversion& c, const RunOutcome& outcome, const std::string& program_path,
                          const std::map<int64_t, std::string>& unfinished,
                          const std::vector<format::profraw::LedgerRecord>& records,
                          const std::map<int64_t, std::string>& placeholders,
                          const std::function<bool(int64_t)>& alive, const std::string& dir);

// The processes whose final dump could not be written, by pid: the errno
// of each one's last unwritten ledger record (format/profraw.h).
std::map<int64_t, int> refused_dumps(const std::vector<format::profraw::LedgerRecord>& records);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_RUN_DIAGNOSE_H
