// The priority of the outside source's own thread (issue 32): among a
// program's 1,000 busy threads, a reader at their priority had a
// thousandth of the CPU's time: its rings filled and profil took 54 s to
// open the events, read them and close them for a 2-second attach. The
// thread that opens, reads and closes the events asks to run before them:
// SCHED_FIFO at the lowest real-time priority (root, CAP_SYS_NICE or an
// RLIMIT_RTPRIO), else the lowest nice RLIMIT_NICE allows — for itself
// alone (never the program's threads, never the tool's other threads),
// and reset in a child it forks (SCHED_RESET_ON_FORK).
//
// NOT async-signal-safe: host side. Each call concerns the calling thread.
#ifndef PROFIL_OUTSIDE_READER_PRIORITY_H
#define PROFIL_OUTSIDE_READER_PRIORITY_H

#include <functional>
#include <string>

namespace profiling::outside {

struct ThreadPriority {
  bool real_time = false;  // SCHED_FIFO
  int nice = 0;            // without it: the nice obtained (0 when none)
  // "" when the thread runs before the program's (real time, or nice
  // -20); else one line naming what was refused and what would allow it.
  std::string refusal;
};

// Raises the calling thread's priority as far as it may.
ThreadPriority raise_thread_priority();

// A thread just created (pthread_t: std::thread::native_handle()) made
// real-time by its creator, before it runs, where allowed (it raises
// itself as far as it may once it runs: raise_thread_priority). Issue 32:
// a thread created by one that has SCHED_RESET_ON_FORK starts at nice 0,
// and among 1,000 busy threads profil's new threads waited 5 to 11 s for
// their first instruction, the one that raises them: 30 s before the
// "attached" line. false where refused.
bool raise_new_thread(unsigned long thread);

// Runs work on a thread of its own, raised as raise_thread_priority does,
// and waits for it: for what reads /proc and opens events for each of a
// program's threads, which among 1,000 busy ones took 53 s at their
// priority (every read(2) of a /proc file waited tens of ms for a CPU).
void run_raised(const std::function<void()>& work);

// The calling thread's nice value down to -20 (or as far as RLIMIT_NICE
// lets it), never real time, and reset in what it forks
// (SCHED_RESET_ON_FORK): for the attaching command's own thread, whose
// conversion after the window shares the CPU with the program's threads
// (one of 1,000 at their priority: 1/500 of the machine) and must not
// take it from them either (SCHED_FIFO would stall the program for as long
// as symbolizing takes). Returns the nice value obtained.
int lower_own_nice();

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_READER_PRIORITY_H
