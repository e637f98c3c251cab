# SPDX-License-Identifier: GPL-3.0-or-later
# A room is a folder under core/, ui/ or app/ and the static library built
# from it. docs/architecture.md's table says which rooms each may use, and
# scripts/check-architecture holds every #include and target_link_libraries
# to it; the `architecture` target runs that check in every build.
#
# Project headers are included by their room path: "batching/engine.h" (core/
# is an include root) and "ui/tuner/tuner_panel.h", "app/cli_args.h" (the
# repository root is one).

# batchscope_room(TARGET SOURCES...): the room's library with the project's
# warnings. -Wno-restrict: GCC 12 warns falsely on plain std::string
# concatenation (GCC bug 105329).
function(batchscope_room target)
  add_library(${target} STATIC ${ARGN})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/core)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-restrict)
endfunction()

# batchscope_ui_room(TARGET SOURCES...): a room under ui/ or app/, whose
# headers are included from the repository root.
function(batchscope_ui_room target)
  batchscope_room(${target} ${ARGN})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
endfunction()

find_package(Python3 REQUIRED COMPONENTS Interpreter)  # Debian: python3
add_custom_target(architecture ALL
  COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/scripts/check-architecture
          --root ${PROJECT_SOURCE_DIR}
  COMMENT "Checking includes and links against the rooms in docs/architecture.md"
  VERBATIM)
