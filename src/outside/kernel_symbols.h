// The kernel's functions by address, from /proc/kallsyms (issue 33): the
// names of the kernel frames of samples taken from outside where the kernel
// gives kernel call chains (root, CAP_PERFMON or perf_event_paranoid <= 1;
// kptr_restrict decides whether /proc/kallsyms shows real addresses to
// profil). Their object in reports is "[kernel.kallsyms]" (the report's
// symbolizer gives it to any address of the kernel's half); a module's
// function carries its module in its name, "fn [ext4]" (perf shows it as
// the object; a profile's frames carry no object).
//
// NOT async-signal-safe: host side; read once, then const (any thread).
#ifndef PROFIL_OUTSIDE_KERNEL_SYMBOLS_H
#define PROFIL_OUTSIDE_KERNEL_SYMBOLS_H

#include <cstdint>
#include <string>
#include <vector>

#include "format/profile.h"

namespace profiling::outside {

// The lowest address of the kernel's half of x86-64's address space: a
// kernel call chain's entries are at or above it.
inline constexpr uint64_t kKernelSpaceStart = 0xffff'8000'0000'0000;
inline constexpr bool is_kernel_address(uint64_t address) { return address >= kKernelSpaceStart; }
inline constexpr const char* kKernelObject = "[kernel.kallsyms]";

class KernelSymbols {
 public:
  // path: /proc/kallsyms, or a file laid out like it (tests). Empty when it
  // cannot be read or shows no addresses (kptr_restrict: all zero).
  static KernelSymbols read(const std::string& path = "/proc/kallsyms");

  bool empty() const { return symbols_.empty(); }
  // The function containing address, as a profile's frame; an address
  // below every symbol is named by its hex address.
  format::Frame frame_of(uint64_t address) const;

 private:
  struct Symbol {
    uint64_t address;
    uint32_t name;    // offset into names_
    uint32_t module;  // offset into names_ of "[module]", or UINT32_MAX
  };
  std::vector<Symbol> symbols_;  // by address
  std::string names_;            // NUL-separated
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_KERNEL_SYMBOLS_H
