// A source is one file: this test-only one, written against source.h
// alone, feeds the sampler's process table from its own thread as the perf
// rings and the wall clock's poller do, and its samples come out of the
// sampler's take() as a profile of the process it named.
#include "outside/source.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <memory>

#include "outside/sampler.h"

namespace profiling::outside {
namespace {

constexpr uint64_t kPc = 0x1234;

// Tells the table of this process (as the perf rings do of a launched
// one), then gives it `count` CPU samples at kPc without registers: the PC
// alone, as a kernel thread's sample.
class TickSource final : public Source {
 public:
  TickSource(Feed feed, int count) : feed_(feed), count_(count) {}
  void start() override {
    thread_.start([this] {
      const pid_t pid = ::getpid();
      tid_.store(static_cast<int32_t>(::syscall(SYS_gettid)));
      {
        std::lock_guard<FeedLock> hold(feed_.lock);
        feed_.table.add_running(pid, monotonic_ns());
      }
      for (int i = 0; i < count_ && !thread_.stopping(); ++i) {
        perf::Sample s;
        s.who.pid = static_cast<uint32_t>(pid);
        s.who.tid = static_cast<uint32_t>(tid_.load());
        s.who.time = monotonic_ns();
        s.ip = kPc;
        std::lock_guard<FeedLock> hold(feed_.lock);
        feed_.table.on_sample(s, false);
      }
      done_.store(true);
    });
  }
  void pause() override { thread_.stop(); }
  void stop() override { thread_.stop(); }
  bool done() const { return done_.load(); }
  int32_t tid() const { return tid_.load(); }

 private:
  Feed feed_;
  int count_;
  std::atomic<bool> done_{false};
  std::atomic<int32_t> tid_{0};
  SourceThread thread_;
};

TEST(OutsideSource, ATestSourcesSamplesComeOutOfTake) {
  SamplerOptions options;
  options.hz = 250;
  Sampler sampler(options);
  auto source = std::make_unique<TickSource>(sampler.feed(), 40);
  const TickSource& ticks = *source;
  sampler.add(std::move(source));
  sampler.start();
  for (int i = 0; i < 5000 && !ticks.done(); ++i) ::usleep(1000);
  ASSERT_TRUE(ticks.done());
  sampler.stop();
  EXPECT_EQ(sampler.samples(), 40u);

  const std::vector<ImageProfile> images = sampler.take(true);
  ASSERT_EQ(images.size(), 1u);
  const format::Profile& profile = images[0].data.profile;
  EXPECT_EQ(profile.pid, ::getpid());
  EXPECT_EQ(profile.clock, "perf");
  EXPECT_EQ(profile.period_ns, 4'008'000u);  // 250 Hz's, 1/500 longer (options.h)
  uint64_t count = 0;
  for (const format::Sample& s : profile.samples) {
    EXPECT_EQ(s.address, kPc);
    EXPECT_EQ(s.tid, ticks.tid());
    count += s.count;
  }
  EXPECT_EQ(count, 40u);
  EXPECT_EQ(images[0].data.cpu_ns, 40u * 4'008'000u);
}

}  // namespace
}  // namespace profiling::outside
