#pragma once
// `batchscope export` writes tuned options as a production server's
// configuration (Triton, TF Serving, TorchServe, Ray Serve, the Python
// engine, Batchscope JSON); `batchscope import` reads a Triton config.pbtxt or
// Batchscope JSON back into Batchscope JSON. The work is core/export's.

#include <string>
#include <vector>

namespace batchscope {

int run_export(const std::vector<std::string>& args);
std::string export_help();

int run_import(const std::vector<std::string>& args);
std::string import_help();

}  // namespace batchscope
