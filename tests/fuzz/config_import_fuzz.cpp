// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: import_config, which reads a Triton config.pbtxt, a vLLM config or Batchscope
// JSON from a file the user names, and parse_pbtxt beneath it. A parsed tree
// must have sane lines and kinds; imported options must be valid, and must
// come back unchanged when exported as Batchscope JSON or as a Triton
// config.pbtxt and imported again.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "api/options_json.h"
#include "export/export_config.h"
#include "export/pbtxt.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace batchscope;

void check_tree(const std::vector<PbField>& fields, int lines, int depth) {
  FUZZ_CHECK(depth <= 64);
  for (const PbField& f : fields) {
    FUZZ_CHECK(!f.name.empty());
    FUZZ_CHECK(f.line >= 1 && f.line <= lines);
    if (f.kind == PbField::Kind::kMessage) {
      check_tree(f.fields, lines, depth + 1);
    } else {
      FUZZ_CHECK(f.fields.empty());
    }
    if (f.kind == PbField::Kind::kNumber) FUZZ_CHECK(!f.text.empty());
  }
}

ImportResult reimport(const std::string& text) {
  auto again = import_config(text, Options{});
  if (!again) std::fprintf(stderr, "%s\n--\n%s\n", text.c_str(), again.error().message.c_str());
  FUZZ_CHECK(again.ok());
  return *again;
}

void check_import(const ImportResult& r) {
  FUZZ_CHECK(r.options.validate());
  FUZZ_CHECK(r.source == ExportFormat::kTriton || r.source == ExportFormat::kJson ||
             r.source == ExportFormat::kVllm);
  if (r.source == ExportFormat::kVllm) {
    // A vLLM config carries the generative options: exported and read again,
    // they are the same.
    ExportInput in;
    in.options = r.options;
    in.lm = GenModelInfo{"m", 1024, 16, 1024};
    auto files = export_config(ExportFormat::kVllm, in);
    if (!files) std::fprintf(stderr, "export: %s\n", files.error().message.c_str());
    FUZZ_CHECK(files.ok());
    auto back = import_config(files->front().text, r.options);
    FUZZ_CHECK(back.ok() && back->source == ExportFormat::kVllm && back->options == r.options);
    return;
  }
  FUZZ_CHECK(std::is_sorted(r.batch_sizes.begin(), r.batch_sizes.end()));
  for (uint32_t b : r.batch_sizes) FUZZ_CHECK(b >= 1 && b <= r.options.max_batch_size);

  // Batchscope JSON carries every option.
  FUZZ_CHECK(reimport(options_to_json(r.options)).options == r.options);

  // So does a Triton config.pbtxt, with the device and preferred sizes.
  ExportInput in;
  in.options = r.options;
  in.device = r.device.value_or("cpu");
  in.batch_sizes = r.batch_sizes;
  auto files = export_config(ExportFormat::kTriton, in);
  if (!files) std::fprintf(stderr, "export: %s\n", files.error().message.c_str());
  FUZZ_CHECK(files.ok() && files->size() == 1);
  const ImportResult back = reimport(files->front().text);
  FUZZ_CHECK(back.source == ExportFormat::kTriton);
  FUZZ_CHECK(back.options == r.options);
  FUZZ_CHECK(back.device == in.device);
  // A lone preferred size equal to max_batch_size is left out on export.
  const bool only_max =
      r.batch_sizes.size() == 1 && r.batch_sizes.front() == r.options.max_batch_size;
  if (!only_max) FUZZ_CHECK(back.batch_sizes == r.batch_sizes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(bytes), size);
  auto tree = parse_pbtxt(text);
  if (tree) {
    const int lines = 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    check_tree(*tree, lines, 0);
  } else {
    FUZZ_CHECK(tree.error().message.rfind("line ", 0) == 0);
  }
  auto r = import_config(text, Options{});
  if (!r) {
    FUZZ_CHECK(!r.error().message.empty());
    return 0;
  }
  check_import(*r);
  return 0;
}
