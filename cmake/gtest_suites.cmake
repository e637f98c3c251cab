# SPDX-License-Identifier: GPL-3.0-or-later
# batchscope_gtest_suites(TARGET PREFIX LABELS... [ENVIRONMENT...]): one
# ctest test per GoogleTest suite of TARGET, named PREFIX.Suite and run as
# TARGET --gtest_filter=Suite.*, listed after each build as
# gtest_discover_tests lists single tests.
#
# One process per suite, not per test: a program that links LibTorch spends
# about a second of CPU loading it before its first test, and the window's
# suites alone are 150 tests. A suite's tests share a process, as they do when
# the program is run by hand; each still names its failure in the output.
# A single test: ctest -R PREFIX.Suite --verbose, or the program with
# --gtest_filter=Suite.Test.
function(batchscope_gtest_suites target prefix)
  cmake_parse_arguments(arg "" "" "LABELS;ENVIRONMENT" ${ARGN})
  set(suites ${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.txt)
  set(include_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake)
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -D program=$<TARGET_FILE:${target}> -D out=${suites}
            -P ${PROJECT_SOURCE_DIR}/cmake/gtest_list_suites.cmake
    BYPRODUCTS ${suites}
    VERBATIM)
  # A suite of the slowest program runs for minutes under a sanitizer.
  file(GENERATE OUTPUT ${include_file} CONTENT
"if(EXISTS \"${suites}\")
  file(STRINGS \"${suites}\" suites)
  foreach(suite IN LISTS suites)
    add_test(\"${prefix}.\${suite}\" \"$<TARGET_FILE:${target}>\" \"--gtest_filter=\${suite}.*\")
    set_tests_properties(\"${prefix}.\${suite}\" PROPERTIES LABELS \"${arg_LABELS}\"
      TIMEOUT 900 ENVIRONMENT \"${arg_ENVIRONMENT}\")
  endforeach()
else()
  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)
endif()
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()
