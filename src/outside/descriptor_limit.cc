#include "outside/descriptor_limit.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>

#include "outside/perf_records_apply.h"  // read_setting

namespace profiling::outside {

std::string raise_descriptor_limit(size_t need) {
  std::string why;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return why;
  if (need > limit.rlim_max) {
    const rlim_t hard = limit.rlim_max;
    const std::string nr_open = read_setting("/proc/sys/fs/nr_open");
    limit.rlim_max = std::min<rlim_t>(need, std::strtoull(nr_open.c_str(), nullptr, 10));
    limit.rlim_cur = limit.rlim_max;
    if (limit.rlim_max <= hard || ::setrlimit(RLIMIT_NOFILE, &limit) != 0)
      why = std::to_string(hard) + ", the hard limit: raising it needs CAP_SYS_RESOURCE, up to fs.nr_open (" + nr_open +
            ")";
  }
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
  return why;
}

}  // namespace profiling::outside
