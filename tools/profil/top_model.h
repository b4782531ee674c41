// profil top's model (issue 33): the functions of the profiles the outside
// sampler hands over every second (OutsideRun::take_live), named once per
// address and counted per process, thread and function, for the last
// window and since the start.
//
// A live view cannot name every sample again each second as a report's
// model does (report/model.h: one pass over one profile): each address of
// a process image is asked of the FrameSymbolizer once, the first time a
// sample holds it, and its function kept by (pid, image, address); a
// window costs a lookup per frame of its distinct stacks.
//
// Self: the samples whose leaf is in the function; total: the samples with
// the function anywhere on their stack (counted once per sample, however
// often it recurs), as report views count them (docs/report.md).
//
// Not thread-safe: the view's thread alone (its FrameSymbolizer is not).
#ifndef PROFIL_TOOLS_TOP_MODEL_H
#define PROFIL_TOOLS_TOP_MODEL_H

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "outside/process_table.h"
#include "report/stacks.h"

namespace profiling::cli {

struct TopCounts {
  uint64_t self = 0, total = 0;  // sampling periods
  friend bool operator==(const TopCounts&, const TopCounts&) = default;
};

// One function in one thread of one process.
struct TopRow {
  std::string function;  // as views name it (report::StackFrame::function)
  std::string object;    // the object's file name
  int32_t pid = 0, tid = 0;
  std::string process, thread;  // names ("" unknown)
  TopCounts last, all;  // the last window, since the start
};

// Periods sampled in the last window and since the start.
struct TopSamples {
  uint64_t last = 0, all = 0;
};

// What the view draws from: the rows as they were at one window's end. A
// frozen view keeps one and sorts and filters it still.
struct TopSnapshot {
  std::vector<TopRow> rows;
  // Periods sampled per process in the last window and since the start
  // (every sample has one leaf: a process's rows' self counts sum to it).
  std::map<int32_t, TopSamples> process_samples;
  std::map<int32_t, std::string> process_names;  // as rows name them
  uint64_t windows = 0;  // windows added so far
};

class TopModel {
 public:
  explicit TopModel(report::FrameSymbolizer& frames) : frames_(frames) {}

  // One window: the profiles taken since the last (each holding only its
  // interval). The last window's counts become these; since-start ones grow.
  void add_window(const std::vector<outside::ImageProfile>& images);
  TopSnapshot snapshot() const;

  // Addresses named so far (each once), and the frames asked of the
  // symbolizer: a window of stacks seen before asks for none.
  size_t addresses_named() const { return named_.size(); }

 private:
  struct AddressKey {
    int32_t pid;
    int32_t generation;
    uint64_t address;
    friend bool operator==(const AddressKey&, const AddressKey&) = default;
  };
  struct AddressHash {
    size_t operator()(const AddressKey& k) const {
      return std::hash<uint64_t>()(k.address * 31 + (static_cast<uint64_t>(k.pid) << 8) + k.generation);
    }
  };
  struct RowKey {
    int32_t pid, tid;
    uint32_t function;
    friend bool operator==(const RowKey&, const RowKey&) = default;
  };
  struct RowHash {
    size_t operator()(const RowKey& k) const {
      return std::hash<uint64_t>()((static_cast<uint64_t>(k.function) << 32) ^ static_cast<uint32_t>(k.pid) ^
                                   (static_cast<uint64_t>(static_cast<uint32_t>(k.tid)) << 12));
    }
  };
  struct Function {
    std::string name, object;
  };

  uint32_t function_at(const outside::ImageProfile& image, uint64_t address);
  void count(const RowKey& key, uint64_t count, bool self);

  report::FrameSymbolizer& frames_;
  std::unordered_map<AddressKey, uint32_t, AddressHash> named_;  // -> functions_ index
  std::vector<Function> functions_;
  std::map<std::pair<std::string, std::string>, uint32_t> function_ids_;  // (name, object)
  std::unordered_map<RowKey, TopCounts, RowHash> last_, all_;
  std::map<int32_t, TopSamples> process_samples_;
  std::map<int32_t, std::string> process_names_;
  std::map<std::pair<int32_t, int32_t>, std::string> thread_names_;
  uint64_t windows_ = 0;
};

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_TOP_MODEL_H
