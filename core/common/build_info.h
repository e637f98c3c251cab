// SPDX-License-Identifier: GPL-3.0-or-later
// What this build is: its version (project(VERSION) in CMakeLists.txt, the
// one place it is set), the git commit it was built from, and its licence.
// --version, the window's About box, served metadata and HTML reports name
// the same text.

#pragma once

#include <string>

namespace batchscope {

// "0.2.0".
const char* build_version();

// The short commit ("1a2b3c4d5e6f", "-dirty" after it when tracked files
// differed from it), or "" when not built from a git checkout.
const char* build_commit();

// The SPDX identifier of the licence Batchscope is distributed under.
const char* build_licence();

// "0.2.0 (git 1a2b3c4d5e6f)", or "0.2.0" without a commit.
std::string build_label();

// The licence in a few lines, for --version and the About box.
std::string licence_notice();

}  // namespace batchscope
