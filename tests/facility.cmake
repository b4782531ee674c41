# profil(2) facility: real processes for threads, fork, exec, faults, rates.
profil_add_gtest(facility_test
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/facility/facility_test.cc
  LIBS libprofil Threads::Threads)
# The test programs exec'd from a profiled process.
add_executable(facility_exec_target ${CMAKE_CURRENT_SOURCE_DIR}/facility/exec_target.c)
if(TARGET facility_test)
  add_dependencies(facility_test facility_exec_target)
endif()
