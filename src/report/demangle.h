// Linker names -> the names a reader knows: C++ (Itanium C++ ABI, "_Z...")
// and Rust, both of its manglings: legacy ("_ZN...17h<hash>E", with $LT$,
// $u20$ ... escapes) and v0 ("_R...", RFC 2603). The Rust ones go through
// libiberty's rust_demangle (binutils' and gdb's demangler, Debian
// libiberty-dev), C++ through libiberty's cplus_demangle, without the
// return types of function templates (as perf prints them).
#ifndef PROFIL_REPORT_DEMANGLE_H
#define PROFIL_REPORT_DEMANGLE_H

#include <string>

namespace profiling::report {

// "_ZN3foo3barEv" -> "foo::bar()",
// "_ZN3hot5inner8hot_loop17h6dfa5d802e5cb4d2E" -> "hot::inner::hot_loop",
// "_RNvNtCs7fattgR6AAa_3hot5inner8hot_loop" -> "hot::inner::hot_loop",
// "_ZN3FooIiE3bazIiEEvT_" -> "Foo<int>::baz<int>(int)" (no "void");
// other names (C's "main", a name no demangler accepts) are returned as
// they are.
std::string demangle(const std::string& name);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_DEMANGLE_H
