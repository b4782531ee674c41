// Where Ruby's VM keeps what the Ruby walker reads (ruby_walk.h) and the
// namer names (ruby_code.h): byte offsets in its structs, for each Ruby
// version profil reads (issue 34). The numbers are in ruby_layout.cc, each
// with the header and field it comes from.
//
// ASYNC-SIGNAL-SAFE: ruby_layout_for reads a constant table.
#ifndef PROFIL_INTERP_RUBY_LAYOUT_H
#define PROFIL_INTERP_RUBY_LAYOUT_H

#include <cstdint>

namespace profiling::interp {

struct RubyLayout {
  // rb_vm_t (vm_core.h): the VM's main ractor (ractor.main_ractor).
  uint32_t vm_main_ractor;
  // rb_ractor_t (ractor_core.h): its threads (threads.set, a ccan list
  // whose nodes are rb_thread_t.lt_node) and the execution context running
  // now (threads.running_ec: the thread holding the GVL).
  uint32_t ractor_threads, ractor_running_ec;
  // rb_thread_t (vm_core.h): lt_node, its execution context, its kernel
  // thread id (tid, Thread#native_thread_id).
  uint32_t thread_node, thread_ec, thread_tid;
  // rb_execution_context_t (vm_core.h): the VM stack (its VALUEs and their
  // count) and the innermost control frame; control frames grow down from
  // the stack's end.
  uint32_t ec_vm_stack, ec_vm_stack_size, ec_cfp;
  // rb_control_frame_t (vm_core.h) and its size.
  uint32_t cfp_pc, cfp_iseq, cfp_ep, cfp_size;
  // ep[0] (VM_ENV_DATA_INDEX_FLAGS): the frame's magic and flags (vm_core.h).
  uint64_t frame_magic_mask, frame_magic_dummy, frame_flag_finish, frame_flag_cframe;
  // rb_iseq_t.body (vm_core.h), and in rb_iseq_constant_body: the encoded
  // instructions, location.{pathobj, label, first_lineno}, insns_info.{body,
  // size, succ_index_table} (iseq.h's line table).
  uint32_t iseq_body, body_encoded, body_pathobj, body_label, body_first_lineno, body_insns_info,
      body_insns_info_size, body_succ_index_table;
  // iseq_insn_info_entry: its size and line_no (vm_core.h).
  uint32_t insn_info_size, insn_info_line_no;
  // struct succ_index_table (iseq.c): the immediate part's entries, the
  // blocks' start and size, and in a block its small-block ranks and bits.
  uint32_t succ_immediate, succ_blocks, succ_block_size, succ_block_small_ranks, succ_block_bits;
  // RString and RArray (include/ruby/internal/core/rstring.h, rarray.h):
  // the flags' type bits, the not-embedded flag, an embedded length's bits
  // and shift, and where the characters (elements) are either way.
  uint64_t type_mask, type_string, type_array, flag_noembed;
  uint32_t string_embed_len_shift, string_embed_len_mask, string_embedded, string_len, string_ptr;
  uint32_t array_embed_len_shift, array_embed_len_mask, array_embedded, array_ptr;
};

// The layout of Ruby major.minor, nullptr for a version profil does not
// read (its frames are left native).
const RubyLayout* ruby_layout_for(int major, int minor);

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_RUBY_LAYOUT_H
