# The real-program corpus (issue 9, item 7): real Debian programs under
# `profil run`, each compared with its run without profil (same status,
# same output, every process that used CPU profiled, the CPU total
# accounted). One ctest per case, label `corpus`; the programs come from
# scripts/install-deps.sh. tests/corpus/table.sh prints the corpus table.
add_executable(corpus_trace ${CMAKE_CURRENT_SOURCE_DIR}/corpus/corpus_trace.c)
if(NOT TARGET profil_cli OR NOT TARGET libprofil)
  return()
endif()
add_dependencies(corpus_trace profil_cli libprofil)
file(GLOB CORPUS_CASES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/corpus/cases/*.sh)
foreach(case ${CORPUS_CASES})
  get_filename_component(case_name ${case} NAME_WE)
  add_test(NAME corpus_${case_name} COMMAND bash ${case})
  set_tests_properties(corpus_${case_name} PROPERTIES
    LABELS corpus
    TIMEOUT 300
    SKIP_RETURN_CODE 77
    ENVIRONMENT "PROFIL=$<TARGET_FILE:profil_cli>;CORPUS_TRACE=$<TARGET_FILE:corpus_trace>;CORPUS_ROWS=${CMAKE_BINARY_DIR}/tests/corpus/rows")
endforeach()
