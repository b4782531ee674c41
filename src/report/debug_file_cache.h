// Uncompressed copies of compressed debug files, kept by build id. Debian's
// -dbg and -dbgsym packages ship their DWARF zlib-compressed (SHF_COMPRESSED,
// readelf -S flag C; older toolchains .zdebug_* sections): libdw inflates
// every debug section of a file when it opens its DWARF, 0.1 s of CPU for
// libc6-dbg's 4 MB file, on every report. The copy is written once and read
// after with no inflating, as perf keeps ~/.debug and debuginfod
// ~/.cache/debuginfod_client. See docs/report.md, "Symbolization".
#ifndef PROFIL_REPORT_DEBUG_FILE_CACHE_H
#define PROFIL_REPORT_DEBUG_FILE_CACHE_H

#include <string>

namespace profiling::report {

// $XDG_CACHE_HOME/profil/debug, else $HOME/.cache/profil/debug (XDG Base
// Directory Specification: a relative XDG_CACHE_HOME is ignored); empty when
// neither names an absolute directory. Read from the environment each call.
std::string debug_file_cache_dir();

// For the debug file open at fd (path: what to call it in a warning): when
// it has compressed sections and a build id, a new descriptor of its
// uncompressed copy "<dir>/<build id>.debug" and *copy its path. The copy is
// made now when absent or not valid (another build id, cut short) and make
// is true. -1 otherwise, with fd untouched: the caller reads the file as it
// is. A copy that cannot be written costs one warning on stderr per process,
// never the report.
int open_uncompressed_debug_file(int fd, const std::string& path, bool make, std::string* copy);

// The same with the cache directory given (tests).
int open_uncompressed_debug_file(int fd, const std::string& path, const std::string& dir, bool make,
                                 std::string* copy);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_DEBUG_FILE_CACHE_H
