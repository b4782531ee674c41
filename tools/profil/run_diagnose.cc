// What a run is missing and whether profil must own up to it
// (run_diagnose.h): a killed process ended normally, a profile that could
// not be written is a loss.
#include "run_diagnose.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <set>

#include "errno_text.h"
#include "run_dumps.h"
#include "run_print.h"

namespace profiling::cli {

namespace fs = std::filesystem;

std::string why_not_preloaded(const std::string& path, int depth) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string why;
  ::elf_version(EV_CURRENT);
  if (Elf* elf = ::elf_begin(fd, ELF_C_READ, nullptr)) {
    if (::elf_kind(elf) == ELF_K_ELF) {
      size_t count = 0;
      bool interpreter = false;
      if (::elf_getphdrnum(elf, &count) == 0) {
        for (size_t i = 0; i < count; ++i) {
          GElf_Phdr header;
          if (::gelf_getphdr(elf, static_cast<int>(i), &header) && header.p_type == PT_INTERP) interpreter = true;
        }
      }
      // Only the dynamic loader named by PT_INTERP reads LD_PRELOAD (ld.so(8)).
      if (::gelf_getclass(elf) == ELFCLASS32)
        why = "it is a 32-bit program, which cannot load the 64-bit libprofil.so";
      else if (!interpreter)
        why = "it is statically linked (no PT_INTERP), so no dynamic loader runs to preload libprofil.so";
    }
    ::elf_end(elf);
  }
  struct stat st{};
  struct statvfs fs_info{};
  if (why.empty() && ::fstat(fd, &st) == 0 && ::fstatvfs(fd, &fs_info) == 0 && !(fs_info.f_flag & ST_NOSUID)) {
    // Secure-execution mode (ld.so(8), getauxval(3) AT_SECURE): the kernel
    // sets it when exec changes the credentials, and the loader then ignores
    // LD_PRELOAD paths with a slash.
    if ((st.st_mode & S_ISUID) && st.st_uid != ::getuid())
      why = "it is set-user-ID, and the loader ignores LD_PRELOAD in such programs";
    else if ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) && st.st_gid != ::getgid())
      why = "it is set-group-ID, and the loader ignores LD_PRELOAD in such programs";
    else if (::fgetxattr(fd, "security.capability", nullptr, 0) > 0)
      why = "it has file capabilities, and the loader ignores LD_PRELOAD in such programs";
  }
  // A script: what its "#!" line names is what runs (execve(2)).
  char head[256] = {};
  if (why.empty() && depth == 0 && ::pread(fd, head, sizeof head - 1, 0) > 2 && head[0] == '#' && head[1] == '!') {
    std::string line(head + 2, std::strcspn(head + 2, "\n"));
    const size_t begin = line.find_first_not_of(" \t");
    if (begin != std::string::npos) {
      const std::string interpreter = line.substr(begin, line.find_first_of(" \t", begin) - begin);
      const std::string inner = why_not_preloaded(interpreter, depth + 1);
      if (!inner.empty()) why = "its interpreter " + interpreter + ": " + inner;
    }
  }
  ::close(fd);
  return why;
}

std::map<int64_t, int> refused_dumps(const std::vector<format::profraw::LedgerRecord>& records) {
  std::map<int64_t, int> refused;
  for (const format::profraw::LedgerRecord& record : records)
    if (record.kind == static_cast<uint32_t>(format::profraw::LedgerKind::unwritten))
      refused[record.pid] = static_cast<int>(record.signal);
  return refused;
}

namespace {

// A process that could not append to the ledger either says nothing to
// profil run; the directory may still: full, or read-only now.
int directory_refusal(const std::string& dir) {
  struct statvfs info{};
  if (::statvfs(dir.c_str(), &info) != 0) return 0;
  if (info.f_flag & ST_RDONLY) return EROFS;
  if (info.f_bavail == 0 || info.f_favail == 0) return ENOSPC;
  return 0;
}

}  // namespace

std::vector<std::string> RunDiagnosis::unwritten() const {
  std::vector<std::string> all = killed;
  all.insert(all.end(), unrecorded.begin(), unrecorded.end());
  return all;
}

// A process that was killed by a signal ended normally (issue 20: strace
// SIGKILLs its probe child, a program its workers), and one that started
// profiling and left nothing else (a start in the ledger) is counted,
// never a loss; a loss is a profile with samples that could not be
// written where profil run can tell (the program, an orphan it waited
// for, a dump begun and left empty), or a dump it cannot read.
RunDiagnosis diagnose_run(const Conversion& c, const RunOutcome& outcome, const std::string& program_path,
                          const std::map<int64_t, std::string>& unfinished,
                          const std::vector<format::profraw::LedgerRecord>& records,
                          const std::map<int64_t, std::string>& placeholders,
                          const std::function<bool(int64_t)>& alive, const std::string& dir) {
  RunDiagnosis d;
  const std::map<int64_t, int> refused = refused_dumps(records);
  const int dir_refusal = directory_refusal(dir);
  // The line of a process whose profile could not be written: the
  // runtime's record says why, else the directory.
  auto refusal_note = [&](const std::string& label, int64_t pid) -> bool {
    auto it = refused.find(pid);
    if (it != refused.end()) {
      d.notes.push_back({label, "its profile could not be written into " + dir + ": " + write_refusal(it->second, dir),
                         true});
      return true;
    }
    if (dir_refusal == 0) return false;
    d.notes.push_back({label,
                       "wrote no profile, and " + dir + " refuses new files now (" + write_refusal(dir_refusal, dir) +
                           "): its own line above says whether that is why",
                       true});
    return true;
  };
  // How the processes profil run waited for itself ended (the others'
  // parents took their statuses).
  auto reaped_of = [&outcome](int64_t pid) -> const Reaped* {
    auto it = outcome.reaped.find(static_cast<pid_t>(pid));
    return it != outcome.reaped.end() ? &it->second : nullptr;
  };
  for (const auto& [pid, path] : unfinished) {
    const Reaped* r = reaped_of(pid);
    const std::string how = r != nullptr && WIFSIGNALED(r->status)
                                ? "was killed by " + signal_name(WTERMSIG(r->status))
                                : "ended (killed by a signal, or another of its threads ended the process)";
    d.notes.push_back({path,
                       "an unfinished dump: pid " + std::to_string(pid) + " " + how +
                           " while writing its profile, so what it sampled is lost; removed",
                       false});
  }
  const std::string name = fs::path(program_path).filename().string();
  const std::string main_label = name + " (pid " + std::to_string(outcome.pid) + ")";
  auto dumped_at_end = [&c](int64_t pid) {
    auto it = c.dumped.find(pid);
    return it != c.dumped.end() && it->second;
  };
  // The program never preloaded at all (nothing of its pid): its file may say why.
  const bool main_silent = !c.dumped.count(outcome.pid);
  const std::string why = main_silent ? why_not_preloaded(program_path) : "";
  std::set<int64_t> said;
  for (const auto& [pid, reaped] : outcome.reaped) {
    if (!WIFSIGNALED(reaped.status) || dumped_at_end(pid) || unfinished.count(pid)) continue;
    said.insert(pid);
    const int signo = WTERMSIG(reaped.status);
    if (refused.count(pid)) {
      refusal_note((pid == outcome.pid ? name : reaped.name) + " (pid " + std::to_string(pid) + ")", pid);
    } else if (pid != outcome.pid) {
      d.killed.push_back(reaped.name + " (pid " + std::to_string(pid) + ", " + signal_name(signo) + ")");
    } else if (why.empty() && signo == SIGKILL) {  // else said below
      d.notes.push_back({main_label,
                         "killed by SIGKILL, which no process can catch, before its first checkpoint: what it "
                         "sampled could not be written",
                         false});
    } else if (why.empty()) {
      // The runtime writes the dump before most signals take their
      // default action: this one it could not, or does not catch.
      d.notes.push_back({main_label,
                         "killed by " + signal_name(signo) +
                             " and left no profile (if it could not write, its own line above says why)",
                         false});
    }
  }
  // A process that started profiling and left nothing else: a start in the
  // ledger with neither an end record nor a dump, or an empty placeholder
  // (the dump's file, created empty: at start by a process that could not
  // append to the ledger, else at its first dump, which then failed).
  std::map<int64_t, std::string> started;  // pid -> its program's name
  std::set<int64_t> in_ledger;
  for (const format::profraw::LedgerRecord& record : records) {
    if (record.kind != static_cast<uint32_t>(format::profraw::LedgerKind::start)) continue;
    if (c.images.count({record.pid, record.start_ns}) || alive(record.pid)) continue;
    started.emplace(record.pid, program_of(record));
    in_ledger.insert(record.pid);
  }
  std::set<int64_t> dump_failed;  // began its first dump and could not write it
  for (const auto& [pid, program_name] : placeholders) {
    started.emplace(pid, program_name);
    if (in_ledger.count(pid)) dump_failed.insert(pid);
  }
  for (const auto& [pid, program_name] : started) {
    if (pid == outcome.pid || dumped_at_end(pid) || unfinished.count(pid) || said.count(pid)) continue;
    const std::string label = program_name + " (pid " + std::to_string(pid) + ")";
    const Reaped* r = reaped_of(pid);
    if (refusal_note(label, pid)) {
      // said: its dump was refused, by its record or by the directory
    } else if (dump_failed.count(pid))
      d.notes.push_back({label,
                         "its profile could not be written: it created its dump's file and could not write into it "
                         "(its own line above says why)",
                         true});
    else if (r != nullptr && WIFEXITED(r->status))
      // An orphan profil run waited for: it exited, and its exit writes
      // the dump, unless it was a raw exit_group.
      d.notes.push_back({label,
                         "exited (status " + std::to_string(WEXITSTATUS(r->status)) +
                             ") and wrote no profile: it could not be written (its own line above says why), or "
                             "the process ended with a raw exit_group system call before its first checkpoint",
                         true});
    else
      d.unrecorded.push_back(label);
  }
  if (main_silent && !why.empty()) {
    d.notes.push_back({main_label, "no profile: " + why, false});
  } else if (main_silent && !WIFSIGNALED(outcome.status) && refusal_note(main_label, outcome.pid)) {
    // said: its dump was refused
  } else if (main_silent && !WIFSIGNALED(outcome.status)) {
    d.notes.push_back({main_label,
                       "wrote no profile: it could not be written (its own line above says why), or the program "
                       "ended with a raw exit_group system call before its first checkpoint",
                       true});
  } else if (!dumped_at_end(outcome.pid) && !WIFSIGNALED(outcome.status) && refused.count(outcome.pid)) {
    refusal_note(main_label, outcome.pid);
  } else if (!dumped_at_end(outcome.pid) && !WIFSIGNALED(outcome.status)) {
    d.notes.push_back({main_label,
                       "exec'd a program that wrote no profile (a statically linked or set-user-ID program cannot "
                       "be preloaded; if it could not write, its own line above says why)",
                       false});
  }
  return d;
}

}  // namespace profiling::cli
