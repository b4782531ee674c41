// demangle() on names taken from real binaries: Rust's two manglings from
// a program built with Debian's rustc 1.63 (`rustc -O` for legacy,
// `RUSTC_BOOTSTRAP=1 rustc -O -C symbol-mangling-version=v0` for v0; nm
// lists them), C++ from g++, and names that must pass through unchanged.
#include "report/demangle.h"

#include <gtest/gtest.h>

namespace profiling::report {
namespace {

TEST(Demangle, RustLegacyDropsTheHashAndEscapes) {
  EXPECT_EQ(demangle("_ZN3hot5inner8hot_loop17h6dfa5d802e5cb4d2E"), "hot::inner::hot_loop");
  EXPECT_EQ(demangle("_ZN3hot16Wrapper$LT$T$GT$4spin17h224feca9a6bd6621E"), "hot::Wrapper<T>::spin");
  EXPECT_EQ(demangle("_ZN62_$LT$hot..Wrapper$LT$u32$GT$$u20$as$u20$core..fmt..Display$GT$3fmt17hd1a51006413e5b46E"),
            "<hot::Wrapper<u32> as core::fmt::Display>::fmt");
  EXPECT_EQ(demangle("_ZN44_$LT$$RF$T$u20$as$u20$core..fmt..Display$GT$3fmt17h1209657cad8110c9E"),
            "<&T as core::fmt::Display>::fmt");
}

TEST(Demangle, RustV0) {
  EXPECT_EQ(demangle("_RNvNtCs7fattgR6AAa_3hot5inner8hot_loop"), "hot::inner::hot_loop");
  EXPECT_EQ(demangle("_RNvMCs7fattgR6AAa_3hotINtB2_7WrappermE4spinB2_"), "<hot::Wrapper<u32>>::spin");
  EXPECT_EQ(demangle("_RNvXs_Cs7fattgR6AAa_3hotINtB4_7WrappermENtNtCs6IL9ONYDOZW_4core3fmt7Display3fmt"),
            "<hot::Wrapper<u32> as core::fmt::Display>::fmt");
  // LTO's ".llvm.<n>" suffix is left out.
  EXPECT_EQ(demangle("_RNCINvNtCsdyIG5SqMl5y_3std2rt10lang_startuE0Cs7fattgR6AAa_3hot.llvm.5238533696044326608"),
            "std::rt::lang_start::<()>::{closure#0}");
}

TEST(Demangle, CxxAsBefore) {
  EXPECT_EQ(demangle("_ZN3foo3barEv"), "foo::bar()");
  EXPECT_EQ(demangle("_Z9hot_outerv"), "hot_outer()");
  EXPECT_EQ(demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"), "std::vector<int, std::allocator<int> >::push_back(int const&)");
}

// A function template's name carries its return type; perf prints none
// (issue 35). Names from g++ 12 (nm of explicit instantiations).
TEST(Demangle, CxxWithoutReturnTypes) {
  EXPECT_EQ(demangle("_ZN3FooIiE3bazIiEEvT_"), "Foo<int>::baz<int>(int)");
  EXPECT_EQ(demangle("_Z5twiceIiET_S0_"), "twice<int>(int)");
  EXPECT_EQ(demangle("_ZN3FooIiE3barEv"), "Foo<int>::bar()");
  // A return type inside a parameter (a function pointer) stays.
  EXPECT_EQ(demangle("_Z5applyIiEvPFT_S0_E"), "apply<int>(int (*)(int))");
}

TEST(Demangle, OtherNamesUnchanged) {
  for (const char* name : {"main", "i", "_start", "_R", "_Z", "_ZN3foo", "_RNvC", "__libc_start_main", ""})
    EXPECT_EQ(demangle(name), name) << name;
}

}  // namespace
}  // namespace profiling::report
