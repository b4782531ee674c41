// gmon.out, read and written, in the two layouts GNU gprof (binutils 2.40)
// reads on x86-64: the GNU tagged format glibc's _mcleanup writes
// (<sys/gmon_out.h>, binutils gprof/gmon_io.c, hist.c, call_graph.c,
// basic_blocks.c) and the 4.4BSD `struct gmonhdr` format (<sys/gmon.h>).
// The byte layouts are in docs/formats/gmon.md.
//
// Everything is little-endian and packed; addresses and the BSD arc count are
// 8 bytes because gprof sizes them by the ELF class of the executable.
// Addresses are link-time addresses (what `nm` prints): gprof matches them
// against the executable's symbol values, so a PIE's load bias must already
// have been subtracted (histogram_from_samples does it).
//
// Pure: no I/O, no global state. Compiled into libprofil.so (the gmon runtime
// writes with try_encode_gmon), so it depends on nothing but the C++ library.
#ifndef PROFIL_FORMAT_GMON_H
#define PROFIL_FORMAT_GMON_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "format/format_error.h"
#include "format/profile.h"

namespace profiling::format {

namespace gmon {
// GNU header: "gmon", version (u32), 12 spare bytes.
inline constexpr char kMagic[4] = {'g', 'm', 'o', 'n'};
inline constexpr uint32_t kVersion = 1;  // GMON_VERSION
inline constexpr size_t kHeaderSize = 20;
enum Tag : uint8_t { kTimeHistogram = 0, kCallGraphArc = 1, kBasicBlockCount = 2 };
// After the tag byte: low_pc, high_pc, hist_size, prof_rate, dimen[15], abbrev.
inline constexpr size_t kHistogramHeaderSize = 8 + 8 + 4 + 4 + 15 + 1;
inline constexpr size_t kDimensionSize = 15;
inline constexpr size_t kArcRecordSize = 8 + 8 + 4;        // from, self, u32 count
inline constexpr size_t kBasicBlockSize = 8 + 8;           // address, count
// BSD (4.4BSD struct gmonhdr on LP64): lpc, hpc, ncnt, version, profrate,
// spare[3]; ncnt counts the header and the bins in bytes.
inline constexpr uint32_t kBsdVersion = 0x00051879;  // GMONVERSION
inline constexpr size_t kBsdHeaderSize = 8 + 8 + 4 + 4 + 4 + 12;
inline constexpr size_t kBsdArcSize = 8 + 8 + 8;  // struct rawarc: u_long, u_long, long
}  // namespace gmon

struct GmonHistogram {
  uint64_t low_pc = 0, high_pc = 0;   // addresses as gprof expects (PIE: load bias already subtracted)
  uint32_t rate_hz = 0;               // the "prof_rate" field: samples per second
  std::string dimension = "seconds";  // up to 15 chars
  char dimension_abbrev = 's';
  std::vector<uint16_t> bins;         // bin i covers [low_pc + i*(high_pc-low_pc)/n, ...)

  // First address bin i covers (128-bit arithmetic: no overflow).
  uint64_t bin_address(size_t i) const;
  friend bool operator==(const GmonHistogram&, const GmonHistogram&) = default;
};

struct GmonArc {
  uint64_t from_pc = 0, self_pc = 0;
  uint64_t count = 0;  // saturates at 2^32-1 in the GNU flavour
  friend bool operator==(const GmonArc&, const GmonArc&) = default;
};

struct GmonBasicBlock {
  uint64_t address = 0;
  uint64_t count = 0;
  friend bool operator==(const GmonBasicBlock&, const GmonBasicBlock&) = default;
};

enum class GmonFlavor { gnu, bsd };

struct GmonData {
  std::vector<GmonHistogram> histograms;
  std::vector<GmonArc> arcs;
  std::vector<GmonBasicBlock> basic_blocks;
  friend bool operator==(const GmonData&, const GmonData&) = default;
};

// Throws FormatError when gprof would refuse (or misread) the result:
// histograms that overlap without covering exactly the same range, that
// differ in dimension, abbreviation, rate or scale (bytes per bin), that have
// no bins or an empty range; a dimension longer than 15 bytes. The BSD flavour
// holds at most one histogram in seconds and no basic-block counts.
// GNU arc counts saturate at 2^32-1 (a u32 field); BSD ones are 64-bit.
std::string encode_gmon(const GmonData& data, GmonFlavor flavor = GmonFlavor::gnu);

// Detects the flavor; throws FormatError on truncated / corrupt / foreign
// bytes and on what gprof refuses (overlapping histograms, changed dimension
// or scale, unknown tags, unsupported versions). Never allocates more than a
// small multiple of bytes.size().
GmonData decode_gmon(std::string_view bytes, GmonFlavor* flavor = nullptr);

// Non-throwing variant for the runtime (libprofil): false + *error on failure.
bool try_encode_gmon(const GmonData& data, GmonFlavor flavor, std::string* out,
                     std::string* error) noexcept;

// Samples (runtime addresses) -> one histogram over [text_low, text_high)
// (file/link-time addresses): address a counts at a - load_bias. The range is
// widened to whole bins (low rounded down, high rounded up to bytes_per_bin)
// as glibc's monstartup does. bytes_per_bin: 4 like glibc's gmon
// (HISTFRACTION 2, 16-bit counters); it must be even (gprof works in 2-byte
// units). Counts above 65535 saturate. Samples outside the range are left out.
GmonHistogram histogram_from_samples(const Profile& profile, uint64_t load_bias,
                                     uint64_t text_low, uint64_t text_high,
                                     uint32_t rate_hz, uint32_t bytes_per_bin = 4);

// gmon -> Profile: one Sample per non-zero bin at the bin's low address
// (bins of histograms over the same range are summed); period_ns from rate_hz;
// one Mapping for `program` spanning the histograms (start..limit are
// link-time addresses, file_offset 0: the reader anchors it to the ELF file).
Profile profile_from_gmon(const GmonData& data, const std::string& program);

}  // namespace profiling::format

#endif  // PROFIL_FORMAT_GMON_H
