# Writes the ctest file of one test executable: one ctest entry per GoogleTest suite, which runs
# the suite's tests in one process (--gtest_filter=Suite.*). Run after the executable is built
# (tests/CMakeLists.txt, gradwire_add_test); ctest includes the file it writes.
#
# -D EXECUTABLE=... the test executable   -D CTEST_FILE=... the file to write
# -D WORKING_DIRECTORY=...                -D LABELS=a,b (may be empty)
# -D SECONDS_PER_TEST=...                 a suite's TIMEOUT is this times its number of tests
# -D COSTS=Suite=seconds,... (optional)   the COST of those suites (tests/CMakeLists.txt)
execute_process(COMMAND "${EXECUTABLE}" --gtest_list_tests
  OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE result TIMEOUT 60)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${EXECUTABLE} --gtest_list_tests failed (${result}):\n${listing}${errors}")
endif()

# The listing: a suite line "Suite." (perhaps followed by "  # TypeParam = ..."), then its tests
# indented by two spaces.
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(suites "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #][^ ]*)\\.")
    set(suite "${CMAKE_MATCH_1}")
    list(APPEND suites "${suite}")
    set(count_${suite} 0)
  elseif(line MATCHES "^  [^ ]" AND DEFINED suite)
    math(EXPR count_${suite} "${count_${suite}} + 1")
  endif()
endforeach()

string(REPLACE "," ";" labels "${LABELS}")
string(REPLACE "," ";" costs "${COSTS}")
set(text "# Written by tests/support/gtest_suites.cmake from ${EXECUTABLE} --gtest_list_tests.\n")
foreach(suite IN LISTS suites)
  math(EXPR timeout "${SECONDS_PER_TEST} * ${count_${suite}}")
  # No SKIP_REGULAR_EXPRESSION: ctest would then report a suite whose tests all failed as
  # skipped. A suite passes when none of its tests fails; skipped tests show in its output.
  string(APPEND text
    "add_test([==[${suite}]==] [==[${EXECUTABLE}]==] [==[--gtest_filter=${suite}.*]==])\n"
    "set_tests_properties([==[${suite}]==] PROPERTIES TIMEOUT ${timeout}"
    " WORKING_DIRECTORY [==[${WORKING_DIRECTORY}]==]")
  if(labels)
    string(APPEND text " LABELS [==[${labels}]==]")
  endif()
  foreach(cost IN LISTS costs)
    if(cost MATCHES "^(.+)=([0-9]+)$" AND CMAKE_MATCH_1 STREQUAL suite)
      string(APPEND text " COST ${CMAKE_MATCH_2}")
    endif()
  endforeach()
  string(APPEND text ")\n")
endforeach()
file(WRITE "${CTEST_FILE}" "${text}")
