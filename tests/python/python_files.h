// SPDX-License-Identifier: GPL-3.0-or-later
// The handler files the Python tests run, and a spec for one: Debian's
// interpreter and the source tree's worker module.
#pragma once

#include <string>

#include "python/python_handler.h"

namespace batchscope::test {

inline std::string handler(const std::string& name) {
  return std::string(BATCHSCOPE_SOURCE_DIR) + "/tests/python/handlers/" + name;
}

inline PythonSpec spec(const std::string& file) {
  PythonSpec s;
  s.file = file;
  s.worker_script = std::string(BATCHSCOPE_SOURCE_DIR) + "/core/python/batchscope_worker.py";
  return s;
}

}  // namespace batchscope::test
