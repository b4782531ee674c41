// Each process image's code and the objects behind it (see mappings.h).
#include "outside/mappings.h"

#include <sys/auxv.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "unwind/internal/cfi.h"

namespace profiling::outside {

std::shared_ptr<const ImageMemory> ObjectFiles::memory_for(pid_t pid, uint64_t start, uint64_t offset,
                                                           uint64_t length, const std::string& path,
                                                           const std::string& build_id) {
  std::shared_ptr<const ElfImage> image;
  if (path == "[vdso]") {
    // The kernel maps one vdso into every process: ours has its bytes.
    if (vdso_ == nullptr) {
      const auto base = getauxval(AT_SYSINFO_EHDR);
      if (base != 0) vdso_ = ElfImage::from_loaded(reinterpret_cast<const void*>(base), length);
    }
    image = vdso_;
  } else if (!path.empty() && path[0] == '/') {
    const std::string key = path + '\n' + build_id;
    if (auto it = files_.find(key); it != files_.end()) image = it->second.lock();
    if (image == nullptr) {
      std::string why;
      // Through the process's root first: a container's files.
      image = ElfImage::open("/proc/" + std::to_string(pid) + "/root" + path, &why);
      if (image == nullptr) image = ElfImage::open(path, &why);
      // A file replaced since it was mapped is not the code that ran.
      if (image != nullptr && !build_id.empty() && image->build_id() != build_id) image = nullptr;
      if (image != nullptr) files_[key] = image;
    }
  }
  uint64_t bias = 0;
  if (image == nullptr || !image->bias_of(start, offset, &bias)) return nullptr;
  return std::make_shared<const ImageMemory>(std::move(image), bias);
}

MappedCode ObjectFiles::map(pid_t pid, uint64_t start, uint64_t end, uint64_t offset, const std::string& path,
                            const std::string& build_id) {
  MappedCode m;
  m.start = start;
  m.end = end;
  m.file_offset = offset;
  m.path = path;
  m.memory = memory_for(pid, start, offset, end - start, path, build_id);
  m.build_id = !build_id.empty() ? build_id : m.memory != nullptr ? m.memory->image().build_id() : "";
  if (m.memory != nullptr && m.memory->image().eh_frame_hdr_vaddr() == 0 && m.memory->image().eh_frame_vaddr() != 0) {
    // No header to search the .eh_frame by (a static glibc program): the
    // whole object's rows, once.
    const ElfImage& elf = m.memory->image();
    const uint8_t* bytes = elf.at_vaddr(elf.eh_frame_vaddr(), elf.eh_frame_size());
    if (bytes != nullptr) {
      std::vector<unwind::internal::FdeRows> fdes;
      unwind::internal::parse_eh_frame({bytes, elf.eh_frame_size(), m.memory->bias() + elf.eh_frame_vaddr()}, &fdes);
      m.rows = std::make_shared<const std::vector<unwind::Row>>(unwind::internal::compact_rows(std::move(fdes), start, end));
    }
  }
  return m;
}

void CodeMap::add(MappedCode m) {
  std::vector<MappedCode> kept;
  for (MappedCode& old : code_)
    if (old.end <= m.start || old.start >= m.end) kept.push_back(std::move(old));
  kept.push_back(std::move(m));
  std::sort(kept.begin(), kept.end(), [](const MappedCode& a, const MappedCode& b) { return a.start < b.start; });
  code_ = std::move(kept);
  table_stale_ = true;
}

bool CodeMap::covers(uint64_t address) const {
  auto after = std::upper_bound(code_.begin(), code_.end(), address,
                                [](uint64_t a, const MappedCode& m) { return a < m.start; });
  return after != code_.begin() && address < std::prev(after)->end;
}

void CodeMap::add_from_proc(ObjectFiles& files, pid_t pid, const std::string& maps) {
  std::istringstream lines(maps);
  for (std::string line; std::getline(lines, line);) {
    unsigned long long start = 0, end = 0, offset = 0;
    char perms[8] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset, &path_at) < 4)
      continue;
    if (perms[2] != 'x') continue;
    std::string path = path_at > 0 ? line.substr(static_cast<size_t>(path_at)) : "";
    add(files.map(pid, start, end, offset, path, ""));
  }
}

const unwind::CodeTable* CodeMap::table() {
  if (table_stale_) {
    std::vector<std::shared_ptr<const unwind::ObjectTable>> objects;
    for (const MappedCode& m : code_) {
      auto object = std::make_shared<unwind::ObjectTable>();
      object->start = m.start;
      object->end = m.end;
      object->name = m.path;
      if (m.memory != nullptr && m.memory->image().eh_frame_hdr_vaddr() != 0) {
        const uint64_t hdr = m.memory->image().eh_frame_hdr_vaddr();
        for (const Segment& segment : m.memory->image().loads())
          if (hdr >= segment.vaddr && hdr < segment.vaddr + segment.filesz) {
            object->eh_frame_hdr = m.memory->bias() + hdr;
            object->eh_frame_limit = m.memory->bias() + segment.vaddr + segment.filesz;
          }
        object->image = m.memory;
      }
      object->rows = m.rows;
      objects.push_back(std::move(object));
    }
    table_ = unwind::CodeTable::from_objects(std::move(objects));
    table_stale_ = false;
  }
  return table_.get();
}

bool CodeMap::read(uint64_t address, uint64_t* value) const {
  auto it = std::upper_bound(code_.begin(), code_.end(), address,
                             [](uint64_t a, const MappedCode& m) { return a < m.start; });
  if (it == code_.begin()) return false;
  --it;
  return address < it->end && it->memory != nullptr && it->memory->read(address, value);
}

void CodeMap::list_into(format::Profile* profile) const {
  for (const MappedCode& m : code_) {
    // Anonymous code (a JIT's: "" in /proc/PID/maps, "//anon" in perf's
    // mmap records) is kept as "[anon]", as the preload's dumps keep it, for
    // its perf-PID.map to name (report/jit_map.h). [vdso] and [vsyscall]
    // are kept, as the preload's dumps keep them: without, a vDSO sample
    // was "[unknown]" at 0x0 from outside and "[vdso]" inside (issue 35);
    // the run names their functions (report/vdso_names.h).
    const bool anonymous = m.path.empty() || m.path == "//anon" || m.path.starts_with("[anon");
    const bool kernel_code = m.path == "[vdso]" || m.path == "[vsyscall]";
    if (!anonymous && !kernel_code && (m.path.empty() || m.path[0] == '[')) continue;
    format::Mapping mapping{m.start, m.end, m.file_offset, anonymous ? "[anon]" : m.path, m.build_id};
    if (m.path == profile->program)
      profile->mappings.insert(profile->mappings.begin(), std::move(mapping));
    else
      profile->mappings.push_back(std::move(mapping));
  }
  // The main executable first, as format/profile.h asks: its mappings
  // went to the front in reverse.
  auto main_end = std::find_if(profile->mappings.begin(), profile->mappings.end(),
                               [&](const format::Mapping& m) { return m.path != profile->program; });
  std::reverse(profile->mappings.begin(), main_end);
}

}  // namespace profiling::outside
