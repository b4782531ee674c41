// Each thread's share of samples holding CPython's GIL (issue 31: "a
// thread's label says whether it held the GIL in the sample where the
// version tells"), from the samples' format::Sample::gil, for the labels
// views give threads: `--by thread` rows, the roots of --threads (tree,
// folded, the flame graph) and the HTML page's flame charts:
// "spinner 4242 [GIL 97 %]". A thread none of whose samples knows (not
// Python, a version that does not tell, --inside) gets no label, never a
// guess.
//
// NOT async-signal-safe (report side).
#ifndef PROFIL_REPORT_GIL_SHARES_H
#define PROFIL_REPORT_GIL_SHARES_H

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "format/profile.h"

namespace profiling::report {

class GilShares {
 public:
  explicit GilShares(const format::Profile& profile);
  // " [GIL 97 %]" for thread tid of process pid (0: the profile's own), or
  // "" when none of its samples says. The share is of its samples whose
  // state is known (by count), rounded, never 100 % unless every one held
  // it nor 0 % unless none did.
  std::string label(int64_t pid, int32_t tid) const;

 private:
  int64_t pid_;
  struct Counts {
    uint64_t held = 0, released = 0;
  };
  std::map<std::pair<int64_t, int32_t>, Counts> threads_;
};

}  // namespace profiling::report

#endif  // PROFIL_REPORT_GIL_SHARES_H
