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

namespace profiling::base {

inline constexpr unsigned kMinHz = 1;
inline constexpr unsigned kMaxHz = 100000;

// The clock names, in ClockKind's order (sampler.h: cpu 0, perf 1,
// automatic 2, wall 3, perf_signal 4): the one table of them.
inline constexpr const char* kClockNames[] = {"cpu", "perf", "auto", "wall", "perf-signal"};
inline constexpr int kClockNameCount = static_cast<int>(sizeof kClockNames / sizeof kClockNames[0]);
// For messages: "cpu, perf, auto, wall, perf-signal".
inline constexpr const char* kClockNameList = "cpu, perf, auto, wall, perf-signal";

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
