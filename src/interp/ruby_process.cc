#include "interp/ruby_process.h"

#include <cstdio>
#include <regex>

#include "interp/process_symbols.h"
#include "interp/readers.h"

namespace profiling::interp {
namespace {

// Threads read from a ractor's list at most (a cycle read mid-change ends).
constexpr int kMaxThreads = 4096;

}  // namespace

bool is_ruby_file(const std::string& base_name) {
  static const std::regex kRuby(R"(^(libruby[-.].*\.so.*|ruby[0-9.]*)$)");
  return std::regex_match(base_name, kRuby);
}

std::optional<RubyTarget> find_ruby(pid_t pid, std::string* why) {
  const std::string root = "/proc/" + std::to_string(pid) + "/root";
  std::string last_why = "no libruby or ruby program mapped in process " + std::to_string(pid);
  for (const auto& [path, mapping] : mapped_files(pid)) {
    if (!is_ruby_file(path.substr(path.rfind('/') + 1))) continue;
    ElfSymbols symbols =
        read_symbols(root + path, mapping, {"ruby_version", "ruby_current_vm_ptr", "rb_vm_exec"}, &last_why);
    if (!symbols.ok) continue;
    if (symbols.at("ruby_version") == 0 || symbols.at("ruby_current_vm_ptr") == 0) {
      last_why = path + ": no ruby_version or ruby_current_vm_ptr among its symbols";
      continue;  // the ruby program itself, linked with libruby
    }
    RubyTarget target;
    target.pid = pid;
    target.image = path;
    target.bias = symbols.bias;
    target.vm_pointer = symbols.at("ruby_current_vm_ptr");
    char version[16] = {};
    ProcessMemory memory(pid);
    if (!memory.read(symbols.at("ruby_version"), version, sizeof version - 1)) {
      *why = path + ": ruby_version could not be read";
      return std::nullopt;
    }
    target.version = version;
    int major = 0, minor = 0;
    if (std::sscanf(version, "%d.%d", &major, &minor) != 2) {
      *why = path + ": ruby_version is not a version (\"" + target.version + "\")";
      return std::nullopt;
    }
    const RubyLayout* layout = ruby_layout_for(major, minor);
    if (layout == nullptr) {
      *why = "Ruby " + std::to_string(major) + "." + std::to_string(minor) + ": frames not read, left native";
      return std::nullopt;
    }
    target.layout = *layout;
    const auto size = symbols.sizes.find("rb_vm_exec");
    if (symbols.at("rb_vm_exec") == 0 || size == symbols.sizes.end() || size->second == 0) {
      *why = "Ruby " + target.version + " in " + path + ": no rb_vm_exec symbol (its frames could not be merged)";
      return std::nullopt;
    }
    target.eval_loop_start = symbols.at("rb_vm_exec");
    target.eval_loop_end = target.eval_loop_start + size->second;
    return target;
  }
  *why = last_why;
  return std::nullopt;
}

void RubyThreads::refresh() {
  by_tid_.clear();
  const RubyLayout& l = target_.layout;
  uint64_t vm = 0, ractor = 0;
  if (!read_u64(memory_, target_.vm_pointer, &vm) || vm == 0 ||
      !read_u64(memory_, vm + l.vm_main_ractor, &ractor) || ractor == 0)
    return;
  // A ccan list: the head's next is the first node (rb_thread_t.lt_node),
  // the last node's next the head again.
  const uint64_t head = ractor + l.ractor_threads;
  uint64_t node = 0;
  if (!read_u64(memory_, head, &node)) return;
  for (int i = 0; i < kMaxThreads && node != head && node != 0; ++i) {
    const uint64_t thread = node - l.thread_node;
    int32_t tid = 0;
    if (!memory_.read(thread + l.thread_tid, &tid, sizeof tid)) return;
    if (tid > 0) by_tid_[tid] = thread;
    if (!read_u64(memory_, node, &node)) return;
  }
}

uint64_t RubyThreads::context_slot(pid_t tid) {
  auto it = by_tid_.find(tid);
  if (it == by_tid_.end()) {
    refresh();
    it = by_tid_.find(tid);
  }
  return it == by_tid_.end() ? 0 : it->second + target_.layout.thread_ec;
}

uint64_t RubyThreads::execution_context(pid_t tid) {
  // Read each time: a Fiber switch gives the thread another context.
  const uint64_t slot = context_slot(tid);
  uint64_t ec = 0;
  if (slot == 0 || !read_u64(memory_, slot, &ec)) return 0;
  return ec;
}

}  // namespace profiling::interp
