#include "format/pprof_gzip.h"

#include <zlib.h>

#include <limits>

#include "format/format_error.h"
#include "format/pprof.h"

namespace profiling::format {
namespace {

// The most a gzip'd profile may inflate to: far above any real profile,
// low enough that a small "gzip bomb" cannot exhaust memory.
constexpr size_t kMaxInflatedSize = size_t{1} << 30;

// Inflates `compressed` into `out` (nullptr: only counts); returns the
// inflated size, or a size above kMaxInflatedSize as soon as it is exceeded.
size_t inflate_into(std::string_view compressed, std::string* out) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 16) != Z_OK) fail("cannot initialize zlib");
  struct End {
    z_stream* s;
    ~End() { inflateEnd(s); }
  } end{&stream};
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  size_t total = 0;
  char buffer[65536];
  for (;;) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof buffer;
    int result = inflate(&stream, Z_NO_FLUSH);
    size_t got = sizeof buffer - stream.avail_out;
    // A message never begins with a zero byte (field number 0 does not
    // exist): the commonest bomb, compressed zeros, is refused at once.
    if (total == 0 && got > 0 && buffer[0] == 0) fail("gzip data that is no profile.proto (it begins with a zero byte)");
    total += got;
    if (total > kMaxInflatedSize) return total;
    if (out) out->append(buffer, got);
    if (result == Z_STREAM_END) {
      // Several gzip members are one stream to gunzip; anything else after
      // the end is damage.
      if (stream.avail_in == 0) return total;
      if (stream.avail_in < 2 || stream.next_in[0] != 0x1f || stream.next_in[1] != 0x8b)
        fail("bytes after the end of the gzip stream");
      inflateReset(&stream);
      continue;
    }
    if (result == Z_BUF_ERROR && stream.avail_in == 0) fail("truncated gzip data");
    if (result != Z_OK) fail(std::string("corrupt gzip data") + (stream.msg ? std::string(": ") + stream.msg : ""));
  }
}

}  // namespace

std::string gzip(const std::string& raw) {
  z_stream stream{};
  // windowBits 15 + 16: a gzip wrapper, as `go tool pprof` expects.
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    fail("cannot initialize zlib");
  std::string out(deflateBound(&stream, raw.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  stream.avail_in = static_cast<uInt>(raw.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  int result = deflate(&stream, Z_FINISH);
  size_t written = stream.total_out;
  deflateEnd(&stream);
  if (result != Z_STREAM_END) fail("gzip compression failed");
  out.resize(written);
  return out;
}

std::string gunzip(std::string_view compressed) {
  if (compressed.size() > std::numeric_limits<uInt>::max()) fail("gzip data larger than 4 GiB");
  // Inflated twice: once to learn the size without keeping anything, once
  // into a buffer of exactly that size. A "gzip bomb" is refused after the
  // first pass having cost 64 KiB, and a real profile costs its size, not
  // the doubling growth of a string appended to.
  size_t size = inflate_into(compressed, nullptr);
  if (size > kMaxInflatedSize) fail("gzip data inflates to more than " + std::to_string(kMaxInflatedSize >> 30) + " GiB");
  std::string out;
  out.reserve(size);
  inflate_into(compressed, &out);
  return out;
}

bool looks_like_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

}  // namespace profiling::format
