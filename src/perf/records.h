// The records of a perf ring, parsed into values (perf_event_open(2),
// "MMAP layout"; include/uapi/linux/perf_event.h, enum perf_event_type).
// A sample's layout depends on the event's sample_type; every other record
// ends with the sample_id trailer when sample_id_all is set.
//
// ASYNC-SIGNAL-SAFE: every parse_* function (no allocation; views point
// into the record's bytes, valid while the record is). Each returns false
// for a record too short for what its header and format promise.
#ifndef PROFIL_PERF_RECORDS_H
#define PROFIL_PERF_RECORDS_H

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>

#include "perf/ring.h"

namespace profiling::perf {

// What an event's records carry: its perf_event_attr's sample_type,
// sample_regs_user (how many registers), read_format, sample_id_all.
struct RecordFormat {
  uint64_t sample_type = 0;
  uint64_t regs_user = 0;
  uint64_t read_format = 0;
  bool sample_id_all = false;

  static RecordFormat of(const perf_event_attr& attr) {
    return {attr.sample_type, attr.sample_regs_user, attr.read_format, attr.sample_id_all != 0};
  }
};

// The sample_id trailer of a non-sample record (and the same fields of a
// sample): what sample_type asks for, 0 where it does not.
struct SampleId {
  uint32_t pid = 0, tid = 0;
  uint64_t time = 0;
  uint64_t id = 0;
  uint32_t cpu = 0;
};

struct Sample {
  SampleId who;
  uint64_t ip = 0;
  uint64_t period = 0;
  uint64_t read_value = 0;  // PERF_SAMPLE_READ, a single event's value
  // PERF_SAMPLE_REGS_USER: abi PERF_SAMPLE_REGS_ABI_NONE (a kernel thread,
  // or no user registers to give) leaves regs unset; else the registers
  // of regs_user, in the order of their bits.
  uint64_t regs_abi = 0;
  static constexpr unsigned kMaxRegs = 8;
  uint64_t regs[kMaxRegs] = {};
  unsigned reg_count = 0;
  // PERF_SAMPLE_STACK_USER: the copy of [sp, sp + stack_copied); its room
  // in the record is stack_size (what was asked), dyn_size what the kernel
  // could copy (less at the stack's top or a non-resident page).
  const uint8_t* stack = nullptr;
  uint64_t stack_size = 0;
  uint64_t stack_copied = 0;
  // PERF_SAMPLE_CALLCHAIN: callchain_count entries in the record, context
  // markers (PERF_CONTEXT_KERNEL, ...) among them.
  const uint64_t* callchain = nullptr;
  uint64_t callchain_count = 0;
};

// PERF_RECORD_MMAP2 (and PERF_RECORD_MMAP, which lacks the file's identity).
struct Mmap {
  uint32_t pid = 0, tid = 0;
  uint64_t address = 0, length = 0, file_offset = 0;
  // The file's identity: device and inode, or its build id (misc
  // PERF_RECORD_MISC_MMAP_BUILD_ID, Linux 5.12, when attr.build_id).
  uint32_t major = 0, minor = 0;
  uint64_t inode = 0, inode_generation = 0;
  uint8_t build_id[20] = {};
  uint8_t build_id_size = 0;
  uint32_t prot = 0, flags = 0;
  const char* filename = nullptr;  // NUL-terminated within the record
  bool executable = false;         // PROT_EXEC (MMAP: misc is not PERF_RECORD_MISC_MMAP_DATA)
  SampleId who;
};

// PERF_RECORD_COMM: a task's name, set by exec (exec true) or prctl.
struct Comm {
  uint32_t pid = 0, tid = 0;
  const char* name = nullptr;
  bool exec = false;
  SampleId who;
};

// PERF_RECORD_FORK and PERF_RECORD_EXIT (a thread or a process).
struct Task {
  uint32_t pid = 0, ppid = 0, tid = 0, ptid = 0;
  uint64_t time = 0;
  SampleId who;
};

// PERF_RECORD_READ: an inherited event's count when its task exited
// (attr.inherit_stat; kernel/events/core.c, sync_child_event). value is
// the count alone: read_format 0 is the only format parsed.
struct Read {
  uint32_t pid = 0, tid = 0;
  uint64_t value = 0;
  SampleId who;
};

// PERF_RECORD_LOST: records the kernel could not write (the ring was full).
struct Lost {
  uint64_t id = 0, lost = 0;
  SampleId who;
};

// PERF_RECORD_THROTTLE / UNTHROTTLE: the kernel's rate limit
// (kernel.perf_event_max_sample_rate) took over, or let go.
struct Throttle {
  uint64_t time = 0, id = 0, stream_id = 0;
  SampleId who;
};

bool parse_sample(const RecordFormat& format, const Record& record, Sample* out);
bool parse_mmap(const RecordFormat& format, const Record& record, Mmap* out);  // MMAP or MMAP2
bool parse_comm(const RecordFormat& format, const Record& record, Comm* out);
bool parse_task(const RecordFormat& format, const Record& record, Task* out);  // FORK or EXIT
bool parse_lost(const RecordFormat& format, const Record& record, Lost* out);
bool parse_read(const RecordFormat& format, const Record& record, Read* out);  // read_format 0 only
bool parse_throttle(const RecordFormat& format, const Record& record, Throttle* out);

// The sample_id trailer of any record but a sample (whose own fields say
// the same: parse_sample).
bool parse_sample_id(const RecordFormat& format, const Record& record, SampleId* out);

// Bytes of the sample_id trailer a non-sample record of this format ends with.
size_t sample_id_bytes(const RecordFormat& format);

}  // namespace profiling::perf

#endif  // PROFIL_PERF_RECORDS_H
