#include "format/gmon.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <new>

namespace profiling::format {
namespace {

// The most bins one histogram may have when built from samples: 2^27 16-bit
// counters (256 MiB) cover 512 MiB of text at glibc's 4 bytes per bin.
constexpr uint64_t kMaxBinsFromSamples = uint64_t{1} << 27;

void put_u16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>(v >> 8));
}
void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

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

std::string hex(uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), digits[v & 0xf]);
    v >>= 4;
  } while (v);
  return "0x" + s;
}

std::string range_text(const GmonHistogram& h) {
  return "[" + hex(h.low_pc) + ", " + hex(h.high_pc) + ")";
}

// gprof's unit of scale: 2-byte units per bin, computed as hist.c's
// read_histogram_header does (integer division of the range first).
double gprof_scale(const GmonHistogram& h) {
  return static_cast<double>((h.high_pc - h.low_pc) / 2) / static_cast<double>(h.bins.size());
}

// The rules gprof (hist.c: read_histogram_header, hist_read_rec) applies to
// a file's histogram records, checked one record at a time so a reader can
// stop at the first bad one. `check_rate`: gprof keeps the first record's rate
// and ignores the others'; a writer must not produce records that disagree.
class HistogramRules {
 public:
  explicit HistogramRules(bool check_rate) : check_rate_(check_rate) {}

  void add(const GmonHistogram& h) {
    if (h.bins.empty())
      fail("histogram " + range_text(h) + " has no bins (gprof divides its range by the bin count)");
    if (h.low_pc >= h.high_pc) fail("histogram " + range_text(h) + " covers no addresses");
    if (h.bins.size() > std::numeric_limits<uint32_t>::max())
      fail("histogram " + range_text(h) + " has more bins than its 32-bit count can hold");
    if (h.dimension.size() > gmon::kDimensionSize)
      fail("histogram dimension \"" + h.dimension + "\" is longer than 15 bytes");
    if (h.dimension.find('\0') != std::string::npos) fail("histogram dimension contains a NUL byte");
    if (!have_first_) {
      have_first_ = true;
      first_ = {h.low_pc, h.high_pc, h.rate_hz, h.dimension, h.dimension_abbrev, {}};
      first_scale_ = gprof_scale(h);
    } else {
      if (h.dimension != first_.dimension)
        fail("histogram dimension changed between records (\"" + first_.dimension + "\" then \"" +
             h.dimension + "\")");
      if (h.dimension_abbrev != first_.dimension_abbrev)
        fail("histogram dimension abbreviation changed between records");
      // gprof requires the same scale (bytes per bin) in every record, to
      // within 1e-6 units.
      if (std::fabs(gprof_scale(h) - first_scale_) > 0.000001)
        fail("histogram " + range_text(h) + " has a different scale (bytes per bin) than " +
             range_text(first_) + "; gprof refuses different scales");
      if (check_rate_ && h.rate_hz != first_.rate_hz)
        fail("histograms have different rates (" + std::to_string(first_.rate_hz) + " and " +
             std::to_string(h.rate_hz) + " Hz); gprof would use the first for all");
    }
    // A record for exactly the range of an earlier one is summed into it by
    // gprof; any other overlap is fatal ("overlapping histogram records").
    // The distinct ranges kept here are disjoint, so the neighbours of the
    // new low address are the only candidates for an overlap.
    auto next = ranges_.lower_bound(h.low_pc);
    if (next != ranges_.end() && next->first == h.low_pc && next->second == h.high_pc) return;
    if (next != ranges_.end() && next->first < h.high_pc)
      fail("overlapping histogram records " + range_text(h) + " and [" + hex(next->first) + ", " +
           hex(next->second) + ")");
    if (next != ranges_.begin()) {
      auto previous = std::prev(next);
      if (previous->second > h.low_pc)
        fail("overlapping histogram records [" + hex(previous->first) + ", " + hex(previous->second) +
             ") and " + range_text(h));
    }
    ranges_.emplace(h.low_pc, h.high_pc);
  }

 private:
  bool check_rate_;
  bool have_first_ = false;
  GmonHistogram first_;  // without its bins
  double first_scale_ = 0;
  std::map<uint64_t, uint64_t> ranges_;
};

void put_histogram_gnu(std::string& out, const GmonHistogram& h) {
  out.push_back(static_cast<char>(gmon::kTimeHistogram));
  put_u64(out, h.low_pc);
  put_u64(out, h.high_pc);
  put_u32(out, static_cast<uint32_t>(h.bins.size()));
  put_u32(out, h.rate_hz);
  // dimen[15], NUL-padded as glibc's strncpy leaves it.
  char dimension[gmon::kDimensionSize] = {};
  std::memcpy(dimension, h.dimension.data(), h.dimension.size());
  out.append(dimension, sizeof dimension);
  out.push_back(h.dimension_abbrev);
  for (uint16_t bin : h.bins) put_u16(out, bin);
}

std::string encode_gnu(const GmonData& data) {
  std::string out;
  out.reserve(gmon::kHeaderSize + data.arcs.size() * (1 + gmon::kArcRecordSize));
  out.append(gmon::kMagic, 4);
  put_u32(out, gmon::kVersion);
  out.append(12, '\0');
  for (const GmonHistogram& h : data.histograms) put_histogram_gnu(out, h);
  for (const GmonArc& arc : data.arcs) {
    out.push_back(static_cast<char>(gmon::kCallGraphArc));
    put_u64(out, arc.from_pc);
    put_u64(out, arc.self_pc);
    // The field is 32 bits (gmon_cg_arc_record.count). glibc copies the low
    // half of its long counter, so a wrapped count reads as small; saturating
    // keeps "very many" true.
    put_u32(out, static_cast<uint32_t>(std::min<uint64_t>(arc.count, std::numeric_limits<uint32_t>::max())));
  }
  // basic_blocks.c reads a u32 block count then (address, count) pairs; one
  // record per 2^32-1 blocks.
  constexpr size_t kMaxBlocksPerRecord = std::numeric_limits<uint32_t>::max();
  for (size_t first = 0; first < data.basic_blocks.size(); first += kMaxBlocksPerRecord) {
    size_t n = std::min(kMaxBlocksPerRecord, data.basic_blocks.size() - first);
    out.push_back(static_cast<char>(gmon::kBasicBlockCount));
    put_u32(out, static_cast<uint32_t>(n));
    for (size_t i = first; i < first + n; ++i) {
      put_u64(out, data.basic_blocks[i].address);
      put_u64(out, data.basic_blocks[i].count);
    }
  }
  return out;
}

std::string encode_bsd(const GmonData& data) {
  if (data.histograms.size() > 1)
    fail("the BSD gmon.out format holds one histogram, not " + std::to_string(data.histograms.size()));
  if (!data.basic_blocks.empty()) fail("the BSD gmon.out format has no basic-block counts");
  GmonHistogram none;
  const GmonHistogram& h = data.histograms.empty() ? none : data.histograms.front();
  if (!data.histograms.empty() && (h.dimension != "seconds" || h.dimension_abbrev != 's'))
    fail("the BSD gmon.out format measures seconds only, not \"" + h.dimension + "\"");
  // gprof reads ncnt into an int and subtracts the header size: it must stay
  // below 2^31.
  uint64_t ncnt = gmon::kBsdHeaderSize + 2 * uint64_t{h.bins.size()};
  if (ncnt > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
    fail("histogram too large for the BSD header's ncnt field");
  std::string out;
  out.reserve(ncnt + data.arcs.size() * gmon::kBsdArcSize);
  put_u64(out, h.low_pc);
  put_u64(out, h.high_pc);
  put_u32(out, static_cast<uint32_t>(ncnt));
  put_u32(out, gmon::kBsdVersion);
  put_u32(out, h.rate_hz);
  out.append(12, '\0');  // spare[3]
  for (uint16_t bin : h.bins) put_u16(out, bin);
  for (const GmonArc& arc : data.arcs) {
    put_u64(out, arc.from_pc);
    put_u64(out, arc.self_pc);
    // struct rawarc's raw_count: a long, which gprof reads back as an
    // unsigned 64-bit number (gmon_io.c, gmon_read_raw_arc).
    put_u64(out, arc.count);
  }
  return out;
}

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
  HistogramRules rules(/*check_rate=*/false);
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
    HistogramRules(false).add(h);
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

uint64_t GmonHistogram::bin_address(size_t i) const {
  if (bins.empty()) return low_pc;
  unsigned __int128 span = high_pc - low_pc;
  return low_pc + static_cast<uint64_t>(span * i / bins.size());
}

std::string encode_gmon(const GmonData& data, GmonFlavor flavor) {
  HistogramRules rules(/*check_rate=*/true);
  for (const GmonHistogram& h : data.histograms) {
    rules.add(h);
    if (h.rate_hz == 0) fail("histogram " + range_text(h) + " has rate 0 (gprof divides by it)");
  }
  return flavor == GmonFlavor::bsd ? encode_bsd(data) : encode_gnu(data);
}

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

bool try_encode_gmon(const GmonData& data, GmonFlavor flavor, std::string* out,
                     std::string* error) noexcept {
  try {
    *out = encode_gmon(data, flavor);
    return true;
  } catch (const std::bad_alloc&) {
    if (error) *error = "out of memory";
  } catch (const std::exception& e) {
    try {
      if (error) *error = e.what();
    } catch (...) {
    }
  }
  return false;
}

GmonHistogram histogram_from_samples(const Profile& profile, uint64_t load_bias, uint64_t text_low,
                                     uint64_t text_high, uint32_t rate_hz, uint32_t bytes_per_bin) {
  if (bytes_per_bin < 2 || bytes_per_bin % 2 != 0)
    fail("bytes per bin must be even and at least 2, not " + std::to_string(bytes_per_bin));
  if (text_low >= text_high) fail("empty text range " + hex(text_low) + ".." + hex(text_high));
  GmonHistogram h;
  h.rate_hz = rate_hz;
  h.low_pc = text_low - text_low % bytes_per_bin;
  uint64_t round_up = (bytes_per_bin - text_high % bytes_per_bin) % bytes_per_bin;
  if (text_high > std::numeric_limits<uint64_t>::max() - round_up) fail("text range ends at the top of memory");
  h.high_pc = text_high + round_up;
  uint64_t bins = (h.high_pc - h.low_pc) / bytes_per_bin;
  if (bins > kMaxBinsFromSamples)
    fail("text range of " + std::to_string(h.high_pc - h.low_pc) + " bytes needs " + std::to_string(bins) +
         " bins; at most " + std::to_string(kMaxBinsFromSamples) + " (use more bytes per bin)");
  h.bins.assign(bins, 0);
  for (const Sample& sample : profile.samples) {
    if (sample.address < load_bias) continue;
    uint64_t address = sample.address - load_bias;
    if (address < h.low_pc || address >= h.high_pc) continue;
    uint16_t& bin = h.bins[(address - h.low_pc) / bytes_per_bin];
    uint64_t room = 0xffff - bin;
    bin = sample.count >= room ? 0xffff : static_cast<uint16_t>(bin + sample.count);
  }
  return h;
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
