# sprofil() with many regions: the setup must stay O(n log n).
add_executable(sprofil_bench ${CMAKE_CURRENT_SOURCE_DIR}/sprofil_bench.c)
target_link_libraries(sprofil_bench PRIVATE libprofil)
target_compile_options(sprofil_bench PRIVATE -O2)
