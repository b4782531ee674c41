# The conventions the profil commands share: usage errors, --version, help.
add_test(NAME cli_usage COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli_usage.sh $<TARGET_FILE:profil_cli> ${PROJECT_VERSION})
# What the preload's environment passes to the program: the inside source.
set_tests_properties(cli_usage PROPERTIES ENVIRONMENT "PROFIL_SOURCE=inside")
find_program(PROFIL_GROFF groff)
find_program(PROFIL_MANDOC mandoc)
if(PROFIL_GROFF AND PROFIL_MANDOC)
  add_test(NAME man_pages COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/man_pages.sh ${PROJECT_SOURCE_DIR}/docs/man
                                     $<TARGET_FILE:profil_cli> ${PROJECT_VERSION})
else()
  message(STATUS "man page test left out: it needs groff and mandoc (scripts/install-deps.sh)")
endif()
# profil completion bash (issue 35), in a real bash through tmux: TAB
# completes commands, options, their values and the program. Without tmux
# the test says so and skips.
add_test(NAME cli_completion COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli_completion.sh $<TARGET_FILE:profil_cli>)
set_tests_properties(cli_completion PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
