// ASYNC-SIGNAL-SAFE: everything here (bounded reads of a record's bytes).
#include "perf/records.h"

#include <sys/mman.h>

#include <cstring>

namespace profiling::perf {
namespace {

// A bounds-checked cursor over one record's bytes.
class Cursor {
 public:
  Cursor(const uint8_t* bytes, size_t size) : bytes_(bytes), size_(size) {}
  bool u64(uint64_t* value) { return copy(value, 8); }
  bool u32(uint32_t* value) { return copy(value, 4); }
  bool skip(uint64_t bytes) {
    if (bytes > size_ - at_) return false;
    at_ += static_cast<size_t>(bytes);
    return true;
  }
  const uint8_t* here() const { return bytes_ + at_; }
  size_t left() const { return size_ - at_; }

 private:
  bool copy(void* value, size_t bytes) {
    if (bytes > size_ - at_) return false;
    std::memcpy(value, bytes_ + at_, bytes);
    at_ += bytes;
    return true;
  }
  const uint8_t* bytes_;
  size_t size_;
  size_t at_ = 0;
};

unsigned popcount(uint64_t bits) { return static_cast<unsigned>(__builtin_popcountll(bits)); }

// The sample_id fields, in the trailer's order (perf_event.h, struct
// sample_id): pid/tid, time, id, stream_id, cpu/res, identifier.
bool read_sample_id(const RecordFormat& f, Cursor& c, SampleId* who) {
  uint64_t ignored;
  if (f.sample_type & PERF_SAMPLE_TID && !(c.u32(&who->pid) && c.u32(&who->tid))) return false;
  if (f.sample_type & PERF_SAMPLE_TIME && !c.u64(&who->time)) return false;
  if (f.sample_type & PERF_SAMPLE_ID && !c.u64(&who->id)) return false;
  if (f.sample_type & PERF_SAMPLE_STREAM_ID && !c.u64(&ignored)) return false;
  if (f.sample_type & PERF_SAMPLE_CPU) {
    uint32_t reserved;
    if (!(c.u32(&who->cpu) && c.u32(&reserved))) return false;
  }
  if (f.sample_type & PERF_SAMPLE_IDENTIFIER && !c.u64(&who->id)) return false;
  return true;
}

// The trailer at the end of a non-sample record; *body_end: where it starts.
bool read_trailer(const RecordFormat& f, const Record& r, SampleId* who, size_t* body_end) {
  const size_t trailer = sample_id_bytes(f);
  if (r.size < sizeof(perf_event_header) + trailer) return false;
  *body_end = r.size - trailer;
  Cursor c(r.bytes + *body_end, trailer);
  return read_sample_id(f, c, who);
}

// A NUL-terminated string in [at, end): its start, or nullptr.
const char* terminated(const uint8_t* at, const uint8_t* end) {
  if (at >= end || std::memchr(at, '\0', static_cast<size_t>(end - at)) == nullptr) return nullptr;
  return reinterpret_cast<const char*>(at);
}

}  // namespace

size_t sample_id_bytes(const RecordFormat& f) {
  if (!f.sample_id_all) return 0;
  const uint64_t t = f.sample_type;
  return 8 * ((t & PERF_SAMPLE_TID ? 1 : 0) + (t & PERF_SAMPLE_TIME ? 1 : 0) + (t & PERF_SAMPLE_ID ? 1 : 0) +
              (t & PERF_SAMPLE_STREAM_ID ? 1 : 0) + (t & PERF_SAMPLE_CPU ? 1 : 0) +
              (t & PERF_SAMPLE_IDENTIFIER ? 1 : 0));
}

bool parse_sample_id(const RecordFormat& f, const Record& r, SampleId* out) {
  *out = SampleId{};
  size_t body_end;
  return r.header.type != PERF_RECORD_SAMPLE && read_trailer(f, r, out, &body_end);
}

bool parse_sample(const RecordFormat& f, const Record& r, Sample* out) {
  if (r.header.type != PERF_RECORD_SAMPLE) return false;
  // Fields this parser does not lay out (raw, branch stacks, and those
  // after the user stack) would shift what follows them: refused.
  constexpr uint64_t kKnown = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                              PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
                              PERF_SAMPLE_PERIOD | PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN |
                              PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
  const uint64_t t = f.sample_type;
  if (t & ~kKnown) return false;
  if (t & PERF_SAMPLE_READ && f.read_format & PERF_FORMAT_GROUP) return false;
  *out = Sample{};
  Cursor c(r.bytes, r.size);
  uint64_t ignored;
  if (!c.skip(sizeof(perf_event_header))) return false;
  if (t & PERF_SAMPLE_IDENTIFIER && !c.u64(&out->who.id)) return false;
  if (t & PERF_SAMPLE_IP && !c.u64(&out->ip)) return false;
  if (t & PERF_SAMPLE_TID && !(c.u32(&out->who.pid) && c.u32(&out->who.tid))) return false;
  if (t & PERF_SAMPLE_TIME && !c.u64(&out->who.time)) return false;
  if (t & PERF_SAMPLE_ADDR && !c.u64(&ignored)) return false;
  if (t & PERF_SAMPLE_ID && !c.u64(&out->who.id)) return false;
  if (t & PERF_SAMPLE_STREAM_ID && !c.u64(&ignored)) return false;
  if (t & PERF_SAMPLE_CPU) {
    uint32_t reserved;
    if (!(c.u32(&out->who.cpu) && c.u32(&reserved))) return false;
  }
  if (t & PERF_SAMPLE_PERIOD && !c.u64(&out->period)) return false;
  if (t & PERF_SAMPLE_READ) {
    if (!c.u64(&out->read_value)) return false;
    const uint64_t rf = f.read_format;
    const unsigned extra = (rf & PERF_FORMAT_TOTAL_TIME_ENABLED ? 1 : 0) +
                           (rf & PERF_FORMAT_TOTAL_TIME_RUNNING ? 1 : 0) + (rf & PERF_FORMAT_ID ? 1 : 0) +
                           (rf & PERF_FORMAT_LOST ? 1 : 0);
    if (!c.skip(8ull * extra)) return false;
  }
  if (t & PERF_SAMPLE_CALLCHAIN) {
    uint64_t nr;
    if (!c.u64(&nr) || nr > c.left() / 8) return false;
    out->callchain = reinterpret_cast<const uint64_t*>(c.here());
    out->callchain_count = nr;
    c.skip(8 * nr);
  }
  if (t & PERF_SAMPLE_REGS_USER) {
    if (!c.u64(&out->regs_abi)) return false;
    if (out->regs_abi != PERF_SAMPLE_REGS_ABI_NONE) {
      const unsigned n = popcount(f.regs_user);
      for (unsigned i = 0; i < n; ++i) {
        uint64_t value;
        if (!c.u64(&value)) return false;
        if (i < Sample::kMaxRegs) out->regs[i] = value;
      }
      out->reg_count = n < Sample::kMaxRegs ? n : Sample::kMaxRegs;
    }
  }
  if (t & PERF_SAMPLE_STACK_USER) {
    // size, then size bytes and dyn_size only when size is not 0.
    if (!c.u64(&out->stack_size)) return false;
    if (out->stack_size != 0) {
      if (out->stack_size > c.left()) return false;
      out->stack = c.here();
      c.skip(out->stack_size);
      if (!c.u64(&out->stack_copied)) return false;
      if (out->stack_copied > out->stack_size) out->stack_copied = out->stack_size;
    }
  }
  return true;
}

bool parse_mmap(const RecordFormat& f, const Record& r, Mmap* out) {
  const bool two = r.header.type == PERF_RECORD_MMAP2;
  if (!two && r.header.type != PERF_RECORD_MMAP) return false;
  *out = Mmap{};
  size_t body_end;
  if (!read_trailer(f, r, &out->who, &body_end)) return false;
  Cursor c(r.bytes, body_end);
  if (!(c.skip(sizeof(perf_event_header)) && c.u32(&out->pid) && c.u32(&out->tid) && c.u64(&out->address) &&
        c.u64(&out->length) && c.u64(&out->file_offset)))
    return false;
  if (two) {
    if (r.header.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
      uint8_t head[4];
      if (c.left() < 4 + 20) return false;
      std::memcpy(head, c.here(), 4);
      out->build_id_size = head[0] <= 20 ? head[0] : 20;
      std::memcpy(out->build_id, c.here() + 4, 20);
      c.skip(24);
    } else {
      if (!(c.u32(&out->major) && c.u32(&out->minor) && c.u64(&out->inode) && c.u64(&out->inode_generation)))
        return false;
    }
    if (!(c.u32(&out->prot) && c.u32(&out->flags))) return false;
    out->executable = (out->prot & PROT_EXEC) != 0;
  } else {
    out->executable = !(r.header.misc & PERF_RECORD_MISC_MMAP_DATA);
  }
  out->filename = terminated(c.here(), r.bytes + body_end);
  return out->filename != nullptr;
}

bool parse_comm(const RecordFormat& f, const Record& r, Comm* out) {
  if (r.header.type != PERF_RECORD_COMM) return false;
  *out = Comm{};
  size_t body_end;
  if (!read_trailer(f, r, &out->who, &body_end)) return false;
  Cursor c(r.bytes, body_end);
  if (!(c.skip(sizeof(perf_event_header)) && c.u32(&out->pid) && c.u32(&out->tid))) return false;
  out->exec = (r.header.misc & PERF_RECORD_MISC_COMM_EXEC) != 0;
  out->name = terminated(c.here(), r.bytes + body_end);
  return out->name != nullptr;
}

bool parse_task(const RecordFormat& f, const Record& r, Task* out) {
  if (r.header.type != PERF_RECORD_FORK && r.header.type != PERF_RECORD_EXIT) return false;
  *out = Task{};
  size_t body_end;
  if (!read_trailer(f, r, &out->who, &body_end)) return false;
  Cursor c(r.bytes, body_end);
  return c.skip(sizeof(perf_event_header)) && c.u32(&out->pid) && c.u32(&out->ppid) && c.u32(&out->tid) &&
         c.u32(&out->ptid) && c.u64(&out->time);
}

bool parse_lost(const RecordFormat& f, const Record& r, Lost* out) {
  if (r.header.type != PERF_RECORD_LOST) return false;
  *out = Lost{};
  size_t body_end;
  if (!read_trailer(f, r, &out->who, &body_end)) return false;
  Cursor c(r.bytes, body_end);
  return c.skip(sizeof(perf_event_header)) && c.u64(&out->id) && c.u64(&out->lost);
}

bool parse_read(const RecordFormat& f, const Record& r, Read* out) {
  if (r.header.type != PERF_RECORD_READ || f.read_format != 0) return false;
  *out = Read{};
  size_t body_end;
  if (!read_trailer(f, r, &out->who, &body_end)) return false;
  Cursor c(r.bytes, body_end);
  return c.skip(sizeof(perf_event_header)) && c.u32(&out->pid) && c.u32(&out->tid) && c.u64(&out->value);
}

bool parse_throttle(const RecordFormat& f, const Record& r, Throttle* out) {
  if (r.header.type != PERF_RECORD_THROTTLE && r.header.type != PERF_RECORD_UNTHROTTLE) return false;
  *out = Throttle{};
  size_t body_end;
  if (!read_trailer(f, r, &out->who, &body_end)) return false;
  Cursor c(r.bytes, body_end);
  return c.skip(sizeof(perf_event_header)) && c.u64(&out->time) && c.u64(&out->id) && c.u64(&out->stream_id);
}

}  // namespace profiling::perf
