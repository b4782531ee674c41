// Names for the code of the vDSO, the object the kernel maps into every
// process (vdso(7)): it has no file a report could read later, so `profil
// run` names its sampled addresses when it writes a profile, from the
// dynamic symbols of profil's own vDSO (getauxval(AT_SYSINFO_EHDR)), which
// the same kernel gave it — as perf does, which copies its own vDSO out to
// name every process's (tools/perf/util/vdso.c). Issue 35: a clock_gettime
// loop was "[unknown]" in [vdso] inside and at 0x0 from outside, where perf
// says __vdso_clock_gettime.
//
// Host side only (allocates); the vDSO is read, never written; no state.
#ifndef PROFIL_REPORT_VDSO_NAMES_H
#define PROFIL_REPORT_VDSO_NAMES_H

#include <cstddef>
#include <cstdint>
#include <string>

#include "format/profile.h"

namespace profiling::report {

// The function symbols of an in-memory ELF image of `size` bytes (a vDSO)
// at link-time addresses; empty when it is not a 64-bit ELF with a
// .dynsym inside those bytes.
class VdsoSymbols {
 public:
  // profil's own vDSO (empty when the kernel maps none).
  static const VdsoSymbols& own();
  VdsoSymbols(const void* image, size_t size);
  // The function at a link-time address, nullptr when none covers it. Of
  // the aliases of one address (clock_gettime, __vdso_clock_gettime) the
  // global one: the name perf prints.
  const std::string* lookup(uint64_t address) const;
  // Bytes from the image's start to its last PT_LOAD segment's end: a
  // process's [vdso] mapping of another length is another kernel's.
  uint64_t size() const { return size_; }
  size_t functions() const { return functions_.size(); }

 private:
  struct Function {
    uint64_t start, end;
    std::string name;
  };
  std::vector<Function> functions_;  // by start
  uint64_t size_ = 0;
};

// Gives each sampled address (leaf or caller) in the profile's [vdso]
// mappings that carries no frames yet the name of its function in
// `symbols` (the mapping's start is the image's link-time 0) as a frame of
// Profile::frames, which every view and export then shows. A mapping as
// long as the image's loaded bytes, or longer by the page it rounds to, is
// taken for the same vDSO; another is left unnamed. Returns how many
// addresses were named.
size_t name_vdso_code(format::Profile* profile, const VdsoSymbols& symbols = VdsoSymbols::own());

}  // namespace profiling::report

#endif  // PROFIL_REPORT_VDSO_NAMES_H
