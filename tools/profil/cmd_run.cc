// profil run [options] [--] PROGRAM [ARGS...]
//
// Runs PROGRAM with libprofil preloaded (LD_PRELOAD) and PROFIL_RUN_DIR set,
// so that every process of the run — the program, its forked children, the
// programs they exec — writes a raw dump (<progname>.<pid>.profraw) when it
// ends; then turns the dumps of this run into pprof files (profile.proto,
// every executable mapping with its build id): <progname>.<pid>.pb.gz for
// each process that used real CPU, one small.<pid>.pb.gz for the rest (each
// sample labelled with its pid), gmon.out for gprof on request; says what
// was lost and why, and exits with the program's status. See docs/run.md.
//
// This file holds the options and the wiring (issue 21); each step has a
// file of its own: run_launch (starting the program), run_reap (waiting
// for it and what it leaves), run_dumps (the run directory), run_convert
// (profiles to files), run_diagnose (what is missing, and why), run_print
// (every line printed about a run).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "end_like.h"
#include "errno_text.h"
#include "base/settings.h"
#include "format/run_names.h"
#include "run_convert.h"
#include "run_diagnose.h"
#include "run_dumps.h"
#include "run_launch.h"
#include "run_print.h"
#include "run_reap.h"
#include "source_ladder.h"
#include "outside/image.h"
#include "inside_snapshots.h"
#include "jit_ask.h"
#include "outside_cli.h"
#include "outside_run.h"

namespace profiling::cli {
namespace {

namespace fs = std::filesystem;

// The default rate (docs/run.md, "Why 500 Hz"): five times the traditional
// 100 Hz, for a slowdown measured by bench/run_overhead.sh at about 2 % on
// the cpu clock and 5 % on the perf clock on a VM where a sampling signal
// costs ~60 µs; 1000 Hz doubled that cost for 1.4 times the precision.
constexpr unsigned kDefaultHz = 500;

// env(1) and timeout(1): "125 if the command itself fails", so that profil
// run's own failures cannot be taken for the program's status.
constexpr int kUsageStatus = 125;

struct RunOptions {
  std::string output_dir;
  unsigned hz = 0;
  std::string clock;
  int stacks = -1;  // -1: $PROFIL_STACKS, else on; --no-stacks: 0
  bool interpreter_frames = true;
  bool interpreter_frames_at_sample = true;
  bool kernel_frames = true;
  bool convert_only = false;
  bool symbolize = true;
  bool verbose = false;
  bool gmon = false;
  // The source (issue 21): the preload inside the program, or perf events
  // read from outside; neither flag: run_source() decides.
  bool inside = false, outside = false;
  std::string duration, every;
  // --event, --period (issue 33): from outside only; their events, once
  // resolved.
  EventFlags event_flags;
  std::vector<outside::Event> events;
  // Return when the program ends; what it left running is profiled on
  // (docs/run.md, "Daemons").
  bool no_wait = false;
  // Runtimes asked to write maps of their JIT code (jit_ask.h).
  bool jit = false;
  std::vector<std::string> command;
};

int usage_error(const std::string& what, const std::string& why) {
  fail(what, why);
  return kUsageStatus;
}

extern "C" char** environ;

// profil run's exit status: the program's, 1 for a lost profile of a
// program that exited 0, 128 + the signal that stopped the wait
// (docs/run.md, "Errors"). A program killed by a signal: 128 + N, and
// profil itself ends by that signal once the command returns (end_like.h).
int run_status(const RunOutcome& outcome, const Conversion& c) {
  if (outcome.stopped_by != 0) {
    print_stopped_waiting(outcome.stopped_by, outcome.left_running);
    return 128 + outcome.stopped_by;
  }
  int exit_status = 0;
  if (WIFEXITED(outcome.status)) exit_status = WEXITSTATUS(outcome.status);
  else if (WIFSIGNALED(outcome.status)) {
    exit_status = 128 + WTERMSIG(outcome.status);
    end_by_signal_later(WTERMSIG(outcome.status));
  }
  if (!c.losses.empty() && exit_status == 0) exit_status = 1;
  return exit_status;
}

// Is the program static (no PT_INTERP: no dynamic loader runs to preload
// libprofil.so)? The outside source samples it instead of skipping it.
bool is_static_program(const std::string& path) {
  std::string why;
  const auto image = outside::ElfImage::open(path, &why);
  return image != nullptr && !image->has_interpreter();
}

// profil run --outside (and a static program, or --duration/--every):
// the program runs with nothing of profil in it; its process tree is
// sampled through perf events opened before its exec (outside_run.h).
int run_outside(const RunOptions& options, const Resolved& program, const fs::path& dir, const ConvertOptions& convert,
                const std::string& why_outside) {
  OutsideRunOptions o;
  o.hz = options.hz;
  o.stacks = options.stacks != 0;
  o.wall = options.clock == "wall";
  o.interpreter_frames = options.interpreter_frames;
  o.interpreter_frames_at_sample = options.interpreter_frames_at_sample;
  o.kernel_frames = options.kernel_frames;
  o.events = options.events;
  o.dir = dir;
  o.convert = convert;
  if (!options.duration.empty()) o.duration_s = *parse_duration(options.duration);
  if (!options.every.empty()) o.every_s = *parse_duration(options.every);
  OutsideRun sampling(o);
  std::string refused;
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  std::vector<std::string> jit_said;
  bool node_flag = false;
  if (options.jit) jit_said.push_back(add_jit_environment(&env, &node_flag));
  std::unique_ptr<JitAsker> jit;
  RunOutcome outcome;
  {
    const ForegroundSignals foreground;
    const Launched launched = launch_program(program, options.command, env, foreground, [&](pid_t pid) {
      refused = sampling.open_before_exec(pid);
      if (refused.empty()) sampling.start();
      if (options.jit) (jit = std::make_unique<JitAsker>(pid, std::vector<pid_t>{}, dir))->start();
    });
    outcome = wait_for_run(launched, fs::path(program.path).filename().string(), options.no_wait);
  }
  if (jit) jit->stop();
  if (!outcome.exec_error.empty()) {
    fail(program.path, outcome.exec_error);
    return 126;
  }
  Conversion c;
  if (refused.empty()) {
    std::vector<pid_t> sampled_on;
    c = options.no_wait ? sampling.finish_leaving_running(&sampled_on) : sampling.finish();
    if (!sampled_on.empty())
      print_left_running(fs::path(program.path).filename().string(), outcome.pid, outcome.left_running, true,
                         dir.string());
    print_losses(c);
    print_outside_conversion(c, dir, options.verbose, o.wall ? "wall" : "perf");
    print_unreadable_threads(sampling.threads_unreadable());
    sampling.print_python_reads();
    print_source_notes(sampling.notes());
    if (jit) finish_jit(jit.get(), jit_said, node_flag, c);
    if (!why_outside.empty() && options.verbose) std::fprintf(stderr, "profil: sampled from outside: %s\n", why_outside.c_str());
    if (c.files.empty()) print_nothing_counted(c, o);
  } else {
    // The program ran, unprofiled: its status stays its own.
    fail("no profile", "the program ran unprofiled: " + refused);
  }
  return run_status(outcome, c);
}

int run_command(RunOptions options) {
  // Options, then the environment a wrapper script may set, then defaults.
  // base/settings.h: the library's own parser, and its rule for a bad
  // value (a warning, the default used instead).
  const bool hz_given = options.hz != 0, clock_given = !options.clock.empty();
  if (options.hz == 0) options.hz = base::hz_from_environment(std::getenv("PROFIL_HZ"), kDefaultHz);
  if (options.clock.empty())
    options.clock = base::kClockNames[base::clock_from_environment(std::getenv("PROFIL_CLOCK"), /*auto*/ 2)];
  if (options.stacks < 0) options.stacks = base::flag_from_environment("PROFIL_STACKS", std::getenv("PROFIL_STACKS"), true);
  if (base::parse_clock(options.clock.c_str()) < 0)
    return usage_error("--clock", "'" + options.clock + "' is not one of " + base::kClockNameList);

  if (options.convert_only) {
    // Files, or directories whose .profraw dumps are taken (what a run
    // stopped early or given --no-wait left there); profiles go beside them.
    std::vector<fs::path> dumps;
    fs::path out_dir = ".";
    for (const std::string& given : options.command) {
      std::error_code ec;
      if (!fs::is_directory(given, ec)) {
        dumps.emplace_back(given);
        continue;
      }
      out_dir = given;
      std::vector<fs::path> found;
      for (const auto& entry : fs::directory_iterator(given, ec))
        if (entry.path().extension() == ".profraw" && entry.is_regular_file(ec)) found.push_back(entry.path());
      if (ec) return usage_error(given, error_text(ec));
      std::sort(found.begin(), found.end());
      if (found.empty()) std::fprintf(stderr, "profil: %s: no .profraw dumps in it\n", given.c_str());
      dumps.insert(dumps.end(), found.begin(), found.end());
    }
    if (options.command.empty()) return usage_error("--convert", "no .profraw files or directories given");
    if (dumps.empty()) return 0;
    const Conversion c = convert_dumps(
        dumps, "", {.symbolize = options.symbolize, .gmon = options.gmon, .share = false, .dir = out_dir});
    print_losses(c);
    print_conversion(c, ".", true, options.clock);
    return c.losses.empty() ? 0 : 1;
  }

  if (options.command.empty())
    return usage_error("run", "no program given (profil run [options] [--] PROGRAM [ARGS...])");
  const Resolved program = resolve_program(options.command.front());
  if (program.status != 0) {
    fail(options.command.front(), program.problem);
    return program.status;
  }
  if (options.output_dir.empty()) {
    const char* env = std::getenv("PROFIL_RUN_DIR");
    options.output_dir = env && *env ? env : ".";
  }
  std::error_code ec;
  fs::create_directories(options.output_dir, ec);
  if (ec) return usage_error(options.output_dir, error_text(ec));
  const fs::path dir = fs::canonical(options.output_dir, ec);
  if (ec) return usage_error(options.output_dir, error_text(ec));
  if (::access(dir.c_str(), W_OK) != 0) return usage_error(dir.string(), errno_text(errno));
  if (options.inside && options.outside) return usage_error("--inside", "and --outside cannot both be given");
  // Events are counted by perf from outside (issue 33): their own rate,
  // not the clock's.
  if (const OptionProblem problem = resolve_events(options.event_flags, hz_given, clock_given, &options.events);
      !problem.empty())
    return usage_error(problem.what, problem.why);
  if (!options.events.empty()) {
    if (options.inside) return usage_error("--inside", "--event samples from outside only (perf events opened on the program)");
    options.clock = "perf";  // not PROFIL_CLOCK's: --clock with --event was refused
  }
  // PROFIL_SOURCE (inside, outside, auto) when neither flag is given.
  if (const char* env = std::getenv("PROFIL_SOURCE"); env && *env && !options.inside && !options.outside) {
    const std::string source = env;
    if (source == "inside") options.inside = options.events.empty();  // --event wins: an option over a variable
    else if (source == "outside") options.outside = true;
    else if (source != "auto") return usage_error("PROFIL_SOURCE", "'" + source + "' is not one of inside, outside, auto");
  }
  for (const auto& [flag, value] : {std::pair{"--duration", options.duration}, std::pair{"--every", options.every}}) {
    if (value.empty()) continue;
    if (const std::string problem = duration_problem(value); !problem.empty()) return usage_error(flag, problem);
  }
  if (!options.duration.empty() && options.inside)
    return usage_error("--duration", "needs the outside source (sampling from inside ends with the process)");
  // The source: --outside or --inside as asked; the outside for what the
  // preload cannot enter (a static program), and for --duration and
  // --every; else the inside (docs/run.md, "Inside or outside").
  std::string why_outside;
  if (!options.inside && !options.outside) {
    if (!options.events.empty()) why_outside = "--event needs it";
    else if (is_static_program(program.path)) why_outside = "it is statically linked (no PT_INTERP)";
    else if (!options.duration.empty()) why_outside = "--duration needs it";
    else if (is_outside_clock(options.clock)) {
      if (const OutsideRefusal refused = outside_refusal(options.hz, options.stacks != 0); !refused.refused())
        why_outside = "the default where the kernel allows perf events";
      else
        // Said, never silent (issue 32): the default source is refused
        // here (its events, or their rings), and the inside works.
        print_sampling_inside_instead(refused);
    }
  }
  if (options.outside || !why_outside.empty()) {
    if (!is_outside_clock(options.clock))
      return usage_error("--clock", "the outside source samples on the perf and wall clocks only, not '" + options.clock + "'");
    return run_outside(options, program, dir, {.symbolize = options.symbolize, .gmon = options.gmon, .share = true, .dir = dir}, why_outside);
  }
  const std::string library = find_preload_library();
  if (library.empty()) return usage_error("libprofil.so", "not found next to the profil tool (set PROFIL_LIBRARY)");
  PreloadPath preload;
  if (std::string problem; !preload.prepare(library, &problem)) return usage_error(library, problem);

  const std::string run_id = make_run_id();
  auto env = child_environment(preload.path(), dir.string(), run_id, options.hz, options.clock, options.stacks != 0);
  // --every from inside: each process is asked for a dump through a file
  // the processes find in PROFIL_SNAPSHOTS (inside_snapshots.h).
  std::erase_if(env, [](const std::string& entry) { return entry.rfind("PROFIL_SNAPSHOTS=", 0) == 0; });
  std::unique_ptr<InsideSnapshots> snapshots;
  if (!options.every.empty()) {
    snapshots = std::make_unique<InsideSnapshots>(
        dir, run_token(run_id), *parse_duration(options.every),
        ConvertOptions{.symbolize = options.symbolize, .gmon = options.gmon, .share = false, .dir = dir});
    std::string why;
    const std::string request = snapshots->prepare(&why);
    if (request.empty()) return usage_error("--every", why);
    env.push_back("PROFIL_SNAPSHOTS=" + request);
  }
  std::vector<std::string> jit_said;
  bool node_flag = false;
  if (options.jit) jit_said.push_back(add_jit_environment(&env, &node_flag));
  std::unique_ptr<JitAsker> jit;
  create_ledger(ledger_path(dir, run_token(run_id)));
  const fs::file_time_type run_start = fs::file_time_type::clock::now();
  RunOutcome outcome;
  {
    const ForegroundSignals foreground;
    const Launched launched = launch_program(program, options.command, env, foreground);
    if (snapshots) snapshots->start();
    if (options.jit && launched.pid > 0) (jit = std::make_unique<JitAsker>(launched.pid, std::vector<pid_t>{}, dir))->start();
    outcome = wait_for_run(launched, fs::path(program.path).filename().string(), options.no_wait);
  }
  if (snapshots) snapshots->stop();
  if (jit) jit->stop();
  if (!outcome.exec_error.empty()) {
    fail(program.path, outcome.exec_error);
    return 126;
  }

  RunFiles files = list_run_files(dir, run_token(run_id));
  if (options.no_wait && !outcome.left_running.empty()) {
    // --no-wait converts what has ended: the dump of a process still
    // running is a checkpoint, replaced by its own at its end (--convert).
    std::erase_if(files.dumps, [](const fs::path& path) {
      const auto name = format::parse_dump_name(path.filename().string());
      return name && !name->temporary() && name->pid > 0 && ::kill(static_cast<pid_t>(name->pid), 0) == 0;
    });
  }
  ConvertOptions convert{.symbolize = options.symbolize, .gmon = options.gmon, .share = !snapshots, .dir = dir};
  if (snapshots) convert.reshape = [&snapshots](ProcessProfile& p) { snapshots->reshape(p); };
  Conversion c = convert_dumps(files.dumps, run_id, convert, files.records);
  if (snapshots) {
    // The snapshots cut while the program ran, before the last ones.
    Conversion cut = snapshots->take_written();
    c.files.insert(c.files.begin(), cut.files.begin(), cut.files.end());
    c.processes.insert(c.processes.begin(), cut.processes.begin(), cut.processes.end());
    c.losses.insert(c.losses.begin(), cut.losses.begin(), cut.losses.end());
    c.warnings.insert(c.warnings.end(), cut.warnings.begin(), cut.warnings.end());
  }
  print_losses(c);
  const std::map<int64_t, int> refused = refused_dumps(files.records);
  for (ProcessSummary& p : c.processes) {
    auto it = outcome.reaped.find(static_cast<pid_t>(p.pid));
    if (it != outcome.reaped.end()) p.reaped_status = it->second.status;
    // Its final dump refused: its last checkpoint is what it left.
    if (auto why = refused.find(p.pid); why != refused.end()) p.write_error = why->second;
  }
  // Still alive: the run stopped waiting for it (a signal to the tool, or
  // it was left stopped); it writes its dump when it ends.
  const bool left_some = outcome.stopped_by != 0 || !outcome.left_stopped.empty() || !outcome.left_running.empty();
  auto alive = [left_some](int64_t pid) { return left_some && ::kill(static_cast<pid_t>(pid), 0) == 0; };

  // What was not written, and why (docs/run.md, "Errors").
  const std::map<int64_t, std::string> unfinished = remove_unfinished_dumps(c, dir, run_id, run_start, alive);
  const std::map<int64_t, std::string> placeholders = remove_placeholders(files, alive);
  fs::remove(files.ledger, ec);
  const RunDiagnosis diagnosis =
      diagnose_run(c, outcome, program.path, unfinished, files.records, placeholders, alive, dir.string());

  print_conversion(c, dir, options.verbose, options.clock, diagnosis.unwritten());
  if (options.no_wait && !outcome.left_running.empty())
    print_left_running(fs::path(program.path).filename().string(), outcome.pid, outcome.left_running, false,
                       dir.string());
  print_not_entered(files.records);
  if (options.stacks != 0) print_cut_stacks(c, options.hz);
  print_notes(diagnosis.notes, &c);
  if (jit) finish_jit(jit.get(), jit_said, node_flag, c);
  print_nothing_written(c, dir, options.hz, diagnosis.killed, diagnosis.unrecorded, unfinished);

  return run_status(outcome, c);
}

const RegisterCommand kRunCommand(
    "run", "Profile a program and every process it starts (LD_PRELOAD); write pprof files",
    [](CLI::App& app) -> std::function<int()> {
      auto options = std::make_shared<RunOptions>();
      app.add_option("-o,--output", options->output_dir,
                     "Directory for the profiles (default: $PROFIL_RUN_DIR, else the current directory)");
      app.add_option("--hz", options->hz, "Samples per CPU-second (default: $PROFIL_HZ, else 500)")
          ->check(CLI::Range(1u, 100000u));
      app.add_option("--clock", options->clock, std::string("Sampling clock: ") + base::kClockNameList + " (default: $PROFIL_CLOCK, else auto)");
      add_event_options(app, &options->event_flags);
      app.add_flag_callback("--no-stacks", [options] { options->stacks = 0; },
                            "Sample the PC alone, without call stacks (default: $PROFIL_STACKS, else stacks on)");
      add_frame_flags(app, &options->interpreter_frames, &options->interpreter_frames_at_sample, &options->kernel_frames);
      app.add_flag("-v,--verbose", options->verbose, "One line per process on stderr, instead of one for the run");
      app.add_flag("--gmon", options->gmon,
                   "Also write gmon.<progname>.<pid>.out (for gprof) for each process that has a file of its own");
      app.add_flag("--convert", options->convert_only,
                   "Convert the given .profraw files, or those in the given directories (left by an interrupted or "
                   "--no-wait run), instead of running a program");
      app.add_flag("--outside", options->outside,
                   "Sample from outside the program (perf events; nothing enters it): docs/run.md");
      app.add_flag("--inside", options->inside, "Sample from inside (the preloaded libprofil.so): docs/run.md");
      app.add_option("--duration", options->duration,
                     "Sample for this long (90, 90s, 500ms, 1.5m), then let the program run on unprofiled (outside)");
      app.add_option("--every", options->every,
                     "Write a snapshot every interval, <prog>.<pid>.s<n>.pb.gz, each holding only its interval");
      app.add_flag("--no-wait", options->no_wait,
                   "Return when the program ends; what it left running is profiled until it ends (docs/run.md)");
      app.add_flag_callback("--no-symbolize", [options] { options->symbolize = false; },
                            "Leave function names out of the pprof files");
      app.add_flag("--jit", options->jit,
                   "Have each runtime write a map of its JIT code: node started with NODE_OPTIONS=--perf-basic-prof (and "
                   "--interpreted-frames-native-stack), "
                   "a JVM asked for its map (jcmd PID Compiler.perfmap) while it runs; said in the summary");
      // The program and its arguments never reach CLI11: main() splits them
      // off at the first word that is not an option of ours (takes_program).
      app.footer("Usage: profil run [options] [--] PROGRAM [ARGS...]\n"
                 "Options end at the first word that is not one, or at --; the rest is the program's, unchanged.\n");
      return [options]() {
        options->command = program_words();
        return run_command(*options);
      };
    },
    10, /*takes_program=*/true, kUsageStatus);

}  // namespace
}  // namespace profiling::cli
