// The sampling settings a user writes in the environment, parsed in one
// place for the library (src/sampler/control.cc) and the `profil` tool
// (tools/profil/cmd_run.cc), so both accept exactly the same values
// (issue 10).
//
// The rule for a bad value, everywhere: one warning line naming the
// variable, the value and what is used instead; never an error. A library
// cannot refuse to run the program it is linked into, and `profil run`
// behaves the same so that a variable means one thing wherever it is read.
// (A bad --hz or --clock on profil run's own command line is a usage error.)
//
// Header-only and allocation-free: the library reads these before its own
// initializers may have run.
#ifndef PROFIL_BASE_SETTINGS_H
#define PROFIL_BASE_SETTINGS_H

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace profiling::base {

inline constexpr unsigned kMinHz = 1;
inline constexpr unsigned kMaxHz = 100000;

// The clocks, one row each: the one table of them (issue 12). A row is
//   X(enumerator of sampler::ClockKind, name in PROFIL_CLOCK and --clock,
//     the function returning its sampler::Engine)
// and its index is the ClockKind's value, so rows are only ever appended
// (the C API and profraw keep ids of their own: runtime/c_api.cc,
// runtime/internal/preload_state.h). sampler.h makes ClockKind of it,
// sampler/running_engine.cc the engine table, this file the names. auto is
// the perf ring with its fallbacks (sampler/engine.h).
#define PROFIL_CLOCK_TABLE(X)                      \
  X(cpu, "cpu", cpu_timer_engine)                  \
  X(perf, "perf", perf_ring_engine)                \
  X(automatic, "auto", perf_ring_engine)           \
  X(wall, "wall", wall_engine)                     \
  X(perf_signal, "perf-signal", perf_signal_engine)

#define PROFIL_CLOCK_NAME(id, name, engine) name,
inline constexpr const char* kClockNames[] = {PROFIL_CLOCK_TABLE(PROFIL_CLOCK_NAME)};
#undef PROFIL_CLOCK_NAME
inline constexpr int kClockNameCount = static_cast<int>(sizeof kClockNames / sizeof kClockNames[0]);

namespace internal {
// kClockNames joined by ", ", built at compile time from the table.
inline constexpr size_t clock_name_list_size() {
  size_t n = 1;  // the terminating NUL
  for (int i = 0; i < kClockNameCount; ++i) n += std::char_traits<char>::length(kClockNames[i]) + (i ? 2 : 0);
  return n;
}
struct ClockNameList {
  char text[clock_name_list_size()] = {};
  constexpr ClockNameList() {
    size_t at = 0;
    for (int i = 0; i < kClockNameCount; ++i) {
      if (i != 0) {
        text[at++] = ',';
        text[at++] = ' ';
      }
      for (const char* c = kClockNames[i]; *c != '\0'; ++c) text[at++] = *c;
    }
  }
};
inline constexpr ClockNameList kClockNameListStorage;
}  // namespace internal
// For messages: "cpu, perf, auto, wall, perf-signal".
inline constexpr const char* kClockNameList = internal::kClockNameListStorage.text;

// A rate in samples per CPU-second, 1..100000, all digits. false otherwise.
inline bool parse_hz(const char* text, unsigned* hz) {
  if (text == nullptr || *text < '0' || *text > '9') return false;
  char* end = nullptr;
  const unsigned long value = std::strtoul(text, &end, 10);
  if (*end != '\0' || value < kMinHz || value > kMaxHz) return false;
  *hz = static_cast<unsigned>(value);
  return true;
}

// A clock name: its index in kClockNames, or -1.
inline int parse_clock(const char* text) {
  if (text == nullptr) return -1;
  for (int i = 0; i < kClockNameCount; ++i)
    if (std::strcmp(text, kClockNames[i]) == 0) return i;
  return -1;
}

// PROFIL_HZ's value (already read from the environment, may be null or
// empty: then the default, silently), or the default with the warning line.
inline unsigned hz_from_environment(const char* text, unsigned fallback) {
  if (text == nullptr || *text == '\0') return fallback;
  unsigned hz = 0;
  if (parse_hz(text, &hz)) return hz;
  std::fprintf(stderr, "profil: warning: PROFIL_HZ: '%s' is not a rate (1..100000); using %u\n", text, fallback);
  return fallback;
}

// PROFIL_CLOCK's value, the same way; returns an index in kClockNames.
inline int clock_from_environment(const char* text, int fallback) {
  if (text == nullptr || *text == '\0') return fallback;
  const int clock = parse_clock(text);
  if (clock >= 0) return clock;
  std::fprintf(stderr, "profil: warning: PROFIL_CLOCK: '%s' is not one of %s; using %s\n", text, kClockNameList,
               kClockNames[fallback]);
  return fallback;
}

// A yes/no variable such as PROFIL_STACKS: 1/yes/on or 0/no/off; unset or
// empty gives the default silently, anything else the warning line.
inline bool flag_from_environment(const char* name, const char* text, bool fallback) {
  if (text == nullptr || *text == '\0') return fallback;
  if (std::strcmp(text, "1") == 0 || std::strcmp(text, "yes") == 0 || std::strcmp(text, "on") == 0) return true;
  if (std::strcmp(text, "0") == 0 || std::strcmp(text, "no") == 0 || std::strcmp(text, "off") == 0) return false;
  std::fprintf(stderr, "profil: warning: %s: '%s' is not one of 1, 0, yes, no, on, off; using %s\n", name, text,
               fallback ? "1" : "0");
  return fallback;
}

}  // namespace profiling::base

#endif  // PROFIL_BASE_SETTINGS_H
