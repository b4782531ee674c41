#include "top_screen.h"

#include <curses.h>
#include <unistd.h>

#include <clocale>
#include <cstdlib>
#include <cstdio>

namespace profiling::cli {

namespace {
SCREEN* g_screen = nullptr;  // one at a time
}  // namespace

std::unique_ptr<TopScreen> TopScreen::open(std::string* why) {
  if (!::isatty(STDIN_FILENO) || !::isatty(STDOUT_FILENO)) {
    *why = "standard input and output are not a terminal (profil top draws on one)";
    return nullptr;
  }
  std::setlocale(LC_CTYPE, "");
  // newterm, not initscr: an unknown TERM is an error returned, where
  // initscr would print its own and exit.
  g_screen = newterm(nullptr, stdout, stdin);
  if (g_screen == nullptr) {
    const char* term = std::getenv("TERM");
    *why = std::string("the terminal type '") + (term ? term : "") + "' is unknown to curses (terminfo(5))";
    return nullptr;
  }
  raw();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  return std::unique_ptr<TopScreen>(new TopScreen());
}

TopScreen::~TopScreen() {
  endwin();
  delscreen(g_screen);
  g_screen = nullptr;
}

int TopScreen::width() const { return COLS; }
int TopScreen::height() const { return LINES; }

void TopScreen::draw(const std::vector<std::string>& lines) {
  erase();
  for (size_t i = 0; i < lines.size() && static_cast<int>(i) < LINES; ++i) {
    const bool bold = i == 0 || i + 1 == lines.size();
    if (bold) attron(A_BOLD);
    mvaddnstr(static_cast<int>(i), 0, lines[i].c_str(), COLS);
    if (bold) attroff(A_BOLD);
  }
  refresh();
}

int TopScreen::key(int timeout_ms) {
  timeout(timeout_ms);
  const int k = getch();
  return k == ERR ? -1 : k;
}

std::string TopScreen::ask(const std::string& question, const std::string& current) {
  std::string answer;
  for (;;) {
    move(LINES - 1, 0);
    clrtoeol();
    attron(A_BOLD);
    mvaddnstr(LINES - 1, 0, (question + answer).c_str(), COLS);
    attroff(A_BOLD);
    curs_set(1);
    refresh();
    timeout(-1);
    const int k = getch();
    if (k == '\n' || k == '\r' || k == KEY_ENTER) break;
    if (k == 27 || k == 3) {  // Escape, ^C
      answer = current;
      break;
    }
    if ((k == KEY_BACKSPACE || k == 127 || k == 8) && !answer.empty()) answer.pop_back();
    else if (k >= 32 && k < 127) answer.push_back(static_cast<char>(k));
  }
  curs_set(0);
  return answer;
}

}  // namespace profiling::cli
