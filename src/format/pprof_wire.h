// profile.proto at the wire level, where the encoder and the decoder work
// below protobuf's message classes (pprof_encode.cc, pprof_decode.cc): a
// large profile's samples and locations are written and read one message
// at a time instead of held as one Profile (issue 11).
#ifndef PROFIL_FORMAT_PPROF_WIRE_H
#define PROFIL_FORMAT_PPROF_WIRE_H

#include <cstdint>
#include <string>
#include <string_view>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

namespace profiling::format::pprof_wire {

// profile.proto's field numbers for Profile.sample and Profile.location.
inline constexpr uint32_t kSampleField = 2, kLocationField = 4;

// Walks the top-level fields of a serialized message: visit(field number,
// payload of a length-delimited field (else empty), the whole field with
// its tag). False when the bytes are not a well-formed message.
template <typename Visit>
bool for_each_field(std::string_view bytes, Visit&& visit) {
  namespace io = google::protobuf::io;
  using google::protobuf::internal::WireFormatLite;
  io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  for (;;) {
    size_t start = static_cast<size_t>(in.CurrentPosition());
    if (start == bytes.size()) return true;
    uint32_t tag = in.ReadTag();
    if (tag == 0) return false;
    std::string_view payload;
    if (WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      uint32_t length = 0;
      if (!in.ReadVarint32(&length)) return false;
      size_t at = static_cast<size_t>(in.CurrentPosition());
      if (length > bytes.size() - at || !in.Skip(static_cast<int>(length))) return false;
      payload = bytes.substr(at, length);
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
    size_t end = static_cast<size_t>(in.CurrentPosition());
    visit(WireFormatLite::GetTagFieldNumber(tag), payload, bytes.substr(start, end - start));
  }
}

inline void append_varint(std::string* out, uint64_t value) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

}  // namespace profiling::format::pprof_wire

#endif  // PROFIL_FORMAT_PPROF_WIRE_H
