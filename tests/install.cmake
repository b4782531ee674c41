# The installed package works for its users: headers, libprofil, profil.pc
# (pkg-config) and the CMake package (find_package(profil)).
add_test(NAME install_consumers
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/install/check_install.sh ${CMAKE_BINARY_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/install)
set_tests_properties(install_consumers PROPERTIES TIMEOUT 300)
