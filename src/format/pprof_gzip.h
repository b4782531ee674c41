// gzip, both ways, for pprof's files: `go tool pprof` writes and expects a
// gzip'd profile.proto (pprof.h). zlib; throws FormatError.
#ifndef PROFIL_FORMAT_PPROF_GZIP_H
#define PROFIL_FORMAT_PPROF_GZIP_H

#include <string>
#include <string_view>

namespace profiling::format {

// One gzip member holding raw.
std::string gzip(const std::string& raw);

// The inflated bytes of one or more gzip members (as gunzip reads them);
// throws FormatError on damaged or truncated data, bytes after the end, and
// what would inflate past 1 GiB (a "gzip bomb"), refused before it is kept.
std::string gunzip(std::string_view compressed);

}  // namespace profiling::format

#endif  // PROFIL_FORMAT_PPROF_GZIP_H
