#include "report/jitdump.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace profiling::report {
namespace {

constexpr uint32_t kMagic = 0x4A695444;  // "JiTD" written as a number: "DTiJ" in a little-endian file
constexpr uint32_t kLoad = 0, kMove = 1, kDebugInfo = 2;
constexpr size_t kFileHeader = 40, kRecordHead = 16;
// A debug entry's address is the code's, 64 bytes on: perf inject -j
// writes each code into an ELF file after its 64-byte header and reads the
// entries' addresses less the code's start as addresses in that file
// (tools/perf/util/genelf_debug.c, jit_process_debug_info), and V8 writes
// them so (its kElfHeaderSize). Read as code addresses, every line would
// be 64 bytes early (node: a loop's samples put on the line after it).
constexpr uint64_t kElfTextOffset = 64;

// Fixed-width reads at an offset the caller checked; the file's fields
// are packed, not aligned.
template <typename T>
T at(std::string_view bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

// A NUL-terminated string from offset within [offset, end); false when
// none ends there.
bool string_at(std::string_view bytes, size_t offset, size_t end, std::string_view* out, size_t* after) {
  if (offset >= end) return false;
  const size_t nul = bytes.substr(offset, end - offset).find('\0');
  if (nul == std::string_view::npos) return false;
  *out = bytes.substr(offset, nul);
  *after = offset + nul + 1;
  return true;
}

// Whether name can be a file's: UTF-8 text without control characters.
// node 20's V8 now and then writes a debug record's
// file names from memory it has not filled (bytes of the right length,
// anything in them, NULs too).
bool is_file_name(std::string_view name) {
  for (size_t i = 0; i < name.size();) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7f) return false;
    const size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (length == 0 || i + length > name.size()) return false;
    for (size_t k = 1; k < length; ++k)
      if ((static_cast<unsigned char>(name[i + k]) & 0xc0) != 0x80) return false;
    i += length;
  }
  return true;
}

}  // namespace

std::string jitdump_name(int64_t pid) { return "jit-" + std::to_string(pid) + ".dump"; }

bool parse_jitdump(std::string_view bytes, Jitdump* out, std::string* problem) {
  *out = Jitdump();
  if (bytes.size() < kFileHeader) {
    *problem = "shorter than a jitdump header";
    return false;
  }
  const uint32_t magic = at<uint32_t>(bytes, 0);
  if (magic != kMagic) {
    *problem = magic == __builtin_bswap32(kMagic) ? "a jitdump of the other byte order" : "not a jitdump (no JiTD magic)";
    return false;
  }
  const uint32_t header_size = at<uint32_t>(bytes, 8);
  if (at<uint32_t>(bytes, 4) != 1 || header_size < kFileHeader || header_size > bytes.size()) {
    *problem = "a jitdump version or header size this reader does not know";
    return false;
  }
  out->pid = at<uint32_t>(bytes, 20);
  // Debug info comes before its code's load (the specification's rule):
  // held by code address until then.
  std::map<uint64_t, std::vector<JitLine>> pending_lines;
  std::map<uint64_t, size_t> by_index;  // code index -> its latest code
  std::map<std::string, uint32_t, std::less<>> file_index;
  std::vector<std::string_view> pending_files;  // a debug record's, until it is known whole
  for (size_t offset = header_size; offset + kRecordHead <= bytes.size();) {
    const uint32_t id = at<uint32_t>(bytes, offset);
    const uint32_t size = at<uint32_t>(bytes, offset + 4);
    if (size < kRecordHead || size > bytes.size() - offset) break;  // cut, or damaged: the rest unknown
    const size_t end = offset + size, body = offset + kRecordHead;
    const int64_t time = static_cast<int64_t>(at<uint64_t>(bytes, offset + 8));
    if (id == kLoad && size >= kRecordHead + 40) {
      // pid, tid, vma, code address, size, index, then the name.
      JitCode code;
      code.start = at<uint64_t>(bytes, body + 16);
      code.size = at<uint64_t>(bytes, body + 24);
      const uint64_t index = at<uint64_t>(bytes, body + 32);
      std::string_view name;
      size_t after = 0;
      if (string_at(bytes, body + 40, end, &name, &after) && code.size > 0 && code.start + code.size > code.start) {
        code.name = name;
        code.time_ns = time;
        if (auto lines = pending_lines.find(code.start); lines != pending_lines.end()) {
          // Lines outside the code are no lines of it (a damaged record).
          code.lines = std::move(lines->second);
          std::erase_if(code.lines, [&](const JitLine& l) {
            return l.address < code.start || l.address - code.start >= code.size;
          });
          pending_lines.erase(lines);
        }
        by_index[index] = out->codes.size();
        out->codes.push_back(std::move(code));
      }
    } else if (id == kMove && size >= kRecordHead + 48) {
      // pid, tid, vma, old address, new address, size, index.
      const uint64_t moved_to = at<uint64_t>(bytes, body + 24), code_size = at<uint64_t>(bytes, body + 32);
      if (auto it = by_index.find(at<uint64_t>(bytes, body + 40)); it != by_index.end() && code_size > 0) {
        JitCode code = out->codes[it->second];
        for (JitLine& line : code.lines) line.address = line.address - code.start + moved_to;
        code.start = moved_to;
        code.size = code_size;
        code.time_ns = time;
        it->second = out->codes.size();
        out->codes.push_back(std::move(code));
      }
    } else if (id == kDebugInfo && size >= kRecordHead + 16) {
      const uint64_t code_address = at<uint64_t>(bytes, body);
      const uint64_t entries = at<uint64_t>(bytes, body + 8);
      std::vector<JitLine> lines;
      size_t entry = body + 16;
      for (uint64_t i = 0; i < entries && entry + 16 <= end; ++i) {
        std::string_view file;
        size_t after = 0;
        if (!string_at(bytes, entry + 16, end, &file, &after) || !is_file_name(file)) break;
        lines.push_back({at<uint64_t>(bytes, entry) - kElfTextOffset, at<uint32_t>(bytes, entry + 8), 0});
        pending_files.push_back(file);
        entry = after;
      }
      // A whole record or none: its entries end where it does but for up
      // to 7 bytes of NUL padding (V8 pads records to 8 bytes). Names
      // written from unfilled memory (is_file_name) hold a stray NUL
      // or none where one belongs, so the entries after them are read
      // from the wrong bytes and end elsewhere; measured on node 20.20,
      // every such record left 182-300 bytes over, every whole one 0-7.
      const bool whole = lines.size() == entries && end - entry < 8 &&
                         bytes.substr(entry, end - entry).find_first_not_of('\0') == std::string_view::npos;
      if (!whole) lines.clear();
      for (size_t i = 0; i < lines.size(); ++i) {
        auto [it, inserted] = file_index.try_emplace(std::string(pending_files[i]), static_cast<uint32_t>(out->files.size()));
        if (inserted) out->files.emplace_back(pending_files[i]);
        lines[i].file = it->second;
      }
      pending_files.clear();
      std::stable_sort(lines.begin(), lines.end(),
                       [](const JitLine& a, const JitLine& b) { return a.address < b.address; });
      pending_lines[code_address] = std::move(lines);
    }
    offset = end;
  }
  return true;
}

}  // namespace profiling::report
