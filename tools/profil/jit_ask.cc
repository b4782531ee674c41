// Runtimes asked for their JIT maps (jit_ask.h).
#include "jit_ask.h"

#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "jvm_attach.h"
#include "run_convert.h"
#include "outside/proc_process.h"
#include "report/jit_map.h"

namespace profiling::cli {
namespace {

constexpr int kAskTimeoutMs = 5000;

// The map, and each interpreted function's frame as a copy of the
// interpreter's entry named in it (V8's --interpreted-frames-native-stack,
// for profilers that walk native stacks): a JavaScript function's callers
// are then named, not a row of Builtins_InterpreterEntryTrampoline.
constexpr const char* kNodeFlags = "--perf-basic-prof --interpreted-frames-native-stack";

std::string program_of(pid_t pid) {
  char exe[4096];
  const ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), exe, sizeof exe - 1);
  return n > 0 ? std::string(exe, static_cast<size_t>(n)) : "";
}

// Its parent and its start (proc(5) stat fields 4 and 22: clock ticks
// since boot); false once it has ended.
bool read_stat(pid_t pid, pid_t* ppid, unsigned long long* start_ticks) {
  const std::string stat = outside::read_text("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return false;
  int parent = 0;
  if (std::sscanf(stat.c_str() + close + 1,
                  " %*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &parent,
                  start_ticks) != 2)
    return false;
  *ppid = parent;
  return true;
}

int64_t nanoseconds(clockid_t clock) {
  timespec t{};
  ::clock_gettime(clock, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// A start in ticks since boot as CLOCK_REALTIME ns (what jit_map.h's
// rule of time compares files' times with).
int64_t realtime_of(unsigned long long start_ticks) {
  const int64_t since_boot = static_cast<int64_t>(start_ticks) * (1'000'000'000 / ::sysconf(_SC_CLK_TCK));
  return nanoseconds(CLOCK_REALTIME) - (nanoseconds(CLOCK_BOOTTIME) - since_boot);
}

// "isolate-0x<address>-<pid>-v8.log": the code log node's V8 writes.
bool is_v8_log_name(const std::string& name, int64_t pid) {
  return name.starts_with("isolate-0x") && name.ends_with("-" + std::to_string(pid) + "-v8.log");
}

}  // namespace

std::string add_jit_environment(std::vector<std::string>* env, bool* added) {
  *added = false;
  for (std::string& entry : *env) {
    if (!entry.starts_with("NODE_OPTIONS=")) continue;
    if (entry.find("--perf-basic-prof") != std::string::npos || entry.find("--perf-prof") != std::string::npos)
      return "the program's " + entry + " asks node for its map already";
    *added = true;
    (entry += " ") += kNodeFlags;
    return "the program started with " + entry + " (node writes /tmp/perf-PID.map by it)";
  }
  *added = true;
  env->push_back(std::string("NODE_OPTIONS=") + kNodeFlags);
  return "the program started with " + env->back() + " (node writes /tmp/perf-PID.map by it)";
}

void print_jit(const std::vector<std::string>& said, const std::vector<std::string>& asked) {
  for (const std::vector<std::string>* lines : {&said, &asked})
    for (const std::string& line : *lines) std::fprintf(stderr, "profil: --jit: %s\n", line.c_str());
}

void finish_jit(JitAsker* asker, const std::vector<std::string>& said, bool node_flag, const Conversion& c) {
  if (node_flag) {
    std::vector<int64_t> pids;
    for (const ProcessSummary& p : c.processes) pids.push_back(p.pid);
    asker->remove_v8_logs(pids);
  }
  print_jit(said, asker->lines());
}

std::string jit_not_askable_after_start(pid_t pid) {
  if (outside::base_name(program_of(pid)).starts_with("node"))
    return "node (pid " + std::to_string(pid) + ")" +
           " cannot be asked for a map once running: V8 writes one only when started with --perf-basic-prof "
           "(profil run --jit starts it so)";
  return "";
}

JitAsker::JitAsker(pid_t root, std::vector<pid_t> pids, std::filesystem::path dir)
    : root_(root), pids_(std::move(pids)), dir_(std::move(dir)), made_ns_(nanoseconds(CLOCK_REALTIME)) {
  std::error_code ec;
  started_in_ = std::filesystem::current_path(ec);
}

JitAsker::~JitAsker() { stop(); }

void JitAsker::start() {
  thread_ = std::thread([this] {
    std::unique_lock lock(wait_mutex_);
    while (!stop_.load()) {
      lock.unlock();
      const std::chrono::nanoseconds longest = ask_round(&stop_);
      lock.lock();
      wake_.wait_for(lock, std::max<std::chrono::nanoseconds>(kAskEvery, kAskCostShare * longest),
                     [this] { return stop_.load(); });
    }
  });
}

void JitAsker::ask_now() { (void)ask_round(nullptr); }

void JitAsker::stop() {
  {
    std::lock_guard lock(wait_mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::vector<pid_t> JitAsker::candidates() const {
  if (root_ == 0) return pids_;
  // root's tree: every process's parent, then down from root.
  std::multimap<pid_t, pid_t> children;
  if (DIR* proc = ::opendir("/proc")) {
    while (const dirent* e = ::readdir(proc)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      pid_t ppid = 0;
      unsigned long long start = 0;
      if (*end == '\0' && pid > 0 && read_stat(static_cast<pid_t>(pid), &ppid, &start))
        children.emplace(ppid, static_cast<pid_t>(pid));
    }
    ::closedir(proc);
  }
  std::vector<pid_t> tree{root_};
  for (size_t i = 0; i < tree.size(); ++i) {
    auto [from, to] = children.equal_range(tree[i]);
    for (auto it = from; it != to; ++it) tree.push_back(it->second);
  }
  return tree;
}

std::chrono::nanoseconds JitAsker::ask_round(const std::atomic<bool>* stop) {
  std::lock_guard lock(mutex_);
  std::chrono::nanoseconds longest{0};
  for (const pid_t pid : candidates()) {
    if (outside::base_name(program_of(pid)).starts_with("node")) {
      // The code log V8 holds open, wherever its working directory is.
      const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
      std::error_code ec;
      for (const auto& fd : std::filesystem::directory_iterator(fds, ec)) {
        const std::filesystem::path target = std::filesystem::read_symlink(fd.path(), ec);
        if (!ec && is_v8_log_name(target.filename().string(), pid)) v8_logs_.insert(target.string());
      }
      continue;
    }
    // Its maps read at every round: a launcher loads libjvm.so after its
    // exec, and a process of the tree may exec a JVM at any time.
    pid_t ppid = 0;
    unsigned long long start = 0;
    if (!read_stat(pid, &ppid, &start) || !is_jvm(pid)) continue;
    auto [it, found] = jvms_.try_emplace({pid, start});
    Jvm& jvm = it->second;
    if (found) {
      jvm.name = outside::process_name(pid);
      jvm.began_ns = realtime_of(start);
    }
    if (std::string why = jvm_not_askable(pid); !why.empty()) {
      // Still starting: asked at a later round. Ended: nothing more.
      if (jvm.done == 0 || why != "it has ended") jvm.problem = why;
      continue;
    }
    const auto asked = std::chrono::steady_clock::now();
    const JvmAnswer answer = ask_jvm(pid, "Compiler.perfmap", kAskTimeoutMs, stop);
    if (!answer.started_listener) longest = std::max(longest, std::chrono::steady_clock::now() - asked);
    ++jvm.asks;
    jvm.started_listener = jvm.started_listener || answer.started_listener;
    std::string problem = answer.problem;
    if (answer.done && report::merge_jit_map(pid, jvm.began_ns, dir_.string(), &problem)) {
      ++jvm.done;
      jvm.problem.clear();
    } else {
      jvm.problem = problem;
    }
  }
  return longest;
}

void JitAsker::remove_v8_logs(const std::vector<int64_t>& pids) {
  std::lock_guard lock(mutex_);
  std::set<std::string> logs = v8_logs_;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(started_in_, ec)) {
    const std::string name = entry.path().filename().string();
    for (const int64_t pid : pids)
      if (is_v8_log_name(name, pid)) logs.insert(entry.path().string());
  }
  for (const std::string& path : logs) {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const int64_t written_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    if (written_ns + 20'000'000 < made_ns_) continue;  // older than the run: not our flag's
    if (::unlink(path.c_str()) == 0) ++v8_logs_removed_;
  }
}

std::vector<std::string> JitAsker::lines() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  if (v8_logs_removed_ > 0)
    out.push_back("removed " + std::to_string(v8_logs_removed_) + " code log" + (v8_logs_removed_ == 1 ? "" : "s") +
                  " (isolate-0x*-PID-v8.log) that node's V8 wrote by that flag");
  for (const auto& [key, jvm] : jvms_) {
    const std::string who = jvm.name + " (pid " + std::to_string(key.first) + ")";
    if (jvm.done == 0) {
      out.push_back(who + ": its perf map could not be had: " + (jvm.problem.empty() ? "never asked" : jvm.problem));
      continue;
    }
    std::string line = who + ": asked for its perf map " + std::to_string(jvm.done) +
                       (jvm.done == 1 ? " time" : " times") + " (jcmd " + std::to_string(key.first) +
                       " Compiler.perfmap, through the JVM's attach mechanism); ";
    line += jvm.started_listener ? "it gained an 'Attach Listener' thread by it"
                                 : "its 'Attach Listener' thread was running already";
    if (jvm.asks > jvm.done) line += "; " + std::to_string(jvm.asks - jvm.done) + " asks failed: " + jvm.problem;
    out.push_back(line);
  }
  return out;
}

}  // namespace profiling::cli
