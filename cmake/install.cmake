# SPDX-License-Identifier: GPL-3.0-or-later
# What `cmake --install` lays out, and the Debian package CPack builds from it
# (scripts/package). An installed batchscope finds its models from its own
# prefix (app/install_paths.h); the build tree gets the same layout by a link.
include(GNUInstallDirs)

file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/share/batchscope)
file(CREATE_LINK ${PROJECT_SOURCE_DIR}/models ${CMAKE_BINARY_DIR}/share/batchscope/models SYMBOLIC)
# The Python worker module (core/python) a Python model's processes run.
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/share/batchscope/python)
foreach(worker_file batchscope_worker.py batchscope_handler.py)
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/core/python/${worker_file}
       ${CMAKE_BINARY_DIR}/share/batchscope/python/${worker_file} SYMBOLIC)
endforeach()

install(TARGETS batchscope RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/models/ DESTINATION ${CMAKE_INSTALL_DATADIR}/batchscope/models
        FILES_MATCHING PATTERN "*.pt" PATTERN "*.json" PATTERN "*.py" PATTERN "README.md")
install(FILES ${PROJECT_SOURCE_DIR}/core/python/batchscope_worker.py
              ${PROJECT_SOURCE_DIR}/core/python/batchscope_handler.py
        DESTINATION ${CMAKE_INSTALL_DATADIR}/batchscope/python)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# What Debian's policy asks of every package: the copyright file (DEP-5), and
# the changelog, written from CHANGELOG.md by cmake/release.cmake and
# compressed reproducibly (no name or time stamp in the gzip header).
install(FILES ${PROJECT_SOURCE_DIR}/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
set(changelog_gz ${CMAKE_BINARY_DIR}/share/doc/changelog.gz)
add_custom_command(
  OUTPUT ${changelog_gz}
  COMMAND sh -c "gzip -n -9 -c \"$1\" > \"$2\"" sh ${CMAKE_BINARY_DIR}/share/doc/changelog ${changelog_gz}
  DEPENDS ${CMAKE_BINARY_DIR}/share/doc/changelog
  COMMENT "Compressing the Debian changelog"
  VERBATIM)
add_custom_target(batchscope_changelog ALL DEPENDS ${changelog_gz})
install(FILES ${changelog_gz} DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)

# The manual page and bash completion, printed by the executable from its own
# --help texts (app/help_pages.h). Not in sanitizer builds, which install nothing.
if(NOT BATCHSCOPE_SANITIZE)
  set(man ${CMAKE_BINARY_DIR}/share/man/man1/batchscope.1.gz)
  set(completion ${CMAKE_BINARY_DIR}/share/bash-completion/completions/batchscope)
  add_custom_command(
    OUTPUT ${man} ${completion}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/share/man/man1
            ${CMAKE_BINARY_DIR}/share/bash-completion/completions
    COMMAND sh -c "\"$1\" --man | gzip -n -9 > \"$2\" && \"$1\" --bash-completion > \"$3\"" sh
            $<TARGET_FILE:batchscope> ${man} ${completion}
    DEPENDS batchscope
    COMMENT "Writing batchscope.1 and the bash completion from the --help texts"
    VERBATIM)
  add_custom_target(batchscope_help_pages ALL DEPENDS ${man} ${completion})
  install(FILES ${man} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  install(FILES ${completion} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
endif()

# The .deb: its dependencies are the shared libraries the executable links
# (dpkg-shlibdeps finds their packages) plus the two it loads at run time:
# OpenBLAS, which LibTorch's generic BLAS must resolve to for batching to pay
# (scripts/setup says why), and the Qt platform plugins a window needs.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME batchscope)
set(CPACK_PACKAGE_VENDOR "Batchscope")
set(CPACK_PACKAGE_CONTACT "${BATCHSCOPE_MAINTAINER}")  # cmake/release.cmake
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "workbench for dynamic batching of model inference")
set(CPACK_PACKAGE_DESCRIPTION
    "Batchscope embeds a batching server core (admission queue, batch scheduler,
LibTorch runner, HTTP listener), drives it with traffic and shows queue depth,
batch sizes and latency quantiles live while batching options are retuned. Its
tuner predicts every configuration on the model's cost curve and confirms the
best live; the options export to Triton, TF Serving, TorchServe and Ray Serve.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libopenblas0-pthread | libopenblas0, qt6-qpa-plugins")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "bash-completion, man-db")
include(CPack)
