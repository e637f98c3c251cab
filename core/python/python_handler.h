// SPDX-License-Identifier: GPL-3.0-or-later
// A Python model: a .py file with a class that has `predict` (docs/python.md),
// run by Batchscope's worker module in processes of its own. This is what
// says which file, class, interpreter and options, and what the class
// declares: its inputs and outputs (or, where it declares none, those of
// the sidecar NAME.json beside the file), its largest batch, and whether it
// has preprocess and postprocess.
// Thread-safety: plain values and free functions; describe_python() starts
// a process and waits for it.

#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/model_metadata.h"
#include "common/status.h"

namespace batchscope {

struct PythonSpec {
  std::string file;                         // the handler, FILE.py
  std::string class_name;                   // --class; empty: the module's one class with a predict
  std::string python = "/usr/bin/python3";  // --python: the interpreter
  std::vector<std::pair<std::string, std::string>> options;  // --model-option KEY=VALUE
  // A predict running longer than this has its worker killed and its batch
  // answered 504 (--worker-timeout-ms, 1 to 86,400,000).
  int worker_timeout_ms = 30000;
  // Import, construction and warm-up; a worker not ready by then fails start.
  int start_timeout_ms = 300000;
  // A region never grows past this; a batch that would need more is refused.
  uint64_t max_region_bytes = uint64_t{1} << 30;
  // The worker module; empty: python_worker_path().
  std::string worker_script;
};

struct PythonHandler {
  // What requests send and get, named by the file's stem: the class's
  // request_inputs and response_outputs where it has preprocess or
  // postprocess (each defaults to what predict takes or gives), else its
  // inputs and outputs.
  ModelMetadata metadata;
  // What predict takes and gives: the class's inputs and outputs (or the
  // sidecar's).
  ModelMetadata model;
  std::string class_name;
  bool has_preprocess = false;
  bool has_postprocess = false;
};

// True for a path that names a Python handler (it ends in ".py").
bool is_python_file(const std::string& path);

// The worker module: $BATCHSCOPE_PYTHON_WORKER, else
// <exe>/../share/batchscope/python/batchscope_worker.py (the build tree has
// the same layout), else the source tree's copy; "" when none is a file.
std::string python_worker_path();

// Imports the file in a worker process (not constructing the class) and
// reads what the class declares; a class without inputs and outputs takes
// them from the sidecar beside the file. Errors name the file and the class,
// and quote the worker's message (an import's traceback).
Expected<PythonHandler> describe_python(const PythonSpec& spec);

// The handler as the worker prints it (JSON: name, class, max_batch_size,
// inputs, outputs, preprocess, postprocess); inputs or outputs null where
// the class has none. `origin` names the file in errors.
Expected<PythonHandler> parse_handler_json(const std::string& text, const std::string& origin);

// Checks what a spec asks for: a readable file, an interpreter that is a
// program, a timeout in range. Errors quote the value.
Status check_python_spec(const PythonSpec& spec);

}  // namespace batchscope
