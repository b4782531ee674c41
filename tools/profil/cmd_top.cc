// profil top [PID | --all | -- COMMAND...] [--hz N | --event E [--period N]] [-o DIR]
//
// A live view of where a process tree, or the machine, spends its CPU
// (issue 33): its
// hottest functions by self and total, over the last second and since the
// start, with the process and thread of each, drawn again every second
// until q (profil-top(1)). Sampled from outside as profil attach and
// profil run --outside do (outside_run.h): the program is started with its
// events opened before its exec, a running process is attached to, or
// every process is (per-CPU events, as profil attach --all).
// Each second's profiles are named by the model (top_model.h: each address
// once), drawn as text (top_view.h) on the terminal (top_screen.h); with
// -o they are also written, one file per process, at the end.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <curses.h>

#include "command.h"
#include "errno_text.h"
#include "outside_cli.h"
#include "outside_run.h"
#include "report/model.h"
#include "report/symbolizer.h"
#include "run_launch.h"
#include "run_print.h"
#include "run_wait_print.h"
#include "top_model.h"
#include "top_screen.h"
#include "top_target.h"
#include "top_view.h"

namespace profiling::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kUsageStatus = 2;
constexpr auto kWindow = std::chrono::seconds(1);
constexpr auto kLastRead = std::chrono::milliseconds(250);

struct TopOptions {
  bool all = false;
  std::string output_dir;  // "": nothing written
  std::shared_ptr<OutsideFlags> flags = std::make_shared<OutsideFlags>();  // what attach takes too
};

int usage_error(const std::string& what, const std::string& why) {
  fail(what, why);
  return kUsageStatus;
}

bool all_digits(const std::string& word) {
  return !word.empty() && word.find_first_not_of("0123456789") == std::string::npos;
}

// The view until q, ^C, or a stop signal: a window taken, named and drawn
// every second; keys between. Returns why it ended, in words.
std::string watch(TopScreen& screen, OutsideRun& sampling, TopTarget& target, const TopHeader& first, bool keep) {
  report::Symbolizer symbolizer;
  report::ElfFrameSymbolizer frames(symbolizer);
  TopModel model(frames);
  TopViewState state;
  TopSnapshot snapshot;
  TopHeader header = first;
  Clock::time_point next = Clock::now() + kWindow;
  bool taking = true, ending = false, draw = true;
  for (;;) {
    if (draw) screen.draw(render_top(snapshot, state, header, screen.width(), screen.height()));
    draw = false;
    // Keys and signals are looked at every 100 ms at least.
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
    const int key = screen.key(taking ? static_cast<int>(std::clamp<long long>(wait, 0, 100)) : 100);
    if (key == KEY_RESIZE) draw = true;
    if (key >= 0) {
      const bool was_frozen = state.frozen;
      switch (apply_key(&state, key)) {
        case TopKey::quit:
          return key == 3 ? "^C" : "q";
        case TopKey::ask_process:
          state.process = screen.ask("process (a pid or part of a name; empty: every one): ", state.process);
          draw = true;
          break;
        case TopKey::changed:
          draw = true;
          break;
        case TopKey::ignored:
          break;
      }
      if (was_frozen && !state.frozen) snapshot = model.snapshot();
    }
    if (const int signo = TopTarget::pending_signal(); signo != 0) return signal_name(signo);
    if (taking && !ending && target.ended()) {
      // Once what it watches has ended, a last window and no more: the
      // screen keeps what was seen until q. The last window is taken once
      // the reader has read the rings past the end (every 100 ms at most,
      // outside/perf_source.cc).
      ending = true;
      next = Clock::now() + kLastRead;
    }
    if (taking && Clock::now() >= next) {
      model.add_window(sampling.take_live(keep));
      if (!state.frozen) snapshot = model.snapshot();
      header.samples = sampling.samples();
      header.lost = sampling.lost();
      if (ending) {
        taking = false;
        header.ended = target.how_ended() + "; q quits";
      }
      next += kWindow;
      if (next < Clock::now()) next = Clock::now() + kWindow;
      draw = true;
    }
  }
}

int top_command(const TopOptions& options) {
  const std::vector<std::string>& words = program_words();
  if (options.all && !words.empty()) return usage_error("top --all", "takes no PID or command besides");
  if (words.empty() && !options.all)
    return usage_error("top", "nothing to watch (profil top PID | --all | -- COMMAND [ARGS...])");
  const bool is_pid = !options.all && words.size() == 1 && !program_words_after_dashes() && all_digits(words[0]);
  OutsideRunOptions run;
  if (const OptionProblem problem = apply_outside_flags(*options.flags, false, &run); !problem.empty())
    return usage_error(problem.what, problem.why);
  // One screen counts one thing: a second event's samples would be summed
  // with the first's.
  if (run.events.size() > 1)
    return usage_error("--event", "top shows one event at a time (profil run and attach sample several)");
  const bool keep = !options.output_dir.empty();
  if (keep) {
    std::error_code ec;
    fs::create_directories(options.output_dir, ec);
    if (ec) return usage_error(options.output_dir, error_text(ec));
    run.dir = fs::canonical(options.output_dir, ec);
    if (ec) return usage_error(options.output_dir, error_text(ec));
    if (::access(run.dir.c_str(), W_OK) != 0) return usage_error(run.dir.string(), errno_text(errno));
  }
  pid_t pid = 0;
  if (is_pid) {
    // A pid is at most 2^22 (proc(5), pid_max): a longer number is none.
    const long long number = words[0].size() < 10 ? std::stoll(words[0]) : -1;
    if (number <= 0 || (::kill(static_cast<pid_t>(number), 0) != 0 && errno == ESRCH))
      return fail("top " + words[0], "no such process");
    pid = static_cast<pid_t>(number);
  }
  // A program that cannot run is said before the screen is taken.
  const Resolved program = is_pid || options.all ? Resolved{} : resolve_program(words[0]);
  if (program.status != 0) {
    fail(words[0], program.problem);
    return program.status;
  }
  std::string why;
  std::unique_ptr<TopScreen> screen = TopScreen::open(&why);
  if (!screen) return fail("top", why);

  OutsideRun sampling(run);
  TopTarget target;
  int status = 1;
  if (options.all) {
    why = target.attach_all(&sampling);
    if (!why.empty()) why = "top --all: " + why;
  } else if (is_pid) {
    why = target.attach(&sampling, pid);
    if (!why.empty()) why = "attach " + words[0] + ": " + why;
  } else {
    why = target.start(&sampling, program, words, &status);
  }
  if (!why.empty()) {
    screen.reset();
    std::fprintf(stderr, "profil: %s\n", why.c_str());
    return status;
  }
  TopHeader header;
  header.target = target.label();
  header.hz = run.hz;
  if (!run.events.empty() && !run.events.front().is_time())
    header.event = run.events.front().name + " every " + std::to_string(run.events.front().period);
  const std::string ended_by = watch(*screen, sampling, target, header, keep);
  screen.reset();
  const std::string stopped = target.stop();
  std::fprintf(stderr, "profil: top of %s ended at %s%s%s\n", target.label().c_str(), ended_by.c_str(),
               stopped.empty() ? "" : "; ", stopped.c_str());
  if (!keep) return 0;
  const Conversion c = sampling.finish();
  print_losses(c);
  print_outside_conversion(c, run.dir, false, "perf");
  sampling.print_python_reads();
  print_source_notes(sampling.notes());
  if (c.files.empty()) {
    print_nothing_counted(c, run);
    return 1;
  }
  return c.losses.empty() ? 0 : 1;
}

const RegisterCommand kTopCommand(
    "top", "Watch a process's hottest functions live, every second (from outside, perf events)",
    [](CLI::App& app) -> std::function<int()> {
      auto options = std::make_shared<TopOptions>();
      app.add_flag("--all", options->all,
                   "Every process on the machine, no PID or command (per-CPU events: root or CAP_PERFMON)");
      add_outside_flags(app, options->flags);
      app.add_option("-o,--output", options->output_dir,
                     "Also write the profiles seen to this directory when top ends, one per process");
      app.footer("Usage: profil top [options] PID\n"
                 "       profil top [options] [--] COMMAND [ARGS...]\n"
                 "       profil top [options] --all\n"
                 "A lone number is a PID; after --, a program. Keys: s t p m f q (profil-top(1)).\n");
      return [options]() { return top_command(*options); };
    },
    17, /*takes_program=*/true, kUsageStatus);

}  // namespace
}  // namespace profiling::cli
