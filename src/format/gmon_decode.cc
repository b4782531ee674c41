// gmon.out read (gmon.h): decode_gmon, either layout told by its bytes,
// checked as gprof reads it, and the Profile a gmon.out makes.
#include "format/gmon.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "format/gmon_histogram.h"

namespace profiling::format {
namespace {

// Bounds-checked little-endian reads over the input. Every length taken from
// the file is checked against what is left before anything is allocated.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  size_t offset() const { return offset_; }
  size_t left() const { return bytes_.size() - offset_; }
  bool at_end() const { return offset_ == bytes_.size(); }
  void seek(size_t offset) { offset_ = offset; }

  uint8_t u8() { return static_cast<uint8_t>(bytes_[offset_++]); }
  uint16_t u16() { return static_cast<uint16_t>(get(2)); }
  uint32_t u32() { return static_cast<uint32_t>(get(4)); }
  uint64_t u64() { return get(8); }
  std::string_view take(size_t n) {
    std::string_view s = bytes_.substr(offset_, n);
    offset_ += n;
    return s;
  }

 private:
  uint64_t get(int size) {
    uint64_t v = 0;
    for (int i = 0; i < size; ++i)
      v |= uint64_t{static_cast<uint8_t>(bytes_[offset_ + i])} << (8 * i);
    offset_ += size;
    return v;
  }
  std::string_view bytes_;
  size_t offset_ = 0;
};


GmonData decode_gnu(std::string_view bytes) {
  Reader in(bytes);
  in.seek(4);
  uint32_t version = in.u32();
  // gprof accepts version 1 (GMON_VERSION) and the pre-versioned 0, whose
  // histogram and arc records are the same; it refuses everything else,
  // including glibc's never-written GMON_SHOBJ_VERSION.
  if (version != gmon::kVersion && version != 0)
    fail("unsupported gmon.out version " + std::to_string(version) + " (gprof reads 0 and 1)");
  in.seek(gmon::kHeaderSize);
  GmonData data;
  gmon::HistogramRules rules(/*check_rate=*/false);
  while (!in.at_end()) {
    size_t record_offset = in.offset();
    uint8_t tag = in.u8();
    switch (tag) {
      case gmon::kTimeHistogram: {
        if (in.left() < gmon::kHistogramHeaderSize)
          fail("truncated histogram record at offset " + std::to_string(record_offset));
        GmonHistogram h;
        h.low_pc = in.u64();
        h.high_pc = in.u64();
        uint32_t bins = in.u32();
        h.rate_hz = in.u32();
        std::string_view dimension = in.take(gmon::kDimensionSize);
        h.dimension.assign(dimension.substr(0, std::min(dimension.find('\0'), dimension.size())));
        h.dimension_abbrev = static_cast<char>(in.u8());
        if (in.left() / 2 < bins)
          fail("truncated histogram record at offset " + std::to_string(record_offset) + ": " +
               std::to_string(bins) + " bins declared, " + std::to_string(in.left()) + " bytes left");
        h.bins.resize(bins);
        for (uint16_t& bin : h.bins) bin = in.u16();
        rules.add(h);
        data.histograms.push_back(std::move(h));
        break;
      }
      case gmon::kCallGraphArc: {
        if (in.left() < gmon::kArcRecordSize)
          fail("truncated call-graph arc record at offset " + std::to_string(record_offset));
        GmonArc arc;
        arc.from_pc = in.u64();
        arc.self_pc = in.u64();
        arc.count = in.u32();
        data.arcs.push_back(arc);
        break;
      }
      case gmon::kBasicBlockCount: {
        if (version == 0)
          fail("version 0 basic-block records (with file names) are not supported");
        if (in.left() < 4) fail("truncated basic-block record at offset " + std::to_string(record_offset));
        uint32_t blocks = in.u32();
        if (in.left() / gmon::kBasicBlockSize < blocks)
          fail("truncated basic-block record at offset " + std::to_string(record_offset) + ": " +
               std::to_string(blocks) + " blocks declared, " + std::to_string(in.left()) + " bytes left");
        for (uint32_t i = 0; i < blocks; ++i) {
          GmonBasicBlock block;
          block.address = in.u64();
          block.count = in.u64();
          data.basic_blocks.push_back(block);
        }
        break;
      }
      default:
        fail("bad record tag " + std::to_string(tag) + " at offset " + std::to_string(record_offset) +
             " (file corrupted?)");
    }
  }
  return data;
}

GmonData decode_bsd(std::string_view bytes) {
  Reader in(bytes);
  GmonData data;
  GmonHistogram h;
  h.low_pc = in.u64();
  h.high_pc = in.u64();
  uint32_t ncnt = in.u32();
  in.u32();  // version, checked by the caller
  h.rate_hz = in.u32();
  in.seek(gmon::kBsdHeaderSize);
  // ncnt is the size of the header plus the bins, in bytes; gprof takes it as
  // an int.
  if (ncnt < gmon::kBsdHeaderSize || ncnt > static_cast<uint32_t>(std::numeric_limits<int32_t>::max()))
    fail("BSD gmon.out header: ncnt " + std::to_string(ncnt) + " is not header plus bins");
  uint32_t bin_bytes = ncnt - gmon::kBsdHeaderSize;
  if (bin_bytes % 2 != 0) fail("BSD gmon.out header: ncnt " + std::to_string(ncnt) + " leaves half a bin");
  if (in.left() < bin_bytes)
    fail("truncated BSD gmon.out: " + std::to_string(bin_bytes / 2) + " bins declared, " +
         std::to_string(in.left()) + " bytes left");
  if (h.low_pc > h.high_pc) fail("BSD gmon.out header: low pc above high pc");
  h.bins.resize(bin_bytes / 2);
  for (uint16_t& bin : h.bins) bin = in.u16();
  if (!h.bins.empty()) {
    gmon::HistogramRules(false).add(h);
    data.histograms.push_back(std::move(h));
  }
  if (in.left() % gmon::kBsdArcSize != 0)
    fail("truncated BSD gmon.out: " + std::to_string(in.left() % gmon::kBsdArcSize) +
         " bytes of a partial arc at the end");
  while (!in.at_end()) {
    GmonArc arc;
    arc.from_pc = in.u64();
    arc.self_pc = in.u64();
    arc.count = in.u64();
    data.arcs.push_back(arc);
  }
  return data;
}

}  // namespace

GmonData decode_gmon(std::string_view bytes, GmonFlavor* flavor) {
  if (bytes.empty()) fail("empty file, not a gmon.out");
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), gmon::kMagic, 4) == 0) {
    if (bytes.size() < gmon::kHeaderSize)
      fail("file too short to be a gmon.out (" + std::to_string(bytes.size()) + " bytes, header is 20)");
    if (flavor) *flavor = GmonFlavor::gnu;
    return decode_gnu(bytes);
  }
  // The BSD layout has no magic; the 4.4BSD version word at offset 20 is the
  // only thing that tells it from arbitrary bytes. (The older header without
  // it cannot be told from foreign data, and is not read.)
  if (bytes.size() >= gmon::kBsdHeaderSize) {
    Reader in(bytes);
    in.seek(20);
    if (in.u32() == gmon::kBsdVersion) {
      if (flavor) *flavor = GmonFlavor::bsd;
      return decode_bsd(bytes);
    }
  }
  if (bytes.size() < 4 && std::string_view(gmon::kMagic, 4).starts_with(bytes))
    fail("file too short to be a gmon.out (" + std::to_string(bytes.size()) + " bytes)");
  fail("not a gmon.out file (no \"gmon\" magic, no 4.4BSD gmonhdr)");
}


Profile profile_from_gmon(const GmonData& data, const std::string& program) {
  Profile profile;
  profile.program = program;
  if (data.histograms.empty()) return profile;
  uint32_t rate = data.histograms.front().rate_hz;
  if (rate) profile.period_ns = (1'000'000'000ull + rate / 2) / rate;
  Mapping mapping;
  mapping.path = program;
  mapping.start = std::numeric_limits<uint64_t>::max();
  // One Sample (16 bytes) per non-zero bin and nothing more: the samples
  // are counted first so the vector is allocated once, at its size, and
  // summed per address in place (histograms of one range repeat addresses).
  // A map of every address cost 80 bytes per bin (issue 11).
  size_t non_zero = 0;
  for (const GmonHistogram& h : data.histograms) {
    mapping.start = std::min(mapping.start, h.low_pc);
    mapping.limit = std::max(mapping.limit, h.high_pc);
    for (uint16_t bin : h.bins) non_zero += bin != 0;
  }
  profile.mappings.push_back(mapping);
  profile.samples.reserve(non_zero);
  for (const GmonHistogram& h : data.histograms)
    for (size_t i = 0; i < h.bins.size(); ++i)
      if (h.bins[i]) profile.samples.push_back({h.bin_address(i), h.bins[i]});
  coalesce_samples(&profile.samples);  // 16-bit bins: no sum of 2^32 records reaches 2^64
  return profile;
}

}  // namespace profiling::format
