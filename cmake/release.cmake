# SPDX-License-Identifier: GPL-3.0-or-later
# The release: its version is project(VERSION), and CHANGELOG.md must have an
# entry for it ("## [X.Y.Z] - YYYY-MM-DD"). From the changelog this sets
#   BATCHSCOPE_RELEASES_XML   AppStream <release> elements, newest first (the metainfo)
# and writes ${CMAKE_BINARY_DIR}/share/doc/changelog, the same entries as a
# Debian changelog (install.cmake gzips it into the package). The package's
# maintainer, named in that changelog too, is BATCHSCOPE_MAINTAINER.
#
# A build from a git checkout also knows its commit: the target
# batchscope_commit writes ${CMAKE_BINARY_DIR}/generated/batchscope_commit.h at
# every build, touching it only when the commit (or the tree's dirtiness) changed.

# Lintian needs "Name <address>" (a bare name is malformed-contact, an error).
# The default's address is under .invalid, a domain that by RFC 6761 can never
# exist, so it claims no real address; a packager sets their own.
set(BATCHSCOPE_MAINTAINER "Batchscope developers <maintainer@batchscope.invalid>"
    CACHE STRING "The Debian package's maintainer, \"Name <address>\" (scripts/package passes it)")

# The project's web home, under which the metainfo's links name the docs as
# they lie in the source tree (README.md, docs/workbench.md, docs/workbench.png).
# AppStream wants http(s) links; the default is under .invalid, for the same
# reason as the maintainer's address: the project has no public home yet.
set(BATCHSCOPE_HOMEPAGE "https://batchscope.invalid"
    CACHE STRING "The project's web home; the metainfo links its README and docs under it")

set(changelog_md ${PROJECT_SOURCE_DIR}/CHANGELOG.md)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${changelog_md})
file(READ ${changelog_md} text)
# Lists split on ';': the text's own semicolons become a unit separator, and an
# item keeps its group apart with a record separator.
string(ASCII 31 us)
string(ASCII 30 rs)
string(REPLACE ";" "${us}" text "${text}")
string(REPLACE "\n" ";" lines "${text}")

# Parse: releases (version, date), each with its groups ("### Added") and
# items ("- text", continued on indented lines).
set(releases "")
set(release "")
set(group "")
set(item "")
macro(end_item)
  if(release AND NOT item STREQUAL "")
    list(APPEND items_${release} "${group}${rs}${item}")
  endif()
  set(item "")
endmacro()
foreach(line IN LISTS lines)
  if(line MATCHES "^## \\[([0-9]+\\.[0-9]+\\.[0-9]+)\\] - ([0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9])$")
    end_item()
    set(release ${CMAKE_MATCH_1})
    set(date_${release} ${CMAKE_MATCH_2})
    list(APPEND releases ${release})
    set(items_${release} "")
    set(group "")
  elseif(line MATCHES "^## ")
    end_item()
    set(release "")  # [Unreleased]: nothing to publish
  elseif(line MATCHES "^### (.+)$")
    end_item()
    set(group ${CMAKE_MATCH_1})
  elseif(line MATCHES "^- (.*)$")
    end_item()
    set(item "${CMAKE_MATCH_1}")
  elseif(line MATCHES "^  +(.*)$" AND NOT item STREQUAL "")
    string(APPEND item " ${CMAKE_MATCH_1}")
  else()
    end_item()
  endif()
endforeach()
end_item()

if(NOT PROJECT_VERSION IN_LIST releases)
  message(FATAL_ERROR "CHANGELOG.md has no entry \"## [${PROJECT_VERSION}] - YYYY-MM-DD\" for "
                      "project(VERSION ${PROJECT_VERSION}); add one (Keep a Changelog style)")
endif()
list(GET releases 0 newest)
if(NOT newest STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "CHANGELOG.md's newest release is ${newest}, but project(VERSION) is "
                      "${PROJECT_VERSION}: they must be the same")
endif()

# plain(VAR TEXT): the item as plain text (no Markdown code marks or links),
# its semicolons still the unit separator (callers put them back last).
function(plain var text)
  string(REPLACE "`" "" text "${text}")
  string(REGEX REPLACE "\\[([^]]*)\\]\\([^)]*\\)" "\\1" text "${text}")
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

# wrap(VAR TEXT FIRST REST): TEXT in lines of at most 78 characters, the first
# starting with FIRST, the others with REST.
function(wrap var text first rest)
  string(REPLACE " " ";" words "${text}")
  set(out "")
  set(line "${first}")
  set(empty TRUE)
  foreach(w IN LISTS words)
    string(LENGTH "${line} ${w}" n)
    if(NOT empty AND n GREATER 78)
      string(APPEND out "${line}\n")
      set(line "${rest}${w}")
    elseif(empty)
      string(APPEND line "${w}")
    else()
      string(APPEND line " ${w}")
    endif()
    set(empty FALSE)
  endforeach()
  set(${var} "${out}${line}\n" PARENT_SCOPE)
endfunction()

# rfc2822(VAR DATE): "Sun, 29 Nov 2026 00:00:00 +0000" for YYYY-MM-DD, as
# date(1) writes it (-R is the same in every locale); a date that does not
# exist (2026-02-30) is refused.
function(rfc2822 var date)
  execute_process(COMMAND date -u -R -d "${date}" OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "CHANGELOG.md: the date ${date} is not a day of the calendar (${err})")
  endif()
  set(${var} "${out}" PARENT_SCOPE)
endfunction()

function(xml_escape var text)
  string(REPLACE "&" "&amp;" text "${text}")
  string(REPLACE "<" "&lt;" text "${text}")
  string(REPLACE ">" "&gt;" text "${text}")
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

set(xml "")
set(debian "")
foreach(r IN LISTS releases)
  string(APPEND xml "    <release version=\"${r}\" date=\"${date_${r}}\">\n      <description>\n")
  string(APPEND debian "batchscope (${r}) unstable; urgency=medium\n")
  if(NOT items_${r})
    message(FATAL_ERROR "CHANGELOG.md's entry for ${r} lists no change (\"- text\" items)")
  endif()
  set(open "")
  set(in_list FALSE)
  foreach(entry IN LISTS items_${r})
    string(REPLACE "${rs}" ";" parts "${entry}")
    list(GET parts 0 g)
    list(GET parts 1 body)
    plain(body "${body}")
    if(NOT in_list OR NOT g STREQUAL open)
      if(in_list)
        string(APPEND xml "        </ul>\n")
      endif()
      if(NOT g STREQUAL "")  # items before any "### Group" go unheaded
        xml_escape(heading "${g}")
        string(APPEND xml "        <p>${heading}:</p>\n")
        string(APPEND debian "\n  ${g}:\n")
      elseif(NOT in_list)
        string(APPEND debian "\n")
      endif()
      string(APPEND xml "        <ul>\n")
      set(open "${g}")
      set(in_list TRUE)
    endif()
    xml_escape(escaped "${body}")
    string(REPLACE "${us}" ";" escaped "${escaped}")
    string(APPEND xml "          <li>${escaped}</li>\n")
    wrap(wrapped "${body}" "  * " "    ")
    string(REPLACE "${us}" ";" wrapped "${wrapped}")
    string(APPEND debian "${wrapped}")
  endforeach()
  string(APPEND xml "        </ul>\n")
  string(APPEND xml "      </description>\n    </release>\n")
  rfc2822(when ${date_${r}})
  string(APPEND debian "\n -- ${BATCHSCOPE_MAINTAINER}  ${when}\n\n")
endforeach()
string(STRIP "${xml}" BATCHSCOPE_RELEASES_XML)
set(changelog ${CMAKE_BINARY_DIR}/share/doc/changelog)
set(old "")
if(EXISTS ${changelog})
  file(READ ${changelog} old)
endif()
if(NOT old STREQUAL debian)  # untouched when unchanged: no rebuild of what depends on it
  file(WRITE ${changelog} "${debian}")
endif()

# The commit, written at build time (a configure would go stale between commits).
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/generated)
add_custom_target(batchscope_commit
  COMMAND ${CMAKE_COMMAND} -DSOURCE=${PROJECT_SOURCE_DIR}
          -DOUT=${CMAKE_BINARY_DIR}/generated/batchscope_commit.h -P ${PROJECT_SOURCE_DIR}/cmake/commit.cmake
  BYPRODUCTS ${CMAKE_BINARY_DIR}/generated/batchscope_commit.h
  COMMENT "Reading the git commit"
  VERBATIM)
