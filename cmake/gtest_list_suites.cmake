# SPDX-License-Identifier: GPL-3.0-or-later
# cmake -D program=PATH -D out=FILE -P gtest_list_suites.cmake: writes the
# names of PATH's GoogleTest suites to FILE, one a line (cmake/gtest_suites.cmake).
# A suite line of --gtest_list_tests is unindented and ends in '.', perhaps
# followed by "  # TypeParam = ..."; disabled suites are left out.
execute_process(COMMAND ${program} --gtest_list_tests
                OUTPUT_VARIABLE listing RESULT_VARIABLE rc TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${program} --gtest_list_tests failed (${rc}):\n${listing}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(suites "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
    set(suite ${CMAKE_MATCH_1})
    if(NOT suite MATCHES "^DISABLED_" AND NOT suite MATCHES "/DISABLED_")
      string(APPEND suites "${suite}\n")
    endif()
  endif()
endforeach()
if(suites STREQUAL "")
  message(FATAL_ERROR "${program} lists no GoogleTest suites:\n${listing}")
endif()
file(WRITE ${out} "${suites}")
