// profil run [options] -- PROGRAM [ARGS...]
//
// Runs PROGRAM with libprofil preloaded (LD_PRELOAD) and PROFIL_RUN_DIR set,
// so that every process of the run — the program, its forked children, the
// programs they exec — writes a raw dump (<progname>.<pid>.profraw) when it
// ends; then turns each dump of this run into <progname>.<pid>.pb.gz (pprof
// profile.proto, every executable mapping with its build id) and, for the
// main executable, gmon.<progname>.<pid>.out (GNU gmon.out for gprof), and
// exits with the program's status. See docs/run.md.
// Built once the format and report layers it converts with are in the tree.
#if __has_include("format/pprof.h") && __has_include("format/file_io.h") && \
    __has_include("report/symbolizer.h")
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "command.h"
#include "format/file_io.h"
#include "format/format_error.h"
#include "format/gmon.h"
#include "format/pprof.h"
#include "format/profraw.h"
#include "report/symbolizer.h"

extern char** environ;

namespace profiling::cli {
namespace {

namespace fs = std::filesystem;

// The default rate (docs/run.md, "Why 500 Hz"): five times the traditional
// 100 Hz, for a slowdown measured by bench/run_overhead.sh at about 2 % on
// the cpu clock and 5 % on the perf clock on a VM where a sampling signal
// costs ~60 µs; 1000 Hz doubled that cost for 1.4 times the precision.
constexpr unsigned kDefaultHz = 500;

struct RunOptions {
  std::string output_dir;
  unsigned hz = 0;
  std::string clock;
  bool convert_only = false;
  bool symbolize = true;
  std::vector<std::string> command;
};

std::string errno_text(int error) { return std::strerror(error); }

// execvp's search (POSIX, Shell Command Language "Command Search and
// Execution"): a name with a slash is used as it is; otherwise the first
// PATH entry holding an executable regular file wins. Exit statuses as a
// shell gives them: 127 not found, 126 found but not executable.
struct Resolved {
  std::string path;
  int status = 0;  // 0, 126 or 127
  std::string problem;
};

Resolved resolve_program(const std::string& name) {
  auto check = [](const std::string& path) -> Resolved {
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) return {path, 127, errno_text(errno)};
    if (S_ISDIR(st.st_mode)) return {path, 126, "is a directory"};
    if (::access(path.c_str(), X_OK) != 0) return {path, 126, errno_text(errno)};
    return {path, 0, ""};
  };
  if (name.empty()) return {name, 127, "command not found"};
  if (name.find('/') != std::string::npos) return check(name);
  const char* path_env = std::getenv("PATH");
  std::string search = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::optional<Resolved> denied;
  size_t begin = 0;
  while (begin <= search.size()) {
    size_t end = std::min(search.find(':', begin), search.size());
    std::string dir = search.substr(begin, end - begin);
    if (dir.empty()) dir = ".";
    Resolved r = check(dir + "/" + name);
    if (r.status == 0) return r;
    if (r.status == 126 && !denied) denied = r;
    begin = end + 1;
  }
  if (denied) return *denied;
  return {name, 127, "command not found"};
}

// libprofil.so next to the tool: <bindir>/../lib/libprofil.so (the build
// tree and an installation alike).
std::string find_preload_library() {
  if (const char* explicit_path = std::getenv("PROFIL_LIBRARY"); explicit_path && *explicit_path)
    return explicit_path;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path bindir = self.parent_path();
  for (const char* relative : {PROFIL_LIBDIR_RELATIVE, "../lib"}) {
    fs::path candidate = (bindir / relative / "libprofil.so").lexically_normal();
    if (fs::exists(candidate, ec)) return candidate.string();
  }
  return "";
}

std::string make_run_id() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  uint32_t random = 0;
  if (::getrandom(&random, sizeof random, 0) != sizeof random) random = static_cast<uint32_t>(ts.tv_nsec);
  char text[64];
  std::snprintf(text, sizeof text, "%d-%lld%09ld-%08x", static_cast<int>(::getpid()),
                static_cast<long long>(ts.tv_sec), ts.tv_nsec, random);
  return text;
}

// The environment of the profiled program: ours, with the profiling
// variables set (LD_PRELOAD appended to, so the program's own preloads stay
// in front of ours).
std::vector<std::string> child_environment(const std::string& library, const std::string& dir,
                                           const std::string& run_id, unsigned hz,
                                           const std::string& clock) {
  std::map<std::string, std::string> overrides = {
      {"PROFIL_RUN_DIR", dir}, {"PROFIL_RUN_ID", run_id},
      {"PROFIL_HZ", std::to_string(hz)}, {"PROFIL_CLOCK", clock}};
  const char* preload = std::getenv("LD_PRELOAD");
  overrides["LD_PRELOAD"] = preload && *preload ? std::string(preload) + ":" + library : library;
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    std::string key = entry.substr(0, entry.find('='));
    if (!overrides.count(key)) env.push_back(std::move(entry));
  }
  for (auto& [key, value] : overrides) env.push_back(key + "=" + value);
  return env;
}

pid_t g_child = -1;

void forward_signal(int signo) {
  if (g_child > 0) ::kill(g_child, signo);
}

// Runs the program and every process it leaves behind to completion (the
// tool is their subreaper, so orphaned grandchildren come back to it and
// their profiles are written before conversion). Returns the wait status
// of the program itself, or -1 (exec error reported by the child).
int run_program(const Resolved& program, const std::vector<std::string>& argv,
                const std::vector<std::string>& env, std::string* exec_error) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + errno_text(errno));
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  // Like a shell waiting for a foreground job: the terminal's ^C and ^\ go
  // to the program (its process group is ours), not to us; TERM and HUP sent
  // to us are passed on. The program gets the default dispositions back.
  struct sigaction ignore{}, forward{}, old_int{}, old_quit{}, old_term{}, old_hup{};
  ignore.sa_handler = SIG_IGN;
  forward.sa_handler = forward_signal;
  forward.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGQUIT, &ignore, &old_quit);
  ::sigaction(SIGTERM, &forward, &old_term);
  ::sigaction(SIGHUP, &forward, &old_hup);

  std::fflush(nullptr);
  pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork: " + errno_text(errno));
  if (child == 0) {
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGQUIT, &old_quit, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
    ::sigaction(SIGHUP, &old_hup, nullptr);
    ::close(error_pipe[0]);
    ::execve(program.path.c_str(), cargv.data(), cenv.data());
    int error = errno;
    (void)!::write(error_pipe[1], &error, sizeof error);
    ::_exit(error == ENOENT ? 127 : 126);
  }
  g_child = child;
  ::close(error_pipe[1]);
  int exec_errno = 0;
  ssize_t got;
  do {
    got = ::read(error_pipe[0], &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  ::close(error_pipe[0]);

  int program_status = 0;
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: every descendant has ended
    }
    if (pid == child) {
      program_status = status;
      g_child = -1;
    }
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGQUIT, &old_quit, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  ::sigaction(SIGHUP, &old_hup, nullptr);
  if (got == sizeof exec_errno) {
    *exec_error = errno_text(exec_errno);
    return -1;
  }
  return program_status;
}

// ---- conversion ----

struct ObjectInfo {
  std::string build_id;
};

class Converter {
 public:
  explicit Converter(bool symbolize) : symbolize_(symbolize) {}

  // Converts one dump; returns a line saying what was written.
  std::string convert(const fs::path& raw_path, const format::ProfrawData& data) {
    format::Profile profile = data.profile;
    format::add_unsampled_rows(data, &profile);
    for (format::Mapping& mapping : profile.mappings) {
      if (mapping.path.empty() || mapping.path[0] != '/') continue;
      auto [it, inserted] = build_ids_.try_emplace(mapping.path);
      if (inserted) it->second = report::read_build_id(mapping.path);
      mapping.build_id = it->second;
    }
    const fs::path dir = raw_path.parent_path();
    // "<progname>.<pid>[.<n>]" of "<stem>.profraw", and of a writer's
    // leftover "<stem>.profraw.tmp.<pid>" too.
    std::string stem = raw_path.filename().string();
    size_t suffix = stem.rfind(".profraw");
    stem = suffix != std::string::npos ? stem.substr(0, suffix) : raw_path.stem().string();
    const fs::path pprof_path = dir / (stem + ".pb.gz");
    format::PprofSymbolizer symbolizer;
    if (symbolize_) {
      symbolizer = [this](const format::Mapping& mapping, uint64_t address) {
        std::vector<format::PprofFrame> frames;
        report::Symbol symbol = symbolizer_.symbolize(&mapping, address);
        if (symbol.known) {
          format::PprofFrame frame;
          frame.function = symbol.function;
          frame.system_name = symbol.function;
          report::SourceLine line = symbolizer_.source_line(&mapping, symbol);
          frame.file = line.file;
          frame.line = line.line;
          frames.push_back(std::move(frame));
        }
        return frames;
      };
    }
    format::write_file_atomically(pprof_path.string(), format::encode_pprof(profile, symbolizer));
    std::string written = pprof_path.string();

    if (auto gmon = gmon_for_main_executable(profile, data.hz)) {
      const fs::path gmon_path = dir / ("gmon." + stem + ".out");
      format::write_file_atomically(gmon_path.string(), *gmon);
      written += ", " + gmon_path.string();
    }
    return written;
  }

  std::vector<std::string> warnings() { return symbolizer_.take_warnings(); }

 private:
  // gmon.out for gprof: one histogram over the main executable's code, in
  // the link-time addresses gprof matches against the symbol table (the
  // load bias subtracted). Empty when the executable cannot be read.
  std::optional<std::string> gmon_for_main_executable(const format::Profile& profile, uint32_t hz) {
    if (profile.mappings.empty() || profile.mappings.front().path != profile.program) return std::nullopt;
    const format::Mapping& main = profile.mappings.front();
    uint64_t low = UINT64_MAX, high = 0, bias = 0;
    bool have_bias = false;
    for (const report::LoadSegment& segment : symbolizer_.segments(main)) {
      if (!segment.executable) continue;
      low = std::min(low, segment.vaddr);
      high = std::max(high, segment.vaddr + segment.mem_size);
      if (main.file_offset >= segment.file_offset &&
          main.file_offset < segment.file_offset + std::max(segment.file_size, uint64_t{1})) {
        // elf(5): the segment's byte at file offset o is at vaddr + (o - p_offset).
        bias = main.start - (segment.vaddr + (main.file_offset - segment.file_offset));
        have_bias = true;
      }
    }
    if (!have_bias || low >= high) return std::nullopt;
    format::GmonData data;
    data.histograms.push_back(format::histogram_from_samples(profile, bias, low, high, hz));
    return format::encode_gmon(data);
  }

  bool symbolize_;
  report::Symbolizer symbolizer_;
  std::map<std::string, std::string> build_ids_;
};

// "<progname> (pid N)", progname as in the file names (argv[0]'s, which
// for a link like sh -> dash is the name the program was called by).
std::string program_label(const fs::path& raw, const format::ProfrawData& data) {
  const std::string stem = raw.stem().string();
  const std::string pid = "." + std::to_string(data.profile.pid);
  size_t at = stem.rfind(pid);
  std::string name = at != std::string::npos && at > 0 ? stem.substr(0, at)
                                                       : fs::path(data.profile.program).filename().string();
  return name + " (pid " + std::to_string(data.profile.pid) + ")";
}

std::string ending(const format::ProfrawData& data) {
  using format::profraw::EndReason;
  switch (data.end_reason) {
    case EndReason::exit: return "";
    case EndReason::quick: return ", ended by _exit";
    case EndReason::exec: return ", then exec'd";
    case EndReason::signal: {
      const char* name = sigabbrev_np(static_cast<int>(data.signal));
      return std::string(", ended by SIG") + (name ? name : std::to_string(data.signal).c_str());
    }
  }
  return "";
}

// The CPU time no sample caught, one line per process (empty when there
// is none): "profil: xz (pid 123): 3.85 s of CPU in 2 threads (tids 124,
// 125) not sampled: signals blocked", one clause per cause; and a note
// when the program's close moved it off the perf clock.
std::string unsampled_lines(const std::string& label, const format::ProfrawData& data) {
  std::string out;
  for (const format::profraw::Unsampled& record : data.unsampled) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f", static_cast<double>(record.cpu_ns) * 1e-9);
    std::string threads;
    if (record.threads > 0) {
      threads = " in " + std::to_string(record.threads) + (record.threads == 1 ? " thread (tid " : " threads (tids ");
      const uint32_t listed = std::min<uint32_t>(record.threads, std::size(record.tids));
      for (uint32_t i = 0; i < listed; ++i) threads += (i ? ", " : "") + std::to_string(record.tids[i]);
      threads += record.threads > listed ? ", ...)" : ")";
    }
    out += "profil: " + label + ": " + seconds + " s of CPU" + threads +
           " not sampled: " + format::unsampled_cause_name(record.cause) + "\n";
  }
  if (!data.start_clock.empty() && data.start_clock != data.profile.clock)
    out += "profil: " + label + ": switched from the " + data.start_clock + " clock to the " + data.profile.clock +
           " clock (the program closed the sampler's descriptors)\n";
  return out;
}

// Converts the dumps; returns how many failed (each said on one line).
int convert_dumps(const std::vector<fs::path>& dumps, const std::string& run_id, bool symbolize) {
  Converter converter(symbolize);
  int failures = 0, converted = 0, empty = 0;
  for (const fs::path& raw : dumps) {
    try {
      std::string bytes, problem;  // the problem without the path: fail() below names it
      if (!format::try_read_file(raw.string(), &bytes, &problem)) throw format::FormatError(problem);
      if (!run_id.empty()) {
        // Only this run's dumps; another run's (or a foreign file) stay.
        format::profraw::Header header;
        try {
          header = format::read_profraw_header(bytes);
        } catch (const format::FormatError&) {
          continue;
        }
        if (std::string(header.run_id, strnlen(header.run_id, sizeof header.run_id)) != run_id) continue;
      }
      const format::ProfrawData data = format::read_profraw(bytes);
      const uint64_t samples = data.profile.total_count();
      if (samples == 0 && data.unsampled.empty()) {
        // A process that never ran a sampling period (a shell that exec'd
        // at once): nothing to show.
        ++empty;
        fs::remove(raw);
        continue;
      }
      const std::string written = converter.convert(raw, data);
      fs::remove(raw);
      ++converted;
      char cpu[32];
      std::snprintf(cpu, sizeof cpu, "%.3f", static_cast<double>(samples) * data.profile.period_ns * 1e-9);
      std::fprintf(stderr, "profil: %s: %llu samples (%s s, %s clock at %u Hz%s%s) -> %s\n",
                   program_label(raw, data).c_str(), static_cast<unsigned long long>(samples), cpu,
                   data.profile.clock.c_str(), data.hz,
                   data.profile.dropped ? (", " + std::to_string(data.profile.dropped) + " dropped").c_str() : "",
                   ending(data).c_str(), written.c_str());
      std::fputs(unsampled_lines(program_label(raw, data), data).c_str(), stderr);
    } catch (const std::exception& e) {
      ++failures;
      fail(raw.string(), e.what());
    }
  }
  for (const std::string& warning : converter.warnings()) std::fprintf(stderr, "profil: warning: %s\n", warning.c_str());
  if (empty > 0)
    std::fprintf(stderr, "profil: %d process%s without samples skipped\n", empty, empty == 1 ? "" : "es");
  if (converted == 0 && failures == 0 && !run_id.empty())
    std::fprintf(stderr,
                 "profil: no profile was written (a statically linked program cannot be preloaded)\n");
  return failures;
}

int run_command(RunOptions options) {
  // Options, then the environment a wrapper script may set, then defaults.
  if (options.hz == 0) {
    if (const char* env = std::getenv("PROFIL_HZ"); env && *env) {
      char* end = nullptr;
      unsigned long value = std::strtoul(env, &end, 10);
      if (*end != '\0' || value < 1 || value > 100000) return fail("PROFIL_HZ", std::string("bad rate '") + env + "' (1..100000)");
      options.hz = static_cast<unsigned>(value);
    } else {
      options.hz = kDefaultHz;
    }
  }
  if (options.clock.empty()) {
    const char* env = std::getenv("PROFIL_CLOCK");
    options.clock = env && *env ? env : "auto";
  }
  if (options.clock != "cpu" && options.clock != "perf" && options.clock != "auto" && options.clock != "wall")
    return fail("--clock", "'" + options.clock + "' is not one of cpu, perf, auto, wall");

  if (options.convert_only) {
    std::vector<fs::path> dumps(options.command.begin(), options.command.end());
    if (dumps.empty()) return fail("--convert", "no .profraw files given");
    return convert_dumps(dumps, "", true) == 0 ? 0 : 1;
  }

  if (options.command.empty()) return fail("run", "no program given (profil run [options] -- PROGRAM [ARGS...])");
  const Resolved program = resolve_program(options.command.front());
  if (program.status != 0) {
    fail(options.command.front(), program.problem);
    return program.status;
  }
  if (options.output_dir.empty()) {
    const char* env = std::getenv("PROFIL_RUN_DIR");
    options.output_dir = env && *env ? env : ".";
  }
  std::error_code ec;
  fs::create_directories(options.output_dir, ec);
  if (ec) return fail(options.output_dir, ec.message());
  const fs::path dir = fs::canonical(options.output_dir, ec);
  if (ec) return fail(options.output_dir, ec.message());
  if (::access(dir.c_str(), W_OK) != 0) return fail(dir.string(), errno_text(errno));
  const std::string library = find_preload_library();
  if (library.empty()) return fail("libprofil.so", "not found next to the profil tool (set PROFIL_LIBRARY)");

  const std::string run_id = make_run_id();
  const auto env = child_environment(library, dir.string(), run_id, options.hz, options.clock);
  std::string exec_error;
  const int status = run_program(program, options.command, env, &exec_error);
  if (status < 0) {
    fail(program.path, exec_error);
    return 126;
  }

  std::vector<fs::path> dumps;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".profraw") dumps.push_back(entry.path());
  std::sort(dumps.begin(), dumps.end());
  const int failures = convert_dumps(dumps, run_id, options.symbolize);

  int exit_status = 0;
  if (WIFEXITED(status)) exit_status = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) exit_status = 128 + WTERMSIG(status);
  if (failures > 0 && exit_status == 0) exit_status = 1;
  return exit_status;
}

const RegisterCommand kRunCommand(
    "run", "Profile a program and every process it starts (LD_PRELOAD); write pprof and gmon.out files",
    [](CLI::App& app) -> std::function<int()> {
      auto options = std::make_shared<RunOptions>();
      app.add_option("-o,--output", options->output_dir,
                     "Directory for the profiles (default: $PROFIL_RUN_DIR, else the current directory)");
      app.add_option("--hz", options->hz, "Samples per CPU-second (default: $PROFIL_HZ, else 500)")
          ->check(CLI::Range(1u, 100000u));
      app.add_option("--clock", options->clock, "Sampling clock: cpu, perf, auto or wall (default: $PROFIL_CLOCK, else auto)");
      app.add_flag("--convert", options->convert_only,
                   "Convert the given .profraw files (left by an interrupted run) instead of running a program");
      app.add_flag("!--no-symbolize", options->symbolize, "Leave function names out of the pprof files");
      // Everything from the program name on belongs to the program, options
      // included: prefix_command() stops parsing there and leaves it all in
      // remaining().
      app.add_option("command", options->command, "PROGRAM [ARGS...]");
      app.prefix_command();
      app.footer("Usage: profil run [options] -- PROGRAM [ARGS...]");
      CLI::App* self = &app;
      return [options, self]() {
        // After "--" CLI11 hands everything to the positional; without it,
        // parsing stops at the first argument it does not know and the rest
        // is in remaining().
        for (std::string& rest : self->remaining()) options->command.push_back(std::move(rest));
        if (!options->command.empty() && options->command.front() == "--")
          options->command.erase(options->command.begin());
        return run_command(*options);
      };
    },
    10);

}  // namespace
}  // namespace profiling::cli

#endif  // the format and report layers are present
