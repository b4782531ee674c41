// What one ring's PERF_RECORD_LOST stands for in samples of the processes
// sampled. The kernel counts the records it could not write, whatever
// their kind: a sample, and as well a FORK, EXIT, COMM, MMAP or READ of a
// churning server's threads, and, with an attach's per-CPU events (the
// whole machine's records, filtered by the reader: perf_source.h), every
// other process's samples. Each lost record was counted as a lost sample
// of whichever process the LOST record's own id named (the one running
// when the kernel could write again): an hour attached to a server of
// ~400 s of CPU said "1416.53 s of CPU not sampled: ring buffer full" for
// one window (issue 32).
//
// Here a ring's lost records are counted at the share of its recent
// records that were samples of the tree (the kernel drops whatever comes
// while the ring is full: the mix lost is the mix written), each given to
// the process of the ring's latest such sample; the fractions carried, so
// that each lost sample is counted once over the run.
//
// NOT async-signal-safe, not thread-safe: one per ring, the reader's
// (under the feed's lock, perf_source.h).
#ifndef PROFIL_OUTSIDE_LOST_SHARE_H
#define PROFIL_OUTSIDE_LOST_SHARE_H

#include <cstdint>

#include "perf/records.h"

namespace profiling::outside {

class LostShare {
 public:
  // Every record read from the ring: a sample of the tree, or anything
  // else (another process's sample, a task record, a LOST).
  void tree_sample(uint32_t pid, uint32_t tid);
  void other_record();

  // The lost samples of the tree the record stands for (l.lost scaled,
  // l.who naming the ring's latest sample of the tree); lost 0 when the
  // ring has carried no sample of it.
  perf::Lost samples_of(perf::Lost l);

 private:
  void counted();
  // Records and tree samples read lately (halved past kRecent: the mix of
  // the last tens of thousands of records, not of the whole run).
  static constexpr uint64_t kRecent = 1u << 16;
  uint64_t records_ = 0, samples_ = 0;
  uint64_t carry_ = 0;  // the fraction of a sample, times records_, left from the last LOST
  uint32_t pid_ = 0, tid_ = 0;  // the latest sample of the tree's
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_LOST_SHARE_H
