// Where the unwinder reads the memory of the stack it walks.
//
// ASYNC-SIGNAL-SAFE: read() of both readers below. The unwinder takes a
// MemoryReader so that one walk serves two sources: the live stack of the
// interrupted thread (the cpu-clock signal handler) and a copy of the top of
// a stack (the perf ring buffer's PERF_SAMPLE_STACK_USER records, unwound
// later, outside any handler).
#ifndef PROFIL_UNWIND_MEMORY_H
#define PROFIL_UNWIND_MEMORY_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace profiling::unwind {

class MemoryReader {
 public:
  // Reads the 8 bytes at address into *value. false when they cannot be had
  // (unmapped, outside a copied window); *value is then untouched.
  virtual bool read(uint64_t address, uint64_t* value) const = 0;
  // The bytes [address, address + size) to read where they are, or nullptr
  // when they are not all in one place here (for an entry too large to
  // copy: internal/cfi.cc). The caller has read every page they span.
  virtual const uint8_t* in_place(uint64_t address, size_t size) const {
    (void)address;
    (void)size;
    return nullptr;
  }

 protected:
  ~MemoryReader() = default;
};

// The process's own memory through the fault-safe load of
// base/safe_access.S: an unmapped or unreadable address returns false
// instead of killing the process. Needs the sampler's fault guard installed
// (sampler::install_fault_guard()), as every sampling sink does.
class LiveMemory final : public MemoryReader {
 public:
  bool read(uint64_t address, uint64_t* value) const override;
  // This process's memory: the address itself.
  const uint8_t* in_place(uint64_t address, size_t) const override {
    return reinterpret_cast<const uint8_t*>(address);
  }
};

// A copy of [base, base + size) of another moment's stack. Reads outside it
// go to fallback when one is given (the code bytes of a signal trampoline
// are the same in the live process), else fail.
class StackWindow final : public MemoryReader {
 public:
  StackWindow(uint64_t base, const void* bytes, size_t size, const MemoryReader* fallback = nullptr)
      : base_(base), bytes_(static_cast<const unsigned char*>(bytes)), size_(size), fallback_(fallback) {}
  bool read(uint64_t address, uint64_t* value) const override {
    if (address >= base_ && size_ >= 8 && address - base_ <= size_ - 8) {
      std::memcpy(value, bytes_ + (address - base_), 8);
      return true;
    }
    return fallback_ != nullptr && fallback_->read(address, value);
  }

 private:
  uint64_t base_;
  const unsigned char* bytes_;
  size_t size_;
  const MemoryReader* fallback_;
};

}  // namespace profiling::unwind

#endif  // PROFIL_UNWIND_MEMORY_H
