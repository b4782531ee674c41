// build() is NOT async-signal-safe; find() and object_of() are
// ASYNC-SIGNAL-SAFE (binary searches over immutable arrays).
#include "unwind/code_table.h"

#include <link.h>

#include <algorithm>

#include "unwind/internal/cfi.h"

namespace profiling::unwind {
namespace {

struct BuildContext {
  const CodeTable* previous;
  std::vector<std::shared_ptr<const ObjectTable>>* objects;
};

std::shared_ptr<const ObjectTable> reuse(const CodeTable* previous, uint64_t start, uint64_t end, uint64_t hdr) {
  if (previous == nullptr) return nullptr;
  for (const auto& object : previous->objects())
    if (object->start == start && object->end == end && object->eh_frame_hdr == hdr) return object;
  return nullptr;
}

// Called with the loader's lock held (dl_iterate_phdr(3)): the object
// cannot be unloaded while its .eh_frame is read.
int visit_object(dl_phdr_info* info, size_t, void* opaque) {
  auto* context = static_cast<BuildContext*>(opaque);
  uint64_t start = UINT64_MAX, end = 0, hdr = 0, hdr_size = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
      start = std::min<uint64_t>(start, info->dlpi_addr + ph.p_vaddr);
      end = std::max<uint64_t>(end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      hdr = info->dlpi_addr + ph.p_vaddr;
      hdr_size = ph.p_memsz;
    }
  }
  if (start >= end || end - start > UINT32_MAX) return 0;  // no code, or beyond 32-bit row offsets
  if (auto same = reuse(context->previous, start, end, hdr)) {
    context->objects->push_back(std::move(same));
    return 0;
  }
  auto object = std::make_shared<ObjectTable>();
  object->start = start;
  object->end = end;
  object->eh_frame_hdr = hdr;
  object->name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  std::vector<internal::FdeRows> fdes;
  if (hdr != 0) {
    // The .eh_frame follows its header in a loaded segment; FDEs may not
    // extend beyond that segment's end.
    uint64_t limit = 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      const ElfW(Phdr)& ph = info->dlpi_phdr[i];
      const uint64_t seg = info->dlpi_addr + ph.p_vaddr;
      if (ph.p_type == PT_LOAD && hdr >= seg && hdr < seg + ph.p_memsz) limit = seg + ph.p_filesz;
    }
    if (limit > hdr) {
      internal::Section section{reinterpret_cast<const uint8_t*>(hdr), static_cast<size_t>(limit - hdr), hdr};
      (void)hdr_size;
      internal::parse_eh_frame_hdr(section, limit, &fdes);
    }
  }
  object->rows = internal::compact_rows(std::move(fdes), start, end);
  object->index_pages();
  context->objects->push_back(std::move(object));
  return 0;
}

constexpr unsigned kPageShift = 8;

}  // namespace

void ObjectTable::index_pages() {
  page_rows.clear();
  if (rows.empty()) return;
  const uint64_t pages = ((end - start) >> kPageShift) + 1;
  page_rows.resize(pages + 1);
  size_t row = 0;
  for (uint64_t page = 0; page <= pages; ++page) {
    const uint64_t offset = page << kPageShift;
    while (row + 1 < rows.size() && rows[row + 1].start <= offset) ++row;
    page_rows[page] = static_cast<uint32_t>(row);
  }
}

std::unique_ptr<CodeTable> CodeTable::build(const CodeTable* previous) {
  std::vector<std::shared_ptr<const ObjectTable>> objects;
  BuildContext context{previous, &objects};
  dl_iterate_phdr(visit_object, &context);
  return from_objects(std::move(objects));
}

std::unique_ptr<CodeTable> CodeTable::from_objects(std::vector<std::shared_ptr<const ObjectTable>> objects) {
  std::sort(objects.begin(), objects.end(), [](const auto& a, const auto& b) { return a->start < b->start; });
  // Overlapping objects cannot be told apart by address: the first keeps its range.
  std::vector<std::shared_ptr<const ObjectTable>> disjoint;
  for (auto& object : objects)
    if (disjoint.empty() || object->start >= disjoint.back()->end) disjoint.push_back(std::move(object));
  auto table = std::unique_ptr<CodeTable>(new CodeTable());
  table->objects_ = std::move(disjoint);
  return table;
}

size_t CodeTable::row_count() const {
  size_t n = 0;
  for (const auto& object : objects_) n += object->rows.size();
  return n;
}

const ObjectTable* CodeTable::object_of(uint64_t pc) const {
  size_t lo = 0, hi = objects_.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    const ObjectTable* object = objects_[mid].get();
    if (pc < object->start) hi = mid;
    else if (pc >= object->end) lo = mid + 1;
    else return object;
  }
  return nullptr;
}

const Row* CodeTable::find(uint64_t pc) const {
  const ObjectTable* object = object_of(pc);
  if (object == nullptr || object->rows.empty()) return nullptr;
  const uint32_t offset = static_cast<uint32_t>(pc - object->start);
  // The last row starting at or before offset; rows[0] starts at 0. It is
  // among the rows from the one covering offset's page to the one covering
  // the next page's start.
  size_t lo = 0, hi = object->rows.size();
  const size_t page = offset >> kPageShift;
  if (page + 1 < object->page_rows.size()) {
    lo = object->page_rows[page];
    hi = static_cast<size_t>(object->page_rows[page + 1]) + 1;
  }
  while (hi - lo > 1) {
    const size_t mid = (lo + hi) / 2;
    if (object->rows[mid].start <= offset) lo = mid;
    else hi = mid;
  }
  return &object->rows[lo];
}

}  // namespace profiling::unwind
