// The events profil samples on from outside (issue 33, `--event`): the
// kernel's software events and, where the machine has a PMU, its hardware
// events, by perf's names; each with the period it is sampled at unless
// told (a sample every N events) and how a profile names its unit. The
// default, task-clock, is CPU time: its period is the clock's (--hz),
// in nanoseconds, as before events existed.
//
// NOT async-signal-safe: host side. Plain values and a constant table.
#ifndef PROFIL_OUTSIDE_EVENTS_H
#define PROFIL_OUTSIDE_EVENTS_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace profiling::outside {

struct Event {
  // perf's name ("page-faults"): the profile's sample type and, beside
  // another event, part of its file's name.
  std::string name = "task-clock";
  uint32_t type = 1;    // PERF_TYPE_SOFTWARE
  uint64_t config = 1;  // PERF_COUNT_SW_TASK_CLOCK
  // Events per sample; 0 for task-clock, whose period is the rate's.
  uint64_t period = 0;

  // CPU time (task-clock): counted in ns, sampled at --hz, the profile's
  // values are time.
  bool is_time() const { return period == 0; }
  bool hardware() const { return type == 0; }  // PERF_TYPE_HARDWARE
  friend bool operator==(const Event&, const Event&) = default;
};

// The event of that name (perf's, or its short alias: cs, faults,
// migrations), with its default period; false when profil knows none.
bool find_event(std::string_view name, Event* out);

// The names profil knows, comma-separated, for --help and an error.
std::string event_names();

// "page-faults,context-switches" with `period` (0: each its default)
// into events, in the order given, each once; "" or why not, one line
// (the word at fault, and the names known). A period with task-clock,
// whose rate is --hz, is refused.
std::string parse_events(const std::string& list, uint64_t period, std::vector<Event>* events);

// Whether this machine counts the event: "" or one line naming it and why
// not ("this machine has no hardware event 'cycles' (no PMU: ...)").
// Opened on the calling thread, disabled, and closed at once.
std::string event_problem(const Event& event);

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_EVENTS_H
