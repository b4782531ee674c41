# The CPU-bound program whose slowdown under `profil run` bench/run_overhead.sh measures.
add_executable(run_overhead_work ${CMAKE_CURRENT_SOURCE_DIR}/run_overhead_work.c)
target_compile_options(run_overhead_work PRIVATE -O2)
