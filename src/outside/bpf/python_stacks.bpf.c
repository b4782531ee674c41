// SPDX-License-Identifier: GPL-2.0
/* Issue 31: a CPython thread's frame chain read at the sample, in the
 * kernel. Attached to each of the outside source's sampling events
 * (PERF_EVENT_IOC_SET_BPF; inherited with the event by new threads and
 * children), run by the kernel just before it writes the sample: for a
 * thread whose process and PyThreadState the host put in the maps, it walks
 * the frames (interp/python_walk.cc's walk, the same fields) and writes one
 * record, with the time and whether the thread held the GIL (one read more,
 * interp/python_gil.h), into a ring the host reads beside the samples.
 * The host pairs each sample with its thread's last record at or before the
 * sample's time (outside/python_bpf.h).
 *
 * Reads of the program's memory are bpf_probe_read_user: a page not present
 * fails the read (no fault is taken in this context), and the record says
 * kReadError; the host then falls back to reading after the fact.
 *
 * Ruby's control frames are read by the same program (ruby_stacks.bpf.h,
 * issue 34): an event carries one program, and the sampled process's entry
 * in python_processes or ruby_processes says which walk runs; both write
 * the same records to the same ring.
 *
 * The program always returns 1: the sample is written whatever happened
 * here (0 would drop it). Licensed GPL as the kernel's helpers it calls
 * (bpf_probe_read_user, bpf_get_ns_current_pid_tgid) require. */
// Kernel UAPI types only: the program reads no kernel structure, so it
// needs no CO-RE relocation (and the build no BTF).
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <linux/types.h>

#include <bpf/bpf_helpers.h>

#include "python_stacks_abi.h"

char LICENSE[] SEC("license") = "GPL";

/* profil's own pid namespace (its /proc/self/ns/pid), set before loading:
 * tids are compared with the ones profil reads from /proc. In the initial
 * namespace (init_pidns) they are the kernel's own, read by the cheaper
 * helper (issue 31's cost: ~120 ns less a sample, bpf_stats). */
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;
const volatile __u8 init_pidns = 0;

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32); /* tgid */
  __type(value, struct profil_py_layout);
} python_processes SEC(".maps");

/* 16384 threads: issue 32's 10,000-thread server fits; a thread beyond is
 * read after the fact. Not 65536: the kernel makes a hash map's buckets
 * at its creation, preallocated or not (16 bytes each: 1 MiB, ~1-2.5 ms
 * of each run, issue 31's cost). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32); /* tid */
  __type(value, __u64); /* its PyThreadState */
} python_threads SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 8 << 20); /* the most: python_bpf.cc sizes it by the rate */
} python_stacks SEC(".maps");

/* The record being built and the frame being read: too large for the
 * 512-byte BPF stack. */
struct scratch {
  struct profil_py_record record;
  __u8 frame[PROFIL_BPF_MAX_FRAME_READ];
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct scratch);
} scratch_space SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, PROFIL_PY_COUNTERS);
  __type(key, __u32);
  __type(value, __u64);
} counters SEC(".maps");

static void count(__u32 which) {
  __u64* value = bpf_map_lookup_elem(&counters, &which);
  if (value) *value += 1;
}

struct walk {
  struct scratch* s;
  const struct profil_py_layout* layout;
  __u64 frame; /* the next frame's address, 0 at the chain's end */
  __u32 count;
  __u32 status;
};

/* A field of the frame read into s->frame, at an offset the layout gives
 * (masked so the verifier sees it inside the buffer). */
static __u64 u64_at(const struct scratch* s, __s32 offset) {
  __u64 value = 0;
  __u32 at = (__u32)offset & (PROFIL_BPF_MAX_FRAME_READ - 1);
  if (at > PROFIL_BPF_MAX_FRAME_READ - 8) return 0;
  __builtin_memcpy(&value, &s->frame[at], 8);
  return value;
}

static __u8 u8_at(const struct scratch* s, __s32 offset) {
  return s->frame[(__u32)offset & (PROFIL_BPF_MAX_FRAME_READ - 1)];
}

#include "ruby_stacks.bpf.h"

/* One step of the chain (bpf_loop's callback: checked once by the
 * verifier, however long the chain). Returns 1 to stop. */
static long step(__u32 index, void* context) {
  struct walk* w = context;
  struct scratch* s = w->s;
  const struct profil_py_layout* layout = w->layout;
  if (w->frame == 0) return 1;
  __u32 size = (__u32)layout->frame_size;
  if (size == 0 || size > PROFIL_BPF_MAX_FRAME_READ) {
    w->status = PROFIL_PY_READ_ERROR;
    return 1;
  }
  if (bpf_probe_read_user(s->frame, size, (const void*)w->frame) != 0) {
    w->status = PROFIL_PY_READ_ERROR;
    return 1;
  }
  const __u64 back = u64_at(s, layout->frame_back);
  __u32 n = w->count;
  if (layout->owner_cstack >= 0 && layout->frame_owner >= 0 &&
      (__s8)u8_at(s, layout->frame_owner) == layout->owner_cstack) {
    /* A shim of one eval-loop call: the frame just inside it is an entry. */
    if (n > 0 && n <= PROFIL_BPF_MAX_FRAMES) s->record.frames[(n - 1) & (PROFIL_BPF_MAX_FRAMES - 1)].flags |= 1;
    w->frame = back;
    return 0;
  }
  if (n >= PROFIL_BPF_MAX_FRAMES) {
    w->status = PROFIL_PY_TRUNCATED;
    return 1;
  }
  struct profil_py_frame* out = &s->record.frames[n & (PROFIL_BPF_MAX_FRAMES - 1)];
  out->code = u64_at(s, layout->frame_code);
  out->flags = 0;
  out->pad = 0;
  if (layout->lasti32) {
    out->instruction = (__u64)(__s64)(__s32)u64_at(s, layout->frame_instruction);
    out->flags = 1;
  } else {
    out->instruction = u64_at(s, layout->frame_instruction);
    if (layout->frame_is_entry >= 0 && u8_at(s, layout->frame_is_entry) != 0) out->flags = 1;
  }
  w->count = n + 1;
  w->frame = back;
  return 0;
}

/* Issue 31: whether the thread whose PyThreadState is state holds the GIL,
 * one read (8 bytes, or 16 with `locked`). */
static __u32 gil_of(const struct profil_py_layout* layout, __u64 state) {
  __u64 words[2] = {0, 0};
  const void* holder = (const void*)layout->gil_holder;
  if (layout->gil_holder == 0) return PROFIL_PY_GIL_UNKNOWN;
  if ((layout->gil_locked ? bpf_probe_read_user(words, 16, holder) : bpf_probe_read_user(words, 8, holder)) != 0)
    return PROFIL_PY_GIL_UNKNOWN;
  if (words[0] != state || (layout->gil_locked && (__s32)words[1] <= 0)) return PROFIL_PY_GIL_RELEASED;
  return PROFIL_PY_GIL_HELD;
}

/* The record of s (its count, status and GIL state set) written to the
 * ring, with the time. */
static void emit(struct scratch* s, __u32 tid) {
  s->record.time = bpf_ktime_get_ns();
  s->record.tid = tid;
  __u64 size = __builtin_offsetof(struct profil_py_record, frames) +
               (__u64)(s->record.count & (2 * PROFIL_BPF_MAX_FRAMES - 1)) * sizeof(struct profil_py_frame);
  if (size > sizeof s->record) size = sizeof s->record;
  /* No wakeup: the host never waits on the ring, it drains it at each of
   * its rounds (python_bpf.h); the wakeup's check of the consumer's
   * position cost ~220 ns a sample (issue 31, bpf_stats). */
  if (bpf_ringbuf_output(&python_stacks, &s->record, size, BPF_RB_NO_WAKEUP) != 0)
    count(PROFIL_PY_RING_FULL);
  else
    count(PROFIL_PY_RECORDS);
}

SEC("perf_event")
int python_stack(struct bpf_perf_event_data* context) {
  __u32 tgid, tid;
  if (init_pidns) {
    const __u64 ids = bpf_get_current_pid_tgid();
    tgid = ids >> 32;
    tid = (__u32)ids;
  } else {
    struct bpf_pidns_info ns = {};
    if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof ns) != 0) return 1;
    tgid = ns.tgid;
    tid = ns.pid;
  }
  const struct profil_py_layout* layout = bpf_map_lookup_elem(&python_processes, &tgid);
  const struct profil_rb_layout* ruby = layout ? 0 : bpf_map_lookup_elem(&ruby_processes, &tgid);
  if (!layout && !ruby) return 1;
  const __u64* state = bpf_map_lookup_elem(&python_threads, &tid);
  if (!state) {
    count(PROFIL_PY_NO_THREAD);
    return 1;
  }
  __u32 zero = 0;
  struct scratch* s = bpf_map_lookup_elem(&scratch_space, &zero);
  if (!s) return 1;
  if (ruby) {
    ruby_frames(s, ruby, *state);
    s->record.gil = PROFIL_PY_GIL_UNKNOWN;
    emit(s, tid);
    return 1;
  }

  struct walk w = {.s = s, .layout = layout, .frame = 0, .count = 0, .status = PROFIL_PY_COMPLETE};
  if (bpf_probe_read_user(&w.frame, sizeof w.frame, (const void*)(*state + layout->tstate_frame)) != 0) {
    w.status = PROFIL_PY_READ_ERROR;
  } else if (layout->cframe_current_frame >= 0 && w.frame != 0 &&
             bpf_probe_read_user(&w.frame, sizeof w.frame,
                                 (const void*)(w.frame + layout->cframe_current_frame)) != 0) {
    w.status = PROFIL_PY_READ_ERROR;
  }
  if (w.status == PROFIL_PY_COMPLETE) {
    bpf_loop(PROFIL_BPF_MAX_STEPS, step, &w, 0);
    if (w.status == PROFIL_PY_COMPLETE && w.frame != 0) w.status = PROFIL_PY_LOOP;
  }
  s->record.count = w.count;
  s->record.status = w.status;
  s->record.gil = gil_of(layout, *state);
  emit(s, tid);
  return 1;
}
