# The sampler benchmark program: deliberately not linked with libprofil, so
# the same binary measures glibc's profil() plainly and libprofil's preloaded.
add_executable(sampler_bench ${CMAKE_CURRENT_SOURCE_DIR}/sampler_bench.c)
target_link_libraries(sampler_bench PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
target_compile_options(sampler_bench PRIVATE -O2)
