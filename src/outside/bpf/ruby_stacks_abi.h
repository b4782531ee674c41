/* What the BPF program's Ruby walk (ruby_stacks.bpf.h) and its host side
 * (outside/ruby_bpf.h) share: the layout a Ruby process is walked with.
 * Plain C, fixed-width fields, no padding: the same bytes on both sides.
 *
 * Issue 34: a Ruby 3.1 thread's control frames read at the sample, in the
 * kernel, by the same program, maps, ring and records as CPython's
 * (python_stacks_abi.h: a perf event carries one BPF program, so one
 * program serves both runtimes, chosen by the sampled process). A record's
 * frame is (rb_iseq_t, pc, VM_FRAME_FLAG_FINISH as kEntryFrame), as
 * interp/ruby_walk.h gives it after the fact; the host names the iseqs
 * (interp/ruby_code.h). */
#ifndef PROFIL_OUTSIDE_BPF_RUBY_STACKS_ABI_H
#define PROFIL_OUTSIDE_BPF_RUBY_STACKS_ABI_H

/* The largest control frame read in one call (3.1's is 64 bytes). */
#define PROFIL_BPF_MAX_RUBY_CFP 64

/* Where the walk reads, per process (interp::RubyLayout's fields of the
 * same names). The python_threads map gives each thread's rb_thread_t. */
struct profil_rb_layout {
  __u32 thread_ec;        /* rb_thread_t.ec (read at each sample: a Fiber switch changes it) */
  __u32 ec_vm_stack;      /* rb_execution_context_t.vm_stack */
  __u32 ec_vm_stack_size; /* ...vm_stack_size (VALUEs) */
  __u32 ec_cfp;           /* ...cfp, the innermost control frame */
  __u32 cfp_pc;
  __u32 cfp_iseq;
  __u32 cfp_ep;
  __u32 cfp_size;
  __u64 frame_magic_mask; /* ep[0]'s magic and flags */
  __u64 frame_magic_dummy;
  __u64 frame_flag_finish;
  __u64 frame_flag_cframe;
};

#endif
