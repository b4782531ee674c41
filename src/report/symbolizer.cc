#include "report/symbolizer.h"

#include "report/internal/elf_file.h"
#include "report/internal/elf_object.h"

namespace profiling::report {

std::string object_basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string read_build_id(const std::string& path) {
  internal::ElfFile file;
  if (!file.open(path).empty()) return {};
  return file.build_id();
}

Symbolizer::Symbolizer(std::string debug_root) : debug_root_(std::move(debug_root)) {}
Symbolizer::~Symbolizer() = default;

namespace {

// Mappings that name no file: the vDSO, [vsyscall], anonymous (JIT) memory.
bool is_pseudo_object(const std::string& path) { return path.empty() || path[0] == '['; }

// How objects_ and problems_ know mapping's object.
std::string object_key(const format::Mapping& mapping) { return mapping.path + '\0' + mapping.build_id; }

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

ElfObject* Symbolizer::object_for(const format::Mapping& mapping) {
  if (is_pseudo_object(mapping.path)) return nullptr;
  std::string key = object_key(mapping);
  auto it = objects_.find(key);
  if (it != objects_.end()) return it->second.get();
  // Copies of debug files are made only where their DWARF will be read.
  auto object = std::make_unique<ElfObject>(debug_root_, distribution_dwarf_);
  std::string error = object->load(mapping.path, mapping.build_id);
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
  if (!mapping && format::is_interpreter_frame(address)) symbol.object = format::interpreter_object(address);
  if (!mapping && address == format::kKernelAddress) symbol.object = format::kKernelFrame;
  // A kernel function sampled from outside (issue 33): named by the
  // profile's frames from /proc/kallsyms.
  if (!mapping && address >= 0xffff'8000'0000'0000) symbol.object = "[kernel.kallsyms]";
  if (!mapping) return symbol;
  note_named_from_profile(*mapping);
  return symbol;
}

void Symbolizer::note_named_from_profile(const format::Mapping& mapping) {
  if (problems_.empty()) return;
  const std::string key = object_key(mapping);
  for (ObjectProblem& problem : problems_)
    if (problem.key == key) problem.named_from_profile = true;
}

SourceLine Symbolizer::source_line(const format::Mapping* mapping, const Symbol& symbol) {
  if (symbol.from_profile) return symbol.profile_line;
  ElfObject* object = symbol.known ? dwarf_object(mapping) : nullptr;
  if (!object) return {};
  const internal::LineAt line = object->source_line(symbol.file_address);
  return {line.file ? line.file : "", line.line};
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
  const std::vector<internal::InlinedCall> chain =
      object ? object->inlined_at(symbol.file_address, with_lines) : std::vector<internal::InlinedCall>{};
  // The innermost frame has the line table's line; each frame out has the
  // line its inner frame was inlined at; the outermost is the function the
  // symbol table names (as every flat view shows it).
  std::string file = line.file;
  int number = line.line;
  for (const auto& call : chain) {
    const char* name = call.name ? call.name : kUnknownFunction;
    format::Frame frame;
    frame.function = object->demangled(name);
    frame.system_name = name;
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
