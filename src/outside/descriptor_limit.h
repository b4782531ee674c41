// profil's own descriptor limit, raised for an attach that opens one perf
// event per thread and CPU (issue 32: 1,000 and 10,000 busy threads).
// Only profil's process: nothing the target inherits. Host side, not for
// signal handlers.
#ifndef PROFIL_OUTSIDE_DESCRIPTOR_LIMIT_H
#define PROFIL_OUTSIDE_DESCRIPTOR_LIMIT_H

#include <cstddef>
#include <string>

namespace profiling::outside {

// The soft limit up to the hard one, and the hard one up to need where
// profil may (CAP_SYS_RESOURCE, up to fs.nr_open). "" when need fits, else
// the limit that stays and why ("1024, the hard limit: raising it needs
// CAP_SYS_RESOURCE, up to fs.nr_open (1048576)"), for the run's note.
std::string raise_descriptor_limit(size_t need);

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_DESCRIPTOR_LIMIT_H
