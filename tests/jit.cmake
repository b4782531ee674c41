# JIT code named by asking its runtime (issue 34, tools/profil/jit_ask.h):
# profil run --jit on node and on a JVM, where the runtime is installed.
# Each program runs for a fixed CPU time, so a busy machine makes it
# slower, not shorter.
find_program(PROFIL_NODE node)
find_program(PROFIL_JAVAC javac)
find_program(PROFIL_JAVA java)
if(TARGET profil_cli AND PROFIL_NODE)
  # Both sources: --jit changes the environment on either path of profil run.
  foreach(source inside outside)
    add_test(NAME run_jit_ask_node_${source}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_jit_ask_node.sh $<TARGET_FILE:profil_cli> --${source})
    set_tests_properties(run_jit_ask_node_${source} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
  endforeach()
endif()
if(TARGET profil_cli AND PROFIL_JAVAC AND PROFIL_JAVA)
  add_test(NAME run_jit_ask_java
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_jit_ask_java.sh $<TARGET_FILE:profil_cli>
            ${CMAKE_CURRENT_SOURCE_DIR}/jit_progs/JitWork.java ${CMAKE_CURRENT_BINARY_DIR}/jit_java)
  set_tests_properties(run_jit_ask_java PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
