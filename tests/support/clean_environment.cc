// Linked into every GoogleTest program (profil_add_gtest): the developer's
// profil and debuginfod settings are taken out of the test's environment
// before main, so a PROFIL_SOURCE=inside or a DEBUGINFOD_URLS in a login
// shell's profile (Debian's libdebuginfod-common sets one) cannot change
// what a test sees. The list is CMake's PROFIL_TEST_UNSET, which the
// script tests get as ENVIRONMENT_MODIFICATION (tests/CMakeLists.txt); a
// test that wants one of them sets it itself. XDG_CACHE_HOME is set to a
// directory of the build (PROFIL_TEST_CACHE_HOME): what profil caches
// (uncompressed debug files, src/report/debug_file_cache.h) goes there, not
// into the developer's ~/.cache.
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

// A constructor of priority 101, not a namespace-scope initializer: those
// of the test's own files run in an unspecified order against this one
// ([basic.start.dynamic]), and run_support.h's, which sets PROFIL_SOURCE
// for the tests of the preload (PROFIL_TEST_SOURCE), ran first and was
// undone: every such test sampled from outside (Run.PreloadMapsNoCxxRuntime
// and 23 more failed). Prioritized constructors run before every
// initializer of default priority (GCC's constructor attribute,
// .init_array.00101 before .init_array).
__attribute__((constructor(101))) void clean_environment() {
  std::string_view names = PROFIL_TEST_UNSET;
  while (!names.empty()) {
    const size_t comma = names.find(',');
    const std::string name(names.substr(0, comma));
    ::unsetenv(name.c_str());
    names = comma == std::string_view::npos ? std::string_view{} : names.substr(comma + 1);
  }
  ::setenv("XDG_CACHE_HOME", PROFIL_TEST_CACHE_HOME, 1);
}

}  // namespace
