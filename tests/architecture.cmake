# The map of docs/architecture.md, checked: no include runs up a layer.
add_test(NAME architecture_layers COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/architecture_layers.sh ${PROJECT_SOURCE_DIR})
