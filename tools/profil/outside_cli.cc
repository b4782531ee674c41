// The outside commands' shared options and event lines (outside_cli.h).
#include "outside_cli.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "run_print.h"

namespace profiling::cli {

std::optional<double> parse_duration(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(value) || value <= 0) return std::nullopt;
  const std::string unit(end);
  double seconds;
  if (unit.empty() || unit == "s") seconds = value;
  else if (unit == "ms") seconds = value / 1000;
  else if (unit == "m") seconds = value * 60;
  else if (unit == "h") seconds = value * 3600;
  else return std::nullopt;
  if (seconds > kMaxDurationSeconds) return std::nullopt;
  return seconds;
}

std::string duration_shown(const std::string& text) {
  const bool bare = !text.empty() && (std::isdigit(static_cast<unsigned char>(text.back())) || text.back() == '.');
  return bare ? text + " s" : text;
}

std::string duration_problem(const std::string& text) {
  if (parse_duration(text)) return "";
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  const std::string unit(end);
  const bool known_unit = unit.empty() || unit == "s" || unit == "ms" || unit == "m" || unit == "h";
  // A positive number of a known unit that parse_duration refused: too long.
  if (end != text.c_str() && known_unit && value > 0)
    return "'" + text + "' is longer than the longest duration profil takes (1e9 s, 31 years)";
  return "'" + text + "' is not a duration (90, 90s, 500ms, 1.5m, 2h)";
}

void add_event_options(CLI::App& app, EventFlags* flags) {
  app.add_option("--event", flags->events,
                 "Sample on these perf events, comma-separated, one profile each (default task-clock: CPU time): " +
                     outside::event_names() + "; hardware events where the machine has counters");
  app.add_option("--period", flags->period,
                 "A sample every N events of each --event but task-clock (default per event: 1 for software "
                 "events, 1000003 for cycles and instructions, 10007 for misses)")
      ->check(CLI::PositiveNumber);
}

OptionProblem resolve_events(const EventFlags& flags, bool hz_given, bool clock_given,
                             std::vector<outside::Event>* events) {
  events->clear();
  if (flags.events.empty()) {
    if (flags.period != 0) return {"--period", "counts events: give --event too (CPU time's rate is --hz)"};
    return {};
  }
  if (std::string why = outside::parse_events(flags.events, flags.period, events); !why.empty())
    return {"--event", why};
  const bool time_only = events->size() == 1 && events->front().is_time();
  // An event's rate is --period; time's clock and rate are not its (the
  // wall clock's poller samples blocked time, which no event counts).
  if (!time_only && hz_given) return {"--hz", "does not combine with --event " + flags.events + " (its rate is --period)"};
  if (clock_given) return {"--clock", "does not combine with --event (events are counted by perf from outside)"};
  for (const outside::Event& event : *events)
    if (std::string why = outside::event_problem(event); !why.empty()) return {"--event " + event.name, why};
  return {};
}

void add_outside_flags(CLI::App& app, const std::shared_ptr<OutsideFlags>& flags) {
  flags->hz_option =
      app.add_option("--hz", flags->hz, "Samples per CPU-second (default 500)")->check(CLI::Range(1u, 100000u));
  add_event_options(app, &flags->events);
  app.add_flag_callback("--no-symbolize", [flags] { flags->symbolize = false; },
                        "Leave function names out of the pprof files");
  add_frame_flags(app, &flags->interpreter_frames, &flags->interpreter_frames_at_sample, &flags->kernel_frames);
}

void add_frame_flags(CLI::App& app, bool* interpreter_frames, bool* interpreter_frames_at_sample, bool* kernel_frames) {
  app.add_flag_callback("--no-interpreter", [interpreter_frames] { *interpreter_frames = false; },
                        "Leave an interpreted program's own frames unread: the native stacks alone (docs/python.md)");
  app.add_flag_callback("--no-bpf", [interpreter_frames_at_sample] { *interpreter_frames_at_sample = false; },
                        "Read an interpreted program's frames after each sample, never with a BPF program at it (docs/python.md)");
  app.add_flag_callback("--no-kernel", [kernel_frames] { *kernel_frames = false; },
                        "Leave the kernel's functions out: kernel time as one [kernel] frame under the user stack");
}

OptionProblem apply_outside_flags(const OutsideFlags& flags, bool clock_given, OutsideRunOptions* run) {
  run->hz = flags.hz;
  run->interpreter_frames = flags.interpreter_frames;
  run->interpreter_frames_at_sample = flags.interpreter_frames_at_sample;
  run->kernel_frames = flags.kernel_frames;
  run->convert.symbolize = flags.symbolize;
  const bool hz_given = flags.hz_option != nullptr && flags.hz_option->count() > 0;
  return resolve_events(flags.events, hz_given, clock_given, &run->events);
}

std::string sampling_rate(const OutsideRunOptions& run) {
  if (run.events.empty() || (run.events.size() == 1 && run.events.front().is_time()))
    return "at " + std::to_string(run.hz) + " Hz";
  std::string out;
  for (size_t i = 0; i < run.events.size(); ++i) {
    const outside::Event& e = run.events[i];
    out += (i == 0 ? "on " : i + 1 == run.events.size() ? " and " : ", ") + e.name + " (" +
           (e.is_time() ? std::to_string(run.hz) + " Hz" : "every " + std::to_string(e.period)) + ")";
  }
  return out;
}

void print_nothing_counted(const Conversion& c, const OutsideRunOptions& run, const std::string& attached, pid_t pid) {
  bool time = run.events.empty();
  std::string names;
  for (const outside::Event& e : run.events) {
    time = time || e.is_time();
    names += (names.empty() ? "" : " or ") + e.name;
  }
  if (time || !c.losses.empty()) return print_nothing_sampled_outside(c, run.hz, attached, pid);
  std::fprintf(stderr, "profil: no profile was written: no %s sample was taken in %s\n", names.c_str(),
               attached.empty() ? "the run's processes" : (attached + " (pid " + std::to_string(pid) + ")").c_str());
}

namespace {

std::string join_files(const std::vector<std::string>& files, const std::filesystem::path& dir) {
  if (files.size() > 3) return std::to_string(files.size()) + " files in " + dir.string();
  std::string out;
  for (const std::string& f : files) out += (out.empty() ? "" : ", ") + f;
  return out.empty() ? "nothing written" : out;
}

}  // namespace

void print_outside_conversion(const Conversion& c, const std::filesystem::path& dir, bool verbose,
                              const std::string& requested_clock) {
  Conversion time;
  std::map<std::string, std::vector<const ProcessSummary*>> events;  // by name
  for (const ProcessSummary& p : c.processes) {
    if (!p.event.empty()) {
      events[p.event].push_back(&p);
      continue;
    }
    time.processes.push_back(p);
    for (const std::string& f : p.files)
      if (std::find(time.files.begin(), time.files.end(), f) == time.files.end()) time.files.push_back(f);
  }
  time.shared_file = c.shared_file;
  time.shared_processes = c.shared_processes;
  time.folded = c.folded;  // CPU time's processes that ended, folded (fold_ended; issue 32)
  if (!time.processes.empty() || c.folded.pids != 0 || events.empty()) print_conversion(time, dir, verbose, requested_clock);
  // An event's samples are counts: no seconds, no clock, no rate (issue 33).
  for (const auto& [event, processes] : events) {
    uint64_t samples = 0, period = 0;
    std::set<int64_t> pids;
    std::vector<std::string> files;
    for (const ProcessSummary* p : processes) {
      if (verbose && !p->empty())
        std::fprintf(stderr, "profil: %s: %llu %s samples, one every %llu, from outside -> %s\n", p->label.c_str(),
                     static_cast<unsigned long long>(p->samples), event.c_str(),
                     static_cast<unsigned long long>(p->event_period), join_files(p->files, dir).c_str());
      samples += p->samples;
      period = p->event_period;
      if (p->samples > 0) pids.insert(p->pid);
      files.insert(files.end(), p->files.begin(), p->files.end());
    }
    if (!verbose)
      std::fprintf(stderr, "profil: %zu process%s sampled: %llu %s samples, one every %llu, from outside -> %s\n",
                   pids.size(), pids.size() == 1 ? "" : "es", static_cast<unsigned long long>(samples), event.c_str(),
                   static_cast<unsigned long long>(period), join_files(files, dir).c_str());
  }
}

}  // namespace profiling::cli
