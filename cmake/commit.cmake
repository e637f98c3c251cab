# SPDX-License-Identifier: GPL-3.0-or-later
# cmake -DSOURCE=DIR -DOUT=FILE -P commit.cmake: writes FILE defining
# BATCHSCOPE_COMMIT as the checkout's short commit, "-dirty" after it when
# tracked files differ from it, or "" outside a git checkout. FILE is
# rewritten only when that text changed, so an unchanged commit rebuilds nothing.
set(commit "")
execute_process(COMMAND git -C ${SOURCE} rev-parse --short=12 HEAD
                OUTPUT_VARIABLE head RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(rc EQUAL 0 AND head)
  set(commit ${head})
  execute_process(COMMAND git -C ${SOURCE} diff --quiet HEAD -- RESULT_VARIABLE dirty ERROR_QUIET)
  if(dirty EQUAL 1)
    string(APPEND commit "-dirty")
  endif()
endif()
set(text "// Written by cmake/commit.cmake at build time.\n#define BATCHSCOPE_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
