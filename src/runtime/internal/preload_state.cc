// The preload runtime's shared state: the definitions, documented once in
// internal/preload_state.h (who writes each, when, and which functions read
// it from a signal handler). Plain data, constant-initialized: nothing here
// runs at load.
#include "runtime/internal/preload_state.h"

#include "unwind/unwinder.h"

namespace profiling::runtime::internal {

bool g_active = false;
sampler::PcTable* g_table = nullptr;
unwind::StackTable* g_stacks = nullptr;
uint32_t g_max_depth = unwind::kDefaultMaxDepth;
std::atomic<pid_t> g_owner_pid{0};
std::atomic<int> g_dump_state{kIdle};
std::atomic<pid_t> g_dump_tid{0};
bool g_dumped_once = false;
bool g_placeholder_empty = false;
char g_dir[PATH_MAX] = {};
char g_ledger[format::kLedgerNameSize] = {};
bool g_in_ledger = false;
bool g_end_in_ledger = false;
char g_name[256] = {};
char g_run_id[format::profraw::kRunIdSize + 1] = {};
uint32_t g_hz = 0;
int64_t g_start_ns = 0;
uint64_t g_signals_at_start = 0;
uint64_t g_ticks_at_start = 0;
int64_t g_cpu_at_start = 0;
int64_t g_cpu_at_clocks = 0;

int g_dirfd = -1;
dev_t g_dir_dev = 0;
ino_t g_dir_ino = 0;
char g_dirfd_path[32] = {};

}  // namespace profiling::runtime::internal
