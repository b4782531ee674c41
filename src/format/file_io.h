// Whole-file reads and writes for the tools. Writes go to a temporary name in
// the same directory and are renamed over the target only when complete
// (base::AtomicFile), so a crash or a full disk never leaves a half file
// where a good one was.
#ifndef PROFIL_FORMAT_FILE_IO_H
#define PROFIL_FORMAT_FILE_IO_H

#include <string>
#include <string_view>

#include "format/format_error.h"

namespace profiling::format {

// The file's bytes; throws FormatError("<path>: <strerror>").
std::string read_file(const std::string& path);

// Writes bytes to "<path>.tmp.<pid>" and renames it to path; throws
// FormatError("<path>: <strerror>") and leaves an existing path untouched
// on failure.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace profiling::format

#endif  // PROFIL_FORMAT_FILE_IO_H
