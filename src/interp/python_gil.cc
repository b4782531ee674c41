// ASYNC-SIGNAL-SAFE (python_gil.h): compiled into libprofil's core too.
#include "interp/python_gil.h"

namespace profiling::interp {

bool find_python_gil(const PythonLayout& l, uint64_t runtime, uint64_t tstate_current, MemoryReader& memory,
                     PythonGil* gil) {
  *gil = PythonGil{};
  if (l.major == 2 || (l.major == 3 && l.minor == 6)) {
    gil->holder = tstate_current;  // the symbol's address, 0 when it is missing
    return gil->known();
  }
  if (l.runtime_gil_holder >= 0) {
    if (runtime != 0) gil->holder = runtime + static_cast<uint64_t>(l.runtime_gil_holder);
    return gil->known();
  }
  if (l.interp_ceval_gil < 0 || l.gil_last_holder < 0 || l.gil_locked < 0 || l.runtime_interpreters_head < 0 ||
      runtime == 0)
    return false;
  const int32_t locked = l.gil_locked - l.gil_last_holder;
  if (locked < 0 || locked > 8) return false;  // not within the 16 bytes python_gil_state reads
  // The main interpreter is the first made: the last of the list, which
  // puts each new one at its head. Bounded against a list read mid-change.
  uint64_t interp = 0, main = 0;
  if (!read_u64(memory, runtime + static_cast<uint64_t>(l.runtime_interpreters_head), &interp)) return false;
  for (int i = 0; interp != 0 && i < 256; ++i) {
    main = interp;
    if (!read_u64(memory, interp + static_cast<uint64_t>(l.interp_next), &interp)) return false;
  }
  uint64_t struct_address = 0;
  if (main == 0 || !read_u64(memory, main + static_cast<uint64_t>(l.interp_ceval_gil), &struct_address) ||
      struct_address == 0)
    return false;
  gil->holder = struct_address + static_cast<uint64_t>(l.gil_last_holder);
  gil->locked = locked;
  return true;
}

}  // namespace profiling::interp
