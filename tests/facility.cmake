# profil(2) facility: real processes for threads, fork, exec, faults, rates.
profil_add_gtest(facility_test SERIAL
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/facility/facility_test.cc
  LIBS libprofil Threads::Threads)
# The test programs exec'd from a profiled process.
add_executable(facility_exec_target ${CMAKE_CURRENT_SOURCE_DIR}/facility/exec_target.c)
if(TARGET facility_test)
  add_dependencies(facility_test facility_exec_target)
endif()

# A program not linked with libprofil gets it when preloaded: profil()
# resolves to ours (the report says impl=libprofil), and its counts measure
# CPU time at PROFIL_HZ (within 10 %).
if(PROFIL_BUILD_BENCH)  # the program is bench/sampler_bench.c
add_test(NAME facility_preload_replaces_glibc
  COMMAND bash -c "out=$(LD_PRELOAD=$<TARGET_FILE:libprofil> PROFIL_HZ=1000 $<TARGET_FILE:sampler_bench> 0.5 1) && echo \"$out\" && echo \"$out\" | grep -q 'impl=libprofil' && echo \"$out\" | tr ' ' '\\n' | awk -F= '$1==\"accounted_error_pct\" { exit ($2 < -10 || $2 > 10) }'")
set_tests_properties(facility_preload_replaces_glibc PROPERTIES RUN_SERIAL TRUE)
endif()
