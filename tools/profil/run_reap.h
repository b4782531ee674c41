// Waiting for a run to end: profil run is the subreaper of every process
// of the run, so an orphan's profile is written before the conversion
// reads the directory; the wait must still end at a ^C (issue 11) and for
// processes only a signal from outside could resume (issue 20), and must
// not leave a tracee stopped with profil run as its tracer. Kept apart from
// the launch (run_launch.h) and from what is printed (run_print.h).
#ifndef PROFIL_TOOLS_RUN_REAP_H
#define PROFIL_TOOLS_RUN_REAP_H

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "run_launch.h"

namespace profiling::cli {

// A process profil run waited for itself: the program, and every process
// of the run orphaned to it (it is their subreaper). Others are waited for
// by their own parents, and seen only through their dumps.
struct Reaped {
  int status = 0;
  std::string name;  // its comm, read while it was a zombie
};

struct RunOutcome {
  pid_t pid = 0;           // the program's
  int status = 0;          // the program's wait status
  std::string exec_error;  // the program could not be started
  std::map<pid_t, Reaped> reaped;
  // The run stopped waiting for what the program left running at this
  // signal (SIGINT or SIGTERM; 0 when it waited to the end), and for whom.
  int stopped_by = 0;
  std::vector<std::string> left_running;
  // The run stopped waiting because every process left was stopped (job
  // control, or a trace whose tracer is stopped too): "name (pid N)" each.
  std::vector<std::string> left_stopped;
};

// Waits for the program (`launched`, a file named `program`) and every
// process it leaves behind to end, saying for whom it waits once the
// program has ended. no_wait (profil run --no-wait): for the program
// alone; what it left running is named in left_running.
RunOutcome wait_for_run(const Launched& launched, const std::string& program, bool no_wait = false);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_RUN_REAP_H
