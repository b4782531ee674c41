# profil report / merge / diff: real ELF objects built here (a PIE, a
# non-PIE, a shared library, stripped copies with and without a debug link,
# a C++ program), symbolized at their real runtime addresses; golden reports.
if(NOT TARGET profil_report)
  return()
endif()

set(REPORT_FIXTURE_DIR ${CMAKE_BINARY_DIR}/tests/report_fixtures)
set(REPORT_FIXTURE_SRC ${CMAKE_CURRENT_SOURCE_DIR}/report_fixtures)

add_library(report_fixture_lib SHARED ${REPORT_FIXTURE_SRC}/lib.c)
set_target_properties(report_fixture_lib PROPERTIES OUTPUT_NAME report_fixture
  LIBRARY_OUTPUT_DIRECTORY ${REPORT_FIXTURE_DIR})
target_compile_options(report_fixture_lib PRIVATE -O1 -g)

add_executable(report_fixture_pie ${REPORT_FIXTURE_SRC}/prog.c)
target_compile_options(report_fixture_pie PRIVATE -O1 -g -fPIE)
target_link_options(report_fixture_pie PRIVATE -pie)

add_executable(report_fixture_nopie ${REPORT_FIXTURE_SRC}/prog.c)
set_target_properties(report_fixture_nopie PROPERTIES POSITION_INDEPENDENT_CODE OFF)
target_compile_options(report_fixture_nopie PRIVATE -O1 -g -fno-pie)
target_link_options(report_fixture_nopie PRIVATE -no-pie)

add_executable(report_fixture_cxx ${REPORT_FIXTURE_SRC}/cxx.cc)
target_compile_options(report_fixture_cxx PRIVATE -O1 -g)

# Inlined code (two levels) for the symbolizer's inline frames.
add_executable(report_fixture_inline ${REPORT_FIXTURE_SRC}/inline.c)
target_compile_options(report_fixture_inline PRIVATE -O2 -g)

# Inlined code in C++ namespaces, built by the project's compiler (g++: the
# definitions at the unit's top level) and by clang++ when there is one
# (scripts/install-deps.sh installs it: the definitions inside the
# namespaces' DIEs).
add_executable(report_fixture_inline_ns ${REPORT_FIXTURE_SRC}/inline_ns.cc)
target_compile_options(report_fixture_inline_ns PRIVATE -O2 -g)
find_program(PROFIL_CLANGXX NAMES clang++ clang++-14)
if(PROFIL_CLANGXX)
  add_custom_command(OUTPUT ${REPORT_FIXTURE_DIR}/report_fixture_inline_ns_clang
    COMMAND ${CMAKE_COMMAND} -E make_directory ${REPORT_FIXTURE_DIR}
    COMMAND ${PROFIL_CLANGXX} -O2 -g -o ${REPORT_FIXTURE_DIR}/report_fixture_inline_ns_clang
            ${REPORT_FIXTURE_SRC}/inline_ns.cc
    DEPENDS ${REPORT_FIXTURE_SRC}/inline_ns.cc)
  add_custom_target(report_fixture_inline_ns_clang DEPENDS ${REPORT_FIXTURE_DIR}/report_fixture_inline_ns_clang)
endif()

foreach(fixture report_fixture_pie report_fixture_nopie)
  target_link_libraries(${fixture} PRIVATE report_fixture_lib)
endforeach()
foreach(fixture report_fixture_pie report_fixture_nopie report_fixture_cxx report_fixture_inline report_fixture_inline_ns)
  set_target_properties(${fixture} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${REPORT_FIXTURE_DIR})
endforeach()

# The fixtures' code must be the same in every build of the tree (the golden
# reports print instructions and address ranges): their options replace the
# directory's (sanitizers, coverage) rather than add to them. Functions start
# on 16-byte boundaries, so a 4-byte gmon bin never holds the end of one
# function and the start of the next (gprof would split it).
foreach(fixture report_fixture_lib report_fixture_pie report_fixture_nopie report_fixture_cxx report_fixture_inline
                report_fixture_inline_ns)
  get_target_property(fixture_options ${fixture} COMPILE_OPTIONS)
  list(FILTER fixture_options INCLUDE REGEX "^-(O|g|f(no-)?pie|fPIE|W)")
  set_property(TARGET ${fixture} PROPERTY COMPILE_OPTIONS ${fixture_options} -falign-functions=16)
  get_target_property(fixture_link_options ${fixture} LINK_OPTIONS)
  list(FILTER fixture_link_options INCLUDE REGEX "^-(no-)?pie$")
  set_property(TARGET ${fixture} PROPERTY LINK_OPTIONS ${fixture_link_options})
  # The golden reports print the fixtures' absolute source paths. A compiler
  # cache whose base_dir holds the tree (ccache's base_dir = /work here)
  # records relative paths, and hands out an object compiled in another
  # worktree (its DW_AT_comp_dir), so the fixtures bypass the launcher.
  set_target_properties(${fixture} PROPERTIES C_COMPILER_LAUNCHER "" CXX_COMPILER_LAUNCHER "")
endforeach()

# Stripped copies of the PIE: one whose symbols and DWARF are in a separate
# file named by .gnu_debuglink (objcopy(1) "--only-keep-debug"), one with
# nothing left at all, one with MiniDebugInfo (.gnu_debugdata).
add_custom_command(TARGET report_fixture_pie POST_BUILD
  COMMAND ${CMAKE_OBJCOPY} --only-keep-debug report_fixture_pie report_fixture_pie_linked.debug
  COMMAND ${CMAKE_OBJCOPY} --strip-all --add-gnu-debuglink=report_fixture_pie_linked.debug
          report_fixture_pie report_fixture_pie_linked
  COMMAND ${CMAKE_OBJCOPY} --strip-all report_fixture_pie report_fixture_pie_stripped
  COMMAND bash ${REPORT_FIXTURE_SRC}/minidebuginfo.sh report_fixture_pie report_fixture_pie_mini
  WORKING_DIRECTORY ${REPORT_FIXTURE_DIR}
  BYPRODUCTS ${REPORT_FIXTURE_DIR}/report_fixture_pie_linked ${REPORT_FIXTURE_DIR}/report_fixture_pie_stripped
             ${REPORT_FIXTURE_DIR}/report_fixture_pie_linked.debug ${REPORT_FIXTURE_DIR}/report_fixture_pie_mini)

# The inline fixture stripped, its debug file apart with its DWARF
# compressed as Debian's -dbg and -dbgsym packages ship it (zlib, the gABI's
# SHF_COMPRESSED), as binutils wrote it before (zlib-gnu, .zdebug_*) and
# not compressed: the uncompressed copies of debug_file_cache.h.
add_custom_command(TARGET report_fixture_inline POST_BUILD
  COMMAND ${CMAKE_OBJCOPY} --only-keep-debug --compress-debug-sections=zlib report_fixture_inline
          report_fixture_inline_zlib.debug
  COMMAND ${CMAKE_OBJCOPY} --only-keep-debug --compress-debug-sections=zlib-gnu report_fixture_inline
          report_fixture_inline_zlib_gnu.debug
  COMMAND ${CMAKE_OBJCOPY} --only-keep-debug report_fixture_inline report_fixture_inline_plain.debug
  COMMAND ${CMAKE_OBJCOPY} --strip-all report_fixture_inline report_fixture_inline_stripped
  WORKING_DIRECTORY ${REPORT_FIXTURE_DIR}
  BYPRODUCTS ${REPORT_FIXTURE_DIR}/report_fixture_inline_zlib.debug ${REPORT_FIXTURE_DIR}/report_fixture_inline_plain.debug
             ${REPORT_FIXTURE_DIR}/report_fixture_inline_zlib_gnu.debug
             ${REPORT_FIXTURE_DIR}/report_fixture_inline_stripped)

add_custom_target(report_fixtures DEPENDS report_fixture_pie report_fixture_nopie report_fixture_cxx report_fixture_lib
  report_fixture_inline report_fixture_inline_ns)
if(TARGET report_fixture_inline_ns_clang)
  add_dependencies(report_fixtures report_fixture_inline_ns_clang)
endif()

profil_add_gtest(report_symbolizer_test
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/report_symbolizer_test.cc
  LIBS profil_report)
if(TARGET report_symbolizer_test)
  add_dependencies(report_symbolizer_test report_fixtures)
  target_compile_definitions(report_symbolizer_test PRIVATE
    REPORT_FIXTURE_DIR="${REPORT_FIXTURE_DIR}" REPORT_FIXTURE_SRC="${REPORT_FIXTURE_SRC}"
    REPORT_FIXTURE_CLANG=$<BOOL:${PROFIL_CLANGXX}>)
endif()

# src/report/debug_file_cache_test.cc (made with the other tests beside
# their sources) reads the inline fixture's copies above.
if(TARGET report_debug_file_cache_test)
  add_dependencies(report_debug_file_cache_test report_fixtures)
  target_compile_definitions(report_debug_file_cache_test PRIVATE REPORT_FIXTURE_DIR="${REPORT_FIXTURE_DIR}")
endif()

# Stripped code split per function and the hint naming its debug package.
profil_add_gtest(report_missing_symbols_test
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/report_missing_symbols_test.cc
  LIBS profil_report)
if(TARGET report_missing_symbols_test)
  add_dependencies(report_missing_symbols_test report_fixtures)
  target_compile_definitions(report_missing_symbols_test PRIVATE REPORT_FIXTURE_DIR="${REPORT_FIXTURE_DIR}")
endif()

# Golden reports: exact profiles of the fixtures (report_make_profile), the
# transcript of profil's answers compared with report_golden/<case>.expected.
add_executable(report_make_profile ${CMAKE_CURRENT_SOURCE_DIR}/report_make_profile.cc)
target_link_libraries(report_make_profile PRIVATE profil_report)
add_dependencies(report_make_profile report_fixtures)
file(GLOB REPORT_GOLDEN_CASES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/report_golden/*.case)
foreach(case_file ${REPORT_GOLDEN_CASES})
  get_filename_component(case_name ${case_file} NAME_WE)
  add_test(NAME report_golden_${case_name}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report_golden.sh $<TARGET_FILE:profil_cli>
            $<TARGET_FILE:report_make_profile> ${REPORT_FIXTURE_DIR} ${PROJECT_SOURCE_DIR} ${case_file})
endforeach()

# The HTML page and its flame graph in headless Chromium (skipped when
# chromium is missing).
# The flame graph's test checks the hover's intervals against wilson_interval.
profil_add_gtest(report_html_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/report_html_test.cc LIBS profil_report)
if(TARGET report_html_test)
  add_dependencies(report_html_test report_make_profile profil_cli)
endif()

# The page's sandwich view (issue 35) against --callers/--callees: its
# script, run by node on the page's data, finds each function's callers and
# callees with the samples the JSON of call_relations gives.
add_test(NAME report_html_sandwich_matches_callers
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/report_sandwich.sh $<TARGET_FILE:profil_cli>
          $<TARGET_FILE:report_make_profile> ${REPORT_FIXTURE_DIR}/report_fixture_pie)
set_tests_properties(report_html_sandwich_matches_callers PROPERTIES SKIP_RETURN_CODE 77)

# profil diff on two real profiles: the function made slower comes first.
add_test(NAME report_diff_names_the_slower_function
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report_diff_real.sh $<TARGET_FILE:profil_cli>
          ${REPORT_FIXTURE_DIR}/report_fixture_pie)

# go tool pprof and profil report agree on a file of profil run (issue 35):
# inline frames of the program and of libm (libc6-dbg), no symbol versions.
add_executable(report_fixture_sincos ${REPORT_FIXTURE_SRC}/sincos.c)
target_compile_options(report_fixture_sincos PRIVATE -O2 -g)
target_link_libraries(report_fixture_sincos PRIVATE m)
add_test(NAME report_pprof_agrees_with_go_tool_pprof
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report_pprof_agrees.sh $<TARGET_FILE:profil_cli>
          $<TARGET_FILE:report_fixture_sincos>)
set_tests_properties(report_pprof_agrees_with_go_tool_pprof PROPERTIES SKIP_RETURN_CODE 77)

# Real profiles read without their program (gone, or rebuilt): the names the
# pprof file carries are shown.
add_test(NAME report_names_from_the_profile_without_the_program
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report_missing_program.sh $<TARGET_FILE:profil_cli> ${REPORT_FIXTURE_DIR})

# Debug files from a local debuginfod server (DEBUGINFOD_URLS): a stripped
# program is named only with the server.
add_test(NAME report_debuginfod_names_a_stripped_program
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report_debuginfod.sh $<TARGET_FILE:profil_cli> ${REPORT_FIXTURE_DIR})

# Hostile inputs (issue 11): bounded reads, FIFOs, long names, huge counts.
profil_add_gtest(report_hostile_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/report_hostile_test.cc LIBS profil_report)
if(TARGET report_hostile_test)
  add_dependencies(report_hostile_test profil_cli report_make_profile)
endif()

# Programs the tests check the output with, from npm (web/consumers): npm ci
# at build time into the build tree, as the flame graph's library is.
set(PROFIL_CONSUMERS_DIR ${CMAKE_BINARY_DIR}/web-consumers)
add_custom_command(
  OUTPUT ${PROFIL_CONSUMERS_DIR}/node_modules/speedscope/dist/release/index.html
  COMMAND bash ${PROJECT_SOURCE_DIR}/web/npm_ci.sh ${PROJECT_SOURCE_DIR}/web/consumers ${PROFIL_CONSUMERS_DIR}
          "speedscope, which the tests read folded output with"
  DEPENDS ${PROJECT_SOURCE_DIR}/web/npm_ci.sh ${PROJECT_SOURCE_DIR}/web/consumers/package.json
          ${PROJECT_SOURCE_DIR}/web/consumers/package-lock.json
  COMMENT "npm ci: speedscope for the tests" VERBATIM)
add_custom_target(web_consumers ALL DEPENDS ${PROFIL_CONSUMERS_DIR}/node_modules/speedscope/dist/release/index.html)

# speedscope reads the folded output: its totals and self samples are
# profil's.
add_test(NAME report_speedscope_reads_folded
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report_speedscope.sh $<TARGET_FILE:profil_cli>
          $<TARGET_FILE:report_make_profile> ${REPORT_FIXTURE_DIR}/report_fixture_pie
          ${PROFIL_CONSUMERS_DIR}/node_modules/speedscope/dist/release)

# The timeline (issue 33): phase_a before phase_b in the speedscope file,
# over --every snapshots and in the HTML page's flame chart; speedscope
# imports the file.
add_executable(run_phases ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_phases.c)
add_test(NAME report_timeline
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report_timeline.sh $<TARGET_FILE:profil_cli> $<TARGET_FILE:run_phases>
          ${PROFIL_CONSUMERS_DIR}/node_modules/speedscope/dist/release)
set_tests_properties(report_timeline PROPERTIES SKIP_RETURN_CODE 77)
