# A program that profiles itself through the profil(2) API.
add_executable(api_demo ${CMAKE_CURRENT_SOURCE_DIR}/api_demo.c)
target_link_libraries(api_demo PRIVATE libprofil Threads::Threads ${CMAKE_DL_LIBS})
target_link_options(api_demo PRIVATE -rdynamic)
