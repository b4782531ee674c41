// The lines profil run prints while it waits for the processes of a run
// (run_reap.h) and when that wait ends; run_print.h has the rest, and
// includes this.
#ifndef PROFIL_TOOLS_RUN_WAIT_PRINT_H
#define PROFIL_TOOLS_RUN_WAIT_PRINT_H

#include <sys/types.h>

#include <string>
#include <vector>

namespace profiling::cli {

// "SIGTERM", or "signal 42" for one the C library has no name for.
std::string signal_name(int signo);

// "a (pid 1), b (pid 2)": the first 8, then "and N more".
std::string list_processes(const std::vector<std::string>& processes);

// While the run waits (run_reap.h).
// The program has ended and these processes it left still run.
void print_waiting_for(const std::string& program, pid_t pid, const std::vector<std::string>& left);
// The wait ended because every process left is stopped.
void print_left_stopped(const std::vector<std::string>& stopped);
// A process stopped in a trace with profil run as its tracer was detached
// (`passed`: the signal passed on, 0 for none).
void print_released_tracee(const std::string& name, pid_t pid, int passed);

// The run stopped waiting at a signal; `left_running` were not converted.
void print_stopped_waiting(int signo, const std::vector<std::string>& left_running);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_RUN_WAIT_PRINT_H
