// GNU gmon.out from live memory (gmon_file.h). ASYNC-SIGNAL-SAFE.
#include "runtime/gmon_file.h"

#include <cstring>

#include "base/io.h"
#include "format/gmon.h"

namespace profiling::runtime {
namespace {

// Little-endian fields into a stack buffer, flushed to the file when full.
class Output {
 public:
  explicit Output(base::AtomicFile& file) : file_(file) {}
  void bytes(const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    while (size > 0) {
      if (used_ == sizeof buffer_) flush();
      const size_t n = size < sizeof buffer_ - used_ ? size : sizeof buffer_ - used_;
      std::memcpy(buffer_ + used_, p, n);
      used_ += n;
      p += n;
      size -= n;
    }
  }
  void u8(uint8_t v) { bytes(&v, 1); }
  void u16(uint16_t v) { bytes(&v, 2); }  // x86-64: the host order is the file's
  void u32(uint32_t v) { bytes(&v, 4); }
  void u64(uint64_t v) { bytes(&v, 8); }
  bool flush() {
    bool ok = used_ == 0 || file_.write(buffer_, used_);
    used_ = 0;
    return ok;
  }

 private:
  base::AtomicFile& file_;
  unsigned char buffer_[4096];
  size_t used_ = 0;
};

}  // namespace

bool write_gnu_gmon(int dirfd, const char* name, const GmonImage& image) {
  namespace gmon = format::gmon;
  base::AtomicFile file;
  if (!file.open(dirfd, name)) return false;
  Output out(file);
  out.bytes(gmon::kMagic, sizeof gmon::kMagic);
  out.u32(gmon::kVersion);
  const unsigned char spare[12] = {};
  out.bytes(spare, sizeof spare);
  if (image.nbins > 0) {
    out.u8(gmon::kTimeHistogram);
    out.u64(image.low_pc);
    out.u64(image.high_pc);
    out.u32(static_cast<uint32_t>(image.nbins));
    out.u32(image.rate_hz);
    char dimension[gmon::kDimensionSize] = {};
    std::memcpy(dimension, "seconds", 7);  // NUL-padded, as glibc's strncpy leaves it
    out.bytes(dimension, sizeof dimension);
    out.u8('s');
    for (size_t i = 0; i < image.nbins; ++i) out.u16(__atomic_load_n(&image.bins[i], __ATOMIC_RELAXED));
  }
  if (image.arcs != nullptr) {
    image.arcs->for_each([&](uint64_t from, uint64_t self, uint64_t count) {
      out.u8(gmon::kCallGraphArc);
      out.u64(from - image.bias);
      out.u64(self - image.bias);
      // A 32-bit field (gmon_cg_arc_record.count): saturate, as the encoder does.
      out.u32(count > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(count));
    });
  }
  if (!out.flush()) return false;
  return file.commit();
}

}  // namespace profiling::runtime
