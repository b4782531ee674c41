// profil run --jit and profil attach --jit (issue 34): each runtime profil
// knows is asked to write the map of its JIT code that report/jit_map.h
// reads, the one change to what the program runs with, which the run's
// summary says.
//
// - node: started with NODE_OPTIONS=--perf-basic-prof added (run only: V8
//   writes its map only when started so), and --interpreted-frames-native-
//   stack, which names the frames of interpreted functions in the stacks
//   (the callers of a hot function: its module's top level, node's loader). --perf-basic-prof rather than
//   --perf-prof: it writes /tmp/perf-PID.map, perf's place, which profil
//   already reads and copies, where --perf-prof writes jit-PID.dump into
//   the program's working directory (a user's source tree, maybe
//   read-only), with a copy of every compiled function's code (1.9 MB for
//   0.3 s of a small loop); its gains, source lines and load times, the
//   latter need the samples' times, which profiles do not carry yet. A
//   jitdump written with --perf-prof by the user is read all the same
//   (jitdump.h). Either flag also makes node 20's V8 write a code log,
//   isolate-0x<address>-<pid>-v8.log, in its working directory (its
//   --logfile is not allowed in NODE_OPTIONS): profil removes the ones its
//   flag made (remove_v8_logs), and says so.
// - a JVM: asked through its attach mechanism (jvm_attach.h: jcmd PID
//   Compiler.perfmap) rather than started with JAVA_TOOL_OPTIONS=
//   -XX:+DumpPerfMapAtExit, which prints "Picked up JAVA_TOOL_OPTIONS" on the
//   program's stderr. The map a JVM writes holds only the code it holds at
//   that moment, and at its exit it can no longer be asked (its listener
//   goes with its last threads; the outside's exit record comes after), so
//   it is asked as soon as it can be, then every kAskEvery while it runs
//   (or 20 times as long as the last ask took, when that is longer: a JVM
//   with a large code cache takes longer to write its map, and the asks'
//   share of its time stays under 5 %),
//   and at the end of an attach's window; each map is merged into the
//   output directory's copy (report::merge_jit_map), so code freed between
//   asks stays named, and memory reused is named by both (jit_map.h). What
//   no ask saw: code compiled after the last ask (at most kAskEvery of the
//   run's end) and freed between two asks.
//
// The asker's thread is its own; lines() may be called after stop().
// NOT async-signal-safe: host side.
#ifndef PROFIL_TOOLS_JIT_ASK_H
#define PROFIL_TOOLS_JIT_ASK_H

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace profiling::cli {

inline constexpr std::chrono::milliseconds kAskEvery{500};
inline constexpr int kAskCostShare = 20;  // the wait after an ask: at least this many times its length

// What run --jit adds to the program's environment: NODE_OPTIONS with
// --perf-basic-prof --interpreted-frames-native-stack appended (kept as it
// is when it asks for a map already: then *added is false). Returns the
// line the summary says of it.
std::string add_jit_environment(std::vector<std::string>* env, bool* added);

// The summary's lines, each "profil: --jit: <line>": what the environment
// said, then what the asker did.
void print_jit(const std::vector<std::string>& said, const std::vector<std::string>& asked);

struct Conversion;
class JitAsker;
// The end of profil run --jit, once the run's profiles are written: the
// code logs removed when node_flag (add_jit_environment added the flag),
// then the lines printed.
void finish_jit(JitAsker* asker, const std::vector<std::string>& said, bool node_flag, const Conversion& c);

// attach --jit of a process that cannot be asked (node: V8 writes its map
// only when started so): the line saying so, "" for any other.
std::string jit_not_askable_after_start(pid_t pid);

class JitAsker {
 public:
  // run: the JVMs among root's process tree (root included, pids empty);
  // attach: the given processes (root 0). Maps merged into dir.
  JitAsker(pid_t root, std::vector<pid_t> pids, std::filesystem::path dir);
  JitAsker(const JitAsker&) = delete;
  JitAsker& operator=(const JitAsker&) = delete;
  ~JitAsker();

  // The thread that asks every kAskEvery (or longer, kAskCostShare).
  void start();
  // Asks now, from the caller's thread, whether stopped or not (attach:
  // at the end of its window, once the thread is stopped).
  void ask_now();
  void stop();
  // Removes the code logs V8 wrote because of the flag add_jit_environment
  // added (never when the user's NODE_OPTIONS asked for a map already):
  // those node processes of the tree held open when a round saw them, and
  // isolate-0x*-<pid>-v8.log in the directory the run started in for the
  // given pids (a process too short for a round), each written since the
  // asker was made. After stop().
  void remove_v8_logs(const std::vector<int64_t>& pids);
  // One line per process asked or found not askable, for the summary:
  // "java (pid 12): asked for its perf map 6 times (jcmd 12
  // Compiler.perfmap, through its attach mechanism); it has an 'Attach
  // Listener' thread by it".
  std::vector<std::string> lines() const;

 private:
  struct Jvm {
    std::string name;
    int64_t began_ns = 0;  // CLOCK_REALTIME
    unsigned asks = 0, done = 0;
    bool started_listener = false;
    std::string problem;  // the last ask's, or why it was never asked
  };
  std::vector<pid_t> candidates() const;
  // stop: cuts an ask short. Returns the longest ask to an attach listener
  // already running (the first ask's start of one is no cost of the map).
  std::chrono::nanoseconds ask_round(const std::atomic<bool>* stop);

  pid_t root_ = 0;
  std::vector<pid_t> pids_;
  std::filesystem::path dir_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;  // guards jvms_ and the v8 logs: one round at a time
  std::mutex wait_mutex_;     // the thread's wait for its next round, and stop_
  std::condition_variable wake_;
  std::map<std::pair<pid_t, uint64_t>, Jvm> jvms_;  // by pid and start (pids are reused)
  std::thread thread_;
  std::filesystem::path started_in_;  // the current directory when made
  int64_t made_ns_ = 0;               // CLOCK_REALTIME when made
  std::set<std::string> v8_logs_;     // the code logs node processes held open
  size_t v8_logs_removed_ = 0;
};

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_JIT_ASK_H
