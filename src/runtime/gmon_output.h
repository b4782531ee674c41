// Where the gmon runtime and profil_openbsd() put their files, and how they
// write them. Runs at start-up and exit only (not async-signal-safe).
//
// Naming (docs/gmon-runtime.md):
//   - GMON_OUT_PREFIX set:  "<prefix>.<pid>" (glibc's rule, gmon/gmon.c),
//     in every process;
//   - otherwise "gmon.out" in the process that called monstartup, and
//     "gmon.out.<pid>" in a forked child, so that a child never overwrites
//     its parent's file (glibc's child writes gmon.out too, and whichever
//     exits last wins);
//   - profil_openbsd(): "gmon.<progname>.<pid>.out" (OpenBSD's prof_write).
// The directory is opened once, when profiling starts ($PROFDIR, else the
// starting directory), and the descriptor kept: a program that chdir()s
// still writes where it started.
//
// Files are written under a temporary name and renamed (base::AtomicFile:
// O_CREAT|O_EXCL|O_NOFOLLOW, so a symlink planted under either name is
// never followed). On failure one line goes to stderr naming the file, and
// an existing file of that name is left as it was.
#ifndef PROFIL_RUNTIME_GMON_OUTPUT_H
#define PROFIL_RUNTIME_GMON_OUTPUT_H

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace profiling::runtime {

std::string gmon_out_name(const char* prefix, pid_t pid, bool forked_child);
std::string openbsd_out_name(const char* progname, pid_t pid);

// A directory descriptor kept for writing at exit: O_PATH | O_DIRECTORY |
// O_CLOEXEC, moved above the descriptors a program usually counts on.
// -1 with errno on failure.
int open_output_directory(const char* path);
// Duplicates a descriptor the caller gave us (which it may close later);
// -1 with errno (EBADF) on failure.
int keep_directory_descriptor(int fd);

// "<dir>/<name>" for messages: the directory's path as the kernel knows it
// (/proc/self/fd), or name alone when name is absolute.
std::string shown_path(int dirfd, const std::string& name);

// Writes bytes to dirfd/name atomically. false after printing
// "profil: <path>: <reason> (...)" on stderr.
bool write_profile_file(int dirfd, const std::string& name, std::string_view bytes);

// The load bias of the object whose PT_LOAD segments hold address (what a
// PIE's addresses lose to match its ELF symbol values): 0 for a
// fixed-address executable or when no object holds it.
uint64_t load_bias_of(uint64_t address);

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_GMON_OUTPUT_H
