/* Issue 34: a Ruby 3.1 thread's control frames read at the sample, in the
 * kernel: the Ruby half of python_stacks.bpf.c's program, included by it
 * after its maps (a perf event carries one BPF program: the one program
 * reads CPython or Ruby, by the sampled process's entry in its maps).
 *
 * For a thread whose process the host put in ruby_processes and whose
 * rb_thread_t it put in python_threads, it reads the thread's execution
 * context (rb_thread_t.ec, at each sample: a Fiber switch changes it) and
 * walks its control frames from cfp to the VM stack's end, as
 * interp/ruby_walk.cc does after the fact, with the same rules: the
 * outermost dummy frame, C frames and frames without a pc or iseq left
 * out, VM_FRAME_FLAG_FINISH the entry flag. Only the VM stack is read
 * here (the frames and their ep[0]); the host names the iseqs later
 * (interp/ruby_code.h). Two reads per control frame, bpf_loop over at most
 * PROFIL_BPF_MAX_STEPS of them. */
#ifndef PROFIL_OUTSIDE_BPF_RUBY_STACKS_BPF_H
#define PROFIL_OUTSIDE_BPF_RUBY_STACKS_BPF_H

#include "ruby_stacks_abi.h"

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32); /* tgid */
  __type(value, struct profil_rb_layout);
} ruby_processes SEC(".maps");

/* A VM stack size read past this is not one (interp/ruby_walk.cc's bound). */
#define PROFIL_RUBY_MAX_STACK_VALUES ((64ull << 20) / 8)

struct ruby_walk {
  struct scratch* s;
  const struct profil_rb_layout* layout;
  __u64 cfp; /* the next control frame */
  __u64 end; /* the VM stack's end: the outermost frame ends there */
  __u32 count;
  __u32 status;
};

/* One control frame (bpf_loop's callback). Returns 1 to stop. */
static long ruby_step(__u32 index, void* context) {
  struct ruby_walk* w = context;
  struct scratch* s = w->s;
  const struct profil_rb_layout* l = w->layout;
  __u32 size = l->cfp_size;
  if (size == 0 || size > PROFIL_BPF_MAX_RUBY_CFP) {
    w->status = PROFIL_PY_READ_ERROR;
    return 1;
  }
  if (w->cfp + size > w->end) return 1; /* past the outermost frame: complete */
  __u64 flags = 0;
  if (bpf_probe_read_user(s->frame, size, (const void*)w->cfp) != 0 ||
      bpf_probe_read_user(&flags, sizeof flags, (const void*)u64_at(s, (__s32)l->cfp_ep)) != 0) {
    w->status = PROFIL_PY_READ_ERROR;
    return 1;
  }
  w->cfp += size;
  if ((flags & l->frame_magic_mask) == l->frame_magic_dummy || (flags & l->frame_flag_cframe) != 0) return 0;
  const __u64 pc = u64_at(s, (__s32)l->cfp_pc), iseq = u64_at(s, (__s32)l->cfp_iseq);
  if (pc == 0 || iseq == 0) return 0;
  __u32 n = w->count;
  if (n >= PROFIL_BPF_MAX_FRAMES) {
    w->status = PROFIL_PY_TRUNCATED;
    return 1;
  }
  struct profil_py_frame* out = &s->record.frames[n & (PROFIL_BPF_MAX_FRAMES - 1)];
  out->code = iseq;
  out->instruction = pc;
  out->flags = (flags & l->frame_flag_finish) != 0 ? 1 : 0;
  out->pad = 0;
  w->count = n + 1;
  return 0;
}

/* The frames of the Ruby thread whose rb_thread_t is at thread, into
 * s->record (count and status). */
static void ruby_frames(struct scratch* s, const struct profil_rb_layout* l, __u64 thread) {
  struct ruby_walk w = {.s = s, .layout = l, .cfp = 0, .end = 0, .count = 0, .status = PROFIL_PY_READ_ERROR};
  __u64 ec = 0, stack = 0, values = 0;
  if (bpf_probe_read_user(&ec, sizeof ec, (const void*)(thread + l->thread_ec)) == 0 && ec != 0 &&
      bpf_probe_read_user(&stack, sizeof stack, (const void*)(ec + l->ec_vm_stack)) == 0 &&
      bpf_probe_read_user(&values, sizeof values, (const void*)(ec + l->ec_vm_stack_size)) == 0 &&
      bpf_probe_read_user(&w.cfp, sizeof w.cfp, (const void*)(ec + l->ec_cfp)) == 0 && stack != 0 &&
      values <= PROFIL_RUBY_MAX_STACK_VALUES) {
    w.end = stack + values * 8;
    /* Control frames grow down from the stack's end: cfp within it. */
    if (w.cfp >= stack && w.cfp <= w.end) {
      w.status = PROFIL_PY_COMPLETE;
      bpf_loop(PROFIL_BPF_MAX_STEPS, ruby_step, &w, 0);
      if (w.status == PROFIL_PY_COMPLETE && w.cfp + l->cfp_size <= w.end) w.status = PROFIL_PY_TRUNCATED;
    }
  }
  s->record.count = w.count;
  s->record.status = w.status;
}

#endif
