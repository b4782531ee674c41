// The words of profil run (run_print.h): one file to read to know what a
// user sees, and to keep the tests' expectations in one place.
#include "run_print.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "command.h"
#include "common.h"
#include "errno_text.h"
#include "format/profile.h"

namespace profiling::cli {
namespace {

namespace fs = std::filesystem;

// The unsampled time the outside source finds in the counts of ended
// threads (outside/process_table.h, ProcessTable::on_read).
bool ended_threads_time(const ProcessSummary& p, const format::profraw::Unsampled& record) {
  using format::profraw::UnsampledCause;
  return p.outside && (record.cause == static_cast<uint32_t>(UnsampledCause::ended_within_period) ||
                       record.cause == static_cast<uint32_t>(UnsampledCause::in_kernel));
}

std::string ending(const ProcessSummary& p) {
  using format::profraw::EndReason;
  switch (p.end_reason) {
    case EndReason::exit: return "";
    case EndReason::quick: return ", ended by _exit";
    case EndReason::exec: return ", then exec'd";
    case EndReason::filtered:
      return ", sampled up to its seccomp filter, which would refuse what sampling from inside does (--outside "
             "samples it whole)";
    case EndReason::signal: return ", ended by " + signal_name(static_cast<int>(p.signal));
    case EndReason::checkpoint: {
      // From outside, or a snapshot from inside: the process still ran
      // when its profile was cut (--duration, --every, --no-wait, attach).
      if (p.outside || p.snapshot) return ", still running when this profile ended";
      // No final dump: what ended it is known only for a process profil run
      // waited for itself; a dump that could not be written says so on the
      // process's own stderr (the runtime's line, above ours).
      const int status = p.reaped_status;
      if (p.write_error != 0)
        return ", its final dump could not be written (" + errno_text(p.write_error) +
               "): sampled up to its last checkpoint";
      if (status != -1 && WIFSIGNALED(status))
        return ", killed by " + signal_name(WTERMSIG(status)) + ": sampled up to its last checkpoint";
      if (status != -1)
        return ", exited (status " + std::to_string(WEXITSTATUS(status)) +
               ") without its final dump (it could not be written, and its own line above says why, or the "
               "process ended with a raw exit_group system call, as Go programs do): sampled up to its last "
               "checkpoint";
      return ", ended without its final dump (it could not be written, and its own line above says why, or the "
             "process was killed by SIGKILL or ended with a raw exit_group system call, as Go programs do): "
             "sampled up to its last checkpoint";
    }
  }
  return "";
}

std::string join(const std::vector<std::string>& items, const char* separator = ", ") {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

// Milliseconds as %g prints them: "2", "0.5".
std::string fmt_ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", ms);
  return text;
}

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", s);
  return text;
}

// The CPU time no sample caught, one line per cause (nothing when there is
// none): "profil: xz (pid 123): 3.85 s of CPU in 2 threads (tids 124, 125)
// not sampled: signals blocked"; and a note when the program's close moved
// it off the perf clock. Printed whatever the verbosity: a gap in the
// profile must never be silent. A process that sampled on perf-signal when
// the ring was asked for (`requested_clock`) says why.
void print_unsampled(const ProcessSummary& p, const std::string& requested_clock) {
  for (const format::profraw::Unsampled& record : p.unsampled) {
    if (ended_threads_time(p, record)) continue;  // said once for the run: print_ended_threads
    char cpu[32];
    // Three decimals below 0.1 s: a few periods of a short process are not
    // "0.00 s".
    const double seconds = static_cast<double>(record.cpu_ns) * 1e-9;
    std::snprintf(cpu, sizeof cpu, seconds < 0.1 ? "%.3f" : "%.2f", seconds);
    std::string threads;
    if (record.threads > 0) {
      threads = " in " + std::to_string(record.threads) + (record.threads == 1 ? " thread (tid " : " threads (tids ");
      const uint32_t listed = std::min<uint32_t>(record.threads, std::size(record.tids));
      for (uint32_t i = 0; i < listed; ++i) threads += (i ? ", " : "") + std::to_string(record.tids[i]);
      threads += record.threads > listed ? ", ...)" : ")";
    }
    std::fprintf(stderr, "profil: %s: %s s of CPU%s not sampled: %s\n", p.label.c_str(), cpu, threads.c_str(),
                 format::unsampled_cause_name(record.cause));
  }
  if (p.start_clock == "perf-signal" &&
      (requested_clock == "perf" || (requested_clock == "auto" && !p.interpreter_frames)))
    std::fprintf(stderr,
                 "profil: %s: no perf ring buffer could be mapped (locked memory: kernel.perf_event_mlock_kb, "
                 "ulimit -l); sampled with a signal per sample (perf-signal clock)\n",
                 p.label.c_str());
  if (!p.start_clock.empty() && p.start_clock != p.clock)
    std::fprintf(stderr,
                 "profil: %s: switched from the %s clock to the %s clock (the program closed the sampler's "
                 "descriptors)\n",
                 p.label.c_str(), p.start_clock.c_str(), p.clock.c_str());
}

// From outside, each ended thread's time after its last sample (and, where
// kernel mode is not sampled, its time in the kernel): a process shorter
// than a period has nothing else. Said once for the whole run, where it
// is not within the noise.
void print_ended_threads(const Conversion& c) {
  uint64_t ended_ns = 0, sampled_ns = 0, threads = 0;
  bool kernel = false;
  std::vector<const ProcessSummary*> all;
  for (const ProcessSummary& p : c.processes) all.push_back(&p);
  if (c.folded.pids != 0) all.push_back(&c.folded.sum);
  for (const ProcessSummary* each : all) {
    const ProcessSummary& p = *each;
    sampled_ns += p.samples * p.period_ns;
    for (const format::profraw::Unsampled& record : p.unsampled)
      if (ended_threads_time(p, record)) {
        ended_ns += record.cpu_ns;
        threads += record.threads;
        kernel = kernel || record.cause == static_cast<uint32_t>(format::profraw::UnsampledCause::in_kernel);
      }
  }
  // Below 1 % of what was sampled: the profile's rows say it, a line would
  // be noise on every run with threads.
  if (ended_ns == 0 || ended_ns * 100 < sampled_ns) return;
  const format::profraw::UnsampledCause cause =
      kernel ? format::profraw::UnsampledCause::in_kernel : format::profraw::UnsampledCause::ended_within_period;
  std::fprintf(stderr,
               "profil: %s s of CPU in %llu ended threads not sampled (%s; the kernel's count of each at its exit), "
               "in the profiles as [unsampled: %s]\n",
               seconds(static_cast<double>(ended_ns) * 1e-9).c_str(), static_cast<unsigned long long>(threads),
               kernel ? "in the kernel, which is not sampled here, or after their last sample"
                      : "after their last sample, or missed by the kernel's sampling",
               format::unsampled_cause_name(static_cast<uint32_t>(cause)));
}

// `more`: what the line adds about the rest of the run ("; 3 more ...")
// when it is the run's only line.
// The samples taken in profil's own code, left out of the files.
std::string own_clause(uint64_t own_samples) {
  return own_samples ? ", " + std::to_string(own_samples) + " more in profil's own code left out" : "";
}

void print_process(const ProcessSummary& p, const std::string& more = "") {
  if (p.samples == 0 && p.unsampled.empty()) {
    std::fprintf(stderr, "profil: %s: no samples (less than one sampling period of CPU%s)%s\n", p.label.c_str(),
                 ending(p).c_str(), more.c_str());
    return;
  }
  if (p.samples == 0) {
    // Only CPU time that ran unsampled (its lines follow): no "0 samples"
    // line pointing at a file that holds none of this process's samples.
    std::fprintf(stderr, "profil: %s: no samples (%s clock at %u Hz%s); its unsampled time -> %s%s\n",
                 p.label.c_str(), p.clock.c_str(), p.hz, ending(p).c_str(), join(p.files).c_str(), more.c_str());
    return;
  }
  std::fprintf(stderr, "profil: %s: %llu samples (%s s, %s clock at %u Hz%s%s%s%s) -> %s%s\n", p.label.c_str(),
               static_cast<unsigned long long>(p.samples), seconds(p.cpu_seconds()).c_str(), p.clock.c_str(), p.hz,
               p.outside ? " from outside" : "", p.dropped ? (", " + std::to_string(p.dropped) + " dropped").c_str() : "",
               own_clause(p.own_samples).c_str(), ending(p).c_str(),
               p.files.empty() ? "nothing written (see above)" : join(p.files).c_str(), more.c_str());
}

// The processes of the run that left nothing, beyond their start (the
// ledger's start record, or an empty placeholder): killed by a signal, or
// ended by a raw exit_group system call, before their first checkpoint (a
// dump every max(50 ms, 1/32 of the CPU so far) while a process runs).
// Mostly processes that never ran a whole sampling period — strace's probe
// child, which strace SIGKILLs, children a program kills — and never a
// loss (issue 20): a process killed by a signal ended normally, and one
// that could not write says so on its own stderr. "name (pid N)" each.
std::string unwritten_clause(const std::vector<std::string>& unwritten) {
  if (unwritten.empty()) return "";
  return std::to_string(unwritten.size()) + (unwritten.size() == 1 ? " more process" : " more processes") +
         " ended before a checkpoint with nothing written (killed by a signal, or a raw exit_group system call)";
}

// The default account of a run: one line (processes, samples, CPU, files).
void print_summary(const Conversion& c, const fs::path& dir, const std::vector<std::string>& unwritten) {
  std::vector<const ProcessSummary*> sampled;
  uint64_t samples = 0, dropped = 0, own = 0;
  double cpu = 0;
  for (const ProcessSummary& p : c.processes) {
    if (p.empty()) continue;
    sampled.push_back(&p);
    samples += p.samples;
    dropped += p.dropped;
    own += p.own_samples;
    cpu += p.cpu_seconds();
  }
  // Processes that ended in earlier snapshots, folded (fold_ended).
  const FoldedProcesses& folded = c.folded;
  if (!folded.sum.empty()) {
    sampled.push_back(&folded.sum);
    samples += folded.sum.samples;
    dropped += folded.sum.dropped;
    own += folded.sum.own_samples;
    cpu += folded.sum.cpu_seconds();
  }
  if (sampled.empty()) return;
  if (sampled.size() == 1 && folded.pids == 0) {
    print_process(*sampled.front(), unwritten.empty() ? "" : "; " + unwritten_clause(unwritten));
    return;
  }
  const std::string shared = std::to_string(c.shared_processes) + " processes of under " +
                             std::to_string(kOwnFileCpuNs / 1'000'000) + " ms of CPU each";
  std::string files;
  if (c.files.size() <= 3 && folded.files == 0) {
    for (const std::string& file : c.files)
      files += (files.empty() ? "" : ", ") + file + (file == c.shared_file ? " (" + shared + ")" : "");
  } else {
    files = std::to_string(c.files.size() + folded.files) + " files in " + dir.string();
    if (!c.shared_file.empty()) files += " (" + shared + " in " + fs::path(c.shared_file).filename().string() + ")";
  }
  // With --every a process has a summary per snapshot (and an empty one
  // where its last snapshot had nothing left): processes are counted by
  // pid, and the snapshots said.
  // A process that exec'd has a summary per image, each with a stem of its
  // own even when the program's name stays (a shell exec'ing shells: "41
  // processes sampled in 3 snapshots" was said of a run without --every):
  // snapshots are the summaries of one image's stem.
  std::set<int64_t> sampled_pids, all_pids;
  std::map<std::string, size_t> per_image;
  size_t snapshots = 1;
  for (const ProcessSummary* p : sampled) {
    if (p == &folded.sum) continue;
    if (p->samples > 0) sampled_pids.insert(p->pid);
    snapshots = std::max(snapshots, ++per_image[p->image_stem.empty() ? p->label : p->image_stem]);
  }
  for (const ProcessSummary& p : c.processes) all_pids.insert(p.pid);
  snapshots = std::max(snapshots, folded.snapshots);
  const size_t sampled_count = sampled_pids.size() + folded.sampled_pids;
  const size_t unsampled = all_pids.size() - sampled_pids.size() + folded.pids - folded.sampled_pids;
  std::string more;
  if (snapshots > 1) more += " in " + std::to_string(snapshots) + " snapshots";
  if (unsampled) more += ", " + std::to_string(unsampled) + " more under one sampling period";
  if (!unwritten.empty()) more += ", " + unwritten_clause(unwritten);
  std::fprintf(stderr, "profil: %zu process%s sampled%s: %llu samples (%s s, %s clock at %u Hz%s%s%s) -> %s\n",
               sampled_count, sampled_count == 1 ? "" : "es", more.c_str(),
               static_cast<unsigned long long>(samples), seconds(cpu).c_str(),
               sampled.front()->clock.c_str(), sampled.front()->hz, sampled.front()->outside ? " from outside" : "",
               dropped ? (", " + std::to_string(dropped) + " dropped").c_str() : "", own_clause(own).c_str(),
               files.c_str());
}

}  // namespace

void print_losses(const Conversion& c) {
  for (const Loss& loss : c.losses) fail(loss.what, loss.why);
  print_warnings(c.warnings);
}

void print_notes(const std::vector<RunNote>& notes, Conversion* c) {
  for (const RunNote& note : notes) {
    fail(note.what, note.why);
    if (note.loss) c->losses.push_back({note.what, note.why});
  }
}

void print_conversion(const Conversion& c, const fs::path& dir, bool verbose, const std::string& requested_clock,
                      const std::vector<std::string>& unwritten) {
  if (!verbose) print_summary(c, dir, unwritten);
  size_t empty = 0;
  for (const ProcessSummary& p : c.processes) {
    if (p.empty()) {
      ++empty;
      continue;
    }
    if (verbose) print_process(p);
    print_unsampled(p, requested_clock);
  }
  if (!c.folded.sum.empty()) print_unsampled(c.folded.sum, requested_clock);
  print_ended_threads(c);
  if (verbose && empty > 0)
    std::fprintf(stderr, "profil: %zu process%s without samples skipped\n", empty, empty == 1 ? "" : "es");
  if (verbose && !unwritten.empty())
    std::fprintf(stderr,
                 "profil: %zu process%s ended before a checkpoint with nothing written (killed by a signal, or a "
                 "raw exit_group system call; one that could not write says so in its own line): %s\n",
                 unwritten.size(), unwritten.size() == 1 ? "" : "es", list_processes(unwritten).c_str());
}

// Issue 20: at 4 kHz half of a deep python3's stacks were cut short, and a
// flame graph of them misleads without a word: how many, why, and what
// keeps more.
void print_cut_stacks(const Conversion& c, uint32_t hz) {
  uint64_t cut = 0, all = 0;
  for (const ProcessSummary& p : c.processes) {
    cut += p.cut_stacks;
    all += p.with_stacks;
  }
  if (all == 0 || cut * 20 <= all) return;
  std::fprintf(stderr,
               "profil: %llu of %llu samples (%.0f %%) have stacks cut short before the program's entry: deeper than "
               "the stack copy each perf ring record carries (16 KiB up to 1000 Hz, less above; %u Hz here), "
               "than PROFIL_STACK_DEPTH frames, or through code without unwind tables; a lower --hz, "
               "PROFIL_RING_STACK_BYTES (up to 61440) or --clock cpu (which unwinds the live stack) keeps more\n",
               static_cast<unsigned long long>(cut), static_cast<unsigned long long>(all),
               100.0 * static_cast<double>(cut) / static_cast<double>(all), hz);
}

// Issue 20: a static child, a set-ID program such as sudo, file
// capabilities, an environment without LD_PRELOAD went unprofiled in
// silence; one line for each program and reason instead.
void print_not_entered(const std::vector<format::profraw::LedgerRecord>& records) {
  using format::profraw::NotEntered;
  std::map<std::pair<std::string, uint32_t>, std::vector<int64_t>> seen;
  for (const format::profraw::LedgerRecord& record : records)
    if (record.kind == static_cast<uint32_t>(format::profraw::LedgerKind::not_entered))
      seen[{std::string(record.name), record.end_reason}].push_back(record.pid);
  for (const auto& [key, pids] : seen) {
    const char* why = "";
    switch (static_cast<NotEntered>(key.second)) {
      case NotEntered::static_program: why = "it is statically linked: no dynamic loader runs to preload libprofil.so"; break;
      case NotEntered::set_id: why = "it is set-user-ID or set-group-ID: secure execution ignores LD_PRELOAD"; break;
      case NotEntered::capabilities: why = "it has file capabilities: secure execution ignores LD_PRELOAD"; break;
      case NotEntered::no_preload: why = "it was given an environment without LD_PRELOAD (sudo and env -i clear it)"; break;
      case NotEntered::seccomp_filter:
        why = "its process installed a seccomp filter, which the new image keeps: profil issues no new system call under it";
        break;
    }
    std::string which = "pid " + std::to_string(pids.front());
    if (pids.size() > 1) which = std::to_string(pids.size()) + " times, first as pid " + std::to_string(pids.front());
    std::fprintf(stderr, "profil: %s (exec'd, %s) was not profiled: %s; a sampler outside the process can (perf record)\n",
                 key.first.c_str(), which.c_str(), why);
  }
}

namespace {

void say_nothing_written(const std::string& why) {
  std::fprintf(stderr, "profil: no profile was written: %s\n", why.c_str());
}

}  // namespace

void print_nothing_sampled_outside(const Conversion& c, unsigned hz, const std::string& attached, pid_t pid) {
  if (!c.losses.empty()) {
    // Sampled, and the files refused (issue 32: a full disk was said as
    // "ran for no whole sampling period").
    const Loss& first = c.losses.front();
    say_nothing_written(c.losses.size() == 1 ? first.what + " " + first.why
                                             : std::to_string(c.losses.size()) +
                                                   " profiles could not be written; the first, " + first.what +
                                                   ", " + first.why);
    return;
  }
  char cpu[48];
  std::snprintf(cpu, sizeof cpu, "(%.3g ms of CPU)", 1000.0 / hz);
  if (attached.empty())
    say_nothing_written(std::string("no process of the run ran for a whole sampling period ") + cpu);
  else
    say_nothing_written(attached + " (pid " + std::to_string(pid) + ") ran for no whole sampling period " + cpu +
                        " while attached");
}

void print_nothing_written(const Conversion& c, const fs::path& dir, unsigned hz,
                           const std::vector<std::string>& killed, const std::vector<std::string>& unrecorded,
                           const std::map<int64_t, std::string>& unfinished) {
  bool any_sampled = false;
  for (const ProcessSummary& p : c.processes) any_sampled = any_sampled || !p.empty();
  const std::string under_a_period = "each under " + fmt_ms(1e3 / hz) + " ms of CPU at " + std::to_string(hz) + " Hz";
  const size_t under = c.processes.size();
  const bool unwritten = !killed.empty() || !unrecorded.empty();
  if (!any_sampled && under > 0 && !unwritten && unfinished.empty() && c.losses.empty()) {
    say_nothing_written("no process ran for a whole sampling period (" + std::to_string(under) +
                        (under == 1 ? " process, " : " processes, ") + under_a_period + ")");
  } else if (!any_sampled && unwritten) {
    // Not "no process ran for a whole sampling period": one may have, and
    // been killed, or been unable to write (su, a privilege drop).
    std::vector<std::string> parts;
    if (under > 0)
      parts.push_back(std::to_string(under) + (under == 1 ? " process" : " processes") +
                      " under one sampling period (" + under_a_period + ")");
    if (!killed.empty())
      parts.push_back(std::to_string(killed.size()) + " killed by a signal before " +
                      (killed.size() == 1 ? "its" : "their") + " first checkpoint: " + list_processes(killed));
    if (!unrecorded.empty()) {
      std::string hint;
      struct stat st{};
      if (::geteuid() == 0 && ::stat(dir.c_str(), &st) == 0 && !(st.st_mode & S_IWOTH)) {
        char mode[16];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        hint = "; " + dir.string() + " (mode " + mode +
               ") is not writable by a process that gave up root's privileges (su, sudo -u, a server's workers)";
      }
      parts.push_back(std::to_string(unrecorded.size()) + (unrecorded.size() == 1 ? " process" : " processes") +
                      " ended before a checkpoint with nothing written: killed by a signal or a raw exit_group "
                      "system call, or unable to write into " + dir.string() +
                      " (then a line of its own above says why)" + hint);
    }
    say_nothing_written(join(parts, "; "));
  }
}

void print_left_running(const std::string& program, pid_t pid, const std::vector<std::string>& left, bool outside,
                        const std::string& dir) {
  std::fprintf(stderr, "profil: %s (pid %d) has ended; not waiting (--no-wait) for the %zu process%s it left running: %s; ",
               program.c_str(), static_cast<int>(pid), left.size(), left.size() == 1 ? "" : "es",
               list_processes(left).c_str());
  if (outside)
    std::fprintf(stderr, "they are sampled from outside until they end, then their profiles are written to %s\n",
                 dir.c_str());
  else
    std::fprintf(stderr, "each writes its dump to %s when it ends: profil run --convert %s turns them into profiles\n",
                 dir.c_str(), dir.c_str());
}

}  // namespace profiling::cli
