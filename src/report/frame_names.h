// The names views print: a symbol's version dropped, a C++ name shortened
// for a text column, and the labels of the thread and process roots a
// stack may get (stacks.h StackRoots). Pure functions of their arguments.
#ifndef PROFIL_REPORT_FRAME_NAMES_H
#define PROFIL_REPORT_FRAME_NAMES_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace profiling::report {

// A thread root's label: "name tid" ("worker 4242"); "thread 4242" when
// the profile does not name it; "[unknown thread]" for samples of no known
// thread (files before threads were recorded, gmon).
std::string thread_label(const std::string& name, int32_t tid);
// A process root's label: "name pid"; "[unknown process]" for pid 0.
std::string process_label(const std::string& name, int64_t pid);

// "name@@VERSION" or "name@VERSION" -> "name"; other names as they are.
std::string drop_symbol_version(std::string_view name);
// A C++ name shortened for a text column of `width` code points, as pprof
// does: template arguments and parameter lists elided ("std::map<...>::find(...)"
// -> "std::map::find"), then, if still too wide, its start cut to "…".
// Names that fit are returned as they are.
std::string shorten_name(const std::string& name, size_t width);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_FRAME_NAMES_H
