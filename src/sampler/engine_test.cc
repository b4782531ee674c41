#include "sampler/engine.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "base/settings.h"

namespace profiling::sampler {
namespace {

struct Row {
  ClockKind kind;
  const char* name;
  Engine* engine;
};
#define PROFIL_TEST_ROW(id, name, engine) Row{ClockKind::id, name, &engine()},
const Row kRows[] = {PROFIL_CLOCK_TABLE(PROFIL_TEST_ROW)};
#undef PROFIL_TEST_ROW

// The one table gives each clock its value, its name and an engine that
// runs as that clock (auto runs the perf ring, and reports perf).
TEST(ClockTable, EachRowIsOneClock) {
  ASSERT_EQ(sizeof kRows / sizeof kRows[0], static_cast<size_t>(kClockKinds));
  std::set<Engine*> engines;
  for (size_t i = 0; i < sizeof kRows / sizeof kRows[0]; ++i) {
    const Row& row = kRows[i];
    EXPECT_EQ(static_cast<size_t>(row.kind), i) << row.name;
    EXPECT_EQ(base::parse_clock(row.name), static_cast<int>(i)) << row.name;
    const ClockKind runs = row.kind == ClockKind::automatic ? ClockKind::perf : row.kind;
    EXPECT_EQ(row.engine->kind(), runs) << row.name;
    engines.insert(row.engine);
  }
  EXPECT_EQ(engines.size(), sizeof kRows / sizeof kRows[0] - 1) << "one engine per clock, auto sharing perf's";
  EXPECT_STREQ(base::kClockNameList, "cpu, perf, auto, wall, perf-signal");
}

// perf ring -> perf-signal -> cpu; every chain ends at an engine that
// always starts, with a description for the fallback reason.
TEST(ClockTable, FallbacksEndAtAnEngineThatAlwaysStarts) {
  EXPECT_EQ(perf_ring_engine().fallback(), &perf_signal_engine());
  EXPECT_EQ(perf_signal_engine().fallback(), &cpu_timer_engine());
  EXPECT_EQ(cpu_timer_engine().fallback(), nullptr);
  EXPECT_EQ(wall_engine().fallback(), nullptr);
  EXPECT_STREQ(cpu_timer_engine().describe(), "per-thread CPU-time timers");
  for (const Row& row : kRows) {
    int steps = 0;
    for (Engine* e = row.engine; e != nullptr; e = e->fallback()) {
      EXPECT_NE(std::string(e->describe()), "") << row.name;
      ASSERT_LT(++steps, kClockKinds) << row.name << ": a fallback loop";
    }
  }
}

// Only the wall clock's samples are not CPU time.
TEST(ClockTable, AccountingMeasuresTheCpuTimeClocks) {
  for (const Row& row : kRows) EXPECT_EQ(row.engine->accounted(), row.kind != ClockKind::wall) << row.name;
}

}  // namespace
}  // namespace profiling::sampler
