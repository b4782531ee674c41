// What the process table asks of any runtime's frames merged from outside
// (issues 31, 34): CPython's (python_frames.h) and Ruby's (ruby_frames.h)
// each put their frames into a sample's native stack by frames.h's rule
// (interp::merge_python_frames), at addresses of their own range
// (format::kInterpreterFrameBase for Python, format::kRubyFrameBase for
// Ruby), named in the profile's frames.
//
// NOT async-signal-safe, not thread-safe: the process table's, under the
// sampler's lock.
#ifndef PROFIL_OUTSIDE_INTERPRETER_FRAMES_H
#define PROFIL_OUTSIDE_INTERPRETER_FRAMES_H

#include <sys/types.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "format/profile.h"
#include "interp/frames.h"

namespace profiling::outside {

class InterpreterFrames {
 public:
  virtual ~InterpreterFrames() = default;
  // frames: one sample's stack, innermost first (the leaf, then the
  // callers), taken at time (ns, CLOCK_MONOTONIC), cut before its outermost
  // frame when native_truncated; the runtime's frames of thread tid are put
  // into it.
  virtual void merge(pid_t tid, uint64_t time, bool native_truncated, std::vector<uint64_t>* frames) = 0;
  // The same for a sample's leaf and callers as the process table keeps them.
  void merge(pid_t tid, uint64_t time, bool native_truncated, uint64_t* leaf, std::vector<uint64_t>* callers) {
    callers->insert(callers->begin(), *leaf);
    merge(tid, time, native_truncated, callers);
    *leaf = callers->front();
    callers->erase(callers->begin());
  }
  // Whether the thread held its runtime's lock in the last sample merge()
  // was given (CPython's GIL, issue 31): format::kGil*, kGilUnknown where
  // the runtime or its version does not tell.
  virtual uint8_t gil() const { return format::kGilUnknown; }
  // A thread ended: its state is freed, its tid may come back as another.
  virtual void forget_thread(pid_t tid) = 0;
  // The names of the addresses merge() made, for a profile's frames.
  virtual void name_frames(std::map<uint64_t, std::vector<format::Frame>>* frames) const = 0;
  // The last sample's frames were read after the fact (the reader should
  // read within a millisecond of each sample).
  virtual bool read_late() const = 0;
};

// The addresses a runtime's frames are shown at, from base on: the fixed
// frames given first (base, base + 1, ...: the misfit's and others), then
// one per (code id, line), named in the profile. Namer is the runtime's
// (interp::PythonCodeNamer, interp::RubyCodeNamer): identify(address) ->
// an id or Namer::kNoCode, code(id) with name, file and first_line, and
// line(code, instruction).
template <class Namer>
class FrameNames {
 public:
  FrameNames(uint64_t base, std::initializer_list<const char*> fixed) : base_(base) {
    for (const char* name : fixed) names_.push_back(format::Frame{name, name, "", 0});
  }

  // shown[i]: the address raw[i] is shown at, unnamed where its code could
  // not be read. Named now, at the sample: an address reused later by
  // another code object gets another id (python_code.h's rule), so this
  // sample keeps its names. Samples within kRecentNs of a code address's
  // identify() share it (python_code.h allows a batch: code freed and its
  // address reused within it keeps the first's name); the hot frames
  // repeat, so most samples read no code object. The window is each
  // address's, in both directions of time: the samples of one round come
  // CPU ring by CPU ring, not in time order, and one window for all
  // addresses, started again at each step back in time, had every code
  // object read again whenever a thread moved between CPUs (issue 31's
  // cost: ~80 identify() reads remain in a 1.5 s run at 4 kHz).
  void name(Namer& namer, const interp::RawFrame* raw, uint32_t count, uint64_t time, uint64_t unnamed,
            uint64_t* shown) {
    for (uint32_t i = 0; i < count; ++i) {
      const auto [known, added] = recent_.try_emplace(raw[i].code, Recent{Namer::kNoCode, time});
      const uint64_t since = known->second.since;
      if (added || (time > since ? time - since : since - time) > kRecentNs) {
        const uint32_t fresh = namer.identify(raw[i].code);
        // Unreadable now, an address named before keeps its name: the
        // process ended before the reader's last round (up to 100 ms of
        // samples; a CI run had main() and <module> "gone" in them, out of
        // the program's order).
        known->second = Recent{fresh != Namer::kNoCode || added ? fresh : known->second.id, time};
      }
      const uint32_t id = known->second.id;
      if (id == Namer::kNoCode) {
        shown[i] = unnamed;
        continue;
      }
      // An id's code and its line table never change (ids are not reused):
      // a frame seen before is shown where it was, without its line read
      // again (issue 31's cost: CPython's line tables are decoded from the
      // start at each look).
      const auto [at, seen] = shown_at_.try_emplace({id, raw[i].instruction}, 0);
      if (seen) at->second = address_of(namer, id, namer.line(namer.code(id), raw[i].instruction));
      shown[i] = at->second;
    }
  }

  void name_frames(std::map<uint64_t, std::vector<format::Frame>>* frames) const {
    for (size_t i = 0; i < names_.size(); ++i) (*frames)[base_ + i] = {names_[i]};
  }

 private:
  static constexpr uint64_t kRecentNs = 100'000'000;

  uint64_t address_of(Namer& namer, uint32_t code, int line) {
    const auto [it, added] = addresses_.try_emplace({code, line}, 0);
    if (!added) return it->second;
    const auto& c = namer.code(code);
    it->second = base_ + names_.size();
    names_.push_back(format::Frame{c.name, c.name, c.file, line > 0 ? line : c.first_line});
    return it->second;
  }

  uint64_t base_;
  std::map<std::pair<uint32_t, int>, uint64_t> addresses_;  // (code id, line) -> its address
  std::vector<format::Frame> names_;                         // by address - base_
  struct Recent {
    uint32_t id;     // the code address's id, or Namer::kNoCode
    uint64_t since;  // the time of the sample it was identified at
  };
  std::unordered_map<uint64_t, Recent> recent_;  // by code address
  struct FrameHash {
    size_t operator()(const std::pair<uint32_t, uint64_t>& f) const {
      return (f.second * 0x9E3779B97F4A7C15ull) ^ f.first;
    }
  };
  std::unordered_map<std::pair<uint32_t, uint64_t>, uint64_t, FrameHash> shown_at_;  // (code id, instruction) -> address
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_INTERPRETER_FRAMES_H
