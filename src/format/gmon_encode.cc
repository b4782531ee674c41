// gmon.out written (gmon.h): encode_gmon in the GNU and BSD layouts, its
// non-throwing form for the runtime, and the histogram a profile's samples
// make.
#include "format/gmon.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>

#include "format/gmon_histogram.h"

namespace profiling::format {
namespace {

using gmon::hex;
using gmon::range_text;

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

}  // namespace

std::string encode_gmon(const GmonData& data, GmonFlavor flavor) {
  gmon::HistogramRules rules(/*check_rate=*/true);
  for (const GmonHistogram& h : data.histograms) {
    rules.add(h);
    if (h.rate_hz == 0) fail("histogram " + range_text(h) + " has rate 0 (gprof divides by it)");
  }
  return flavor == GmonFlavor::bsd ? encode_bsd(data) : encode_gnu(data);
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

}  // namespace profiling::format
