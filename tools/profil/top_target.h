// What profil top watches (issue 33): a program it starts (-- COMMAND), a
// process that runs (PID) or every process (--all), sampled from outside
// (outside_run.h), and whether it has ended. The start is run's and attach's own
// (run_launch.h, OutsideRun::attach): nothing of it is written again here.
//
// Not thread-safe: the view's thread alone.
#ifndef PROFIL_TOOLS_TOP_TARGET_H
#define PROFIL_TOOLS_TOP_TARGET_H

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "outside_run.h"
#include "run_launch.h"

namespace profiling::cli {

class TopTarget {
 public:
  // The signals that end profil top (INT, TERM, HUP), blocked in every
  // thread of the tool from before the sampler's start (so that they stay
  // pending for pending_signal) and never in the program it starts.
  static const sigset_t& stop_signals();

  // Starts command, program its file (resolve_program), with its events
  // opened before its exec. "" or why not, one line; *status the exit
  // status to give (126 when the exec failed, 1 when the events were
  // refused).
  std::string start(OutsideRun* sampling, const Resolved& program, const std::vector<std::string>& command,
                    int* status);
  // Samples pid, running. "" or why not.
  std::string attach(OutsideRun* sampling, pid_t pid);
  // Samples every process of the machine (per-CPU events: root or
  // CAP_PERFMON, OutsideRun::attach_all); it never ends. "" or why not.
  std::string attach_all(OutsideRun* sampling);

  // "outside_target (pid 12)"
  const std::string& label() const { return label_; }
  // Has it ended? Then how, in words ("exited with status 0").
  bool ended();
  const std::string& how_ended() const { return how_ended_; }
  // A stop signal pending (0: none): INT, TERM or HUP sent to profil.
  static int pending_signal();
  // At the end of profil top: a program it started that still runs is
  // sent SIGTERM (SIGKILL after 2 s) and waited for; what was done, in
  // words, or "" (attached, or it had ended).
  std::string stop();

 private:
  pid_t pid_ = -1;
  bool started_ = false;  // a child of ours (else attached)
  bool all_ = false;      // every process: no end
  bool ended_ = false;
  int pidfd_ = -1;
  std::string name_, label_, how_ended_;
};

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_TOP_TARGET_H
