// profil top's terminal (issue 33), through ncurses (Debian's
// libncurses-dev): the screen taken over while it lives and given back
// as it was when it is destroyed (a normal end, an error, an exception).
// The terminal is raw: ^C and ^Z are keys, not signals to profil or to
// the program it started (which shares the terminal's process group).
//
// Not thread-safe (curses is not): one thread draws and reads keys.
#ifndef PROFIL_TOOLS_TOP_SCREEN_H
#define PROFIL_TOOLS_TOP_SCREEN_H

#include <memory>
#include <string>
#include <vector>

namespace profiling::cli {

class TopScreen {
 public:
  // The terminal of standard input and output; nullptr, with *why, when
  // there is none profil can draw on (not a terminal, an unknown TERM).
  static std::unique_ptr<TopScreen> open(std::string* why);
  ~TopScreen();
  TopScreen(const TopScreen&) = delete;
  TopScreen& operator=(const TopScreen&) = delete;

  int width() const;
  int height() const;
  // The lines, from the top; the first and the last in bold.
  void draw(const std::vector<std::string>& lines);
  // A key, waiting at most timeout_ms; -1 when none came.
  int key(int timeout_ms);
  // Asks on the last line and reads a line (Enter ends it, Escape gives
  // up and returns what was there before: `current`).
  std::string ask(const std::string& question, const std::string& current);

 private:
  TopScreen() = default;
};

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_TOP_SCREEN_H
