// Whole stacks captured by the real sampling handler (sampler::set_stack_table)
// from a known call tree built -O2 -fomit-frame-pointer
// (unwind_progs/callgraph.c): the callers' shares, stacks through libc's
// qsort, through a signal handler's frame and through dlopen'ed code.
// Tolerances come from the number of samples (binomial sigmas).
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <time.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sampler/sampler.h"
#include "unwind/code_table.h"
#include "unwind/stack_table.h"
#include "unwind/unwinder.h"

extern "C" {
void cg_leaf(long units);
void cg_a(void);
void cg_b(void);
int cg_compare(const void*, const void*);
void cg_sort(void);
void cg_handler_work(void);
void cg_on_signal(int);
void cg_signal_path(void);
void cg_call_plugin(void (*)(long));
void cg_round(void (*)(long));
}

namespace profiling {
namespace {

struct Range {
  uint64_t start = 0, end = 0;
  bool contains(uint64_t pc) const { return pc >= start && pc < end; }
};

Range range_of(const void* function) {
  Dl_info info{};
  const ElfW(Sym)* symbol = nullptr;
  if (dladdr1(function, &info, reinterpret_cast<void**>(const_cast<ElfW(Sym)**>(&symbol)), RTLD_DL_SYMENT) == 0 || symbol == nullptr) return {};
  const auto start = reinterpret_cast<uint64_t>(info.dli_saddr);
  return {start, start + symbol->st_size};
}

// -fomit-frame-pointer reached the call tree: no function of it begins
// with push %rbp; mov %rsp,%rbp (after an endbr64, with -fcf-protection).
bool sets_up_frame_pointer(const void* function) {
  auto* code = static_cast<const unsigned char*>(function);
  if (std::memcmp(code, "\xf3\x0f\x1e\xfa", 4) == 0) code += 4;
  return std::memcmp(code, "\x55\x48\x89\xe5", 4) == 0;
}

int64_t process_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Share {
  uint64_t weight = 0;
  uint64_t complete = 0;  // not truncated and through the expected callers
};

TEST(UnwindCapture, AKnownCallTreeWithoutFramePointers) {
  for (const void* f : {reinterpret_cast<const void*>(&cg_leaf), reinterpret_cast<const void*>(&cg_a),
                        reinterpret_cast<const void*>(&cg_compare), reinterpret_cast<const void*>(&cg_round)})
    ASSERT_FALSE(sets_up_frame_pointer(f)) << "callgraph.c was built with frame pointers";

  struct sigaction action{};
  action.sa_handler = cg_on_signal;
  sigemptyset(&action.sa_mask);
  struct sigaction previous{};
  ASSERT_EQ(sigaction(SIGUSR1, &action, &previous), 0);

  ASSERT_EQ(sampler::set_clock_settings({sampler::ClockKind::automatic, 1000}), 0);
  unwind::StackTable* stacks = unwind::StackTable::create(1 << 14, 1 << 20);
  ASSERT_NE(stacks, nullptr);
  sampler::set_stack_table(stacks, unwind::kDefaultMaxDepth);

  // Loaded after the tables were built: the dlopen interposer must add it.
  const std::string plugin_path = std::string(std::getenv("PROFIL_BUILD_DIR")) + "/lib/libunwindtestplugin.so";
  void* plugin = dlopen(plugin_path.c_str(), RTLD_NOW);
  ASSERT_NE(plugin, nullptr) << dlerror();
  auto plugin_work = reinterpret_cast<void (*)(long)>(dlsym(plugin, "plugin_work"));
  ASSERT_NE(plugin_work, nullptr);

  // Enough signals for the shares below to be measured within a few
  // points; at most 30 s of CPU on a machine where signals come rarely.
  const sampler::Stats before = sampler::stats();
  const int64_t cpu_start = process_cpu_ns();
  while (sampler::stats().signals - before.signals < 1200 && process_cpu_ns() - cpu_start < 30'000'000'000) {
    cg_round(plugin_work);
  }
  sampler::set_stack_table(nullptr, 0);
  sigaction(SIGUSR1, &previous, nullptr);
  const sampler::Stats after = sampler::stats();
  const double signals = static_cast<double>(after.signals - before.signals);
  const double mean_weight = static_cast<double>(after.ticks - before.ticks) / std::max(signals, 1.0);
  ASSERT_GT(signals, 300) << "too few samples to test anything";

  const Range leaf = range_of(reinterpret_cast<void*>(&cg_leaf)), a = range_of(reinterpret_cast<void*>(&cg_a)),
              b = range_of(reinterpret_cast<void*>(&cg_b)), compare = range_of(reinterpret_cast<void*>(&cg_compare)),
              sort = range_of(reinterpret_cast<void*>(&cg_sort)),
              handler = range_of(reinterpret_cast<void*>(&cg_on_signal)),
              handler_work = range_of(reinterpret_cast<void*>(&cg_handler_work)),
              signal_path = range_of(reinterpret_cast<void*>(&cg_signal_path)),
              call_plugin = range_of(reinterpret_cast<void*>(&cg_call_plugin)),
              round = range_of(reinterpret_cast<void*>(&cg_round)),
              plugin_range = range_of(reinterpret_cast<void*>(plugin_work));
  ASSERT_GT(leaf.end, leaf.start);
  ASSERT_GT(plugin_range.end, plugin_range.start);
  Dl_info libc_info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&qsort), &libc_info), 0);
  const auto libc_base = reinterpret_cast<uint64_t>(libc_info.dli_fbase);
  auto in_libc = [&](uint64_t pc) {
    Dl_info info{};
    return dladdr(reinterpret_cast<void*>(pc), &info) != 0 && reinterpret_cast<uint64_t>(info.dli_fbase) == libc_base;
  };
  // Index of the first frame at or after `from` in range, or -1.
  auto find = [](const uint64_t* pcs, uint32_t depth, uint32_t from, const Range& r) {
    for (uint32_t i = from; i < depth; ++i)
      if (r.contains(i == 0 ? pcs[i] : pcs[i] - 1)) return static_cast<int>(i);
    return -1;
  };

  Share via_a, via_b, leaf_total, through_qsort, through_signal, through_plugin;
  uint64_t total = 0, truncated = 0;
  stacks->for_each([&](const uint64_t* pcs, uint32_t depth, bool cut, uint64_t weight, int32_t) {
    total += weight;
    if (cut) truncated += weight;
    const bool reaches_round = find(pcs, depth, 0, round) >= 0;
    if (leaf.contains(pcs[0])) {
      leaf_total.weight += weight;
      if (depth > 1 && a.contains(pcs[1] - 1)) via_a.weight += weight;
      if (depth > 1 && b.contains(pcs[1] - 1)) via_b.weight += weight;
      if (!cut && reaches_round) leaf_total.complete += weight;
    }
    if (const int c = find(pcs, depth, 0, compare); c >= 0) {
      through_qsort.weight += weight;
      const int s = find(pcs, depth, c + 1, sort);
      bool libc_between = false;
      for (int i = c + 1; s > 0 && i < s; ++i) libc_between |= in_libc(pcs[i]);
      if (!cut && s > c && libc_between && reaches_round) through_qsort.complete += weight;
    }
    if (handler_work.contains(pcs[0])) {
      through_signal.weight += weight;
      const int h = find(pcs, depth, 0, handler);
      // handler, __restore_rt (libc), the PC raise was at, ..., cg_signal_path.
      const int p = h >= 0 ? find(pcs, depth, h + 1, signal_path) : -1;
      if (!cut && h >= 0 && p > h + 1 && in_libc(pcs[h + 1]) && reaches_round) through_signal.complete += weight;
    }
    if (plugin_range.contains(pcs[0])) {
      through_plugin.weight += weight;
      if (!cut && depth > 1 && call_plugin.contains(pcs[1] - 1) && reaches_round) through_plugin.complete += weight;
    }
  });
  std::printf("signals %.0f mean weight %.2f; ticks %lu, truncated %lu; leaf %lu (a %lu, b %lu); qsort %lu/%lu; "
              "signal %lu/%lu; plugin %lu/%lu; dropped %lu\n",
              signals, mean_weight, static_cast<unsigned long>(total), static_cast<unsigned long>(truncated),
              static_cast<unsigned long>(leaf_total.weight), static_cast<unsigned long>(via_a.weight),
              static_cast<unsigned long>(via_b.weight), static_cast<unsigned long>(through_qsort.complete),
              static_cast<unsigned long>(through_qsort.weight), static_cast<unsigned long>(through_signal.complete),
              static_cast<unsigned long>(through_signal.weight), static_cast<unsigned long>(through_plugin.complete),
              static_cast<unsigned long>(through_plugin.weight), static_cast<unsigned long>(stacks->dropped_weight()));
  EXPECT_EQ(stacks->dropped_weight(), 0u);

  // cg_leaf's callers: 1 part through cg_a, 2 through cg_b. Signals, not
  // ticks, are the independent trials: a signal weighing k ticks counts k.
  ASSERT_GT(via_a.weight + via_b.weight, 0u);
  EXPECT_GE(via_a.weight + via_b.weight, leaf_total.weight * 99 / 100) << "cg_leaf's caller lost";
  const double n = static_cast<double>(via_a.weight + via_b.weight) / mean_weight;
  const double share_a = static_cast<double>(via_a.weight) / static_cast<double>(via_a.weight + via_b.weight);
  const double sigma = std::sqrt((1.0 / 3) * (2.0 / 3) / n);
  EXPECT_NEAR(share_a, 1.0 / 3, 4 * sigma) << "n " << n;
  EXPECT_GE(leaf_total.complete, leaf_total.weight * 95 / 100);

  // >= 90 % of the stacks through libc complete, through cg_sort to cg_round
  // and on to the outermost frame; likewise through the signal frame and
  // through the dlopen'ed plugin.
  ASSERT_GT(through_qsort.weight, 0u);
  EXPECT_GE(through_qsort.complete, through_qsort.weight * 9 / 10);
  ASSERT_GT(through_signal.weight, 0u);
  EXPECT_GE(through_signal.complete, through_signal.weight * 9 / 10);
  ASSERT_GT(through_plugin.weight, 0u);
  EXPECT_GE(through_plugin.complete, through_plugin.weight * 9 / 10);
  // Nearly everything in this program unwinds to its end.
  EXPECT_LE(truncated, total / 20);

  unwind::StackTable::destroy(stacks);
  dlclose(plugin);
}

}  // namespace
}  // namespace profiling
