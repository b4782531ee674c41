// profil top's screen as text (issue 33): what the keys do to the view,
// and the lines a snapshot of the model (top_model.h) is drawn as — kept
// apart from the terminal (top_screen.h) so that they are tested as text.
//
// Keys (profil-top(1)): s sorts by the last window or since the start,
// t switches self and total, p asks for a process to show alone (a pid or
// part of its name; empty: all), m merges a process's threads into one
// row per function, f freezes the rows (the status line counts on), q
// and ^C end it.
//
// Pure functions, no state of their own: any thread.
#ifndef PROFIL_TOOLS_TOP_VIEW_H
#define PROFIL_TOOLS_TOP_VIEW_H

#include <cstdint>
#include <string>
#include <vector>

#include "top_model.h"

namespace profiling::cli {

enum class TopWindow { last, since_start };
enum class TopMeasure { self, total };

struct TopViewState {
  TopWindow window = TopWindow::last;    // the one rows are sorted by
  TopMeasure measure = TopMeasure::self;  // the one rows are sorted by
  bool frozen = false;
  bool threads_merged = false;
  // "" every process; all digits: that pid; else part of the name.
  std::string process;
};

enum class TopKey {
  ignored,  // the key means nothing here
  changed,  // the view changed: draw it again
  quit,
  ask_process,  // the caller asks which process (TopViewState::process)
};
TopKey apply_key(TopViewState* state, int key);

// Whether a row's process is the one asked for (TopViewState::process).
bool process_matches(const std::string& asked, int32_t pid, const std::string& name);

// The rows shown: the process asked for, threads merged when asked
// (thread then says how many: "3 threads"), sorted by the window and
// measure asked for, most first (then by the other window, the name).
std::vector<TopRow> shown_rows(const TopSnapshot& snapshot, const TopViewState& state);

// What the first and last lines say beyond the rows.
struct TopHeader {
  std::string target;        // "outside_target (pid 12)"
  unsigned hz = 0;
  std::string event{};       // "" for CPU time at hz, else "page-faults every 1" (--event)
  uint64_t samples = 0;      // every sample read so far, frozen or not
  uint64_t lost = 0;         // samples the kernel could not write (ring full)
  std::string ended;         // "outside_target exited with status 0", or ""
};

// The screen, height lines of at most width bytes: the title, the
// windows' sample counts, the column heads, the rows, and the status line
// last. Shares are of the shown processes' samples in each window.
std::vector<std::string> render_top(const TopSnapshot& snapshot, const TopViewState& state, const TopHeader& header,
                                    int width, int height);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_TOP_VIEW_H
