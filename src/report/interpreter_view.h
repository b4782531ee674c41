// Which frames of an interpreted program a view shows (issue 31, `profil
// report --interpreter`): a profile keeps both the interpreter's native
// frames and the program's own (format::kInterpreterFrameBase: a Python
// function or Ruby method at a line, placed just inside the native frame of the
// evaluation loop that ran it), and each view reads one of three stacks:
// - merged (the default): the program's frames in place of the evaluation
//   loop's native frames that ran them, every other native frame kept
//   (`main.py:main → parse.py:parse → _json (C) → parse.py:hook`);
// - python (or ruby): the program's frames alone (py-spy's usual view); a sample
//   without any (a native thread) keeps its native stack;
// - native: the native frames alone (the stack as the CPU had it).
// A profile without interpreter frames is left as it is.
//
// NOT async-signal-safe: host side.
#ifndef PROFIL_REPORT_INTERPRETER_VIEW_H
#define PROFIL_REPORT_INTERPRETER_VIEW_H

#include <optional>
#include <string_view>

#include "format/profile.h"

namespace profiling::report {

enum class InterpreterView { merged, python, native };

// "merged", "python" (or "ruby": the same view), "native"; nullopt for
// anything else.
std::optional<InterpreterView> parse_interpreter_view(std::string_view name);

// Rewrites the profile's samples and stacks to the view's frames; samples
// that come to share a leaf and stack are summed.
void apply_interpreter_view(format::Profile* profile, InterpreterView view);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_INTERPRETER_VIEW_H
