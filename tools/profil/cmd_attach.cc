// profil attach PID | --all [--duration D] [--hz N | --event E [--period N]] [--every T] [-o DIR]
//
// Samples a running process from outside (issue 21; outside_run.h): every
// thread it has and creates, every child it forks from then on, until the
// duration ends, ^C, or the process exits — and says which. Nothing enters
// the process: no library, signal, descriptor or thread of ours; when
// profil detaches it runs on as if never attached — but with --jit, asked
// for: a JVM is asked for its map through its attach mechanism and keeps
// the "Attach Listener" thread that answers (jit_ask.h). Where the kernel
// refuses (perf_event_paranoid, another user's process), one line names
// the setting and what would allow it.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>

#include "command.h"
#include "errno_text.h"
#include "jit_ask.h"
#include "outside/reader_priority.h"
#include "outside_cli.h"
#include "outside_run.h"
#include "run_print.h"

namespace profiling::cli {
namespace {

namespace fs = std::filesystem;

struct AttachOptions {
  int pid = 0;
  std::string duration, every, output_dir = ".";
  std::string clock = "perf";
  CLI::Option* clock_option = nullptr;  // counted once parsed: was --clock given?
  std::shared_ptr<OutsideFlags> flags = std::make_shared<OutsideFlags>();  // what top takes too
  bool verbose = false;
  bool all = false;  // --all: every process of the machine, no PID
  bool jit = false;  // ask a JVM for its perf map (jit_ask.h)
};

std::string comm_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm.empty() ? "process" : comm;
}

int attach_command(const AttachOptions& options) {
  OutsideRunOptions run;
  if (!is_outside_clock(options.clock))
    return fail("--clock", "'" + options.clock + "' is not one of perf, wall (a running process is sampled from outside)");
  run.wall = options.clock == "wall";
  if (const OptionProblem problem = apply_outside_flags(*options.flags, options.clock_option->count() > 0, &run);
      !problem.empty())
    return fail(problem.what, problem.why);
  if (!options.duration.empty()) {
    if (const std::string problem = duration_problem(options.duration); !problem.empty())
      return fail("--duration", problem);
    run.duration_s = *parse_duration(options.duration);
  }
  if (!options.every.empty()) {
    if (const std::string problem = duration_problem(options.every); !problem.empty()) return fail("--every", problem);
    run.every_s = *parse_duration(options.every);
  }
  std::error_code ec;
  fs::create_directories(options.output_dir, ec);
  if (ec) return fail(options.output_dir, error_text(ec));
  run.dir = fs::canonical(options.output_dir, ec);
  if (ec) return fail(options.output_dir, error_text(ec));
  if (::access(run.dir.c_str(), W_OK) != 0) return fail(run.dir.string(), errno_text(errno));
  run.fold_ended = !options.verbose;

  if (options.all == (options.pid != 0))
    return fail("attach", options.all ? "--all takes no PID" : "a PID, or --all for every process of the machine");
  const auto pid = static_cast<pid_t>(options.pid);
  const std::string name = options.all ? "every process" : comm_of(pid);
  // ^C and TERM end the sampling, not profil: blocked and waited for.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  ::pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  // This thread converts what was sampled: among a program's 1,000 busy
  // threads at its own priority it would have 1/500 of the machine
  // (reader_priority.h). The opening and reading run raised (Sampler).
  (void)outside::lower_own_nice();
  OutsideRun sampling(run);
  const std::string who = options.all ? "every process" : name + " (pid " + std::to_string(pid) + ")";
  if (options.all) {
    if (const std::string why = sampling.attach_all(); !why.empty()) return fail("attach --all", why);
  } else if (const std::string why = sampling.attach(pid); !why.empty()) {
    return fail("attach " + std::to_string(pid), why);
  }
  sampling.start();
  std::unique_ptr<JitAsker> jit;
  std::vector<std::string> jit_said;
  if (options.jit && options.all) jit_said.push_back("not with --all: only the process given is asked");
  else if (options.jit) {
    if (const std::string why = jit_not_askable_after_start(pid); !why.empty()) jit_said.push_back(why);
    (jit = std::make_unique<JitAsker>(0, std::vector<pid_t>{pid}, run.dir))->start();
  }
  std::fprintf(stderr, "profil: attached to %s %s from outside%s%s; ^C stops\n", who.c_str(),
               sampling_rate(run).c_str(), run.wall ? ", wall clock" : "",
               run.duration_s > 0 ? (" for " + duration_shown(options.duration)).c_str() : "");

  // The process's end is seen through a pidfd (Linux 5.3), else by polling.
  static const std::string kExit = "the process's exit";
  const int pidfd = options.all ? -1 : static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  std::string why_stopped;
  while (why_stopped.empty()) {
    timespec tick{0, 100'000'000};
    const int signo = ::sigtimedwait(&stop_signals, nullptr, &tick);
    if (signo > 0) why_stopped = signo == SIGINT ? "^C" : signal_name(signo);
    else if (sampling.duration_over()) why_stopped = "the duration (" + duration_shown(options.duration) + ")";
    else if (!options.all && ::kill(pid, 0) != 0 && errno == ESRCH) why_stopped = kExit;
    else if (pidfd >= 0) {
      fd_set ready;
      FD_ZERO(&ready);
      FD_SET(pidfd, &ready);
      timeval now{0, 0};
      if (::select(pidfd + 1, &ready, nullptr, nullptr, &now) > 0) why_stopped = kExit;
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  if (jit) {
    // The end of the window, while the process runs: the code it holds now
    // (after its exit nothing can be asked).
    jit->stop();
    if (why_stopped != "the process's exit") jit->ask_now();
  }
  const Conversion c = sampling.finish();
  // The process's exit ends the sampling, but the processes it started
  // (the events are inherited) may run on: said here, so that their own
  // lines' "still running when this profile ended" contradicts nothing
  // (issue 35).
  std::set<int64_t> running_on;
  for (const ProcessSummary& p : c.processes)
    if (!options.all && p.pid != pid && p.end_reason == format::profraw::EndReason::checkpoint)
      running_on.insert(p.pid);
  std::string still;
  if (why_stopped == kExit && !running_on.empty())
    still = "; " + std::to_string(running_on.size()) +
            (running_on.size() == 1 ? " process it started still ran, sampled until then"
                                    : " processes it started still ran, sampled until then");
  std::fprintf(stderr, "profil: stopped sampling %s at %s%s\n", who.c_str(), why_stopped.c_str(), still.c_str());
  print_losses(c);  // a profile that could not be written (a full disk) says so first
  print_outside_conversion(c, run.dir, options.verbose, run.wall ? "wall" : "perf");
  print_unreadable_threads(sampling.threads_unreadable());
  sampling.print_python_reads();
  print_source_notes(sampling.notes());
  if (options.jit) {
    std::vector<std::string> asked = jit ? jit->lines() : std::vector<std::string>{};
    if (asked.empty() && jit_said.empty()) jit_said.push_back(who + " ran no JVM while attached: nothing was asked");
    print_jit(jit_said, asked);
  }
  if (c.files.empty() && c.folded.files == 0) {
    print_nothing_counted(c, run, name, pid);
    return 1;
  }
  // Every window written, and all of them empty (each said when written):
  // nothing was profiled, as when no file is written.
  if (c.folded.sum.empty() && std::all_of(c.processes.begin(), c.processes.end(),
                                          [](const ProcessSummary& p) { return p.empty(); })) {
    std::fprintf(stderr, "profil: no sample in any window: %s ran for no whole sampling period (%.3g ms of CPU) "
                         "while attached; its %zu files are empty\n",
                 who.c_str(), 1000.0 / run.hz, c.files.size());
    return 1;
  }
  return c.losses.empty() ? 0 : 1;
}

const RegisterCommand kAttachCommand(
    "attach", "Profile a running process from outside (perf events); write pprof files",
    [](CLI::App& app) -> std::function<int()> {
      auto options = std::make_shared<AttachOptions>();
      app.add_option("pid", options->pid, "The process to sample")->check(CLI::PositiveNumber);
      app.add_flag("--all", options->all,
                   "Every process of the machine, those started while sampling too (per-CPU events: root or "
                   "CAP_PERFMON); one profile per process, `profil report --by process` over them");
      app.add_option("--duration", options->duration, "Sample for this long (90, 90s, 500ms, 1.5m), then detach");
      app.add_option("--every", options->every,
                     "Write a snapshot every interval: <prog>.<pid>.s<n>.pb.gz, each holding only its interval");
      add_outside_flags(app, options->flags);
      options->clock_option = app.add_option(
          "--clock", options->clock,
          "perf (CPU time, the default) or wall (CPU time and the time threads spend blocked: where the "
          "process waits)");
      app.add_option("-o,--output", options->output_dir, "Directory for the profiles (default: the current one)");
      app.add_flag("-v,--verbose", options->verbose, "One line per process");
      app.add_flag("--jit", options->jit,
                   "Ask a JVM for a map of its JIT code (jcmd PID Compiler.perfmap, through its attach mechanism: it "
                   "gains an 'Attach Listener' thread) while sampling and at the end; said in the summary");
      return [options]() { return attach_command(*options); };
    },
    15);

}  // namespace
}  // namespace profiling::cli
