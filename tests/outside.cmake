# Sampling from outside (issue 21): profil run --outside, profil attach, a
# static program, --duration and --every (tests/outside_test.cc), on
# tests/outside_progs/outside_target.c, built dynamic and static, and a
# pure-Go program (outside_progs/goprog) built with Debian's go when it is
# installed.
add_executable(outside_target ${CMAKE_CURRENT_SOURCE_DIR}/outside_progs/outside_target.c)
target_link_libraries(outside_target PRIVATE Threads::Threads)
add_executable(outside_target_static ${CMAKE_CURRENT_SOURCE_DIR}/outside_progs/outside_target.c)
target_link_libraries(outside_target_static PRIVATE Threads::Threads)
target_link_options(outside_target_static PRIVATE -static)
if(TARGET profil_pprof AND TARGET profil_cli)
  profil_add_gtest(outside_test SERIAL
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/outside_test.cc
    LIBS profil_pprof profil_format)
  if(TARGET outside_test)
    add_dependencies(outside_test profil_cli outside_target outside_target_static)
  endif()
endif()

# The Go program: static, with Go's own runtime and no .eh_frame (its
# stacks are walked by frame pointer). Built offline from the standard
# library alone, its caches inside the build directory; without go the
# test says so and skips.
find_program(PROFIL_GO go)
if(PROFIL_GO AND TARGET outside_test)
  set(goprog_src ${CMAKE_CURRENT_SOURCE_DIR}/outside_progs/goprog)
  set(goprog_work ${CMAKE_CURRENT_BINARY_DIR}/goprog)
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/bin/outside_goprog
    COMMAND ${CMAKE_COMMAND} -E env GOCACHE=${goprog_work}/cache GOPATH=${goprog_work}/path GO111MODULE=off
            GOFLAGS= GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=0
            ${PROFIL_GO} build -o ${CMAKE_BINARY_DIR}/bin/outside_goprog main.go
    WORKING_DIRECTORY ${goprog_src}
    DEPENDS ${goprog_src}/main.go
    COMMENT "go build tests/outside_progs/goprog (static, standard library only)"
    VERBATIM)
  add_custom_target(outside_goprog ALL DEPENDS ${CMAKE_BINARY_DIR}/bin/outside_goprog)
  add_dependencies(outside_test outside_goprog)
endif()
