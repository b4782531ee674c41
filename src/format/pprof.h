// pprof's profile.proto (perftools.profiles.Profile, from
// github.com/google/pprof/proto/profile.proto), read and written: the format
// google pprof, Parca, Pyroscope and speedscope read. The layout we write is
// in docs/formats/pprof.md.
//
// Library target profil_pprof (protobuf + zlib); kept out of profil_format so
// that libprofil.so never links protobuf.
#ifndef PROFIL_FORMAT_PPROF_H
#define PROFIL_FORMAT_PPROF_H

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "format/format_error.h"
#include "format/profile.h"

namespace profiling::format {

// The symbolizer's answer is the same frame a decoded profile carries.
using PprofFrame = Frame;

// Innermost frame first (inlined frames before their caller); empty = unknown.
using PprofSymbolizer = std::function<std::vector<PprofFrame>(const Mapping& mapping, uint64_t address)>;

// The sample type of a sample's observations (signals or ring records
// behind its weighted count; issue 22): "observations", unit "count".
inline constexpr const char* kObservationsType = "observations";

// The numeric labels of a sample's times (Profile::timeline, issue 33):
// one "time_ns" a sample taken (Unix epoch ns, in time order), and where
// one stands for other than one period, one "time_weight" each, in the same
// order.
inline constexpr const char* kTimeLabel = "time_ns";
inline constexpr const char* kTimeWeightLabel = "time_weight";

// gzip-compressed serialized Profile: sample types [samples/count,
// cpu/nanoseconds], and observations/count after them when the profile
// has observations (default_sample_type then "cpu", which pprof would
// otherwise take from the last type), period_type cpu/nanoseconds, period = period_ns,
// duration_nanos, time_nanos; one Mapping per Profile::mappings (filename,
// build_id, memory_start/limit, file_offset, has_functions when the
// symbolizer named something in it); one Location per distinct address of
// a leaf or a caller, its lines from the symbolizer or, where that names
// nothing, from Profile::frames, and a "[truncated]" Location ending each
// truncated stack; one Sample per (leaf, stack, pid), its locations leaf
// first, with values [count, count * period_ns(, observations)], and the
// times of the timeline's samples of that key as labels (kTimeLabel).
// The program, pid, clock and dropped count travel as "profil.<key>=<value>"
// comments; a sum of several processes has "profil.processes=N PATH" for
// each program (Profile::programs) instead of its program. Throws FormatError (e.g. a count too large for int64).
// inline_frames_read(mapping): the symbolizer read the DWARF of the
// mapping's object (whatever it found), so the file's frames for it are
// complete: has_inline_frames is set then (Mapping::symbolized when read).
std::string encode_pprof(const Profile& profile, const PprofSymbolizer& symbolize = {},
                         const std::function<bool(const Mapping&)>& inline_frames_read = {});

// Accepts gzip'd or plain bytes; throws FormatError on anything that is not a
// well-formed Profile (bad string or id references included). Fills samples
// (address of each sample's first location — the leaf —, the other
// locations' addresses as its stack, summed per address, stack and pid,
// value of the first "count"-unit sample type but observations, or else the
// first; the observations/count value as observations, has_observations
// when the file has that type; its time labels into the timeline), stacks, frames
// (the lines of every location of a sampled stack, the first named
// location's when several share an address), mappings, period (when its
// unit is nanoseconds), duration and time.
Profile decode_pprof(std::string_view bytes);

bool looks_like_gzip(std::string_view bytes);

}  // namespace profiling::format

#endif  // PROFIL_FORMAT_PPROF_H
