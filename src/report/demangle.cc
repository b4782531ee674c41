#include "report/demangle.h"

#include <libiberty/demangle.h>

#include <cstdlib>

namespace profiling::report {

namespace {

// A malloc'd result (or nullptr) as a string; empty for nullptr.
std::string take(char* out) {
  if (out == nullptr) return {};
  std::string result(out);
  std::free(out);
  return result;
}

}  // namespace

std::string demangle(const std::string& name) {
  // Only "_Z..." (C++ and Rust legacy) and "_R..." (Rust v0) are mangled;
  // plain C names such as "main" must not go through a demangler, which
  // accepts some of them as types ("i" -> "int").
  if (name.size() < 3 || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R')) return name;
  // Rust first: a legacy name is also a valid Itanium name, which
  // __cxa_demangle would show with its hash and escapes
  // ("hot::Wrapper$LT$T$GT$::spin::h224feca9a6bd6621"). rust_demangle
  // (libiberty/rust-demangle.c) accepts a "_ZN" name only when its last
  // component is the "h" + 16 hex digits hash rustc adds, so C++ names
  // come back nullptr; without DMGL_VERBOSE it drops that hash and v0's
  // crate disambiguators, as perf and rustfilt show them. A ".llvm.N"
  // suffix (LTO) is accepted and left out.
  if (std::string rust = take(rust_demangle(name.c_str(), DMGL_PARAMS | DMGL_ANSI)); !rust.empty()) return rust;
  if (name[1] != 'Z') return name;
  // C++ through the same libiberty, its return types dropped
  // (DMGL_RET_DROP): a function template's mangled name carries its return
  // type, which __cxa_demangle prints first ("void Foo<int>::bar<int>(int)"),
  // splitting the name column on a word no reader looks for; perf, pprof
  // and gdb's "info symbol" name it "Foo<int>::bar<int>(int)" (issue 35).
  std::string cxx = take(cplus_demangle(name.c_str(), DMGL_PARAMS | DMGL_ANSI | DMGL_RET_DROP));
  return cxx.empty() ? name : cxx;
}

}  // namespace profiling::report
