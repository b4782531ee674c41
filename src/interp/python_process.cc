#include "interp/python_process.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "interp/process_symbols.h"
#include "interp/readers.h"

namespace profiling::interp {
namespace {

// The tid-sized offsets of pthread_self()'s struct that hold gettid().
std::vector<int> tid_offsets_here() {
  std::vector<int> found;
  const auto* self = reinterpret_cast<const unsigned char*>(pthread_self());
  const pid_t tid = static_cast<pid_t>(::gettid());
  // struct pthread is over 2 KiB in every glibc 2.x; its tid is in the
  // first KiB (0x2d0 in glibc 2.36).
  for (int offset = 0; offset + 4 <= 1024; offset += 4) {
    pid_t value;
    std::memcpy(&value, self + offset, sizeof value);
    if (value == tid) found.push_back(offset);
  }
  return found;
}

}  // namespace

int glibc_pthread_tid_offset() {
  static const int offset = [] {
    const std::vector<int> here = tid_offsets_here();
    std::vector<int> there;
    std::thread([&] { there = tid_offsets_here(); }).join();
    for (int o : here)
      for (int p : there)
        if (o == p) return o;
    return -1;
  }();
  return offset;
}

std::optional<PythonTarget> find_python(pid_t pid, std::string* why) {
  const std::string root = "/proc/" + std::to_string(pid) + "/root";
  const auto files = mapped_files(pid);
  static const std::regex kLibrary(R"(^libpython(\d+)\.(\d+)[a-z]*\.so.*)");
  static const std::regex kProgram(R"(^python(\d+)(?:\.(\d+))?[a-z]*$)");
  // libpython first: a program linked with it keeps no interpreter state.
  std::vector<std::pair<std::string, MappedFile>> candidates;
  for (const std::regex* pattern : {&kLibrary, &kProgram})
    for (const auto& [path, mapping] : files) {
      const std::string base = path.substr(path.rfind('/') + 1);
      if (std::regex_match(base, *pattern)) candidates.emplace_back(path, mapping);
    }
  if (candidates.empty()) {
    *why = "no python program or libpython mapped in process " + std::to_string(pid);
    return std::nullopt;
  }
  std::string last_why;
  for (const auto& [path, mapping] : candidates) {
    ElfSymbols symbols = read_symbols(root + path, mapping,
                                      {"_PyRuntime", "Py_Version", "interp_head", "_PyThreadState_Current",
                                       "PyCode_Type", "_PyEval_EvalFrameDefault", "PyEval_EvalFrameEx"},
                                      &last_why);
    if (!symbols.ok) continue;
    auto symbol = [&](const char* name) {
      auto it = symbols.values.find(name);
      return it == symbols.values.end() ? uint64_t{0} : it->second + symbols.bias;
    };
    PythonTarget target;
    target.pid = pid;
    target.image = path;
    target.bias = symbols.bias;
    target.runtime = symbol("_PyRuntime");
    target.interp_head = symbol("interp_head");
    target.tstate_current = symbol("_PyThreadState_Current");
    target.code_type = symbol("PyCode_Type");
    // The evaluation loop whose native frames the Python frames stand in
    // for (frames.h): PyEval_EvalFrameEx itself on 2.7; from 3.6 on it is a
    // wrapper that reaches _PyEval_EvalFrameDefault, which runs the frames.
    for (const char* loop : {"_PyEval_EvalFrameDefault", "PyEval_EvalFrameEx"}) {
      const auto size = symbols.sizes.find(loop);
      if (symbol(loop) == 0 || size == symbols.sizes.end() || size->second == 0) continue;
      target.eval_loop_start = symbol(loop);
      target.eval_loop_end = target.eval_loop_start + size->second;
      break;
    }
    if (target.runtime == 0 && target.interp_head == 0) {
      last_why = path + ": neither _PyRuntime nor interp_head among its symbols (stripped?)";
      continue;
    }
    const std::string base = path.substr(path.rfind('/') + 1);
    std::smatch m;
    if (std::regex_match(base, m, kLibrary) || (std::regex_match(base, m, kProgram) && m[2].matched)) {
      target.major = std::stoi(m[1]);
      target.minor = std::stoi(m[2]);
    }
    ProcessMemory memory(pid);
    if (const uint64_t py_version = symbol("Py_Version"); py_version != 0) {
      uint32_t hex = 0;
      if (memory.read(py_version, &hex, sizeof hex)) {
        target.major = static_cast<int>(hex >> 24);
        target.minor = static_cast<int>((hex >> 16) & 0xff);
      }
    }
    if (target.major == 0) {
      *why = path + ": its CPython version could not be told (no Py_Version, no version in its name)";
      return std::nullopt;
    }
    const std::string version = "CPython " + std::to_string(target.major) + "." + std::to_string(target.minor);
    if (target.major == 3 && target.minor >= 13) {
      uint8_t offsets[kDebugOffsetsSize];
      const char* reason = nullptr;
      if (target.runtime == 0 || !memory.read(target.runtime, offsets, sizeof offsets)) {
        *why = version + ": _PyRuntime could not be read";
        return std::nullopt;
      }
      if (!python_layout_from_debug_offsets(offsets, sizeof offsets, &target.layout, &reason)) {
        *why = version + ": " + reason;
        return std::nullopt;
      }
    } else if (!python_layout_for(target.major, target.minor, &target.layout)) {
      *why = version + ": no frame layout for this version";
      return std::nullopt;
    }
    if (target.layout.runtime_interpreters_head >= 0 ? target.runtime == 0 : target.interp_head == 0) {
      *why = version + " in " + path + ": " +
             (target.layout.runtime_interpreters_head >= 0 ? "no _PyRuntime symbol" : "no interp_head in .symtab");
      return std::nullopt;
    }
    return target;
  }
  *why = last_why;
  return std::nullopt;
}

pid_t PythonThreads::tid_of(const uint8_t* tstate) {
  const PythonLayout& l = target_.layout;
  if (l.tstate_native_thread_id >= 0) {
    uint64_t native;
    std::memcpy(&native, tstate + l.tstate_native_thread_id, sizeof native);
    return static_cast<pid_t>(native);
  }
  uint64_t pthread;
  std::memcpy(&pthread, tstate + l.tstate_thread_id, sizeof pthread);
  const int offset = glibc_pthread_tid_offset();
  pid_t tid = 0;
  if (pthread == 0 || offset < 0 || !memory_.read(pthread + offset, &tid, sizeof tid) || tid <= 0) return 0;
  // Only a task of the process (another glibc's struct would give noise).
  const std::string task = "/proc/" + std::to_string(target_.pid) + "/task/" + std::to_string(tid);
  return ::access(task.c_str(), F_OK) == 0 ? tid : 0;
}

void PythonThreads::refresh() {
  const PythonLayout& l = target_.layout;
  states_.clear();
  by_tid_.clear();
  uint64_t interp = 0;
  const uint64_t head =
      l.runtime_interpreters_head >= 0 ? target_.runtime + l.runtime_interpreters_head : target_.interp_head;
  if (!read_u64(memory_, head, &interp)) return;
  std::vector<uint8_t> bytes(static_cast<size_t>(l.tstate_size));
  // Bounds against a list read mid-change that loops.
  for (int i = 0; interp != 0 && i < 256; ++i) {
    uint64_t tstate = 0;
    if (!read_u64(memory_, interp + l.interp_threads_head, &tstate)) return;
    for (int j = 0; tstate != 0 && j < 65536; ++j) {
      if (!memory_.read(tstate, bytes.data(), bytes.size())) break;
      const pid_t tid = tid_of(bytes.data());
      states_.emplace_back(tid, tstate);
      if (tid != 0) by_tid_[tid] = tstate;
      std::memcpy(&tstate, bytes.data() + l.tstate_next, sizeof tstate);
    }
    if (!read_u64(memory_, interp + l.interp_next, &interp)) return;
  }
}

void PythonThreads::forget(pid_t tid) { by_tid_.erase(tid); }

uint64_t PythonThreads::thread_state(pid_t tid) {
  auto found = by_tid_.find(tid);
  if (found != by_tid_.end()) return found->second;
  refresh();
  found = by_tid_.find(tid);
  return found == by_tid_.end() ? 0 : found->second;
}

std::vector<std::pair<pid_t, uint64_t>> PythonThreads::all() {
  refresh();
  return states_;
}

}  // namespace profiling::interp
