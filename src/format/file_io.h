// Whole-file reads and writes for the tools. Writes go to a temporary name in
// the same directory and are renamed over the target only when complete
// (base::AtomicFile), so a crash or a full disk never leaves a half file
// where a good one was.
#ifndef PROFIL_FORMAT_FILE_IO_H
#define PROFIL_FORMAT_FILE_IO_H

#include <cstddef>
#include <string>
#include <string_view>

#include "format/format_error.h"

namespace profiling::format {

// The most bytes a profile file, or the data inflated from it, may hold: far
// above any real profile, and refused before it is allocated.
inline constexpr size_t kMaxInputSize = size_t{1} << 30;

// The bytes of a regular file of at most `limit` bytes. Anything else is
// refused before a byte is read: a FIFO (opened without waiting for a
// writer, O_NONBLOCK), a device such as /dev/zero, a directory, a file whose
// size (fstat) is over the limit; so is a file that grows past it while it
// is read (/proc files report size 0). False and *problem (without the
// path) on failure. With follow_symlinks false, a symbolic link is refused
// too (O_NOFOLLOW): for files a directory others can write is meant to hold.
bool try_read_file(const std::string& path, std::string* bytes, std::string* problem,
                   size_t limit = kMaxInputSize, bool follow_symlinks = true);

// The same, throwing FormatError("<path>: <problem>").
std::string read_file(const std::string& path, size_t limit = kMaxInputSize);

// "1 GiB", "512 KiB", or bytes: a limit as a person reads it.
std::string size_text(size_t bytes);

// Writes bytes to "<path>.tmp.<pid>" and renames it to path, the one
// place every tool writes an output file (issue 21: report/export.cc had a
// second copy). On failure an existing path is left untouched, and false
// comes back with *problem (strerror, without the path) and, when given,
// *error (the errno: a caller that says "disk full" needs ENOSPC).
bool try_write_file_atomically(const std::string& path, std::string_view bytes, std::string* problem,
                               int* error = nullptr);

// The same, throwing FormatError("<path>: <strerror>").
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace profiling::format

#endif  // PROFIL_FORMAT_FILE_IO_H
