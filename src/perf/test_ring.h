// For the perf layer's tests: a ring buffer the test writes records into
// as the kernel would (8-aligned, wrapping at a power of two).
#ifndef PROFIL_PERF_TEST_RING_H
#define PROFIL_PERF_TEST_RING_H

#include <linux/perf_event.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace profiling::perf {

// n bytes, each seed + its index.
inline std::vector<uint8_t> payload(size_t n, uint8_t seed) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(seed + i);
  return bytes;
}

class SyntheticRing {
 public:
  explicit SyntheticRing(size_t size) : bytes_(size, 0xee) {}
  const uint8_t* data() const { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }
  uint64_t head() const { return head_; }

  // Writes a record of header + body at head (wrapping); returns its bytes.
  std::vector<uint8_t> push(uint32_t type, const std::vector<uint8_t>& body, uint16_t misc = 0) {
    perf_event_header header{type, misc, static_cast<uint16_t>(sizeof header + body.size())};
    std::vector<uint8_t> record(sizeof header + body.size());
    std::memcpy(record.data(), &header, sizeof header);
    if (!body.empty()) std::memcpy(record.data() + sizeof header, body.data(), body.size());
    for (uint8_t byte : record) bytes_[head_++ % bytes_.size()] = byte;
    return record;
  }
  // A header claiming `size` bytes, and only the header published.
  void push_raw_header(uint32_t type, uint16_t size) {
    perf_event_header header{type, 0, size};
    const auto* p = reinterpret_cast<const uint8_t*>(&header);
    for (size_t i = 0; i < sizeof header; ++i) bytes_[head_++ % bytes_.size()] = p[i];
  }

 private:
  std::vector<uint8_t> bytes_;
  uint64_t head_ = 0;
};

// Builds a record body field by field.
class Body {
 public:
  Body& u64(uint64_t v) { return put(&v, 8); }
  Body& u32(uint32_t v) { return put(&v, 4); }
  Body& bytes(const void* p, size_t n) { return put(p, n); }
  Body& text(const char* s) {  // NUL-terminated, padded to 8
    put(s, std::strlen(s) + 1);
    while (b_.size() % 8) b_.push_back(0);
    return *this;
  }
  const std::vector<uint8_t>& get() const { return b_; }

 private:
  Body& put(const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    b_.insert(b_.end(), c, c + n);
    return *this;
  }
  std::vector<uint8_t> b_;
};

}  // namespace profiling::perf

#endif  // PROFIL_PERF_TEST_RING_H
