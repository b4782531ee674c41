#include "report/demangle.h"

#include <cxxabi.h>
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
  int status = 0;
  std::string cxx = take(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status));
  return status == 0 && !cxx.empty() ? cxx : name;
}

}  // namespace profiling::report
