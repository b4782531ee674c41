# Copies pprof's profile.proto (IN) to OUT with the lite runtime's option
# after its package line (src/format/CMakeLists.txt says why).
file(READ ${IN} text)
string(REGEX REPLACE "(\npackage [^;]*;)" "\\1\noption optimize_for = LITE_RUNTIME;" text "${text}")
if(NOT text MATCHES "LITE_RUNTIME")
  message(FATAL_ERROR "${IN}: no package line to put the lite option after")
endif()
file(WRITE ${OUT} "${text}")
