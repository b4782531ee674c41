// fold_ended (issue 32): hours attached with --every fold the summaries of
// the processes that ended into one account, every window of theirs, and
// keep the running ones, the images before an exec and other events'.
#include "conversion_snapshots.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace profiling::cli {
namespace {

using format::profraw::EndReason;

ProcessSummary summary(const std::string& stem, int64_t pid, int snapshot, uint64_t samples, EndReason end,
                       const std::string& event = "") {
  ProcessSummary p;
  p.label = stem;
  p.image_stem = stem;
  p.pid = pid;
  p.samples = samples;
  p.period_ns = 1'000'000;
  p.hz = 1000;
  p.event = event;
  p.end_reason = end;
  p.outside = true;
  p.files = {stem + ".s" + std::to_string(snapshot) + (event.empty() ? "" : "." + event) + ".pb.gz"};
  return p;
}

format::profraw::Unsampled unsampled(uint32_t cause, uint32_t threads, uint64_t cpu_ns, int32_t first_tid) {
  format::profraw::Unsampled u{};
  u.cause = cause;
  u.threads = threads;
  u.cpu_ns = cpu_ns;
  for (uint32_t i = 0; i < threads && i < 8; ++i) u.tids[i] = first_tid + static_cast<int32_t>(i);
  return u;
}

// Three windows of a server (running), a worker that ended in the second
// (two windows of it), one that ended in the first with no sample, an
// image before an exec, and a page-faults profile of the ended worker.
Conversion three_windows() {
  Conversion c;
  auto add = [&c](ProcessSummary p) {
    c.files.insert(c.files.end(), p.files.begin(), p.files.end());
    c.processes.push_back(std::move(p));
  };
  add(summary("server.10", 10, 1, 1000, EndReason::checkpoint));
  add(summary("worker.20", 20, 1, 300, EndReason::checkpoint));
  ProcessSummary idle = summary("idle.30", 30, 1, 0, EndReason::exit);
  idle.files.clear();  // nothing sampled: no file of its own
  add(idle);
  add(summary("sh.40", 40, 1, 5, EndReason::exec));
  add(summary("server.10", 10, 2, 900, EndReason::checkpoint));
  ProcessSummary worker = summary("worker.20", 20, 2, 200, EndReason::exit);
  worker.dropped = 3;
  worker.cut_stacks = 7;
  worker.with_stacks = 190;
  worker.unsampled = {unsampled(1, 2, 4'000'000, 21)};
  worker.unsampled_counts = 4;
  add(worker);
  add(summary("worker.20", 20, 2, 50, EndReason::exit, "page-faults"));
  ProcessSummary later = summary("worker.50", 50, 3, 40, EndReason::signal);
  later.unsampled = {unsampled(1, 7, 6'000'000, 51), unsampled(2, 1, 1'000'000, 59)};
  later.unsampled_counts = 7;
  add(later);
  add(summary("server.10", 10, 3, 950, EndReason::checkpoint));
  return c;
}

bool has_file(const Conversion& c, const std::string& name) {
  return std::find(c.files.begin(), c.files.end(), name) != c.files.end();
}

TEST(FoldEnded, EndedProcessesOfEveryWindowFoldIntoOneAccount) {
  Conversion c = three_windows();
  const size_t files_before = c.files.size();
  fold_ended(&c);
  const FoldedProcesses& f = c.folded;
  EXPECT_EQ(f.pids, 3u);          // worker.20, idle.30, worker.50
  EXPECT_EQ(f.sampled_pids, 2u);  // idle.30 took no sample
  EXPECT_EQ(f.snapshots, 2u);     // worker.20's two windows
  EXPECT_EQ(f.files, 3u);         // worker.20.s1, worker.20.s2, worker.50.s3
  EXPECT_EQ(c.files.size(), files_before - 3);
  EXPECT_EQ(f.sum.samples, 300u + 200u + 0u + 40u);
  EXPECT_EQ(f.sum.dropped, 3u);
  EXPECT_EQ(f.sum.cut_stacks, 7u);
  EXPECT_EQ(f.sum.with_stacks, 190u);
  EXPECT_EQ(f.sum.unsampled_counts, 11u);
  EXPECT_EQ(f.sum.period_ns, 1'000'000u);
  EXPECT_TRUE(f.sum.outside);
  EXPECT_EQ(f.sum.label, "3 processes that ended");
}

TEST(FoldEnded, UnsampledRecordsSumByCauseWithTheirThreadsListed) {
  Conversion c = three_windows();
  fold_ended(&c);
  const auto& rows = c.folded.sum.unsampled;
  ASSERT_EQ(rows.size(), 2u);
  const auto cause1 = std::find_if(rows.begin(), rows.end(), [](const auto& u) { return u.cause == 1; });
  ASSERT_NE(cause1, rows.end());
  EXPECT_EQ(cause1->threads, 9u);  // 2 + 7
  EXPECT_EQ(cause1->cpu_ns, 10'000'000u);
  // The first 8 tids kept: worker.20's two, then worker.50's first six.
  EXPECT_EQ(cause1->tids[0], 21);
  EXPECT_EQ(cause1->tids[1], 22);
  EXPECT_EQ(cause1->tids[2], 51);
  EXPECT_EQ(cause1->tids[7], 56);
}

TEST(FoldEnded, RunningImagesBeforeAnExecAndOtherEventsAreKept) {
  Conversion c = three_windows();
  fold_ended(&c);
  size_t server = 0, sh = 0, faults = 0;
  for (const ProcessSummary& p : c.processes) {
    EXPECT_FALSE(p.image_stem == "idle.30" || p.image_stem == "worker.50") << p.image_stem;
    if (p.image_stem == "worker.20") {
      EXPECT_EQ(p.event, "page-faults") << "its CPU time's summaries were folded";
    }
    server += p.image_stem == "server.10";
    sh += p.image_stem == "sh.40";
    faults += p.event == "page-faults";
  }
  EXPECT_EQ(server, 3u);
  EXPECT_EQ(sh, 1u);
  EXPECT_EQ(faults, 1u);
  EXPECT_EQ(c.processes.size(), 5u);
  EXPECT_TRUE(has_file(c, "server.10.s3.pb.gz"));
  EXPECT_TRUE(has_file(c, "sh.40.s1.pb.gz"));
  EXPECT_TRUE(has_file(c, "worker.20.s2.page-faults.pb.gz"));
  EXPECT_FALSE(has_file(c, "worker.20.s1.pb.gz"));
}

TEST(FoldEnded, NothingEndedChangesNothing) {
  Conversion c;
  c.processes.push_back(summary("server.10", 10, 1, 1000, EndReason::checkpoint));
  c.files = c.processes[0].files;
  fold_ended(&c);
  EXPECT_EQ(c.processes.size(), 1u);
  EXPECT_EQ(c.files.size(), 1u);
  EXPECT_EQ(c.folded.pids, 0u);
  EXPECT_EQ(c.folded.sum.samples, 0u);
}

// A second fold (the next window) adds to the account already folded.
TEST(FoldEnded, LaterWindowsAddToTheFoldedAccount) {
  Conversion c = three_windows();
  fold_ended(&c);
  Conversion next;
  next.processes.push_back(summary("worker.60", 60, 4, 25, EndReason::exit));
  next.files = next.processes[0].files;
  append_conversion(&c, std::move(next));
  fold_ended(&c);
  EXPECT_EQ(c.folded.sum.samples, 540u + 25u);
  EXPECT_EQ(c.folded.files, 4u);
  EXPECT_FALSE(has_file(c, "worker.60.s4.pb.gz"));
}

// A window's warnings join the run's, each once: the symbolizer renewed
// every minute of snapshots finds the same missing object again.
TEST(AppendConversion, EachWarningIsSaidOnce) {
  Conversion run;
  Conversion first;
  first.warnings = {"libgone.so: no such file", "a.out: build id differs"};
  append_conversion(&run, std::move(first));
  Conversion later;
  later.warnings = {"a.out: build id differs", "libnew.so: no such file"};
  append_conversion(&run, std::move(later));
  EXPECT_EQ(run.warnings,
            (std::vector<std::string>{"libgone.so: no such file", "a.out: build id differs", "libnew.so: no such file"}));
}

}  // namespace
}  // namespace profiling::cli
