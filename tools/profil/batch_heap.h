// The heap of a short batch job: the report's commands build tens of
// megabytes of small objects and drop them within a second, and on a
// virtual machine each first touch of a 4 KB page is a page fault costing
// about 10 us (a node html report: 4,165 faults, about a third of its CPU).
//
// Not async-signal-safe: called from the command line tool's main thread
// before or after the work, never from a handler, and never in libprofil
// (whose process is the user's: its heap is not ours to tune).
#pragma once

namespace profiling::cli {

// Grows the heap once by a pad large enough for a report's work and asks
// the kernel for transparent huge pages on it (madvise, which THP's
// "always" and "madvise" modes honour; "never" ignores it), keeps freed
// memory for reuse instead of returning it (so a vector that grows is not
// faulted in again), and keeps large blocks on the heap instead of fresh
// mappings. Only virtual memory is reserved: pages count in RSS when
// touched. Where brk or madvise is refused the heap stays as it was. A
// second call does nothing.
void use_batch_heap();

}  // namespace profiling::cli
