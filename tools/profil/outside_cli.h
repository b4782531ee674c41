// What the commands that sample from outside share on the command line
// (profil run --outside, attach, top): the durations of --duration and
// --every; the events of --event and --period (issue 33); the option block
// attach and top both take; and the lines said of an event's profiles,
// whose samples are counts of events, never seconds of CPU.
#ifndef PROFIL_TOOLS_OUTSIDE_CLI_H
#define PROFIL_TOOLS_OUTSIDE_CLI_H

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "outside/events.h"
#include "outside_run.h"
#include "run_convert.h"

namespace profiling::cli {

// "90", "90s", "1.5m", "500ms", "2h": seconds; nullopt when not a duration
// profil takes (duration_problem says why).
std::optional<double> parse_duration(const std::string& text);
// The longest: 10^9 s (31 years). From about 9.2e9 s on, its nanoseconds
// overflow the clocks' 64 bits, and sampling stopped after 0.15 s (issue 32).
inline constexpr double kMaxDurationSeconds = 1e9;
// Why text is not a duration profil takes, for a usage error; "" when it is.
std::string duration_problem(const std::string& text);
// A duration as given, with its unit: "3" reads "3 s" (a bare number is
// seconds), "1.5m" stays.
std::string duration_shown(const std::string& text);

// --event NAME[,NAME...] and --period N, as given.
struct EventFlags {
  std::string events;  // "": task-clock alone
  uint64_t period = 0;  // 0: each event's default
};
void add_event_options(CLI::App& app, EventFlags* flags);

// An option the user gave that cannot be: what (the option) and why.
struct OptionProblem {
  std::string what, why;
  bool empty() const { return why.empty(); }
};

// The events asked for (task-clock alone when none is), each one this
// machine counts (outside::event_problem), into *events. hz_given,
// clock_given: --hz or --clock were given, which sample time and so do not
// combine with another event (its rate is --period).
OptionProblem resolve_events(const EventFlags& flags, bool hz_given, bool clock_given,
                             std::vector<outside::Event>* events);

// The options profil attach and profil top share: --hz, --event, --period,
// --no-symbolize, --no-interpreter, --no-bpf, --no-kernel (issue 33: one
// block, where each command wrote it out).
struct OutsideFlags {
  unsigned hz = 500;
  CLI::Option* hz_option = nullptr;  // counted once parsed: was --hz given?
  EventFlags events;
  bool symbolize = true;
  bool interpreter_frames = true;
  bool interpreter_frames_at_sample = true;
  bool kernel_frames = true;
};
void add_outside_flags(CLI::App& app, const std::shared_ptr<OutsideFlags>& flags);
// --no-interpreter, --no-bpf, --no-kernel (profil run's too): each clears
// its flag, which must outlive the parse.
void add_frame_flags(CLI::App& app, bool* interpreter_frames, bool* interpreter_frames_at_sample, bool* kernel_frames);
// Into a run's options: the rate, the frames, the symbols, and the
// events (resolved: the problem with them, if any).
OptionProblem apply_outside_flags(const OutsideFlags& flags, bool clock_given, OutsideRunOptions* run);

// How often the run samples, for its first line: "at 500 Hz", "on
// page-faults (every 1)", "on task-clock (500 Hz) and cycles (every
// 1000003)".
std::string sampling_rate(const OutsideRunOptions& run);

// print_nothing_sampled_outside (run_print.h), or for events no sampling
// period but "no page-faults were counted in ..." (attached: "" for a run).
void print_nothing_counted(const Conversion& c, const OutsideRunOptions& run, const std::string& attached = "",
                           pid_t pid = 0);

// print_conversion (run_print.h) for a run from outside: its CPU-time
// profiles as ever, and for each other event one line of its samples and
// files ("page-faults: 2 processes sampled: 20480 samples, one every 1
// ... -> files"), or with verbose one per process.
void print_outside_conversion(const Conversion& c, const std::filesystem::path& dir, bool verbose,
                              const std::string& requested_clock);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_OUTSIDE_CLI_H
