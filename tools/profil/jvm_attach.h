// A running JVM (HotSpot, as OpenJDK 17 here) asked for a diagnostic
// command through its own attach mechanism, the way jcmd(1) asks, without
// starting a JVM to do it (jcmd is one: ~0.5 s of CPU an ask). Used by
// profil run --jit and profil attach --jit to have a JVM write its perf map
// (Compiler.perfmap: /tmp/perf-PID.map, read by report/jit_map.h; issue 34).
//
// The mechanism, from HotSpot's Linux attach listener (JDK 9 onwards): a
// JVM with no attach listener yet starts one when it receives SIGQUIT and
// finds a file .attach_pid<PID> in its working directory or /tmp; the
// listener serves the UNIX socket /tmp/.java_pid<PID> to clients of the
// JVM's user (or root), each sending "1\0" (the protocol), the command
// ("jcmd\0"), and three arguments (the diagnostic command, then two empty),
// and reading back a status line ("0" for done) and the command's output.
// The listener is a thread of the JVM, "Attach Listener", which stays: the
// one trace the ask leaves, said by the commands.
//
// SIGQUIT's default is to dump core, and a JVM that does not take it as an
// attach trigger prints every thread's stack on its stdout, so a JVM is
// asked only when it catches SIGQUIT (its handler is installed: not while
// it starts, nor under -Xrs) and nothing says -XX:+DisableAttachMechanism
// (its command line, JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS, _JAVA_OPTIONS).
// Paths go through /proc/PID/root and its pid in its own namespace
// (NSpid), so a JVM in a container is found where it looks.
//
// NOT async-signal-safe: host side; no state, blocking calls (each bounded
// by a timeout and the caller's stop flag).
#ifndef PROFIL_TOOLS_JVM_ATTACH_H
#define PROFIL_TOOLS_JVM_ATTACH_H

#include <sys/types.h>

#include <atomic>
#include <string>

namespace profiling::cli {

// Whether pid runs a JVM: libjvm.so is mapped.
bool is_jvm(pid_t pid);

// Why the JVM pid cannot be asked now without harm ("" when it can).
std::string jvm_not_askable(pid_t pid);

// What one ask did.
struct JvmAnswer {
  bool done = false;          // the JVM ran the command and said so ("0")
  bool started_listener = false;  // it had no attach listener: it has one now
  std::string output;         // the command's output
  std::string problem;        // why not done
};

// Runs the diagnostic command (e.g. "Compiler.perfmap") in the JVM pid, as
// `jcmd PID command` does. Waits at most timeout_ms for the listener to
// start and as long for the answer, less once *stop becomes true.
JvmAnswer ask_jvm(pid_t pid, const std::string& command, int timeout_ms, const std::atomic<bool>* stop = nullptr);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_JVM_ATTACH_H
