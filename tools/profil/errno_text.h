// An errno as profil's messages print it: its name and its text,
// "ENOSYS (Function not implemented)", never a bare number (issue 20: "could
// not write the profile (errno 38)" said nothing a user could act on).
#ifndef PROFIL_TOOLS_ERRNO_TEXT_H
#define PROFIL_TOOLS_ERRNO_TEXT_H

#include <cstring>
#include <string>
#include <system_error>

namespace profiling::cli {

// "EACCES (Permission denied)"; a number the C library has no name for:
// "errno 4242 (Unknown error 4242)".
inline std::string errno_text(int error) {
  const char* name = ::strerrorname_np(error);  // glibc 2.32
  const std::string text = std::strerror(error);
  if (name == nullptr) return "errno " + std::to_string(error) + " (" + text + ")";
  return std::string(name) + " (" + text + ")";
}

// The same for a std::error_code of the filesystem library (its value is an
// errno in the generic and system categories); another category's message
// as it is.
inline std::string error_text(const std::error_code& ec) {
  if (ec.category() == std::generic_category() || ec.category() == std::system_category())
    return errno_text(ec.value());
  return ec.message();
}

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_ERRNO_TEXT_H
