# profil run: unmodified programs profiled through LD_PRELOAD, end to end
# (tests/run_test.cc). The profraw reader's unit tests
# (src/format/profraw_test.cc) are registered by src/format/CMakeLists.txt
# as format_profraw_test.

# The workload: an ordinary PIE program with a shared library of its own,
# built normally (no -pg, not linked with libprofil).
add_library(run_lib SHARED ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_lib.c)
set_target_properties(run_lib PROPERTIES OUTPUT_NAME runtestlib)
add_executable(run_workload ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_workload.c)
target_link_libraries(run_workload PRIVATE run_lib Threads::Threads)
target_link_options(run_workload PRIVATE -pie)
add_library(run_plugin MODULE ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_plugin.c)
set_target_properties(run_plugin PROPERTIES OUTPUT_NAME runtestplugin PREFIX lib
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
target_link_libraries(run_workload PRIVATE ${CMAKE_DL_LIBS})
add_executable(run_unsampled ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_unsampled.c)
target_link_libraries(run_unsampled PRIVATE Threads::Threads)
add_executable(run_exec_target ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_exec_target.c)
target_link_options(run_exec_target PRIVATE -pie)
# What the program receives (argv, byte for byte) and process trees for what
# a run writes and says; the argv printer also built static, which cannot
# be preloaded.
add_executable(run_argv ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_argv.c)
add_executable(run_argv_static ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_argv.c)
target_link_options(run_argv_static PRIVATE -static)
add_executable(run_tree ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_tree.c)
add_executable(run_daemon ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_daemon.c)

if(TARGET profil_pprof AND TARGET profil_cli)
  profil_add_gtest(run_test SERIAL
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/run_test.cc
    LIBS profil_pprof profil_format)
  if(TARGET run_test)
    add_dependencies(run_test profil_cli libprofil run_workload run_exec_target run_plugin run_unsampled run_argv
                     run_argv_static run_tree)
  endif()
endif()

# profil run --no-wait from outside and inside (tests/run_no_wait_test.cc).
if(TARGET profil_pprof AND TARGET profil_cli)
  profil_add_gtest(run_no_wait_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/run_no_wait_test.cc)
  if(TARGET run_no_wait_test)
    add_dependencies(run_no_wait_test profil_cli libprofil run_daemon)
  endif()
  # --every from inside; its target program is the outside tests' own.
  profil_add_gtest(run_snapshots_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/run_snapshots_test.cc
    LIBS profil_pprof profil_format)
  if(TARGET run_snapshots_test)
    add_dependencies(run_snapshots_test profil_cli libprofil outside_target)
  endif()
endif()

# The same end-to-end shares on the other clock: CPU-time timers, where the
# kernel tick limits the signals and each is weighted (the test derives its
# tolerance from the clock the tool reports).
if(TARGET run_test)
  add_test(NAME run_shares_on_cpu_clock
    COMMAND run_test --gtest_filter=Run.ProgramLibraryThreadAndForkedChildEachGetTheirShare:Run.CrashKeepsTheWorkDoneAndExits139:Run.Unsampled*:Run.Closefrom*:Closefrom/*)
  set_tests_properties(run_shares_on_cpu_clock PROPERTIES
    RUN_SERIAL TRUE
    ENVIRONMENT "PROFIL_SOURCE=inside;PROFIL_CLOCK=cpu;PROFIL_BUILD_DIR=${CMAKE_BINARY_DIR};PROFIL_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endif()

# A program's own signals (SIGPROF, SIGSEGV, ITIMER_PROF) under profil run.
add_executable(run_signals ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_signals.c)
if(TARGET profil_pprof AND TARGET profil_cli)
  profil_add_gtest(run_signals_test
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/run_signals_test.cc
    LIBS profil_pprof profil_format)
  if(TARGET run_signals_test)
    add_dependencies(run_signals_test profil_cli libprofil run_signals)
  endif()
endif()

# The tests of run_test, run_signals_test, run_status_test and
# run_invisible_test are those of the inside source (the preload: its
# clocks, dumps, ledger, checkpoints), so they ask for it
# (PROFIL_SOURCE=inside); run_invisible_test's "outside" configuration
# asks for the other with --outside, and tests/outside.cmake tests that
# source and the default.

# Issue 20: the program must not feel profil (signals, jumps, descriptors,
# children, alternate stacks, seccomp): tests/run_progs/run_invisible.c,
# each mode plainly and under profil run on every clock.
add_executable(run_invisible ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_invisible.c)
target_link_libraries(run_invisible PRIVATE Threads::Threads)
if(TARGET profil_pprof AND TARGET profil_cli)
  profil_add_gtest(run_invisible_test SERIAL
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/run_invisible_test.cc
    LIBS profil_pprof profil_format)
  if(TARGET run_invisible_test)
    add_dependencies(run_invisible_test profil_cli libprofil run_invisible)
  endif()
endif()

# How the processes of a run end (issue 20): the status is the program's
# (children killed by their parent, strace -f), no wait forever for a
# process stopped under a trace, messages that say what happened, errnos
# by name. tests/run_progs/run_status.c, each mode plainly first.
add_executable(run_status ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_status.c)
add_executable(run_without_perf ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_without_perf.c)
if(TARGET profil_cli)
  profil_add_gtest(run_status_test SERIAL
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/run_status_test.cc)
  if(TARGET run_status_test)
    target_include_directories(run_status_test PRIVATE ${PROJECT_SOURCE_DIR}/tools/profil)
    add_dependencies(run_status_test profil_cli libprofil run_status run_without_perf run_invisible)
  endif()
endif()

# The ladder of sources and the lines of refused writes (issue 32): as
# nobody with ulimit -l 0 and kernel.perf_event_mlock_kb set and restored,
# on small tmpfs disks; root only (each test skips, saying why, without).
if(TARGET profil_cli)
  profil_add_gtest(run_ladder_test SERIAL
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/run_ladder_test.cc)
  if(TARGET run_ladder_test)
    add_dependencies(run_ladder_test profil_cli libprofil run_invisible run_threads)
  endif()
endif()

# The tests of the preload's own behaviour ask for the inside source in
# every profil run they start (run_support.h, PROFIL_TEST_SOURCE; an
# explicit --outside still wins).
foreach(inside_test run_test run_signals_test run_invisible_test run_status_test)
  if(TARGET ${inside_test})
    target_compile_definitions(${inside_test} PRIVATE PROFIL_TEST_SOURCE="inside")
  endif()
endforeach()

# JIT code named from its perf-PID.map (issue 23, report/jit_map.h): node
# --perf-basic-prof, sampled from inside and from outside.
if(TARGET profil_cli)
  foreach(source inside outside)
    add_test(NAME run_jit_node_${source}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_jit_node.sh $<TARGET_FILE:profil_cli> --${source})
  endforeach()
endif()

# Threads and processes (issue 22): two named threads, two processes, each
# source (tests/run_threads_test.cc chooses --inside or --outside itself).
add_executable(run_threads ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_threads.c)
target_link_libraries(run_threads PRIVATE Threads::Threads)
if(TARGET profil_pprof AND TARGET profil_cli)
  profil_add_gtest(run_threads_test SERIAL SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/run_threads_test.cc
    LIBS profil_pprof profil_format)
  if(TARGET run_threads_test)
    add_dependencies(run_threads_test profil_cli libprofil run_threads)
  endif()
  # Profil's own samples counted apart (issue 22): the inside perf clock,
  # a dump kept and read, then converted (tests/run_own_samples_test.cc).
  profil_add_gtest(run_own_samples_test SERIAL SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/run_own_samples_test.cc
    LIBS profil_pprof profil_format)
  if(TARGET run_own_samples_test)
    add_dependencies(run_own_samples_test profil_cli libprofil run_threads)
  endif()
  # Honest intervals (issue 22): the cpu clock above the kernel tick, its
  # signals beside its weighted counts, the report's intervals from them.
  profil_add_gtest(run_observations_test SERIAL SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/run_observations_test.cc
    LIBS profil_pprof profil_format)
  if(TARGET run_observations_test)
    add_dependencies(run_observations_test profil_cli libprofil run_threads)
  endif()
endif()

# Kernel frames from outside (issue 33): tests/run_kernel_frames.sh.
add_executable(run_syscalls ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_syscalls.c)
if(TARGET profil_cli)
  add_test(NAME run_kernel_frames
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_kernel_frames.sh $<TARGET_FILE:profil_cli> $<TARGET_FILE:run_syscalls>)
  set_tests_properties(run_kernel_frames PROPERTIES SKIP_RETURN_CODE 77)
endif()
# Events from outside (issue 33): page faults and context switches where
# the program makes them (tests/run_events.sh).
add_executable(run_events ${CMAKE_CURRENT_SOURCE_DIR}/run_progs/run_events.c)
if(TARGET profil_cli)
  add_test(NAME run_events
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_events.sh $<TARGET_FILE:profil_cli> $<TARGET_FILE:run_events>)
  set_tests_properties(run_events PROPERTIES SKIP_RETURN_CODE 77)
  add_test(NAME run_attach_all
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_attach_all.sh $<TARGET_FILE:profil_cli> $<TARGET_FILE:run_syscalls>)
  set_tests_properties(run_attach_all PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()
