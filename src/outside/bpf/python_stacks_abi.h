/* What profil's BPF program (python_stacks.bpf.c) and its host side
 * (outside/python_bpf.h) share: the maps' keys and values and the records
 * the program writes. Plain C, fixed-width fields, no padding the two
 * compilers could lay out differently: the same bytes on both sides.
 *
 * Issue 31: a CPython thread's frame chain read by a BPF program attached to
 * the sampling event, in the kernel, at the moment of the sample, as the
 * OpenTelemetry eBPF profiler reads it; the code objects are named later,
 * on the host (interp/python_code.h), from the addresses the record gives. */
#ifndef PROFIL_OUTSIDE_BPF_PYTHON_STACKS_ABI_H
#define PROFIL_OUTSIDE_BPF_PYTHON_STACKS_ABI_H

/* Frames a record holds at most (the host's after-the-fact walk reads as
 * many); a deeper stack keeps its innermost frames and says kTruncated. */
#define PROFIL_BPF_MAX_FRAMES 256
/* Chain steps at most: a 3.12+ stack has a shim frame per eval-loop call
 * besides the frames given out; a longer chain is one read mid-change. */
#define PROFIL_BPF_MAX_STEPS (2 * PROFIL_BPF_MAX_FRAMES + 16)
/* The largest frame struct read in one call (interp/python_walk.h's bound). */
#define PROFIL_BPF_MAX_FRAME_READ 256

/* Where the walk reads, per process (interp::PythonLayout's walk fields;
 * -1 where a version has no such field). */
struct profil_py_layout {
  __s32 tstate_frame;         /* tstate->frame / ->cframe / ->current_frame */
  __s32 cframe_current_frame; /* 3.11/3.12: _PyCFrame.current_frame, else -1 */
  __s32 frame_back;
  __s32 frame_code;
  __s32 frame_instruction;
  __s32 frame_is_entry;       /* 3.11, else -1 */
  __s32 frame_owner;          /* 3.11+, else -1 */
  __s32 frame_size;           /* one read covers every frame field */
  __s8 owner_cstack;          /* 3.12+: FRAME_OWNED_BY_CSTACK, else -1 */
  __u8 lasti32;               /* ≤3.10: the instruction is an int f_lasti and every frame an entry */
  __u8 gil_locked;            /* 3.12+: an int `locked` (1: taken) 8 bytes after the holder */
  __u8 pad[5];
  /* Where the GIL's holder (a PyThreadState pointer) is, 0 where the
   * version does not tell (interp/python_gil.h). */
  __u64 gil_holder;
};

/* One frame, as interp::RawFrame. */
struct profil_py_frame {
  __u64 code;
  __u64 instruction;
  __u32 flags; /* interp::kEntryFrame = 1 */
  __u32 pad;
};

/* The walk's end, as interp::WalkStatus. */
enum profil_py_status {
  PROFIL_PY_COMPLETE = 0,
  PROFIL_PY_TRUNCATED = 1,
  PROFIL_PY_READ_ERROR = 2,
  PROFIL_PY_LOOP = 3,
};

/* Whether the thread held the GIL, as format::kGil*. */
enum profil_py_gil {
  PROFIL_PY_GIL_UNKNOWN = 0,
  PROFIL_PY_GIL_HELD = 1,
  PROFIL_PY_GIL_RELEASED = 2,
};

/* One record per sample of a known Python thread; frames[count] follow. */
struct profil_py_record {
  __u64 time; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC, as the samples' time */
  __u32 tid;  /* in profil's pid namespace */
  __u32 count;
  __u32 status;
  __u32 gil; /* enum profil_py_gil */
  struct profil_py_frame frames[PROFIL_BPF_MAX_FRAMES];
};

/* The program's counters (a per-CPU array, summed by the host). */
enum profil_py_counter {
  PROFIL_PY_RECORDS = 0,     /* records written */
  PROFIL_PY_RING_FULL = 1,   /* records the ring had no room for */
  PROFIL_PY_NO_THREAD = 2,   /* samples of a Python process's thread the host has not named yet */
  PROFIL_PY_COUNTERS = 3,
};

#endif
