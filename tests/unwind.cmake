# Whole stacks captured by the sampling handler (src/unwind/, issue 13): a
# known call tree built without frame pointers, sampled for real.
set(PROFIL_UNWIND_PROG_FLAGS -O2 -fomit-frame-pointer)
add_library(unwind_plugin MODULE ${CMAKE_CURRENT_SOURCE_DIR}/unwind_progs/plugin.c)
target_compile_options(unwind_plugin PRIVATE ${PROFIL_UNWIND_PROG_FLAGS})
set_target_properties(unwind_plugin PROPERTIES OUTPUT_NAME unwindtestplugin PREFIX lib
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/unwind_progs/callgraph.c
  PROPERTIES COMPILE_OPTIONS "${PROFIL_UNWIND_PROG_FLAGS}")
profil_add_gtest(unwind_capture_test
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unwind_capture_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unwind_progs/callgraph.c
  LIBS profil_testing)
if(TARGET unwind_capture_test)
  # The call tree's functions in the dynamic symbol table, for dladdr.
  set_target_properties(unwind_capture_test PROPERTIES ENABLE_EXPORTS ON)
  add_dependencies(unwind_capture_test unwind_plugin)
endif()

# The same tree as an ordinary program under the preload, PROFIL_STACKS=1.
add_executable(unwind_workload ${CMAKE_CURRENT_SOURCE_DIR}/unwind_progs/workload.c
  ${CMAKE_CURRENT_SOURCE_DIR}/unwind_progs/callgraph.c)
target_compile_options(unwind_workload PRIVATE ${PROFIL_UNWIND_PROG_FLAGS})
add_test(NAME unwind_preload_stacks
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/unwind_preload.sh $<TARGET_FILE:libprofil> $<TARGET_FILE:unwind_workload>)

# profil run's files carry the stacks, and --no-stacks leaves them out.
add_test(NAME run_stacks
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_stacks.sh $<TARGET_FILE:profil_cli> $<TARGET_FILE:unwind_workload>)

# The wall clock's blocked threads carry their stacks, unwound from /proc's
# pc and sp (issue 22), in code without frame pointers: by the inside's
# watcher thread, and by profil's poller from outside.
add_executable(run_wall_blocked ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_wall_blocked.c)
target_compile_options(run_wall_blocked PRIVATE ${PROFIL_UNWIND_PROG_FLAGS})
target_link_libraries(run_wall_blocked PRIVATE Threads::Threads)
foreach(source inside outside)
  add_test(NAME run_wall_stacks_${source}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_wall_stacks.sh $<TARGET_FILE:profil_cli> $<TARGET_FILE:run_wall_blocked>
            --${source})
endforeach()
