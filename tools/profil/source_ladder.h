// profil run's ladder of sources (issue 32), where no source was asked
// for: outside with stacks, outside with smaller rings (the perf source
// halves its rings and says so: outside/perf_source.cc), inside, nothing;
// each step down said in one line naming what refused the step above and
// what the user can change. Here: whether the outside's first step can be
// taken at all, asked of the kernel with profil's own process before the
// program starts, and the line of the move inside. profil attach, which
// cannot go inside, says the outside's refusal itself (cmd_attach.cc).
//
// NOT async-signal-safe: host side.
#ifndef PROFIL_TOOLS_SOURCE_LADDER_H
#define PROFIL_TOOLS_SOURCE_LADDER_H

#include <string>

namespace profiling::cli {

// Why the outside source cannot sample a program profil starts here: ""
// when it can. Asked with the events themselves, on profil's own process:
// perf_event_open (kernel.perf_event_paranoid, capabilities, a seccomp
// filter around profil), then a ring of the smallest size on every CPU
// (kernel.perf_event_mlock_kb, ulimit -l), as the run would map them.
struct OutsideRefusal {
  int error = 0;       // perf_event_open's errno, 0 when it opened
  std::string rings;   // why no ring could be mapped, "" when they could
  bool refused() const { return error != 0 || !rings.empty(); }
};
OutsideRefusal outside_refusal(unsigned hz, bool stacks);

// The line of the move inside: "profil: sampling from inside (...): ..."
// with the refusal and what would allow the outside.
void print_sampling_inside_instead(const OutsideRefusal& refusal);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_SOURCE_LADDER_H
