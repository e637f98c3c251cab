// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: import_bench_json, the reader behind `batchscope runs import
// FILE.json` (a `bench --json` summary from anywhere). A summary it accepts is
// kept in an in-memory history and read back unchanged, and its figures are
// numbers that compare with themselves as no change.

#include <cmath>
#include <cstdint>
#include <string>

#include "runs/history.h"
#include "runs/history_figures.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  using namespace batchscope;
  static std::unique_ptr<History> history = [] {
    auto h = History::open(":memory:");
    FUZZ_CHECK(h.ok());
    return std::move(*h);
  }();
  const std::string text(reinterpret_cast<const char*>(bytes), size);
  auto run = import_bench_json(text);
  if (!run) {
    FUZZ_CHECK(run.error().message.rfind("not a bench --json summary: ", 0) == 0);
    return 0;
  }
  FUZZ_CHECK(run->kind == "bench" || run->kind == "generation");
  FUZZ_CHECK(run->finished());
  FUZZ_CHECK(run->config.options.validate().ok());
  const auto figures = summary_figures(run->summary);
  FUZZ_CHECK(figures.size() >= 3);  // sent, ok and throughput_rps at least
  for (const Figure& f : figures) FUZZ_CHECK(!std::isnan(f.value));
  for (const FigureDiff& d : compare_figures(*run, *run)) FUZZ_CHECK(d.a == d.b);
  FUZZ_CHECK(compare_context(*run, *run).empty());

  FUZZ_CHECK(history->begin().ok());
  auto id = history->begin_run(*run);
  FUZZ_CHECK(id.ok());
  FUZZ_CHECK(history->commit().ok());
  auto back = history->get(*id);
  FUZZ_CHECK(back.ok());
  FUZZ_CHECK(back->summary == run->summary);
  FUZZ_CHECK(back->label == run->label);
  FUZZ_CHECK(back->model == run->model);
  FUZZ_CHECK(back->config.options == run->config.options);
  FUZZ_CHECK(history->remove(*id).ok());
  return 0;
}
