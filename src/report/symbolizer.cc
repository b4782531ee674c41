#include "report/symbolizer.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace profiling::report {

std::string object_basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

namespace {

std::string hex(const void* bytes, size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (size_t i = 0; i < size; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

void init_libelf() {
  static const bool ready = elf_version(EV_CURRENT) != EV_NONE;
  (void)ready;
}

// An open ELF file; closes itself.
struct ElfFile {
  int fd = -1;
  Elf* elf = nullptr;
  std::string path;

  ElfFile() = default;
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  ~ElfFile() {
    if (elf) elf_end(elf);
    if (fd >= 0) close(fd);
  }
  // Empty string on success, the reason otherwise.
  std::string open(const std::string& file) {
    init_libelf();
    path = file;
    // A profile names any path it likes: a FIFO there must not block the
    // open (O_NONBLOCK) and a device must not be read; only regular files
    // are objects.
    fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return std::strerror(errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) return std::strerror(errno);
    if (!S_ISREG(st.st_mode)) return S_ISDIR(st.st_mode) ? std::strerror(EISDIR) : "not a regular file";
    elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) return "not an ELF object";
    return {};
  }
  std::string build_id() const {
    const void* bytes = nullptr;
    ssize_t size = dwelf_elf_gnu_build_id(elf, &bytes);
    return size > 0 ? hex(bytes, static_cast<size_t>(size)) : std::string();
  }
  Elf_Scn* section(const char* name, GElf_Shdr* header_out = nullptr) const {
    size_t names = 0;
    if (elf_getshdrstrndx(elf, &names) != 0) return nullptr;
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr header;
      if (!gelf_getshdr(scn, &header)) continue;
      const char* section_name = elf_strptr(elf, names, header.sh_name);
      if (section_name && std::strcmp(section_name, name) == 0) {
        if (header_out) *header_out = header;
        return scn;
      }
    }
    return nullptr;
  }
  bool has_section_of_type(uint32_t type) const {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr header;
      if (gelf_getshdr(scn, &header) && header.sh_type == type) return true;
    }
    return false;
  }
  bool has_dwarf() const {
    GElf_Shdr header;
    return section(".debug_info", &header) && header.sh_type != SHT_NOBITS;
  }
};

bool file_exists(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

}  // namespace

std::string read_build_id(const std::string& path) {
  ElfFile file;
  if (!file.open(path).empty()) return {};
  return file.build_id();
}

class ElfObject {
 public:
  struct FunctionSymbol {
    uint64_t address;
    uint64_t end;  // one past the last byte
    const char* raw_name;
    uint8_t rank;  // lower wins among aliases at one address
  };

  std::string build_id;
  std::vector<LoadSegment> segments;

  // Empty string on success.
  std::string load(const std::string& path, const std::string& debug_root) {
    if (std::string error = file_.open(path); !error.empty()) return error;
    build_id = file_.build_id();
    size_t count = 0;
    if (elf_getphdrnum(file_.elf, &count) != 0) return "no program headers";
    for (size_t i = 0; i < count; ++i) {
      GElf_Phdr header;
      if (!gelf_getphdr(file_.elf, static_cast<int>(i), &header) || header.p_type != PT_LOAD) continue;
      segments.push_back({header.p_offset, header.p_filesz, header.p_vaddr, header.p_memsz,
                          (header.p_flags & PF_X) != 0});
    }
    find_debug_file(path, debug_root);
    // The symbol table: the object's own .symtab, else the debug file's,
    // else the dynamic symbols every loadable object keeps (.dynsym).
    if (file_.has_section_of_type(SHT_SYMTAB))
      read_symbols(file_, SHT_SYMTAB);
    else if (debug_ && debug_->has_section_of_type(SHT_SYMTAB))
      read_symbols(*debug_, SHT_SYMTAB);
    else
      read_symbols(file_, SHT_DYNSYM);
    return {};
  }

  ~ElfObject() {
    if (dwarf_) dwarf_end(dwarf_);
  }

  bool to_file_address(const format::Mapping& mapping, uint64_t address, uint64_t* out) const {
    if (address < mapping.start) return false;
    uint64_t offset = address - mapping.start + mapping.file_offset;
    for (const LoadSegment& segment : segments) {
      if (offset >= segment.file_offset && offset - segment.file_offset < segment.mem_size) {
        *out = offset - segment.file_offset + segment.vaddr;
        return true;
      }
    }
    return false;
  }

  const FunctionSymbol* lookup(uint64_t file_address) const {
    auto it = std::upper_bound(symbols_.begin(), symbols_.end(), file_address,
                               [](uint64_t a, const FunctionSymbol& s) { return a < s.address; });
    // A small function nested in a larger one (rare: hand-written assembly)
    // may end before the address; the enclosing one is then a step back.
    for (int step = 0; step < 2 && it != symbols_.begin(); ++step) {
      --it;
      if (file_address < it->end) return &*it;
    }
    return nullptr;
  }

  const std::string& demangled(const FunctionSymbol& symbol) {
    auto [it, inserted] = names_.try_emplace(symbol.raw_name);
    if (inserted) it->second = demangle(symbol.raw_name);
    return it->second;
  }

  // Calls use(unit) for the compile units whose range holds file_address
  // until it returns true; false when none did (or there is no DWARF).
  template <typename Use>
  bool with_unit_at(uint64_t file_address, Use&& use) {
    if (!dwarf_loaded_) load_dwarf();
    if (!dwarf_ || units_.empty()) return false;
    auto it = std::upper_bound(units_.begin(), units_.end(), file_address,
                               [](uint64_t a, const UnitRange& u) { return a < u.start; });
    // Units' ranges rarely overlap; a few candidates back cover the case
    // of one unit's range enclosing another's.
    for (int step = 0; step < 8 && it != units_.begin(); ++step) {
      --it;
      if (file_address < it->end && use(&it->unit)) return true;
    }
    return false;
  }

  SourceLine source_line(uint64_t file_address) {
    SourceLine result;
    with_unit_at(file_address, [&](Dwarf_Die* unit) {
      Dwarf_Line* line = dwarf_getsrc_die(unit, file_address);
      if (!line) return false;
      int number = 0;
      const char* file = dwarf_linesrc(line, nullptr, nullptr);
      dwarf_lineno(line, &number);
      result.file = file ? file : "";
      result.line = number;
      return true;
    });
    return result;
  }

  // The functions inlined at file_address (DWARF DW_TAG_inlined_subroutine
  // scopes, libdw's dwarf_getscopes), innermost first, each with the site
  // it was inlined at (DW_AT_call_file, DW_AT_call_line). Empty without
  // DWARF or inlining.
  struct InlinedCall {
    std::string name;  // linkage name when there is one (to demangle), else DW_AT_name
    std::string call_file;
    int call_line = 0;
  };
  std::vector<InlinedCall> inlined_at(uint64_t file_address) {
    std::vector<InlinedCall> chain;
    with_unit_at(file_address, [&](Dwarf_Die* unit) {
      Dwarf_Die* found = nullptr;
      if (dwarf_getscopes(unit, file_address, &found) <= 0) return false;
      // dwarf_getscopes continues from an inlined subroutine into its
      // abstract origin; the DIE's own parents (dwarf_getscopes_die) are
      // the concrete nesting: each inlined call in the one it was inlined
      // into, as elfutils' addr2line -i walks them.
      Dwarf_Die innermost = found[0];
      std::free(found);
      Dwarf_Die* scopes = nullptr;
      const int count = dwarf_getscopes_die(&innermost, &scopes);
      if (count <= 0) return true;
      Dwarf_Files* files = nullptr;
      size_t file_count = 0;
      if (dwarf_getsrcfiles(unit, &files, &file_count) != 0) files = nullptr;
      for (int i = 0; i < count; ++i) {
        if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
        InlinedCall call;
        Dwarf_Attribute attribute;
        const char* name = nullptr;
        // _integrate follows DW_AT_abstract_origin to the inlined function.
        for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name})
          if (!name && dwarf_attr_integrate(&scopes[i], at, &attribute)) name = dwarf_formstring(&attribute);
        call.name = name ? name : kUnknownFunction;
        Dwarf_Word value = 0;
        if (dwarf_attr(&scopes[i], DW_AT_call_line, &attribute) && dwarf_formudata(&attribute, &value) == 0)
          call.call_line = static_cast<int>(value);
        if (files && dwarf_attr(&scopes[i], DW_AT_call_file, &attribute) && dwarf_formudata(&attribute, &value) == 0 &&
            value < file_count) {
          const char* file = dwarf_filesrc(files, value, nullptr, nullptr);
          if (file) call.call_file = file;
        }
        chain.push_back(std::move(call));
      }
      std::free(scopes);
      return true;
    });
    return chain;
  }

  std::string symbol_file() const { return debug_ && !symbols_from_object_ ? debug_->path : file_.path; }

 private:
  struct UnitRange {
    uint64_t start, end;
    Dwarf_Die unit;
  };

  void find_debug_file(const std::string& path, const std::string& debug_root) {
    if (file_.has_section_of_type(SHT_SYMTAB) && file_.has_dwarf()) return;
    std::vector<std::string> candidates;
    if (build_id.size() > 2)
      candidates.push_back(debug_root + "/.build-id/" + build_id.substr(0, 2) + "/" +
                           build_id.substr(2) + ".debug");
    GElf_Shdr header;
    if (Elf_Scn* scn = file_.section(".gnu_debuglink", &header)) {
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (data && data->d_size > 4) {
        const char* name = static_cast<const char*>(data->d_buf);
        std::string link(name, strnlen(name, data->d_size));
        size_t slash = path.rfind('/');
        std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
        candidates.push_back(dir + "/" + link);
        candidates.push_back(dir + "/.debug/" + link);
        candidates.push_back(debug_root + (dir.starts_with("/") ? "" : "/") + dir + "/" + link);
      }
    }
    for (const std::string& candidate : candidates) {
      if (candidate == path || !file_exists(candidate)) continue;
      auto debug = std::make_unique<ElfFile>();
      if (!debug->open(candidate).empty()) continue;
      // A debug file for another build would give wrong names: its build
      // id note must match when both have one.
      std::string debug_id = debug->build_id();
      if (!build_id.empty() && !debug_id.empty() && debug_id != build_id) continue;
      debug_ = std::move(debug);
      return;
    }
  }

  void read_symbols(const ElfFile& file, uint32_t type) {
    symbols_from_object_ = &file == &file_;
    std::vector<std::pair<uint64_t, uint64_t>> section_ranges;  // index -> [addr, end)
    section_ranges.emplace_back(0, 0);
    for (Elf_Scn* scn = elf_nextscn(file.elf, nullptr); scn; scn = elf_nextscn(file.elf, scn)) {
      GElf_Shdr header;
      if (!gelf_getshdr(scn, &header)) continue;
      size_t index = elf_ndxscn(scn);
      if (section_ranges.size() <= index) section_ranges.resize(index + 1, {0, 0});
      section_ranges[index] = {header.sh_addr, header.sh_addr + header.sh_size};
    }
    std::vector<FunctionSymbol> found;
    std::vector<uint64_t> section_end;
    for (Elf_Scn* scn = elf_nextscn(file.elf, nullptr); scn; scn = elf_nextscn(file.elf, scn)) {
      GElf_Shdr header;
      if (!gelf_getshdr(scn, &header) || header.sh_type != type || header.sh_entsize == 0) continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (!data) continue;
      size_t count = header.sh_size / header.sh_entsize;
      for (size_t i = 0; i < count; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
        int symbol_type = GELF_ST_TYPE(sym.st_info);
        if (symbol_type != STT_FUNC && symbol_type != STT_GNU_IFUNC) continue;
        if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE || sym.st_value == 0) continue;
        const char* name = elf_strptr(file.elf, header.sh_link, sym.st_name);
        if (!name || !*name) continue;
        int binding = GELF_ST_BIND(sym.st_info);
        uint8_t rank = binding == STB_GLOBAL ? 0 : binding == STB_WEAK ? 1 : 2;
        uint64_t end = sym.st_size ? sym.st_value + sym.st_size : 0;
        found.push_back({sym.st_value, end, name, rank});
        uint64_t limit = sym.st_shndx < section_ranges.size() ? section_ranges[sym.st_shndx].second : 0;
        section_end.push_back(limit);
      }
    }
    // Zero-size symbols (assembly without .size) extend to the next symbol
    // or the end of their section, as perf's symbols__fixup_end does.
    std::vector<size_t> order(found.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const FunctionSymbol &x = found[a], &y = found[b];
      if (x.address != y.address) return x.address < y.address;
      if (x.rank != y.rank) return x.rank < y.rank;
      if ((x.end != 0) != (y.end != 0)) return x.end != 0;
      return std::strlen(x.raw_name) < std::strlen(y.raw_name);
    });
    symbols_.clear();
    symbols_.reserve(order.size());
    std::vector<uint64_t> limits;
    for (size_t i : order) {
      if (!symbols_.empty() && symbols_.back().address == found[i].address) continue;  // an alias
      symbols_.push_back(found[i]);
      limits.push_back(section_end[i]);
    }
    for (size_t i = 0; i < symbols_.size(); ++i) {
      if (symbols_[i].end != 0) continue;
      uint64_t next = i + 1 < symbols_.size() ? symbols_[i + 1].address : UINT64_MAX;
      uint64_t limit = limits[i] > symbols_[i].address ? limits[i] : UINT64_MAX;
      symbols_[i].end = std::min(next, limit);
      if (symbols_[i].end == UINT64_MAX) symbols_[i].end = symbols_[i].address + 1;
    }
  }

  void load_dwarf() {
    dwarf_loaded_ = true;
    const ElfFile* source = file_.has_dwarf() ? &file_ : (debug_ && debug_->has_dwarf() ? debug_.get() : nullptr);
    if (!source) return;
    dwarf_ = dwarf_begin_elf(source->elf, DWARF_C_READ, nullptr);
    if (!dwarf_) return;
    Dwarf_CU* unit = nullptr;
    Dwarf_Die unit_die;
    Dwarf_Half version;
    uint8_t unit_type;
    while (dwarf_get_units(dwarf_, unit, &unit, &version, &unit_type, &unit_die, nullptr) == 0) {
      if (unit_type != DW_UT_compile && unit_type != DW_UT_skeleton && unit_type != DW_UT_partial) continue;
      Dwarf_Addr base, start, end;
      ptrdiff_t offset = 0;
      while ((offset = dwarf_ranges(&unit_die, offset, &base, &start, &end)) > 0)
        if (end > start) units_.push_back({start, end, unit_die});
    }
    std::sort(units_.begin(), units_.end(),
              [](const UnitRange& a, const UnitRange& b) { return a.start < b.start; });
  }

  ElfFile file_;
  std::unique_ptr<ElfFile> debug_;
  bool symbols_from_object_ = true;
  std::vector<FunctionSymbol> symbols_;
  std::unordered_map<const char*, std::string> names_;
  Dwarf* dwarf_ = nullptr;
  bool dwarf_loaded_ = false;
  std::vector<UnitRange> units_;
};

Symbolizer::Symbolizer(std::string debug_root) : debug_root_(std::move(debug_root)) {}
Symbolizer::~Symbolizer() = default;

namespace {
// Mappings that name no file: the vDSO, [vsyscall], anonymous (JIT) memory.
bool is_pseudo_object(const std::string& path) { return path.empty() || path[0] == '['; }
}  // namespace

ElfObject* Symbolizer::object_for(const format::Mapping& mapping) {
  if (is_pseudo_object(mapping.path)) return nullptr;
  std::string key = mapping.path + '\0' + mapping.build_id;
  auto it = objects_.find(key);
  if (it != objects_.end()) return it->second.get();
  auto object = std::make_unique<ElfObject>();
  if (std::string error = object->load(mapping.path, debug_root_); !error.empty()) {
    problems_.push_back({key, mapping.path + ": " + error});
    object.reset();
  } else if (!mapping.build_id.empty() && !object->build_id.empty() && mapping.build_id != object->build_id) {
    problems_.push_back({key, mapping.path + ": build id " + object->build_id + " differs from the profile's " +
                                  mapping.build_id + " (the file changed)"});
    object.reset();
  }
  return objects_.emplace(std::move(key), std::move(object)).first->second.get();
}

namespace {

// The names a profile file gave an address, as one symbol: the outermost
// frame's function (the one a symbol table would name; the inner ones were
// inlined into it) and the innermost frame's line (the one the line table
// would give). False when no frame names a function or a file.
bool name_from_frames(const std::vector<format::Frame>& frames, Symbol* symbol) {
  for (auto frame = frames.rbegin(); frame != frames.rend(); ++frame) {
    const std::string& name = frame->function.empty() ? frame->system_name : frame->function;
    if (name.empty()) continue;
    symbol->function = demangle(name);
    break;
  }
  if (symbol->function == kUnknownFunction && frames.front().file.empty()) return false;
  symbol->profile_line.file = frames.front().file;
  symbol->profile_line.line = static_cast<int>(frames.front().line);
  symbol->from_profile = true;
  return true;
}

}  // namespace

Symbol Symbolizer::symbolize(const format::Mapping* mapping, uint64_t address,
                             const std::vector<format::Frame>* carried) {
  Symbol symbol;
  symbol.function = kUnknownFunction;
  symbol.object = !mapping ? kUnknownFunction : mapping->path.empty() ? "[anon]" : mapping->path;
  ElfObject* object = mapping ? object_for(*mapping) : nullptr;
  if (object && object->to_file_address(*mapping, address, &symbol.file_address)) {
    if (const auto* found = object->lookup(symbol.file_address)) {
      symbol.function = object->demangled(*found);
      symbol.function_address = found->address;
      symbol.function_size = found->end - found->address;
      symbol.known = true;
      return symbol;
    }
  }
  if (!carried || carried->empty() || !name_from_frames(*carried, &symbol)) {
    // Code of a readable object that nothing names (stripped): a row per
    // function, "xz+0x1a2b0" (unnamed_code.h), not one [unknown] per object.
    if (object && symbol.file_address != 0) unnamed_.name(mapping->path, &symbol);
    return symbol;
  }
  // CPU time no sample caught (format::unsampled_address): its own object,
  // so the object view shows how much of the total it is.
  if (!mapping && address >= format::kUnsampledAddressBase) symbol.object = "[unsampled]";
  if (!mapping && address == format::kKernelAddress) symbol.object = format::kKernelFrame;
  if (!mapping) return symbol;
  std::string key = mapping->path + '\0' + mapping->build_id;
  for (ObjectProblem& problem : problems_)
    if (problem.key == key) problem.named_from_profile = true;
  return symbol;
}

SourceLine Symbolizer::source_line(const format::Mapping* mapping, const Symbol& symbol) {
  if (symbol.from_profile) return symbol.profile_line;
  if (!mapping || !symbol.known) return {};
  ElfObject* object = object_for(*mapping);
  return object ? object->source_line(symbol.file_address) : SourceLine{};
}

std::vector<format::Frame> Symbolizer::frames(const format::Mapping* mapping, const Symbol& symbol,
                                              bool with_lines) {
  std::vector<format::Frame> frames;
  if (!symbol.known) return frames;
  const SourceLine line = with_lines ? source_line(mapping, symbol) : SourceLine{};
  ElfObject* object = mapping ? object_for(*mapping) : nullptr;
  const auto chain = object ? object->inlined_at(symbol.file_address) : decltype(object->inlined_at(0)){};
  // The innermost frame has the line table's line; each frame out has the
  // line its inner frame was inlined at; the outermost is the function the
  // symbol table names (as every flat view shows it).
  std::string file = line.file;
  int number = line.line;
  for (const auto& call : chain) {
    format::Frame frame;
    frame.function = demangle(call.name);
    frame.system_name = call.name;
    frame.file = file;
    frame.line = number;
    frames.push_back(std::move(frame));
    file = call.call_file;
    number = call.call_line;
  }
  format::Frame outer;
  outer.function = symbol.function;
  outer.system_name = symbol.function;
  outer.file = file;
  outer.line = number;
  frames.push_back(std::move(outer));
  return frames;
}

bool Symbolizer::file_address(const format::Mapping& mapping, uint64_t address, uint64_t* out) {
  ElfObject* object = object_for(mapping);
  return object && object->to_file_address(mapping, address, out);
}

std::vector<LoadSegment> Symbolizer::segments(const format::Mapping& mapping) {
  ElfObject* object = object_for(mapping);
  return object ? object->segments : std::vector<LoadSegment>{};
}

std::string Symbolizer::symbol_file(const format::Mapping& mapping) {
  ElfObject* object = object_for(mapping);
  return object ? object->symbol_file() : std::string();
}

std::vector<std::string> Symbolizer::take_warnings() {
  std::vector<std::string> out;
  for (const ObjectProblem& problem : problems_)
    out.push_back(problem.text + (problem.named_from_profile ? "; names come from the profile file"
                                                             : "; its samples are shown as [unknown]"));
  problems_.clear();
  return out;
}

}  // namespace profiling::report
