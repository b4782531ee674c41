// CPython frames from inside (python_inside.h). start_python_frames is host
// side (the preload constructor); everything else is ASYNC-SIGNAL-SAFE: it
// runs in the dump, which may run in a signal handler (no allocation, no
// lock, no stdio; the process's memory read with fault-safe loads).
#include "runtime/python_inside.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <utility>

#include "base/settings.h"
#include "format/profile.h"
#include "interp/python_code_head.h"
#include "interp/python_lines.h"
#include "interp/python_merge.h"
#include "runtime/interpreter_inside.h"
#include "sampler/python_sampling.h"
#include "sampler/sampler.h"

namespace profiling::runtime {
namespace {

sampler::PythonSampling g_python;
uint64_t g_code_type = 0;
bool g_on = false;

// ---- start-up (host side) ----

uint64_t symbol(const char* name) { return reinterpret_cast<uint64_t>(::dlsym(RTLD_DEFAULT, name)); }

// major.minor of the CPython linked in: Py_Version (3.11+), else the
// string Py_GetVersion() returns ("3.8.18 (default, ...").
bool python_version(int* major, int* minor) {
  if (const auto* hex = reinterpret_cast<const unsigned long*>(symbol("Py_Version"))) {
    *major = static_cast<int>((*hex >> 24) & 0xff);
    *minor = static_cast<int>((*hex >> 16) & 0xff);
    return true;
  }
  using GetVersion = const char* (*)();
  const auto get_version = reinterpret_cast<GetVersion>(symbol("Py_GetVersion"));
  if (get_version == nullptr) return false;
  const char* text = get_version();
  char* end = nullptr;
  *major = static_cast<int>(std::strtol(text, &end, 10));
  if (end == text || *end != '.') return false;
  *minor = static_cast<int>(std::strtol(end + 1, nullptr, 10));
  return *major > 0;
}

bool find_layout(int major, int minor, uint64_t runtime, interp::PythonLayout* layout) {
  if (major == 3 && minor >= 13) {
    const char* why = nullptr;
    return runtime != 0 &&
           interp::python_layout_from_debug_offsets(reinterpret_cast<const uint8_t*>(runtime),
                                                    interp::kDebugOffsetsSize, layout, &why);
  }
  return interp::python_layout_for(major, minor, layout);
}

// ---- the dump's name tables (mapped at start; one dump at a time) ----

struct CodeName {
  uint64_t address;  // 0: an empty slot
  uint32_t name_at, name_length, file_at, file_length, table_at, table_length;
  int32_t first_line;
  bool named;  // false: not a code object when it was read
  uint64_t instructions;
};

// Ids of the frames every dump names: 0 the misfit mark, kBetweenId the
// loop entering or leaving a call, kUnreadId a code object the dump could
// not read (freed since the sample: an imported module's top-level code, run
// once); code objects' lines from kUnreadId + 1.
constexpr uint32_t kBetweenId = 1;
constexpr uint32_t kUnreadId = 2;
constexpr const char* kUnreadFrame = "[python: code freed before the dump]";

constexpr size_t kCodeSlots = size_t{1} << 15;
constexpr size_t kFrameSlots = size_t{1} << 17;
constexpr size_t kPoolBytes = size_t{32} << 20;

struct Tables {
  CodeName codes[kCodeSlots];
  FrameIds<kFrameSlots> frames{kUnreadId};  // a frame's address is kInterpreterFrameBase + its id
  size_t pool_used = 0;
  char pool[kPoolBytes];                   // names, files, line tables
};
Tables* g_tables = nullptr;

// Room in the pool for n bytes: its offset, or UINT32_MAX.
uint32_t pool_take(size_t n) {
  if (kPoolBytes - g_tables->pool_used < n) return UINT32_MAX;
  const size_t at = g_tables->pool_used;
  g_tables->pool_used += n;
  return static_cast<uint32_t>(at);
}

// A string of the code object into the pool; false when it cannot be read
// (or the pool is full).
bool pool_string(sampler::SelfMemory& memory, uint64_t object, uint32_t* at, uint32_t* length) {
  char* free = g_tables->pool + g_tables->pool_used;
  const size_t room = kPoolBytes - g_tables->pool_used;
  const int64_t n = interp::read_python_string_into(g_python.layout, memory, object, free,
                                                    room < 4 * interp::kMaxPythonString ? room : 4 * interp::kMaxPythonString);
  if (n < 0) return false;
  *at = pool_take(static_cast<size_t>(n));
  *length = static_cast<uint32_t>(n);
  return true;
}

// The code object of a stored frame's code word (its address and tag:
// sampler::code_tag), named the first time the word is met, from the code
// object at its address only when that one's tag is the word's: else the
// sampled one was freed and its address reused (unnamed, as freed).
const CodeName* code_name(uint64_t code_word, uint32_t* slot_out) {
  bool claimed = false;
  CodeName* found = find_or_claim(g_tables->codes, code_word, slot_out, &claimed);
  if (found == nullptr || !claimed) return found != nullptr && found->named ? found : nullptr;
  CodeName& code = *found;
  sampler::SelfMemory memory;
  interp::CodeHead head;
  const uint64_t tag = code_word >> 48;
  if (!interp::read_code_head(g_python.layout, memory, code_word & sampler::kCodeAddressMask, g_code_type, &head) ||
      (tag != 0 && sampler::code_tag(head.name_object, head.first_line) != tag))
    return nullptr;
  const size_t pool_mark = g_tables->pool_used;
  const int64_t table = interp::python_bytes_size(g_python.layout, memory, head.line_table_object,
                                                  interp::kMaxPythonLineTable);
  if (!pool_string(memory, head.name_object, &code.name_at, &code.name_length) ||
      !pool_string(memory, head.filename_object, &code.file_at, &code.file_length) || table < 0 ||
      (code.table_at = pool_take(static_cast<size_t>(table))) == UINT32_MAX ||
      !interp::read_python_bytes(g_python.layout, memory, head.line_table_object, g_tables->pool + code.table_at,
                                 static_cast<size_t>(table))) {
    g_tables->pool_used = pool_mark;
    return nullptr;
  }
  code.table_length = static_cast<uint32_t>(table);
  code.first_line = head.first_line;
  code.instructions = head.instructions;
  code.named = true;
  return &code;
}

// The address a frame of the code of code_word (code_name), at instruction, is
// shown at: one per (code object, line); kUnreadId's when it cannot be
// named, 0 when the tables are full.
uint64_t frame_address(uint64_t code_word, uint64_t instruction) {
  uint32_t code_slot = 0;
  const CodeName* code = code_name(code_word, &code_slot);
  if (code == nullptr) return format::kInterpreterFrameBase + kUnreadId;
  const std::string_view table(g_tables->pool + code->table_at, code->table_length);
  const int line = interp::python_line(g_python.layout.line_table, table, code->first_line,
                                       interp::python_line_offset(g_python.layout, code->instructions, instruction));
  const uint32_t id = g_tables->frames.id_of(code_word, line, code_slot);
  return id == 0 ? 0 : format::kInterpreterFrameBase + id;
}

class Names final : public InterpreterFrameSource {
 public:
  void for_each_frame(InterpreterFrameVisitor& visitor) const override {
    for (const auto& [id, text] : {std::pair<uint32_t, std::string_view>{0, interp::kMisfitFrame},
                                   {kBetweenId, interp::kBetweenFramesFrame},
                                   {kUnreadId, kUnreadFrame}})
      visitor.frame(format::kInterpreterFrameBase + id, 0, text.data(), static_cast<uint32_t>(text.size()), "", 0);
    if (g_tables == nullptr) return;
    for (uint32_t id = kUnreadId + 1; id <= g_tables->frames.ids; ++id) {
      const FrameName& frame = g_tables->frames.frame(id);
      const CodeName& code = g_tables->codes[frame.code_slot];
      visitor.frame(format::kInterpreterFrameBase + id, frame.line > 0 ? frame.line : code.first_line,
                    g_tables->pool + code.name_at, code.name_length, g_tables->pool + code.file_at,
                    code.file_length);
    }
  }
};
const Names g_names;

}  // namespace

bool start_python_frames() {
  if (!base::flag_from_environment("PROFIL_INTERPRETER", ::secure_getenv("PROFIL_INTERPRETER"), true)) return false;
  sampler::PythonSampling python;
  int major = 0, minor = 0;
  const uint64_t runtime = symbol("_PyRuntime");
  if (!python_version(&major, &minor) || !find_layout(major, minor, runtime, &python.layout)) return false;
  if (!function_range("_PyEval_EvalFrameDefault", &python.loop) && !function_range("PyEval_EvalFrameEx", &python.loop))
    return false;
  if (python.layout.runtime_interpreters_head >= 0) {
    if (runtime == 0) return false;
    python.interpreters_head = runtime + static_cast<uint64_t>(python.layout.runtime_interpreters_head);
  } else {
    python.interp_head_function = reinterpret_cast<uint64_t (*)()>(symbol("PyInterpreterState_Head"));
    if (python.interp_head_function == nullptr) return false;
  }
  void* tables = ::mmap(nullptr, sizeof(Tables), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                        -1, 0);
  if (tables == MAP_FAILED) return false;
  g_tables = new (tables) Tables;
  g_code_type = symbol("PyCode_Type");
  python.runtime = runtime;
  python.tstate_current = symbol("_PyThreadState_Current");  // 2.7, 3.6: the GIL's holder
  g_python = python;
  sample_on_the_sampled_thread();
  sampler::set_python_sampling(&g_python);
  g_on = true;
  return true;
}

bool python_frames_on() { return g_on; }

bool function_range(const char* name, interp::EvalLoop* loop) {
  void* address = ::dlsym(RTLD_DEFAULT, name);
  Dl_info info{};
  void* entry = nullptr;
  if (address == nullptr || ::dladdr1(address, &info, &entry, RTLD_DL_SYMENT) == 0) return false;
  const auto* sym = static_cast<const ElfW(Sym)*>(entry);
  if (sym == nullptr || sym->st_size == 0) return false;
  loop->start = reinterpret_cast<uint64_t>(address);
  loop->end = loop->start + sym->st_size;
  return true;
}

const InterpreterFrameSource& python_frame_names() { return g_names; }

void PythonMerge::visit(const uint64_t* pcs, uint32_t depth, bool truncated, uint64_t weight, int32_t tid,
                        uint32_t observations, uint8_t /*gil: the marker's*/) {
  if (g_tables == nullptr) {
    uint32_t native = 0;
    while (native < depth && !sampler::is_python_marker(pcs[native])) ++native;
    inner_.visit(pcs, native, truncated, weight, tid, observations,
                 native < depth ? sampler::marker_gil(pcs[native]) : format::kGilUnknown);
    return;
  }
  merge_stored_frames(inner_, pcs, depth, truncated, weight, tid, observations, frame_address, g_python.loop,
                      format::kInterpreterFrameBase, format::kInterpreterFrameBase + kBetweenId, false);
}

}  // namespace profiling::runtime
