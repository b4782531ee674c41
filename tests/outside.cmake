# Sampling from outside (issue 21): profil run --outside, profil attach, a
# static program, --duration and --every (tests/outside_test.cc), on
# tests/outside_progs/outside_target.c, built dynamic and static.
add_executable(outside_target ${CMAKE_CURRENT_SOURCE_DIR}/outside_progs/outside_target.c)
target_link_libraries(outside_target PRIVATE Threads::Threads)
add_executable(outside_target_static ${CMAKE_CURRENT_SOURCE_DIR}/outside_progs/outside_target.c)
target_link_libraries(outside_target_static PRIVATE Threads::Threads)
target_link_options(outside_target_static PRIVATE -static)
if(TARGET profil_pprof AND TARGET profil_cli)
  profil_add_gtest(outside_test SERIAL
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/outside_test.cc
    LIBS profil_pprof profil_format)
  if(TARGET outside_test)
    add_dependencies(outside_test profil_cli outside_target outside_target_static)
  endif()
endif()
