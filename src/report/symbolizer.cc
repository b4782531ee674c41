#include "report/symbolizer.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
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

#include "report/debug_file_cache.h"
#include "report/debuginfod.h"

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
  // The descriptor, for another library to own; this no longer closes it.
  int release() {
    if (elf) elf_end(elf);
    elf = nullptr;
    const int out = fd;
    fd = -1;
    return out;
  }
};

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

  // Empty string on success. profile_build_id: the build id the profile
  // recorded for the mapping, to find the debug file of a program that is
  // gone. copy_debug_files: make the uncompressed copy of a compressed
  // debug file that has none yet (debug_file_cache.h); one made before is
  // read either way.
  std::string load(const std::string& path, const std::string& profile_build_id, const std::string& debug_root,
                   bool copy_debug_files) {
    copy_debug_files_ = copy_debug_files;
    // libdwfl's debug-file search path (dwfl_standard_find_debuginfo, as
    // gdb's "Separate Debug Files"): the object's directory, its .debug/
    // subdirectory, and the debug root, under which it looks for
    // .build-id/xx/yyyy.debug and then the object's own directory.
    debug_root_ = debug_root;
    debuginfo_path_ = ":.debug:" + debug_root;
    debuginfo_path_pointer_ = debuginfo_path_.data();
    callbacks_.find_elf = dwfl_build_id_find_elf;
    callbacks_.find_debuginfo = &ElfObject::find_debuginfo;
    callbacks_.section_address = dwfl_offline_section_address;
    callbacks_.debuginfo_path = &debuginfo_path_pointer_;
    init_libelf();
    dwfl_ = dwfl_begin(&callbacks_);
    if (dwfl_ == nullptr) return dwfl_errmsg(-1);
    debuginfod_.attach(dwfl_);

    ElfFile file;
    std::string reported = path;
    int fd = -1;
    if (std::string error = file.open(path); !error.empty()) {
      // The program is gone (or is not what it was): the debug file its
      // build id names keeps its program headers and symbols (objcopy(1)
      // --only-keep-debug), so the profile's addresses still resolve.
      if (file.elf != nullptr || profile_build_id.size() <= 2) return error;
      fd = open_debug_file_by_build_id(path, profile_build_id, &reported);
      if (fd < 0) return error;
      debug_file_only_ = true;
    } else {
      fd = file.release();
    }
    // Base 0 with p_vaddr added: module addresses are the object's own
    // link-time addresses, whatever its type (libdwfl.h, dwfl_report_elf).
    dwfl_report_begin(dwfl_);
    module_ = dwfl_report_elf(dwfl_, object_basename(path).c_str(), reported.c_str(), fd, 0, true);
    if (module_ == nullptr) {
      close(fd);
      return dwfl_errmsg(-1);
    }
    dwfl_report_end(dwfl_, nullptr, nullptr);
    void** user_data = nullptr;
    dwfl_module_info(module_, &user_data, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (user_data) *user_data = this;
    const unsigned char* bits = nullptr;
    GElf_Addr note_address = 0;
    const int size = dwfl_module_build_id(module_, &bits, &note_address);
    if (size > 0) build_id = hex(bits, static_cast<size_t>(size));
    GElf_Addr bias = 0;
    main_elf_ = dwfl_module_getelf(module_, &bias);
    if (main_elf_ == nullptr) return dwfl_errmsg(-1);
    main_path_ = reported;
    size_t count = 0;
    if (elf_getphdrnum(main_elf_, &count) != 0) return "no program headers";
    for (size_t i = 0; i < count; ++i) {
      GElf_Phdr header;
      if (!gelf_getphdr(main_elf_, static_cast<int>(i), &header) || header.p_type != PT_LOAD) continue;
      segments.push_back({header.p_offset, header.p_filesz, header.p_vaddr, header.p_memsz,
                          (header.p_flags & PF_X) != 0});
    }
    // The symbol table is read on the first lookup (ensure_symbols): a
    // report that takes the names from the profile file needs only the
    // program headers (node's 99 MB binary: reading its .dynsym was a
    // quarter of such a report).
    return {};
  }

  ~ElfObject() {
    if (dwfl_) dwfl_end(dwfl_);
  }

  bool to_file_address(const format::Mapping& mapping, uint64_t address, uint64_t* out) const {
    if (address < mapping.start) return false;
    if (debug_file_only_) return to_file_address_by_size(mapping, address, out);
    uint64_t offset = address - mapping.start + mapping.file_offset;
    for (const LoadSegment& segment : segments) {
      if (offset >= segment.file_offset && offset - segment.file_offset < segment.mem_size) {
        *out = offset - segment.file_offset + segment.vaddr;
        return true;
      }
    }
    return false;
  }

  // A debug file in place of its program keeps the segments' addresses and
  // sizes but not their file offsets (objcopy(1) --only-keep-debug moves
  // them), so a mapping is matched to the segment whose pages it spans
  // (x86-64's 4 KiB pages), the executable one first: profiles sample code.
  bool to_file_address_by_size(const format::Mapping& mapping, uint64_t address, uint64_t* out) const {
    constexpr uint64_t kPage = 4096;
    for (bool executable : {true, false}) {
      for (const LoadSegment& segment : segments) {
        if (segment.executable != executable) continue;
        const uint64_t first_page = segment.vaddr & ~(kPage - 1);
        const uint64_t end_page = (segment.vaddr + segment.mem_size + kPage - 1) & ~(kPage - 1);
        if (mapping.limit - mapping.start != end_page - first_page) continue;
        const uint64_t file_address = address - mapping.start + first_page;
        if (file_address < segment.vaddr || file_address - segment.vaddr >= segment.mem_size) return false;
        *out = file_address;
        return true;
      }
    }
    return false;
  }

  const FunctionSymbol* lookup(uint64_t file_address) {
    ensure_symbols();
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

  // Demangled once per distinct name: a symbol's, or an inlined
  // function's (the chains of many addresses repeat the same ones).
  const std::string& demangled(const char* raw_name) {
    auto [it, inserted] = names_.try_emplace(raw_name);
    if (inserted) it->second = demangle(raw_name);
    return it->second;
  }

  // Calls use(unit, dwarf_address) for the compile units whose range holds
  // file_address until it returns true; false when none did (or there is
  // no DWARF). The DWARF (and the debug file that holds it) is read on the
  // first call only: names need only the symbol table.
  template <typename Use>
  bool with_unit_at(uint64_t file_address, Use&& use) {
    if (module_ == nullptr) return false;
    // libdwfl finds the unit through .debug_aranges (dwfl_module_addrdie).
    // The unit it names is the answer even when use finds nothing there (an
    // assembler unit has lines but no functions: glibc's string functions):
    // asking every other unit would read all their ranges (896 units with
    // libc6-dbg, a fifth of an inline report's CPU) to find the same.
    Dwarf_Addr bias = 0;
    if (Dwarf_Die* unit = dwfl_module_addrdie(module_, file_address, &bias)) return use(unit, file_address - bias);
    // Units .debug_aranges does not cover (it is optional: clang and rustc
    // leave it out) are found by their own ranges, read once.
    if (!units_loaded_) load_unit_ranges();
    const uint64_t address = file_address - dwarf_bias_;
    auto it = std::upper_bound(units_.begin(), units_.end(), address,
                               [](uint64_t a, const UnitRange& u) { return a < u.start; });
    // Units' ranges rarely overlap; a few candidates back cover the case
    // of one unit's range enclosing another's.
    for (int step = 0; step < 8 && it != units_.begin(); ++step) {
      --it;
      if (address < it->end && use(&it->unit, address)) return true;
    }
    return false;
  }

  SourceLine source_line(uint64_t file_address) {
    SourceLine result;
    with_unit_at(file_address, [&](Dwarf_Die* unit, uint64_t address) {
      Dwarf_Line* line = dwarf_getsrc_die(unit, address);
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
  // scopes, from the unit's scope tree), innermost first, each with the site
  // it was inlined at (DW_AT_call_file, DW_AT_call_line; the file only with
  // call_files: the unit's file table is its line program's header, which
  // libdw 0.188's dwarf_getsrcfiles reads by decoding the whole line
  // program). Empty without DWARF or inlining.
  struct InlinedCall {
    const char* name;  // linkage name when there is one (to demangle), else DW_AT_name; in libdw's strings
    const char* call_file = nullptr;
    int call_line = 0;
  };
  std::vector<InlinedCall> inlined_at(uint64_t file_address, bool call_files) {
    std::vector<InlinedCall> chain;
    with_unit_at(file_address, [&](Dwarf_Die* unit, uint64_t address) {
      // The unit's scopes containing the address, outermost first: each
      // inlined call in the one it was inlined into, as elfutils' addr2line
      // -i walks them (dwarf_getscopes would walk the whole unit for every
      // address: 2.9 times the report's CPU on profil's own C++).
      const std::vector<Dwarf_Die> path = scopes_at(unit, address);
      if (path.empty()) return false;
      Dwarf_Files* files = nullptr;
      size_t file_count = 0;
      if (!call_files || dwarf_getsrcfiles(unit, &files, &file_count) != 0) files = nullptr;
      for (auto scope = path.rbegin(); scope != path.rend(); ++scope) {
        Dwarf_Die die = *scope;
        if (dwarf_tag(&die) != DW_TAG_inlined_subroutine) continue;
        InlinedCall call{kUnknownFunction};
        Dwarf_Attribute attribute;
        const char* name = nullptr;
        // _integrate follows DW_AT_abstract_origin to the inlined function.
        for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name})
          if (!name && dwarf_attr_integrate(&die, at, &attribute)) name = dwarf_formstring(&attribute);
        if (name) call.name = name;
        Dwarf_Word value = 0;
        if (dwarf_attr(&die, DW_AT_call_line, &attribute) && dwarf_formudata(&attribute, &value) == 0)
          call.call_line = static_cast<int>(value);
        if (files && dwarf_attr(&die, DW_AT_call_file, &attribute) && dwarf_formudata(&attribute, &value) == 0 &&
            value < file_count)
          call.call_file = dwarf_filesrc(files, value, nullptr, nullptr);
        chain.push_back(call);
      }
      return true;
    });
    return chain;
  }

  // A unit's functions and inlined calls as a tree (DW_TAG_subprogram and
  // DW_TAG_inlined_subroutine with code, nested as their DIEs are; lexical
  // blocks and namespaces are looked through). A node's children are read
  // from its DIE when an address first falls inside it, and the unit's top
  // level when the unit is first asked for: the other functions' subtrees
  // are skipped (DW_AT_sibling), which on profil's own 55 MB of DWARF was
  // most of the report's CPU and of its memory (the whole tree, 158 MB
  // peak RSS against 34 MB without inline frames).
  // The namespaces at a unit's top level are looked into only when no
  // function there holds the address. GCC puts every function with code at
  // the top level (a definition refers to its declaration in the namespace
  // by DW_AT_specification), and the namespaces hold only declarations: in
  // profil's own DWARF, 74,000 of the 251,000 DIEs of the units' top levels,
  // none with code. clang and rustc put functions inside their namespaces:
  // those are found on the second look.
  struct ScopeNode {
    Dwarf_Die die;
    bool expanded = false;
    uint32_t first = 0, count = 0;  // its children's ranges in UnitScopes::ranges, once expanded
  };
  // A child's address range, sorted by start in each node's run of them;
  // reach: the largest end up to this one in the run, so that the ranges
  // holding an address are found without looking at those before it.
  struct ChildRange {
    uint64_t start, end, reach;
    uint32_t node;
  };
  struct UnitScopes {
    std::vector<ScopeNode> nodes;
    std::vector<ChildRange> ranges;
    uint32_t first = 0, count = 0;  // the unit's top level
    std::vector<Dwarf_Die> namespaces;  // at the top level, not yet looked into
  };

  // The code scopes directly under parent (through lexical blocks and
  // namespaces), each a new node, their ranges into *found. With
  // namespaces, parent's own namespaces are put there instead of looked into.
  static void collect_children(Dwarf_Die* parent, UnitScopes* out, std::vector<ChildRange>* found,
                               std::vector<Dwarf_Die>* namespaces = nullptr) {
    Dwarf_Die child;
    if (dwarf_child(parent, &child) != 0) return;
    do {
      const int tag = dwarf_tag(&child);
      if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
        // Declarations and abstract instances (most of a C++ unit's
        // subprograms: 94 % in profil's own) have no address attribute. Their
        // abbreviation says so without decoding the DIE, where dwarf_ranges
        // looks for each of DW_AT_low_pc, DW_AT_high_pc and DW_AT_ranges.
        if (!dwarf_hasattr(&child, DW_AT_low_pc) && !dwarf_hasattr(&child, DW_AT_ranges)) continue;
        const auto node = static_cast<uint32_t>(out->nodes.size());
        Dwarf_Addr base, start, end;
        ptrdiff_t offset = 0;
        bool code = false;
        while ((offset = dwarf_ranges(&child, offset, &base, &start, &end)) > 0) {
          if (end <= start) continue;
          found->push_back({start, end, 0, node});
          code = true;
        }
        // Without code (a declaration, an abstract instance): nothing in it
        // has an address.
        if (code) out->nodes.push_back({child});
      } else if (namespaces && (tag == DW_TAG_namespace || tag == DW_TAG_module)) {
        namespaces->push_back(child);
      } else if (tag == DW_TAG_lexical_block || tag == DW_TAG_namespace || tag == DW_TAG_try_block ||
                 tag == DW_TAG_catch_block || tag == DW_TAG_module) {
        collect_children(&child, out, found);
      }
      // Types, variables, parameters: no code scopes inside.
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  static void expand(Dwarf_Die* die, UnitScopes* scopes, uint32_t* first, uint32_t* count,
                     std::vector<Dwarf_Die>* namespaces = nullptr) {
    std::vector<ChildRange> found;
    collect_children(die, scopes, &found, namespaces);
    store_run(std::move(found), scopes, first, count);
  }

  // The unit's top level again, with what its namespaces hold.
  static void look_into_namespaces(UnitScopes* scopes) {
    std::vector<ChildRange> found(scopes->ranges.begin() + scopes->first,
                                  scopes->ranges.begin() + scopes->first + scopes->count);
    std::vector<Dwarf_Die> namespaces = std::move(scopes->namespaces);
    scopes->namespaces.clear();
    for (Dwarf_Die& die : namespaces) collect_children(&die, scopes, &found);
    store_run(std::move(found), scopes, &scopes->first, &scopes->count);
  }

  // Sorts found, a node's children's ranges, into a run of scopes->ranges.
  static void store_run(std::vector<ChildRange> found, UnitScopes* scopes, uint32_t* first, uint32_t* count) {
    std::sort(found.begin(), found.end(), [](const ChildRange& a, const ChildRange& b) {
      return a.start != b.start ? a.start < b.start : a.node < b.node;
    });
    uint64_t reach = 0;
    for (ChildRange& range : found) range.reach = reach = std::max(reach, range.end);
    *first = static_cast<uint32_t>(scopes->ranges.size());
    *count = static_cast<uint32_t>(found.size());
    scopes->ranges.insert(scopes->ranges.end(), found.begin(), found.end());
  }

  // The child whose range holds address, the first in DIE order when
  // several do (as a walk of the DIEs finds it); -1 when none.
  static int64_t child_at(const UnitScopes& scopes, uint32_t first, uint32_t count, uint64_t address) {
    const ChildRange* begin = scopes.ranges.data() + first;
    const ChildRange* it = std::upper_bound(begin, begin + count, address,
                                            [](uint64_t a, const ChildRange& r) { return a < r.start; });
    int64_t best = -1;
    while (it != begin && (it - 1)->reach > address) {
      --it;
      if (address < it->end && (best < 0 || it->node < best)) best = it->node;
    }
    return best;
  }

  std::vector<Dwarf_Die> scopes_at(Dwarf_Die* unit, uint64_t address) {
    auto [it, inserted] = unit_scopes_.try_emplace(dwarf_dieoffset(unit));
    UnitScopes& scopes = it->second;
    if (inserted) expand(unit, &scopes, &scopes.first, &scopes.count, &scopes.namespaces);
    if (!scopes.namespaces.empty() && child_at(scopes, scopes.first, scopes.count, address) < 0)
      look_into_namespaces(&scopes);
    std::vector<Dwarf_Die> path;
    uint32_t first = scopes.first, count = scopes.count;
    for (int64_t node; (node = child_at(scopes, first, count, address)) >= 0;) {
      const auto index = static_cast<size_t>(node);
      if (!scopes.nodes[index].expanded) {
        // expand appends to nodes: the node is looked up again after.
        Dwarf_Die die = scopes.nodes[index].die;
        uint32_t child_first = 0, child_count = 0;
        expand(&die, &scopes, &child_first, &child_count);
        scopes.nodes[index].expanded = true;
        scopes.nodes[index].first = child_first;
        scopes.nodes[index].count = child_count;
      }
      path.push_back(scopes.nodes[index].die);
      first = scopes.nodes[index].first;
      count = scopes.nodes[index].count;
    }
    return path;
  }

  // The file the symbol table was read from: the object, or its separate
  // debug file (MiniDebugInfo is inside the object).
  std::string symbol_file() {
    ensure_symbols();
    if (symbols_elf_ == nullptr || symbols_elf_ == main_elf_ || module_ == nullptr) return main_path_;
    const char* debug_file = nullptr;
    dwfl_module_info(module_, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &debug_file);
    return debug_file ? debug_file : main_path_;
  }

  // The uncompressed copy read in place of the debug file, or "".
  const std::string& debug_copy() const { return debug_copy_; }

 private:
  struct UnitRange {
    uint64_t start, end;
    Dwarf_Die unit;
  };

  // libdwfl's find_debuginfo callback. First the object's debug file by
  // its build id under the debug root, looked up here rather than by
  // libdwfl's dwfl_build_id_find_debuginfo: that one keeps the Elf it
  // opened (libdwfl/dwfl_build_id_find_debuginfo.c sets mod->debug.elf), so
  // an uncompressed copy returned in its place would go unread. Then, with
  // DEBUGINFOD_URLS, libdwfl's standard search (the build id, then
  // .gnu_debuglink, then the servers), with the progress line around it.
  // Without, the same search but its last step: there libdwfl 0.188 loads
  // libdebuginfod, and with it libcurl and its TLS libraries (15 ms of
  // CPU), to find that no server is named. Once the DWARF is read libdwfl
  // asks again, for the dwz file .gnu_debugaltlink names
  // (find_debug_altlink passes its path with a CRC of 0); that one it opens
  // from the descriptor.
  static int find_debuginfo(Dwfl_Module* module, void** user_data, const char* module_name, Dwarf_Addr base,
                            const char* file_name, const char* debug_link, GElf_Word debug_link_crc,
                            char** debug_file_name) {
    // The module's user data is the object (set when it was reported).
    auto* self = static_cast<ElfObject*>(*user_data);
    const bool altlink = debug_link != nullptr && debug_link_crc == 0;
    if (self && !altlink) {
      const unsigned char* bits = nullptr;
      GElf_Addr note_address = 0;
      const int size = dwfl_module_build_id(module, &bits, &note_address);
      std::string found;
      const int fd = size > 1 ? self->open_installed_debug_file(hex(bits, static_cast<size_t>(size)), &found) : -1;
      if (fd >= 0) {
        *debug_file_name = strdup(found.c_str());
        return fd;
      }
    }
    if (self && self->debuginfod_.enabled()) {
      self->debuginfod_.begin(file_name ? file_name : module_name);
      const int fd = dwfl_standard_find_debuginfo(module, user_data, module_name, base, file_name, debug_link,
                                                  debug_link_crc, debug_file_name);
      self->debuginfod_.end(fd >= 0);
      return self->uncompressed(fd, *debug_file_name);
    }
    const int fd = dwfl_build_id_find_debuginfo(module, user_data, module_name, base, file_name, debug_link,
                                                debug_link_crc, debug_file_name);
    if (self == nullptr) return fd;
    if (fd >= 0) return altlink ? self->uncompressed(fd, *debug_file_name) : fd;
    if (file_name == nullptr || debug_link == nullptr) return fd;
    return self->uncompressed(self->open_debug_link(file_name, debug_link, debug_file_name), *debug_file_name);
  }

  // The debug file at fd, or in its place its uncompressed copy, which
  // libdw reads without inflating (debug_file_cache.h). The file keeps its
  // name (symbol_file): the copy holds the same bytes once inflated.
  int uncompressed(int fd, const char* name) {
    if (fd < 0) return fd;
    std::string copy;
    const int copy_fd = open_uncompressed_debug_file(fd, name ? name : "", copy_debug_files_, &copy);
    if (copy_fd < 0) return fd;
    close(fd);
    debug_copy_ = copy;
    return copy_fd;
  }

  // .gnu_debuglink's file next to the object, in its .debug/ directory and
  // under the debug root (gdb manual, "Separate Debug Files"); one with
  // another build id would give wrong names.
  int open_debug_link(const std::string& path, const std::string& link, char** found) const {
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
    for (const std::string& candidate : {dir + "/" + link, dir + "/.debug/" + link,
                                         debug_root_ + (dir.starts_with("/") ? "" : "/") + dir + "/" + link}) {
      if (candidate == path) continue;
      ElfFile debug;
      if (!debug.open(candidate).empty()) continue;
      const std::string id = debug.build_id();
      if (!build_id.empty() && !id.empty() && id != build_id) continue;
      *found = strdup(candidate.c_str());
      return debug.release();
    }
    return -1;
  }

  // <debug root>/.build-id/xx/yyyy.debug (gdb manual, "Separate Debug
  // Files"), or its uncompressed copy.
  int open_installed_debug_file(const std::string& id, std::string* found) {
    const std::string candidate = debug_root_ + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
    ElfFile debug;
    if (!debug.open(candidate).empty() || debug.build_id() != id) return -1;
    *found = candidate;
    return uncompressed(debug.release(), found->c_str());
  }

  int open_debug_file_by_build_id(const std::string& path, const std::string& id, std::string* found) {
    if (const int fd = open_installed_debug_file(id, found); fd >= 0) return fd;
    return uncompressed(debuginfod_.find_debuginfo(path, id, found), found->c_str());
  }

  void ensure_symbols() {
    if (symbols_read_) return;
    symbols_read_ = true;
    read_symbols();
  }

  void read_symbols() {
    // The symbol table libdwfl chooses: the object's .symtab, else its
    // debug file's, else .dynsym together with the MiniDebugInfo symbols of
    // .gnu_debugdata (gdb manual, "MiniDebugInfo"). dwfl_module_addrinfo
    // would scan the whole table for every address (libdwfl's
    // dwfl_module_addrsym.c), so the functions are sorted once here and
    // each address is one binary search.
    const int count = dwfl_module_getsymtab(module_);
    std::vector<FunctionSymbol> found;
    std::vector<uint64_t> section_end;
    std::unordered_map<Elf*, std::vector<uint64_t>> section_ends;  // per file: section index -> end address
    for (int i = 0; i < count; ++i) {
      GElf_Sym sym;
      GElf_Addr address = 0;
      GElf_Word section = 0;
      Elf* elf = nullptr;
      Dwarf_Addr bias = 0;
      const char* name = dwfl_module_getsym_info(module_, i, &sym, &address, &section, &elf, &bias);
      if (!name || !*name) continue;
      int symbol_type = GELF_ST_TYPE(sym.st_info);
      if (symbol_type != STT_FUNC && symbol_type != STT_GNU_IFUNC) continue;
      if (section == SHN_UNDEF || section >= SHN_LORESERVE || sym.st_value == 0) continue;
      if (symbols_elf_ == nullptr) symbols_elf_ = elf;
      int binding = GELF_ST_BIND(sym.st_info);
      uint8_t rank = binding == STB_GLOBAL ? 0 : binding == STB_WEAK ? 1 : 2;
      uint64_t end = sym.st_size ? address + sym.st_size : 0;
      found.push_back({address, end, name, rank});
      auto [ends, inserted] = section_ends.try_emplace(elf);
      if (inserted) ends->second = section_end_addresses(elf);
      const uint64_t limit = section < ends->second.size() && ends->second[section] ? ends->second[section] + bias : 0;
      section_end.push_back(limit);
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

  static std::vector<uint64_t> section_end_addresses(Elf* elf) {
    std::vector<uint64_t> ends(1, 0);
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr header;
      if (!gelf_getshdr(scn, &header)) continue;
      size_t index = elf_ndxscn(scn);
      if (ends.size() <= index) ends.resize(index + 1, 0);
      ends[index] = header.sh_addr + header.sh_size;
    }
    return ends;
  }

  void load_unit_ranges() {
    units_loaded_ = true;
    Dwarf_Addr bias = 0;
    Dwarf* dwarf = dwfl_module_getdwarf(module_, &bias);
    if (!dwarf) return;
    dwarf_bias_ = bias;
    Dwarf_CU* unit = nullptr;
    Dwarf_Die unit_die;
    Dwarf_Half version;
    uint8_t unit_type;
    while (dwarf_get_units(dwarf, unit, &unit, &version, &unit_type, &unit_die, nullptr) == 0) {
      if (unit_type != DW_UT_compile && unit_type != DW_UT_skeleton && unit_type != DW_UT_partial) continue;
      Dwarf_Addr base, start, end;
      ptrdiff_t offset = 0;
      while ((offset = dwarf_ranges(&unit_die, offset, &base, &start, &end)) > 0)
        if (end > start) units_.push_back({start, end, unit_die});
    }
    std::sort(units_.begin(), units_.end(),
              [](const UnitRange& a, const UnitRange& b) { return a.start < b.start; });
  }

  Dwfl_Callbacks callbacks_{};
  std::string debug_root_;
  std::string debuginfo_path_;
  char* debuginfo_path_pointer_ = nullptr;
  DebuginfodLookup debuginfod_;
  Dwfl* dwfl_ = nullptr;
  Dwfl_Module* module_ = nullptr;
  Elf* main_elf_ = nullptr;
  bool debug_file_only_ = false;  // the program is gone: main_elf_ is its debug file
  bool copy_debug_files_ = false;
  std::string debug_copy_;
  Elf* symbols_elf_ = nullptr;
  bool symbols_read_ = false;
  std::string main_path_;
  std::vector<FunctionSymbol> symbols_;
  std::unordered_map<const char*, std::string> names_;
  bool units_loaded_ = false;
  std::unordered_map<Dwarf_Off, UnitScopes> unit_scopes_;  // by the unit DIE's offset
  Dwarf_Addr dwarf_bias_ = 0;
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
  // Copies of debug files are made only where their DWARF will be read.
  std::string error = object->load(mapping.path, mapping.build_id, debug_root_, distribution_dwarf_);
  if (!error.empty()) {
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
  // What the writer's symbol table named is in the file; what it did not
  // name, this one would not either.
  const bool named_by_file = file_names_first_ && mapping && mapping->symbolized;
  if (named_by_file && carried && !carried->empty() && name_from_frames(*carried, &symbol)) {
    // The link-time address still places it in the object (address
    // charts); the program headers suffice, no symbol table is read.
    if (object && !object->to_file_address(*mapping, address, &symbol.file_address)) symbol.file_address = 0;
    if (!object) note_named_from_profile(*mapping);
    return symbol;
  }
  if (object && object->to_file_address(*mapping, address, &symbol.file_address) && !named_by_file) {
    if (const auto* found = object->lookup(symbol.file_address)) {
      symbol.function = object->demangled(found->raw_name);
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
  note_named_from_profile(*mapping);
  return symbol;
}

void Symbolizer::note_named_from_profile(const format::Mapping& mapping) {
  if (problems_.empty()) return;
  const std::string key = mapping.path + '\0' + mapping.build_id;
  for (ObjectProblem& problem : problems_)
    if (problem.key == key) problem.named_from_profile = true;
}

SourceLine Symbolizer::source_line(const format::Mapping* mapping, const Symbol& symbol) {
  if (symbol.from_profile) return symbol.profile_line;
  ElfObject* object = symbol.known ? dwarf_object(mapping) : nullptr;
  return object ? object->source_line(symbol.file_address) : SourceLine{};
}

ElfObject* Symbolizer::dwarf_object(const format::Mapping* mapping) {
  ElfObject* object = mapping ? object_for(*mapping) : nullptr;
  if (object && !distribution_dwarf_ && object->symbol_file().starts_with(debug_root_ + "/.build-id/")) return nullptr;
  return object;
}

std::vector<format::Frame> Symbolizer::frames(const format::Mapping* mapping, const Symbol& symbol,
                                              bool with_lines) {
  std::vector<format::Frame> frames;
  if (!symbol.known) return frames;
  const SourceLine line = with_lines ? source_line(mapping, symbol) : SourceLine{};
  ElfObject* object = dwarf_object(mapping);
  const auto chain = object ? object->inlined_at(symbol.file_address, with_lines)
                            : decltype(object->inlined_at(0, false)){};
  // The innermost frame has the line table's line; each frame out has the
  // line its inner frame was inlined at; the outermost is the function the
  // symbol table names (as every flat view shows it).
  std::string file = line.file;
  int number = line.line;
  for (const auto& call : chain) {
    format::Frame frame;
    frame.function = object->demangled(call.name);
    frame.system_name = call.name;
    frame.file = file;
    frame.line = number;
    frames.push_back(std::move(frame));
    file = call.call_file ? call.call_file : "";
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

bool Symbolizer::inline_frames_read(const format::Mapping& mapping) { return dwarf_object(&mapping) != nullptr; }

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

std::string Symbolizer::debug_copy(const format::Mapping& mapping) {
  ElfObject* object = object_for(mapping);
  return object ? object->debug_copy() : std::string();
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
