// An errno as profil's messages print it: its name and its text,
// "ENOSYS (Function not implemented)", never a bare number (issue 20: "could
// not write the profile (errno 38)" said nothing a user could act on).
#ifndef PROFIL_TOOLS_ERRNO_TEXT_H
#define PROFIL_TOOLS_ERRNO_TEXT_H

#include <cerrno>
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

// Why a file could not be written into dir, as a user can act on it: the
// errno by name, and what it means there for the errors of a full or
// read-only disk (issue 32: a full disk was told as "no whole sampling
// period").
inline std::string write_refusal(int error, const std::string& dir) {
  std::string text = errno_text(error);
  if (error == ENOSPC) text += ": the file system of " + dir + " is full";
  else if (error == EDQUOT) text += ": the disk quota of " + dir + " is used up";
  else if (error == EROFS) text += ": " + dir + " is on a read-only file system";
  return text;
}

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_ERRNO_TEXT_H
