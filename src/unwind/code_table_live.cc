// CodeTable::build(): this process's own objects, from dl_iterate_phdr,
// their CFI read in place through fault-safe loads (LiveMemory). NOT
// async-signal-safe (the loader's lock, allocation).
#include <link.h>

#include <algorithm>

#include "unwind/code_table.h"
#include "unwind/memory.h"

namespace profiling::unwind {
namespace {

// One reader for every object of this process (built before any handler
// can read it: the first build() runs when sampling starts).
const std::shared_ptr<const MemoryReader>& live_memory() {
  static const std::shared_ptr<const MemoryReader> live = std::make_shared<const LiveMemory>();
  return live;
}

struct BuildContext {
  const CodeTable* previous;
  std::vector<std::shared_ptr<const ObjectTable>>* objects;
};

std::shared_ptr<const ObjectTable> reuse(const CodeTable* previous, const ObjectTable& now) {
  if (previous == nullptr) return nullptr;
  for (const auto& object : previous->objects())
    if (object->start == now.start && object->end == now.end && object->eh_frame_hdr == now.eh_frame_hdr &&
        object->eh_frame_limit == now.eh_frame_limit)
      return object;
  return nullptr;
}

// Called with the loader's lock held (dl_iterate_phdr(3)).
int visit_object(dl_phdr_info* info, size_t, void* opaque) {
  auto* context = static_cast<BuildContext*>(opaque);
  ObjectTable object;
  object.start = UINT64_MAX;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
      object.start = std::min<uint64_t>(object.start, info->dlpi_addr + ph.p_vaddr);
      object.end = std::max<uint64_t>(object.end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      object.eh_frame_hdr = info->dlpi_addr + ph.p_vaddr;
    }
  }
  if (object.start >= object.end) return 0;  // no code
  if (object.eh_frame_hdr != 0) {
    // The .eh_frame follows its header in a loaded segment; no CIE or FDE
    // is read beyond that segment's file bytes.
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      const ElfW(Phdr)& ph = info->dlpi_phdr[i];
      const uint64_t segment = info->dlpi_addr + ph.p_vaddr;
      if (ph.p_type == PT_LOAD && object.eh_frame_hdr >= segment && object.eh_frame_hdr < segment + ph.p_memsz)
        object.eh_frame_limit = segment + ph.p_filesz;
    }
    if (object.eh_frame_limit <= object.eh_frame_hdr) object.eh_frame_hdr = object.eh_frame_limit = 0;
  }
  if (auto same = reuse(context->previous, object)) {
    context->objects->push_back(std::move(same));
    return 0;
  }
  object.name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  object.image = live_memory();
  context->objects->push_back(std::make_shared<const ObjectTable>(std::move(object)));
  return 0;
}

}  // namespace

std::unique_ptr<CodeTable> CodeTable::build(const CodeTable* previous) {
  std::vector<std::shared_ptr<const ObjectTable>> objects;
  BuildContext context{previous, &objects};
  dl_iterate_phdr(visit_object, &context);
  return from_objects(std::move(objects));
}

}  // namespace profiling::unwind
