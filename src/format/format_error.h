// The one exception the format layer throws: a file (or bytes) that cannot be
// read or written as the format requires. The message names the problem; the
// caller prefixes the file name ("profil: <file>: <problem>").
#ifndef PROFIL_FORMAT_FORMAT_ERROR_H
#define PROFIL_FORMAT_FORMAT_ERROR_H

#include <stdexcept>
#include <string>

namespace profiling::format {

struct FormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The readers' and writers' one way out: throws FormatError(what).
[[noreturn]] inline void fail(const std::string& what) { throw FormatError(what); }

}  // namespace profiling::format

#endif  // PROFIL_FORMAT_FORMAT_ERROR_H
