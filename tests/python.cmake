# A Python program's own functions in profil's profiles (issue 31): every
# CPython found here — Debian's python3.x and pyenv's builds — run under
# profil run (tests/run_python.sh says what is checked), from outside (the
# default) and from inside (--inside: read by the sampling handler at the
# sample, so a Python stack fits its native stack in all but 1 % of the
# samples, even on tests/python_progs/deep.py: run_python.sh --deep). A
# machine without pyenv tests Debian's alone.
if(TARGET profil_cli)
  file(GLOB PROFIL_TEST_PYTHONS /usr/bin/python3.[0-9] /usr/bin/python3.[0-9][0-9]
       $ENV{HOME}/.pyenv/versions/*/bin/python[23].[0-9] $ENV{HOME}/.pyenv/versions/*/bin/python3.[0-9][0-9])
  foreach(python ${PROFIL_TEST_PYTHONS})
    get_filename_component(bin_dir ${python} DIRECTORY)
    get_filename_component(version_dir ${bin_dir} DIRECTORY)
    get_filename_component(name ${python} NAME)
    if(bin_dir STREQUAL "/usr/bin")
      set(label "debian_${name}")
    else()
      get_filename_component(label ${version_dir} NAME)
      set(label "pyenv_${label}")
    endif()
    string(REPLACE "." "_" label "${label}")
    # Both outside ways: at the sample (the BPF program; as root here and
    # in CI) and after the fact (--no-bpf).
    add_test(NAME run_python_${label} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_python.sh $<TARGET_FILE:profil_cli> ${python})
    add_test(NAME run_python_late_${label}
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_python.sh $<TARGET_FILE:profil_cli> ${python} --no-bpf)
    # The GIL's holder (a thread spinning in Python holds it, one in zlib
    # does not), read at the sample, after the fact, and inside (by the
    # sampling handler, on the sampled thread).
    add_test(NAME run_python_gil_${label} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_python_gil.sh $<TARGET_FILE:profil_cli> ${python})
    add_test(NAME run_python_gil_late_${label}
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_python_gil.sh $<TARGET_FILE:profil_cli> ${python} --no-bpf)
    add_test(NAME run_python_gil_inside_${label}
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_python_gil.sh $<TARGET_FILE:profil_cli> ${python} --inside)
    # A stack that moves every few microseconds: read at the sample, it fits.
    add_test(NAME run_python_moving_${label}
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_python_moving.sh $<TARGET_FILE:profil_cli> ${python})
    set_tests_properties(run_python_moving_${label} PROPERTIES SKIP_RETURN_CODE 77)
    # 3.12+: CPython's own perf trampoline (-X perf) names the same samples.
    if(name MATCHES "^python3\\.(1[2-9]|[2-9][0-9])$")
      add_test(NAME run_python_xperf_${label}
               COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_python_xperf.sh $<TARGET_FILE:profil_cli> ${python})
    endif()
    if(name MATCHES "^python3\\.[67]$")
      add_test(NAME run_python_altstack_${label}
               COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_python_altstack.sh $<TARGET_FILE:profil_cli> ${python})
    endif()
    add_test(NAME run_python_inside_${label} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_python.sh $<TARGET_FILE:profil_cli> ${python} --inside)
    set_tests_properties(run_python_inside_${label} PROPERTIES ENVIRONMENT "MISFITS_ALLOWED=0.01")
    add_test(NAME run_python_deep_inside_${label}
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_python.sh $<TARGET_FILE:profil_cli> ${python} --deep --inside)
  endforeach()
  # The BPF program loaded at the first interpreter process, not every run.
  add_test(NAME run_bpf_lazy COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_bpf_lazy.sh $<TARGET_FILE:profil_cli> /usr/bin/python3)
  set_tests_properties(run_bpf_lazy PROPERTIES SKIP_RETURN_CODE 77)
endif()
