// Ruby frames from inside (ruby_inside.h). start_ruby_frames is host side
// (the preload constructor); everything else is ASYNC-SIGNAL-SAFE: it runs
// in the dump, which may run in a signal handler (no allocation, no lock,
// no stdio). The process's memory is read with process_vm_readv on itself,
// by the page, never with loads that may fault (sampler/ruby_sampling.cc
// says why: Ruby's own alternate signal stacks).
#include "runtime/ruby_inside.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <new>
#include <string_view>
#include <utility>

#include "base/settings.h"
#include "format/profile.h"
#include "interp/readers.h"
#include "interp/ruby_code_head.h"
#include "runtime/interpreter_inside.h"
#include "runtime/python_inside.h"
#include "sampler/ruby_sampling.h"

namespace profiling::runtime {
namespace {

sampler::RubySampling g_ruby;
bool g_on = false;

// Ids every dump names (ruby_inside.h); (iseq, line) frames from kUnreadId + 1.
constexpr uint32_t kBetweenId = 1;
constexpr uint32_t kUnreadId = 2;
constexpr std::string_view kFixed[] = {"[ruby: the stack moved before it was read]",
                                       "[ruby: a call entered or left]", "[ruby: iseq freed before the dump]"};

struct IseqName {
  uint64_t address;  // 0: an empty slot
  uint32_t name_at, name_length, file_at, file_length;
  bool named;  // false: not readable as an iseq when it was met
  interp::RubyIseqHead head;
};

// A pc's line, once per (iseq, pc) for the process: every dump visits
// every stored stack.
struct PcLine {
  uint64_t iseq, pc;  // iseq 0: an empty slot
  int32_t line;
};

constexpr size_t kPcSlots = size_t{1} << 16;
constexpr size_t kIseqSlots = size_t{1} << 14;
constexpr size_t kFrameSlots = size_t{1} << 16;
constexpr size_t kPoolBytes = size_t{8} << 20;

struct Tables {
  IseqName iseqs[kIseqSlots];
  FrameIds<kFrameSlots> frames{kUnreadId};  // a frame's address is kRubyFrameBase + its id
  PcLine pcs[kPcSlots];
  size_t pool_used = 0;
  char pool[kPoolBytes];
};
Tables* g_tables = nullptr;

// The dump's reads (one dump at a time): this process by process_vm_readv,
// a page at a time, the pages forgotten at each stack.
interp::ProcessMemory* g_process = nullptr;
interp::PageCachedMemory* g_memory = nullptr;
alignas(interp::ProcessMemory) unsigned char g_process_space[sizeof(interp::ProcessMemory)];
alignas(interp::PageCachedMemory) unsigned char g_memory_space[sizeof(interp::PageCachedMemory)];

// A String into the pool; false when it is not one, cannot be read, or the
// pool is full.
bool pool_string(interp::MemoryReader& memory, uint64_t string, uint32_t* at, uint32_t* length) {
  uint64_t chars = 0, n = 0;
  if (!interp::ruby_string_at(g_ruby.layout, memory, string, &chars, &n)) return false;
  if (kPoolBytes - g_tables->pool_used < n) return false;
  if (n != 0 && !memory.read(chars, g_tables->pool + g_tables->pool_used, n)) return false;
  *at = static_cast<uint32_t>(g_tables->pool_used);
  *length = static_cast<uint32_t>(n);
  g_tables->pool_used += n;
  return true;
}

// The iseq at address, named the first time it is met.
const IseqName* iseq_name(uint64_t address, uint32_t* slot_out) {
  bool claimed = false;
  IseqName* found = find_or_claim(g_tables->iseqs, address, slot_out, &claimed);
  if (found == nullptr || !claimed) return found != nullptr && found->named ? found : nullptr;
  IseqName& iseq = *found;
  interp::MemoryReader& memory = *g_memory;
  const size_t pool_mark = g_tables->pool_used;
  if (!interp::read_ruby_iseq_head(g_ruby.layout, memory, address, &iseq.head) ||
      !pool_string(memory, iseq.head.label_object, &iseq.name_at, &iseq.name_length)) {
    g_tables->pool_used = pool_mark;
    return nullptr;
  }
  const uint64_t path = interp::ruby_path_string(g_ruby.layout, memory, iseq.head.path_object);
  if (!pool_string(memory, path, &iseq.file_at, &iseq.file_length)) iseq.file_length = 0;
  iseq.named = true;
  return &iseq;
}

int pc_line(uint64_t iseq, const interp::RubyIseqHead& head, uint64_t pc) {
  size_t slot = mix_bits(iseq * 31 + pc) & (kPcSlots - 1);
  for (size_t probe = 0; probe < 16; ++probe, slot = (slot + 1) & (kPcSlots - 1)) {
    PcLine& known = g_tables->pcs[slot];
    if (known.iseq == iseq && known.pc == pc) return known.line;
    if (known.iseq != 0) continue;
    known = PcLine{iseq, pc, interp::ruby_pc_line(g_ruby.layout, *g_memory, head, pc)};
    return known.line;
  }
  return interp::ruby_pc_line(g_ruby.layout, *g_memory, head, pc);  // a crowded stretch: not kept
}

// The address a frame of the iseq at address, at pc, is shown at: one per
// (iseq, line); kUnreadId's when it cannot be named, 0 when the tables are
// full.
uint64_t frame_address(uint64_t address, uint64_t pc) {
  uint32_t iseq_slot = 0;
  const IseqName* iseq = iseq_name(address, &iseq_slot);
  if (iseq == nullptr) return format::kRubyFrameBase + kUnreadId;
  const int line = pc_line(address, iseq->head, pc);
  const uint32_t id = g_tables->frames.id_of(address, line, iseq_slot);
  return id == 0 ? 0 : format::kRubyFrameBase + id;
}

class Names final : public InterpreterFrameSource {
 public:
  void for_each_frame(InterpreterFrameVisitor& visitor) const override {
    for (uint32_t id = 0; id <= kUnreadId; ++id)
      visitor.frame(format::kRubyFrameBase + id, 0, kFixed[id].data(), static_cast<uint32_t>(kFixed[id].size()), "", 0);
    if (g_tables == nullptr) return;
    for (uint32_t id = kUnreadId + 1; id <= g_tables->frames.ids; ++id) {
      const FrameName& frame = g_tables->frames.frame(id);
      const IseqName& iseq = g_tables->iseqs[frame.code_slot];
      visitor.frame(format::kRubyFrameBase + id, frame.line > 0 ? frame.line : iseq.head.first_line,
                    g_tables->pool + iseq.name_at, iseq.name_length, g_tables->pool + iseq.file_at, iseq.file_length);
    }
  }
};
const Names g_names;

uint64_t thread_pointer() {
  uint64_t pointer;
  asm volatile("mov %%fs:0, %0" : "=r"(pointer));
  return pointer;
}

}  // namespace

bool start_ruby_frames() {
  if (!base::flag_from_environment("PROFIL_INTERPRETER", ::secure_getenv("PROFIL_INTERPRETER"), true)) return false;
  const auto* version = static_cast<const char*>(::dlsym(RTLD_DEFAULT, "ruby_version"));
  if (version == nullptr) return false;
  char* end = nullptr;
  const long major = std::strtol(version, &end, 10);
  if (end == version || *end != '.') return false;
  const interp::RubyLayout* layout = interp::ruby_layout_for(static_cast<int>(major),
                                                             static_cast<int>(std::strtol(end + 1, nullptr, 10)));
  sampler::RubySampling ruby;
  void* ec = ::dlsym(RTLD_DEFAULT, "ruby_current_ec");  // this thread's (a TLS symbol)
  if (layout == nullptr || ec == nullptr || !function_range("rb_vm_exec", &ruby.loop)) return false;
  ruby.layout = *layout;
  ruby.ec_offset = static_cast<int64_t>(reinterpret_cast<uint64_t>(ec) - thread_pointer());
  void* tables = ::mmap(nullptr, sizeof(Tables), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                        -1, 0);
  if (tables == MAP_FAILED) return false;
  g_tables = new (tables) Tables;
  g_process = new (g_process_space) interp::ProcessMemory(::getpid());
  g_memory = new (g_memory_space) interp::PageCachedMemory(*g_process);
  g_ruby = ruby;
  sample_on_the_sampled_thread();
  sampler::set_ruby_sampling(&g_ruby);
  g_on = true;
  return true;
}

bool ruby_frames_on() { return g_on; }

const InterpreterFrameSource& ruby_frame_names() { return g_names; }

void RubyMerge::visit(const uint64_t* pcs, uint32_t depth, bool truncated, uint64_t weight, int32_t tid,
                      uint32_t observations, uint8_t /*gil: unknown for Ruby*/) {
  // This process now (a fork's child dumps its own), its memory read anew.
  *g_process = interp::ProcessMemory(::getpid());
  g_memory->forget();
  // A native stack cut short (a recursion through C methods deeper than
  // the unwind's depth) keeps its outer Ruby frames past its end
  // (python_merge.h's native_truncated), not a misfit.
  merge_stored_frames(inner_, pcs, depth, truncated, weight, tid, observations, frame_address, g_ruby.loop,
                      format::kRubyFrameBase, format::kRubyFrameBase + kBetweenId, truncated);
}

}  // namespace profiling::runtime
