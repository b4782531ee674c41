#include "outside/sample_stack.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cstring>

#include "format/profile.h"
#include "outside/kernel_symbols.h"
#include "perf/event.h"
#include "unwind/unwinder.h"

namespace profiling::outside {
namespace {

// How much of a stack copy is fetched into the cache before it is unwound:
// the frames of most stacks (a program's main loop some calls deep).
constexpr uint64_t kPrefetchBytes = 2048;

// The sample's kernel call chain, innermost first (PERF_SAMPLE_CALLCHAIN
// of the kernel part only: perf/event.h).
std::vector<uint64_t> kernel_chain(const perf::Sample& s) {
  std::vector<uint64_t> frames;
  for (uint64_t i = 0; i < s.callchain_count; ++i) {
    uint64_t address;
    std::memcpy(&address, s.callchain + i, sizeof address);
    // Context markers (PERF_CONTEXT_KERNEL...) sit at the top of the range.
    if (address >= static_cast<uint64_t>(PERF_CONTEXT_MAX)) continue;
    if (is_kernel_address(address)) frames.push_back(address);
  }
  return frames;
}

}  // namespace

SampleStack unwind_sample(const perf::Sample& s, bool kernel, CodeMap& code, uint32_t max_depth) {
  SampleStack out;
  uint64_t pcs[unwind::kDefaultMaxDepth * 4];
  max_depth = std::min<uint32_t>(max_depth, sizeof pcs / sizeof pcs[0]);
  unwind::Stack stack;
  // A kernel sample's user registers are those of the system call's
  // caller; in execve, after the new image replaced the old one
  // (load_elf_binary -> map_vdso), they are still the old image's, an
  // address the new image has no code at (a CI run of 9c6448b: its root
  // "[unknown]"). Such a sample is its kernel chain alone, as one without
  // user registers is.
  const bool user_stack_is_this_images =
      s.reg_count >= 3 && (!kernel || code.covers(s.regs[perf::kUnwindRegisterIp]));
  if (user_stack_is_this_images) {
    // The copy was just written by the kernel on the sampled thread's CPU:
    // each frame's return address read from it was a cache miss, one after
    // another (80 % of unwind()'s time, perf annotate on xz at 4 kHz; issue
    // 32). Asked for together first, the misses overlap.
    for (uint64_t at = 0; at < std::min<uint64_t>(s.stack_copied, kPrefetchBytes); at += 64) __builtin_prefetch(s.stack + at);
    const unwind::StackWindow window(s.regs[perf::kUnwindRegisterSp], s.stack, s.stack_copied, &code);
    unwind::Registers regs;
    regs.pc = s.regs[perf::kUnwindRegisterIp];
    regs.sp = s.regs[perf::kUnwindRegisterSp];
    regs.fp = s.regs[perf::kUnwindRegisterBp];
    stack = unwind::unwind(code.table(), window, regs, pcs, max_depth);
  } else {
    // No user registers (or none of this image's, above): a kernel
    // thread's sample, or an exiting thread's after exit_mm (the kernel
    // gives none once the task has no memory; a per-CPU event samples it
    // in exit_notify). Its leaf is s.ip alone, or the kernel's chain
    // below: s.ip is not also a caller.
    stack.truncated = true;
  }
  uint32_t from = 0;
  const std::vector<uint64_t> chain = kernel ? kernel_chain(s) : std::vector<uint64_t>{};
  if (!chain.empty()) {
    // The kernel's functions, innermost first, then the user stack that
    // made the system call (its PC is where the call returns to).
    out.leaf = chain[0];
    out.kernel_frames.push_back(out.leaf);
    for (size_t k = 1; k < chain.size(); ++k) {
      out.callers.push_back(chain[k] - 1);  // a return address less one
      out.kernel_frames.push_back(out.callers.back());
    }
  } else if (kernel) {
    out.leaf = format::kKernelAddress;  // the user PC below it is where the system call returns to
  } else if (stack.depth == 0) {
    out.leaf = s.ip;
    stack.truncated = true;
  } else {
    out.leaf = pcs[0];
    from = 1;
  }
  out.callers.reserve(stack.depth + chain.size());  // one allocation
  // Callers are call sites: a return address less one (format/profile.h).
  for (uint32_t k = from; k < stack.depth; ++k) out.callers.push_back(pcs[k] > 0 ? pcs[k] - 1 : 0);
  out.truncated = stack.truncated;
  return out;
}

}  // namespace profiling::outside
