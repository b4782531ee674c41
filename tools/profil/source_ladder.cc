// The ladder of sources (source_ladder.h).
#include "source_ladder.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "errno_text.h"
#include "outside/sampler.h"
#include "perf/event.h"

namespace profiling::cli {

OutsideRefusal outside_refusal(unsigned hz, bool stacks) {
  OutsideRefusal refusal;
  perf::EventSpec spec;
  spec.period_ns = 1'000'000;
  spec.inherit = true;
  spec.disabled = true;
  const long fd = perf::open_event(spec.attr(), 0, -1);
  if (fd < 0) {
    refusal.error = static_cast<int>(-fd);
    return refusal;
  }
  ::close(static_cast<int>(fd));
  // The rings the run would map, at the size the perf source halves down
  // to (larger ones are its to try, and to say): the kernel's allowance is
  // summed over the CPUs, so every CPU's ring is mapped at once, by the
  // source itself, on events opened disabled on this process and closed
  // unread.
  outside::Sampler probe(outside::SamplerOptions{
      .hz = hz, .stacks = stacks, .ring_pages = outside::kMinRingPages, .interpreter_frames = false});
  refusal.rings = probe.open_before_exec(::getpid());
  return refusal;
}

void print_sampling_inside_instead(const OutsideRefusal& refusal) {
  if (refusal.error != 0) {
    std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
    std::string paranoid;
    std::getline(in, paranoid);
    std::fprintf(stderr,
                 "profil: sampling from inside (the preloaded libprofil.so): the kernel refused the perf events that "
                 "sampling from outside needs (%s; kernel.perf_event_paranoid is %s: CAP_PERFMON, root, or a "
                 "seccomp filter around profil decide); --inside asks for it without this line\n",
                 errno_text(refusal.error).c_str(), paranoid.empty() ? "?" : paranoid.c_str());
    return;
  }
  std::fprintf(stderr,
               "profil: sampling from inside (the preloaded libprofil.so): sampling from outside is refused here: "
               "%s; --inside asks for it without this line\n",
               refusal.rings.c_str());
}

}  // namespace profiling::cli
