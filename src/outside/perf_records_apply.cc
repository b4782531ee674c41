// What the perf source says of the kernel's refusals, and the task
// records it hands to the process table (perf_records_apply.h).
#include "outside/perf_records_apply.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace profiling::outside {

std::string read_setting(const char* path) {
  std::ifstream in(path);
  std::string value;
  std::getline(in, value);
  return value.empty() ? "?" : value;
}

std::string describe_refusal(long error, pid_t pid, const std::string& event) {
  const std::string paranoid = read_setting("/proc/sys/kernel/perf_event_paranoid");
  switch (error) {
    case EACCES:
    case EPERM:
      return "the kernel refuses perf events on pid " + std::to_string(pid) + " (" + std::strerror(static_cast<int>(error)) +
             "): kernel.perf_event_paranoid is " + paranoid +
             "; sampling another user's process, or any process where it is above 2, needs CAP_PERFMON or "
             "root (or sysctl kernel.perf_event_paranoid=2)";
    case ESRCH: return "no process " + std::to_string(pid);
    case EMFILE:
    case ENFILE: return "out of file descriptors for the events (one per thread and CPU): raise ulimit -n";
    case ENOENT:
    case ENODEV:
    case ENOSYS:
    case EOPNOTSUPP:
      return "this machine has no '" + event + "' perf event to sample (" + std::strerror(static_cast<int>(error)) + ")";
    default: return "perf_event_open on pid " + std::to_string(pid) + ": " + std::strerror(static_cast<int>(error));
  }
}

// "EPERM (Operation not permitted)".
std::string errno_name(int error) {
  const char* name = ::strerrorname_np(error);
  return std::string(name ? name : "errno " + std::to_string(error)) + " (" + std::strerror(error) + ")";
}

// What the kernel lets a user without CAP_IPC_LOCK lock in perf rings
// (perf_mmap: perf_event_mlock_kb per CPU, summed over the CPUs, then the
// RLIMIT_MEMLOCK), with the values here.
std::string lock_allowance() {
  rlimit memlock{};
  std::string limit = "?";
  if (::getrlimit(RLIMIT_MEMLOCK, &memlock) == 0)
    limit = memlock.rlim_cur == RLIM_INFINITY ? "unlimited" : std::to_string(memlock.rlim_cur / 1024) + " KiB";
  return "a user without CAP_IPC_LOCK may lock kernel.perf_event_mlock_kb (" +
         read_setting("/proc/sys/kernel/perf_event_mlock_kb") + " KiB) per CPU in perf rings, and beyond it ulimit -l (" +
         limit + ")";
}

perf::EventSpec event_spec(const SamplerOptions& options, bool before_exec, bool user_only) {
  perf::EventSpec spec;
  spec.type = options.event.type;
  spec.config = options.event.config;
  spec.period_ns = options.sample_period();
  spec.sample_type = PERF_SAMPLE_TIME;
  if (options.stacks) {
    spec.regs_user = perf::kUnwindRegisters;
    spec.stack_bytes = options.stack_copy_bytes();
  }
  spec.inherit = true;
  // Each ended thread's count (ProcessTable::on_read): its CPU time no
  // sample took. Another event's count is no time: not asked for.
  spec.inherit_stat = options.event.is_time();
  spec.disabled = before_exec;
  spec.enable_on_exec = before_exec;
  spec.track_tasks = true;
  spec.user_only = user_only;
  spec.kernel_callchain = !user_only && options.stacks && options.kernel_frames;
  // The reader is woken at half a ring of 2 MiB or more (a quarter of a
  // smaller one): each wake-up cost its thread ~40 us on this loaded
  // 2-core machine (its caches cold again), against ~1 us a sample's
  // unwinding; at half, the reader's CPU on xz at 4 kHz went from 1.87 to
  // 1.58 us a sample (issue 32). The room left, 1 MiB, is 64 samples of 16
  // KiB (1 kHz and below) or 128 of 8 KiB (above).
  const uint64_t ring_bytes = options.ring_pages * 4096ull;
  spec.wakeup_bytes = static_cast<uint32_t>(ring_bytes >= (2u << 20) ? ring_bytes / 2 : ring_bytes / 4);
  return spec;
}

void apply_task_record(const perf::RecordFormat& format, const perf::Record& r, ProcessTable* table) {
  switch (r.header.type) {
    case PERF_RECORD_MMAP:
    case PERF_RECORD_MMAP2: {
      perf::Mmap m;
      if (perf::parse_mmap(format, r, &m)) table->on_mmap(m);
      break;
    }
    case PERF_RECORD_COMM: {
      perf::Comm c;
      if (perf::parse_comm(format, r, &c)) table->on_comm(c);
      break;
    }
    case PERF_RECORD_FORK: {
      perf::Task t;
      if (perf::parse_task(format, r, &t)) table->on_fork(t);
      break;
    }
    case PERF_RECORD_EXIT: {
      perf::Task t;
      if (perf::parse_task(format, r, &t)) table->on_exit(t);
      break;
    }
    case PERF_RECORD_LOST: {
      perf::Lost l;
      if (perf::parse_lost(format, r, &l)) table->on_lost(l);
      break;
    }
    case PERF_RECORD_READ: {
      perf::Read read;
      if (perf::parse_read(format, r, &read)) table->on_read(read);
      break;
    }
    default: break;
  }
}

}  // namespace profiling::outside
