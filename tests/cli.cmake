# The conventions the profil commands share: usage errors, --version, help.
if(TARGET profil_cli)
  add_test(NAME cli_usage COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli_usage.sh $<TARGET_FILE:profil_cli> ${PROJECT_VERSION})
endif()
find_program(PROFIL_GROFF groff)
if(PROFIL_GROFF)
  add_test(NAME man_pages_render COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/man_pages.sh ${PROJECT_SOURCE_DIR}/docs/man)
endif()
