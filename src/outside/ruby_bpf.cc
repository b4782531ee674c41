#include "outside/ruby_bpf.h"

#include <bpf/bpf.h>
#include <linux/types.h>

#include "outside/bpf/ruby_stacks_abi.h"

namespace profiling::outside {

bool add_ruby_process(PythonStackReads& reads, pid_t pid, const interp::RubyLayout& l) {
  if (l.cfp_size == 0 || l.cfp_size > PROFIL_BPF_MAX_RUBY_CFP) return false;
  profil_rb_layout value{};
  value.thread_ec = l.thread_ec;
  value.ec_vm_stack = l.ec_vm_stack;
  value.ec_vm_stack_size = l.ec_vm_stack_size;
  value.ec_cfp = l.ec_cfp;
  value.cfp_pc = l.cfp_pc;
  value.cfp_iseq = l.cfp_iseq;
  value.cfp_ep = l.cfp_ep;
  value.cfp_size = l.cfp_size;
  value.frame_magic_mask = l.frame_magic_mask;
  value.frame_magic_dummy = l.frame_magic_dummy;
  value.frame_flag_finish = l.frame_flag_finish;
  value.frame_flag_cframe = l.frame_flag_cframe;
  const auto key = static_cast<__u32>(pid);
  return bpf_map_update_elem(reads.ruby_processes_fd(), &key, &value, BPF_ANY) == 0;
}

void forget_ruby_process(PythonStackReads& reads, pid_t pid) {
  const auto key = static_cast<__u32>(pid);
  bpf_map_delete_elem(reads.ruby_processes_fd(), &key);
}

}  // namespace profiling::outside
