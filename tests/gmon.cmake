# The gmon runtime (src/runtime/gmon_*.cc, mcount_x86_64.S, openbsd_profil.cc):
# real `gcc -pg` programs linked with libprofil, run in a temporary
# directory, their files read by binutils gprof (tests/gmon_test.cc).
#
#   gmon_prog_pie / _nopie / _fentry  -pg, linked with libprofil (PIE,
#                                     fixed-address, -mfentry)
#   gmon_prog_glibc                   -pg with glibc's own gmon: the
#                                     comparison the test prints
#   gmon_openbsd_pie                  profil_openbsd() in a -pg PIE
#   gmon_prog_static / _staticpie     -static / -static-pie, linked with
#                                     libprofil.a (issue 9: these died of
#                                     SIGSEGV before main)
#   gmon_prog_glibc_static / _glibc_staticpie   the same with glibc's gmon
#   gmon_static_api / _staticpie      profil(), sprofil() and pcsample() in
#                                     a static program (not -pg)
set(GMON_PROGS)
foreach(variant pie nopie fentry glibc)
  set(target gmon_prog_${variant})
  add_executable(${target} ${CMAKE_CURRENT_SOURCE_DIR}/gmon_progs/gmon_prog.c)
  target_compile_options(${target} PRIVATE -pg -O1 -fno-omit-frame-pointer -fno-inline)
  target_link_options(${target} PRIVATE -pg)
  if(NOT variant STREQUAL glibc)
    target_link_libraries(${target} PRIVATE libprofil)
  endif()
  target_link_libraries(${target} PRIVATE Threads::Threads)
  if(variant STREQUAL nopie)
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
    target_compile_options(${target} PRIVATE -fno-pie)
    target_link_options(${target} PRIVATE -no-pie)
  else()
    target_compile_options(${target} PRIVATE -fPIE)
    target_link_options(${target} PRIVATE -pie)
  endif()
  if(variant STREQUAL fentry)  # __fentry__ before the prologue
    target_compile_options(${target} PRIVATE -mfentry)
  endif()
  list(APPEND GMON_PROGS ${target})
endforeach()

add_executable(gmon_openbsd_pie ${CMAKE_CURRENT_SOURCE_DIR}/gmon_progs/gmon_openbsd.c)
target_compile_options(gmon_openbsd_pie PRIVATE -pg -O1 -fno-inline -fPIE)
target_link_options(gmon_openbsd_pie PRIVATE -pg -pie)
target_link_libraries(gmon_openbsd_pie PRIVATE libprofil)
list(APPEND GMON_PROGS gmon_openbsd_pie)

# Static programs: libc.a and libstdc++.a (libc6-dev, libstdc++-12-dev; both
# come with build-essential). libprofil.a is C++, so CMake links them with
# the C++ driver, which brings libstdc++.
foreach(variant static staticpie glibc_static glibc_staticpie)
  set(target gmon_prog_${variant})
  add_executable(${target} ${CMAKE_CURRENT_SOURCE_DIR}/gmon_progs/gmon_prog.c)
  target_compile_options(${target} PRIVATE -pg -O1 -fno-omit-frame-pointer -fno-inline)
  if(variant MATCHES "staticpie$")
    target_link_options(${target} PRIVATE -pg -static-pie)
  else()
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
    target_compile_options(${target} PRIVATE -fno-pie)
    target_link_options(${target} PRIVATE -pg -static)
  endif()
  if(NOT variant MATCHES "^glibc")
    target_link_libraries(${target} PRIVATE libprofil_static)
  endif()
  target_link_libraries(${target} PRIVATE Threads::Threads)
  list(APPEND GMON_PROGS ${target})
endforeach()
foreach(variant static staticpie)
  set(target gmon_static_api_${variant})
  add_executable(${target} ${CMAKE_CURRENT_SOURCE_DIR}/gmon_progs/static_api.c)
  target_compile_options(${target} PRIVATE -O1)
  if(variant STREQUAL staticpie)
    target_link_options(${target} PRIVATE -static-pie)
  else()
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
    target_link_options(${target} PRIVATE -static)
  endif()
  target_link_libraries(${target} PRIVATE libprofil_static Threads::Threads)
  list(APPEND GMON_PROGS ${target})
endforeach()

profil_add_gtest(gmon_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/gmon_test.cc LIBS profil_format)
if(TARGET gmon_test)
  add_dependencies(gmon_test ${GMON_PROGS})
endif()

# Secure execution: a set-user-ID copy of gmon_prog_pie run as 'nobody'.
profil_add_gtest(secure_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/secure_test.cc)
if(TARGET secure_test)
  add_dependencies(secure_test gmon_prog_pie)
endif()

# gprof's call graph without -pg (issue 22): call_split built normally for
# profil run --gmon, and with -pg and glibc's gmon for the comparison
# (tests/gmon_call_graph_test.cc). Sibling calls kept: a tail call would
# leave the callers off the stack.
add_executable(call_split ${CMAKE_CURRENT_SOURCE_DIR}/gmon_progs/call_split.c)
target_compile_options(call_split PRIVATE -O1 -fno-optimize-sibling-calls)
add_executable(call_split_pg ${CMAKE_CURRENT_SOURCE_DIR}/gmon_progs/call_split.c)
target_compile_options(call_split_pg PRIVATE -O1 -fno-optimize-sibling-calls -pg)
target_link_options(call_split_pg PRIVATE -pg)
if(TARGET profil_cli)
  profil_add_gtest(gmon_call_graph_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/gmon_call_graph_test.cc)
  if(TARGET gmon_call_graph_test)
    add_dependencies(gmon_call_graph_test profil_cli libprofil call_split call_split_pg report_make_profile
                     report_fixtures)
  endif()
endif()
