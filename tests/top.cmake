# profil top (issue 33), through a real terminal: tmux runs it in a pane,
# sends it keys and reads the pane back (tests/top_tmux.sh), on
# tests/top_progs/top_target.c. Without tmux the test says so and skips.
add_executable(top_target ${CMAKE_CURRENT_SOURCE_DIR}/top_progs/top_target.c)
target_compile_options(top_target PRIVATE -O1 -g)
target_link_libraries(top_target PRIVATE Threads::Threads)
if(TARGET profil_cli)
  add_test(NAME top_tmux
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/top_tmux.sh $<TARGET_FILE:profil_cli> $<TARGET_FILE:top_target>)
  set_tests_properties(top_tmux PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
endif()
