// The run directory as profil run reads it: the dumps, temporaries,
// placeholders and ledger the preload runtime leaves there, found by name
// and trusted only when they carry the run's token (a shared directory may
// hold anyone's files, issue 11). Kept apart from the conversion
// (run_convert.h) so that the protocol between the runtime and the tool is
// read in one place (issue 21).
#ifndef PROFIL_TOOLS_RUN_DUMPS_H
#define PROFIL_TOOLS_RUN_DUMPS_H

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "format/profraw.h"
#include "run_convert.h"

namespace profiling::cli {

// The token of a run id (make_run_id) that the runtime puts in the names
// of the run's files (format/run_names.h).
std::string run_token(const std::string& run_id);

// The program a ledger record names (its short name; "program" if none).
std::string program_of(const format::profraw::LedgerRecord& record);

// This run's files in its directory, by name: only names carrying the
// run's token are opened, so a file another user planted in a shared
// directory is never read (issue 11, case 2), and only regular files (a
// symlink, FIFO or device under such a name is left alone). An empty
// temporary is a placeholder: a process that started profiling and has not
// written its dump (runtime/run_directory.cc, choose_name).
struct RunFiles {
  std::vector<std::filesystem::path> dumps;
  std::map<int64_t, std::vector<std::filesystem::path>> placeholders;  // by pid
  std::filesystem::path ledger;  // the run's ledger (format/profraw.h)
  std::vector<format::profraw::LedgerRecord> records;
};
RunFiles list_run_files(const std::filesystem::path& dir, const std::string& token);

// The run's ledger: "processes.run-<token>.ledger", which the preload
// runtime appends to and never creates.
std::filesystem::path ledger_path(const std::filesystem::path& dir, const std::string& token);

// Creates the run's ledger, empty, before the program starts: a name the
// run chose, created here (O_EXCL, never a file planted in its place). A
// ledger that cannot be created only costs speed: each process then
// writes a file of its own.
void create_ledger(const std::filesystem::path& path);

// The run's dumps as a source of profiles: each read (only files of this
// run, by the run id in the header, unless run_id is empty: --convert reads
// what the user names), then the ledger's end records, which stand for the
// processes that ended without a sample and so wrote no dump; all through
// the sinks (run_convert.h).
Conversion convert_dumps(const std::vector<std::filesystem::path>& dumps, const std::string& run_id,
                         const ConvertOptions& options,
                         const std::vector<format::profraw::LedgerRecord>& records = {});

// Dumps of this run left under their temporary name: a process killed
// (SIGKILL, or its exit_group while another thread wrote) while writing.
// Their header, written first, names the run; one too short to say is taken
// as ours when it is newer than the run's start. They are removed (the
// samples cannot be read back), except those of a process still alive
// (`alive`: the run stopped waiting for it). Returns, by pid, those of the
// processes with no complete dump (the runtime writes a provisional dump
// before exit handlers run, and a final one that dies half-way leaves that
// one intact): what they sampled is lost — by a kill, which is not a loss
// of profil's (issue 20), so the caller says so without changing the status.
std::map<int64_t, std::string> remove_unfinished_dumps(const Conversion& c, const std::filesystem::path& dir,
                                                       const std::string& run_id,
                                                       std::filesystem::file_time_type run_start,
                                                       const std::function<bool(int64_t)>& alive);

// The placeholders of the processes no longer alive, removed: the pid and
// program name of each process that started profiling and left only that.
std::map<int64_t, std::string> remove_placeholders(const RunFiles& files, const std::function<bool(int64_t)>& alive);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_RUN_DUMPS_H
