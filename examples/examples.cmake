# The program `make demo` runs under `profil run` (examples/demo.sh): C++,
# a worker thread and a shared library of its own, built normally.
add_library(run_demo_lib SHARED ${CMAKE_CURRENT_SOURCE_DIR}/run_demo_lib.cc)
set_target_properties(run_demo_lib PROPERTIES OUTPUT_NAME rundemo)
add_executable(run_demo ${CMAKE_CURRENT_SOURCE_DIR}/run_demo.cc)
target_link_libraries(run_demo PRIVATE run_demo_lib Threads::Threads m)
