// The line a CPython code object is at, from its line table: the decoding
// of each version's table, as CPython's own PyCode_Addr2Line does it.
//
// Pure functions of bytes already read (host side, no allocation).
#ifndef PROFIL_INTERP_PYTHON_LINES_H
#define PROFIL_INTERP_PYTHON_LINES_H

#include <cstdint>
#include <string_view>

#include "interp/python_layout.h"

namespace profiling::interp {

// The line of the instruction at byte offset `offset` into the code's
// instructions (≤3.9: f_lasti; 3.10: 2 * f_lasti; 3.11+: the instruction's
// address minus the start of co_code_adaptive). A negative offset (a frame
// not started yet) is the first line; -1 when the table gives the
// instruction no line (CPython's own answer for it) or does not reach it.
int python_line(PythonLineTable kind, std::string_view table, int first_line, int64_t offset);

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_PYTHON_LINES_H
