// A hint, for each object whose samples are mostly unnamed, of what would
// name them: a stripped program's symbols are in its distribution's debug
// package (Debian: <package>-dbgsym, from the debug archive) or on a
// debuginfod server (DEBUGINFOD_URLS), both found by its build id.
#ifndef PROFIL_REPORT_MISSING_SYMBOLS_H
#define PROFIL_REPORT_MISSING_SYMBOLS_H

#include <functional>
#include <string>
#include <vector>

#include "report/report.h"

namespace profiling::report {

// Which Debian package owns path ("xz-utils" for /usr/bin/xz), "" when none
// does or dpkg is not there. Asks `dpkg -S` (dpkg-query(1)): the path as
// mapped, its real path, and the other side of the /usr merge (a package
// may have shipped /lib/... while the loader mapped /usr/lib/...).
std::string debian_package_of(const std::string& path);

// One line per object of `symbolized` with more than half of its samples
// unnamed (no symbol table, no name in the file) and at least 1% of all
// samples, most unnamed samples first:
//   "/usr/bin/xz (build id 3cb2...): 98% of its 9,875 samples have no
//    function name; they are in the package xz-utils-dbgsym (Debian's debug
//    archive) or from a debuginfod server (DEBUGINFOD_URLS)"
// Objects that cannot be read are left out: the symbolizer's warnings
// already name them. package_of: debian_package_of, or a stand-in (tests).
std::vector<std::string> missing_symbol_hints(
    const SymbolizedProfile& symbolized,
    const std::function<std::string(const std::string&)>& package_of = debian_package_of);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_MISSING_SYMBOLS_H
