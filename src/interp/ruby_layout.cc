// ASYNC-SIGNAL-SAFE (ruby_layout.h): a constant table.
//
// Ruby 3.1 (x86-64), as Debian 12 builds it (libruby-3.1.so.3.1.2: no MJIT
// in use, no debug information). Where each number comes from: the struct
// definitions of Ruby 3.1's headers named below, as rbspy's bindgen output
// for 3.1.2 (ruby-structs/src/ruby_3_1_2.rs) lays them out and as the
// OpenTelemetry eBPF profiler's interpreter/ruby/ruby.go states them for
// 3.1; checked against a live Debian ruby 3.1.2 (the interp test
// RubyFrames.* reads them in one).
#include "interp/ruby_layout.h"

namespace profiling::interp {
namespace {

constexpr RubyLayout kRuby31 = {
    // rb_vm_t { VALUE self; struct { list_head set (16); unsigned cnt,
    // blocking_cnt; rb_ractor_t *main_ractor; ...} ractor; }: 8 + 16 + 8.
    .vm_main_ractor = 32,
    // rb_ractor_t.threads { list_head set; unsigned cnt, blocking_cnt,
    // sleeper; rb_global_vm_lock_t gvl (184 bytes: owner, a 40-byte mutex,
    // waitq, timer, timer_err, two 48-byte conds, need_yield, wait_yield);
    // rb_execution_context_t *running_ec; }: running_ec at 0x208 (OTel's
    // rb_ractor_struct.running_ec for 3.0-3.2), so set at 0x208 - 216.
    .ractor_threads = 304,
    .ractor_running_ec = 0x208,
    // rb_thread_t { list_node lt_node (16); VALUE self; rb_ractor_t *ractor;
    // rb_vm_t *vm (OTel's thread_struct.vm = 32); rb_execution_context_t
    // *ec; VALUE last_status; calling; top_self; top_wrapper; pthread_t
    // thread_id; int tid; } (tid: RB_THREAD_T_HAS_NATIVE_ID, Linux).
    .thread_node = 0,
    .thread_ec = 40,
    .thread_tid = 88,
    // rb_execution_context_t { VALUE *vm_stack; size_t vm_stack_size;
    // rb_control_frame_t *cfp; } (OTel: 0, 8, 16).
    .ec_vm_stack = 0,
    .ec_vm_stack_size = 8,
    .ec_cfp = 16,
    // rb_control_frame_t { pc; sp; iseq; self; ep; block_code; __bp__;
    // jit_return; }: 8 words (OTel: 64 bytes for 3.1-3.2, jit_return added
    // in 3.1).
    .cfp_pc = 0,
    .cfp_iseq = 16,
    .cfp_ep = 32,
    .cfp_size = 64,
    // VM_FRAME_MAGIC_MASK 0x7fff0001, VM_FRAME_MAGIC_DUMMY 0x79990001
    // (the thread's outermost frame, no vm_exec runs it),
    // VM_FRAME_FLAG_FINISH 0x0020 (vm_exec returns when this frame ends:
    // pushed by a C call into the VM), VM_FRAME_FLAG_CFRAME 0x0080 (a C
    // method or C block: no iseq).
    .frame_magic_mask = 0x7fff0001,
    .frame_magic_dummy = 0x79990001,
    .frame_flag_finish = 0x0020,
    .frame_flag_cframe = 0x0080,
    // rb_iseq_t { VALUE flags; VALUE wrapper; body; } (OTel: body 16).
    // rb_iseq_constant_body { enum type; unsigned iseq_size; VALUE
    // *iseq_encoded; (8) ... rb_iseq_location_t location at 64 { pathobj;
    // base_label; label; first_lineno (a Fixnum); } ... insns_info { body
    // at 120; positions; unsigned size at 136; succ_index_table at 144 } }
    // (OTel: encoded 8, location 64, insn_info_body 120, insn_info_size
    // 136, succ_index_table 144 for 2.6-3.1).
    .iseq_body = 16,
    .body_encoded = 8,
    .body_pathobj = 64,
    .body_label = 80,
    .body_first_lineno = 88,
    .body_insns_info = 120,
    .body_insns_info_size = 136,
    .body_succ_index_table = 144,
    // iseq_insn_info_entry { int line_no; int node_id; rb_event_flag_t
    // events; } (3.1: 12 bytes, OTel).
    .insn_info_size = 12,
    .insn_info_line_no = 0,
    // succ_index_table { uint64_t imm_part[IMMEDIATE_TABLE_SIZE / 9];
    // succ_dict_block succ_part[]; }, IMMEDIATE_TABLE_SIZE 54;
    // succ_dict_block { unsigned rank; uint64_t small_block_ranks; uint64_t
    // bits[8]; } (80 bytes) (iseq.c; OTel the same).
    .succ_immediate = 54,
    .succ_blocks = 48,
    .succ_block_size = 80,
    .succ_block_small_ranks = 8,
    .succ_block_bits = 16,
    // RUBY_T_MASK 0x1f, RUBY_T_STRING 0x05, RUBY_T_ARRAY 0x07; FL_USHIFT
    // 12: RSTRING_NOEMBED = RARRAY_EMBED_FLAG's bit, FL_USER1 (0x2000):
    // for a string it says NOT embedded, for an array embedded.
    .type_mask = 0x1f,
    .type_string = 0x05,
    .type_array = 0x07,
    .flag_noembed = 0x2000,
    // RString (3.1) { RBasic (16); union { struct { long len; char *ptr;
    // ... } heap; struct { char ary[24]; } embed; } as; }, an embedded
    // length in flags bits 14-18 (RSTRING_EMBED_LEN_SHIFT FL_USHIFT + 2).
    .string_embed_len_shift = 14,
    .string_embed_len_mask = 0x1f,
    .string_embedded = 16,
    .string_len = 16,
    .string_ptr = 24,
    // RArray { RBasic; union { struct { long len; aux; const VALUE *ptr; }
    // heap; const VALUE ary[3]; } as; }, an embedded length in bits 15-16
    // (RARRAY_EMBED_LEN_SHIFT FL_USHIFT + 3) (OTel: as_ary 16, heap ptr 32).
    .array_embed_len_shift = 15,
    .array_embed_len_mask = 3,
    .array_embedded = 16,
    .array_ptr = 32,
};

}  // namespace

const RubyLayout* ruby_layout_for(int major, int minor) {
  // Ruby 3.0 and 3.2+ differ (3.2: RString's length left the flags,
  // rb_ractor_t's threads and the iseq body moved; 3.3: the control frame
  // lost __bp__): not read until a table is written and checked for them.
  if (major == 3 && minor == 1) return &kRuby31;
  return nullptr;
}

}  // namespace profiling::interp
