#include "top_model.h"

#include <algorithm>

#include "report/symbolizer.h"

namespace profiling::cli {

uint32_t TopModel::function_at(const outside::ImageProfile& image, uint64_t address) {
  const format::Profile& profile = image.data.profile;
  const AddressKey key{static_cast<int32_t>(profile.pid), image.generation, address};
  if (auto it = named_.find(key); it != named_.end()) return it->second;
  // The function the symbol table names, without inline frames or lines:
  // a row is a function, and a line lookup per address is what a live
  // view cannot pay for.
  const std::vector<report::StackFrame> frames =
      frames_.frames_at(profile.mapping_for(address), address, profile.frames_for(address), false, false);
  Function f;
  if (!frames.empty()) {
    f.name = frames.back().function;
    f.object = frames.back().object.empty() ? "" : report::object_basename(frames.back().object);
  }
  auto [id, added] = function_ids_.try_emplace({f.name, f.object}, static_cast<uint32_t>(functions_.size()));
  if (added) functions_.push_back(std::move(f));
  named_.emplace(key, id->second);
  return id->second;
}

void TopModel::count(const RowKey& key, uint64_t n, bool self) {
  TopCounts& last = last_[key];
  TopCounts& all = all_[key];
  if (self) {
    format::saturating_add(last.self, n);
    format::saturating_add(all.self, n);
  }
  format::saturating_add(last.total, n);
  format::saturating_add(all.total, n);
}

void TopModel::add_window(const std::vector<outside::ImageProfile>& images) {
  ++windows_;
  // The last window is this one alone; rows it has no sample in stay, at 0.
  for (auto& [key, counts] : last_) counts = {};
  for (auto& [pid, samples] : process_samples_) samples.last = 0;
  std::vector<uint32_t> on_stack;
  for (const outside::ImageProfile& image : images) {
    const format::Profile& profile = image.data.profile;
    const auto pid = static_cast<int32_t>(profile.pid);
    if (!image.name.empty()) process_names_[pid] = image.name;
    for (const auto& [tid, name] : profile.thread_names) thread_names_[{pid, tid}] = name;
    TopSamples& process = process_samples_[pid];
    for (const format::Sample& sample : profile.samples) {
      if (sample.count == 0) continue;
      format::saturating_add(process.last, sample.count);
      format::saturating_add(process.all, sample.count);
      const uint32_t leaf = function_at(image, sample.address);
      on_stack.assign(1, leaf);
      for (uint64_t caller : profile.stacks.callers(sample.stack)) on_stack.push_back(function_at(image, caller));
      // Total once per sample: a recursive function is not counted twice.
      std::sort(on_stack.begin(), on_stack.end());
      on_stack.erase(std::unique(on_stack.begin(), on_stack.end()), on_stack.end());
      for (uint32_t function : on_stack) count({pid, sample.tid, function}, sample.count, function == leaf);
    }
  }
}

TopSnapshot TopModel::snapshot() const {
  TopSnapshot s;
  s.windows = windows_;
  s.process_samples = process_samples_;
  s.process_names = process_names_;
  s.rows.reserve(all_.size());
  for (const auto& [key, all] : all_) {
    TopRow row;
    const Function& f = functions_[key.function];
    row.function = f.name;
    row.object = f.object;
    row.pid = key.pid;
    row.tid = key.tid;
    if (auto it = process_names_.find(key.pid); it != process_names_.end()) row.process = it->second;
    if (auto it = thread_names_.find({key.pid, key.tid}); it != thread_names_.end()) row.thread = it->second;
    row.all = all;
    if (auto it = last_.find(key); it != last_.end()) row.last = it->second;
    s.rows.push_back(std::move(row));
  }
  return s;
}

}  // namespace profiling::cli
