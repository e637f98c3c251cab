// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `batchscope export` writes tuned options as a production server's
// configuration (Triton, TF Serving, TorchServe, Ray Serve, the Python
// engine, Batchscope JSON); `batchscope import` reads a Triton config.pbtxt or
// Batchscope JSON back into Batchscope JSON. The work is core/export's.

#include <string>
#include <vector>

#include "export/export_config.h"

namespace batchscope {

int run_export(const std::vector<std::string>& args);

// Writes an export's files to stdout (several each under a "==> NAME <=="
// line), or to `out`: one file to that path (or into it, if it is a folder),
// several into the folder `out`, made if missing. Says what it wrote; 0, or 1
// after saying why on stderr as "batchscope COMMAND: ...".
int write_export_files(const char* command, const std::vector<ExportFile>& files,
                       const std::string& out);
std::string export_help();

int run_import(const std::vector<std::string>& args);
std::string import_help();

}  // namespace batchscope
