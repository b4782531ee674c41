// The perf source's events, words and records (perf_source.h), apart from
// its rings: the events' attributes, how a refusal of the kernel is said
// (the setting at fault and what to change), and each task record (MMAP2,
// COMM, FORK, EXIT, LOST, READ) handed to the process table.
//
// NOT async-signal-safe: host side (the reader thread, under the feed's
// lock, for apply_task_record).
#ifndef PROFIL_OUTSIDE_PERF_RECORDS_APPLY_H
#define PROFIL_OUTSIDE_PERF_RECORDS_APPLY_H

#include <sys/types.h>

#include <string>

#include "outside/options.h"
#include "outside/process_table.h"
#include "perf/event.h"
#include "perf/records.h"

namespace profiling::outside {

// The first line of /proc/sys/... path, "?" when it cannot be read.
std::string read_setting(const char* path);
// perf_event_open's -error on pid for the event of that name, said with
// the setting at fault.
std::string describe_refusal(long error, pid_t pid, const std::string& event);
// "EPERM (Operation not permitted)".
std::string errno_name(int error);
// What the kernel lets a user without CAP_IPC_LOCK lock in perf rings
// (perf_mmap: perf_event_mlock_kb per CPU, summed over the CPUs, then the
// RLIMIT_MEMLOCK), with the values here.
std::string lock_allowance();

// The events' attributes for these options: one place, so that the rings'
// record format (perf::RecordFormat::of) follows from the options too.
perf::EventSpec event_spec(const SamplerOptions& options, bool before_exec, bool user_only);

// One record other than a sample or a throttle, applied to the table.
void apply_task_record(const perf::RecordFormat& format, const perf::Record& r, ProcessTable* table);

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_PERF_RECORDS_APPLY_H
