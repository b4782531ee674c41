// Snapshots from inside: profil run --inside --every T (issue 21). The
// outside source cuts its snapshots in profil's own reader (outside_run.h);
// inside, the samples are in the processes, which write them only as
// dumps. So every T this asks each process of the run for a dump now —
// by growing a file of the run directory, never by a signal
// (runtime/snapshot_request.h says why) — and writes, for each dump that
// changed, what it holds beyond the dump last read: <stem>.s<n>.pb.gz,
// with pprof time_nanos and duration_nanos set to the interval.
//
// A process answers at its next 32 ticks of a thread's CPU, so a
// snapshot's interval ends where each process last answered, within about
// 32 sampling periods of its own CPU time of the request (64 ms at 500
// Hz); a request is read one interval later, when the next is made, and
// no sample falls between two snapshots or is counted in both. The last
// snapshot comes from the final dumps, through the run's conversion
// (reshape()).
//
// NOT async-signal-safe: host side. One thread of its own cuts the
// snapshots; reshape() runs on the caller's once stop() has returned.
#ifndef PROFIL_TOOLS_INSIDE_SNAPSHOTS_H
#define PROFIL_TOOLS_INSIDE_SNAPSHOTS_H

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "format/profraw.h"
#include "interval_clock.h"
#include "run_convert.h"

namespace profiling::cli {

// A's samples and unsampled time less B's, both cumulative dumps of one
// process image (B may be empty: none yet). Samples are matched by leaf
// and whole call chain, not by stack id, which two dumps may number
// differently; a count below B's (cannot happen for one image) gives 0.
format::ProfrawData subtract_dump(const format::ProfrawData& a, const format::ProfrawData& b);

class InsideSnapshots {
 public:
  InsideSnapshots(std::filesystem::path dir, std::string token, double every_s, ConvertOptions convert);
  ~InsideSnapshots();
  InsideSnapshots(const InsideSnapshots&) = delete;
  InsideSnapshots& operator=(const InsideSnapshots&) = delete;

  // The request file (created empty, O_EXCL); its path for PROFIL_SNAPSHOTS,
  // or "" with *why set.
  std::string prepare(std::string* why);
  void start();
  // Ends the snapshots' thread; then reshape() and the files written.
  void stop();
  // For the run's conversion of the final dumps: each becomes what came
  // after its last snapshot, as snapshot n+1.
  void reshape(ProcessProfile& profile);
  // The snapshots written so far, and what was lost writing them.
  Conversion take_written();

 private:
  void tick();
  void cut();

  std::filesystem::path dir_;
  std::string token_;
  double every_s_;
  ConvertOptions convert_;
  std::filesystem::path request_;
  int64_t interval_start_ns_ = 0;  // realtime of the last cut
  unsigned snapshot_ = 0;
  std::map<std::string, format::ProfrawData> last_;  // by stem: the dump last read
  // The file each dump path held when it was last read, to read it once.
  using DumpIdentity = std::tuple<uint64_t, int64_t, int64_t, int64_t>;  // inode, size, mtime s, ns
  std::map<std::string, DumpIdentity> read_;
  Conversion written_;
  ProfileSinks sinks_;  // one converter for every snapshot (run_convert.h)
  std::mutex lock_;  // written_
  bool asked_ = false;  // the clock's thread's
  IntervalClock clock_;
};

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_INSIDE_SNAPSHOTS_H
