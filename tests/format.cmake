# Format files read by their real consumers: gmon.out by GNU gprof
# (binutils), pprof by protoc's decoder. The unit tests live in src/format/.
find_program(PROFIL_GPROF gprof)
pkg_check_modules(PROFIL_FORMAT_TEST_LIBELF IMPORTED_TARGET libelf)

# The program whose symbols gprof matches the histograms against, linked at
# a fixed address and as a PIE (gprof sees link-time addresses either way).
add_executable(format_gprof_target_nopie ${CMAKE_CURRENT_SOURCE_DIR}/format_gprof_target.c)
set_target_properties(format_gprof_target_nopie PROPERTIES POSITION_INDEPENDENT_CODE OFF)
target_compile_options(format_gprof_target_nopie PRIVATE -O0 -fno-pie)
target_link_options(format_gprof_target_nopie PRIVATE -no-pie)
add_executable(format_gprof_target_pie ${CMAKE_CURRENT_SOURCE_DIR}/format_gprof_target.c)
target_compile_options(format_gprof_target_pie PRIVATE -O0 -fPIE)
target_link_options(format_gprof_target_pie PRIVATE -pie)

if(PROFIL_GPROF AND PROFIL_FORMAT_TEST_LIBELF_FOUND)
  profil_add_gtest(format_gprof_test
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/format_gprof_test.cc
    LIBS profil_format PkgConfig::PROFIL_FORMAT_TEST_LIBELF)
  if(TARGET format_gprof_test)
    target_compile_definitions(format_gprof_test PRIVATE
      PROFIL_GPROF="${PROFIL_GPROF}"
      PROFIL_TARGET_NOPIE="$<TARGET_FILE:format_gprof_target_nopie>"
      PROFIL_TARGET_PIE="$<TARGET_FILE:format_gprof_target_pie>")
    add_dependencies(format_gprof_test format_gprof_target_nopie format_gprof_target_pie)
  endif()
else()
  message(WARNING "gprof or libelf not found: format_gprof_test is not built")
endif()

# pprof: protoc decodes what encode_pprof writes, against pprof's own .proto.
add_executable(format_make_pprof ${CMAKE_CURRENT_SOURCE_DIR}/format_make_pprof.cc)
target_link_libraries(format_make_pprof PRIVATE profil_pprof)
add_test(NAME format_pprof_protoc_decodes
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/format_pprof_protoc.sh
    $<TARGET_FILE:format_make_pprof> ${Protobuf_PROTOC_EXECUTABLE} ${PROFIL_PPROF_PROTO})
