// The events' table and the checks on it (events.h).
#include "outside/events.h"

#include <linux/perf_event.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "perf/event.h"

namespace profiling::outside {
namespace {

struct Known {
  const char* name;
  const char* alias;  // perf's short name, or nullptr
  uint32_t type;
  uint64_t config;
  // Each software event is rare enough to be taken whole (a sample per
  // fault or switch: `perf record -e page-faults -c 1`); the hardware
  // counters' periods are primes, as perf's examples use, so that the
  // samples do not fall in step with a loop's iterations.
  uint64_t period;
};

constexpr Known kKnown[] = {
    {"task-clock", nullptr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 0},
    {"page-faults", "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 1},
    {"context-switches", "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 1},
    {"cpu-migrations", "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, 1},
    {"minor-faults", nullptr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, 1},
    {"major-faults", nullptr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, 1},
    {"alignment-faults", nullptr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, 1},
    {"cycles", "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1'000'003},
    {"instructions", nullptr, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1'000'003},
    {"cache-misses", nullptr, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, 10'007},
    {"branch-misses", nullptr, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 10'007},
};

}  // namespace

bool find_event(std::string_view name, Event* out) {
  for (const Known& k : kKnown) {
    if (name != k.name && (k.alias == nullptr || name != k.alias)) continue;
    *out = Event{k.name, k.type, k.config, k.period};
    return true;
  }
  return false;
}

std::string event_names() {
  std::string names;
  for (const Known& k : kKnown) names += (names.empty() ? "" : ", ") + std::string(k.name);
  return names;
}

std::string parse_events(const std::string& list, uint64_t period, std::vector<Event>* events) {
  events->clear();
  size_t start = 0;
  for (;;) {
    const size_t comma = list.find(',', start);
    const std::string word = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    Event event;
    if (word.empty()) return "an empty event name in '" + list + "'";
    if (!find_event(word, &event)) return "'" + word + "' is not an event profil knows (" + event_names() + ")";
    if (period != 0) {
      if (event.is_time()) return "task-clock is sampled at --hz, not every --period events";
      event.period = period;
    }
    bool twice = false;
    for (const Event& e : *events) twice = twice || e.name == event.name;
    if (!twice) events->push_back(event);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return "";
}

std::string event_problem(const Event& event) {
  perf::EventSpec spec;
  spec.type = event.type;
  spec.config = event.config;
  spec.period_ns = event.is_time() ? 1'000'000 : event.period;
  spec.disabled = true;
  spec.user_only = true;  // the event's existence only: kernel.perf_event_paranoid's say is the real open's
  const long fd = perf::open_event(spec.attr(), 0, -1);
  if (fd >= 0) {
    ::close(static_cast<int>(fd));
    return "";
  }
  const int error = static_cast<int>(-fd);
  // The kernel's answer for an event no PMU counts (perf stat says
  // "<not supported>"): ENOENT for a hardware event without one,
  // EOPNOTSUPP for sampling a counter that cannot interrupt.
  if (error == ENOENT || error == ENODEV || error == EOPNOTSUPP || error == EINVAL)
    return "this machine has no '" + event.name + "' event to sample (" +
           (event.hardware() ? "no hardware performance counter for it: perf stat says <not supported>; "
                             : "") +
           "perf_event_open: " + std::strerror(error) + ")";
  return "";  // refused for another reason: the real open says it, with the setting at fault
}

}  // namespace profiling::outside
