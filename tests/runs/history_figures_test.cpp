// SPDX-License-Identifier: GPL-3.0-or-later
// Tests for reading kept runs back: a summary's figures and its whole
// RunSummary from the JSON bench writes, the comparison of two runs' figures
// and context, a run's options in a line, the HTML report of a Python
// model's runs, and import_bench_json's acceptance and refusals.

#include "runs/history_figures.h"

#include <gtest/gtest.h>

#include "runs/run_report.h"

#include "tests/runs/history_support.h"

namespace batchscope {
namespace {

using namespace testing_history;

TEST(HistoryFigures, ASummaryComesBackFromItsJson) {
  const RunData run = sample_run(200);
  const RunSummary s = summarize_run(run, std::chrono::milliseconds(20));
  ASSERT_GT(s.windows.size(), 5u);
  const RunSummary back = summary_from_json(run_summary_json(run, s));
  EXPECT_EQ(back.sent, s.sent);
  EXPECT_EQ(back.ok, s.ok);
  EXPECT_EQ(back.rejected, 1u);
  EXPECT_DOUBLE_EQ(back.throughput_rps, s.throughput_rps);
  EXPECT_DOUBLE_EQ(back.latency.p99_ms, s.latency.p99_ms);
  EXPECT_DOUBLE_EQ(back.batch_mean, s.batch_mean);
  EXPECT_EQ(back.batch_histogram, s.batch_histogram);
  EXPECT_EQ(back.depth_max, s.depth_max);
  ASSERT_EQ(back.windows.size(), s.windows.size());
  for (size_t i = 0; i < s.windows.size(); ++i) {
    EXPECT_DOUBLE_EQ(back.windows[i].start_s, s.windows[i].start_s);
    EXPECT_EQ(back.windows[i].ok, s.windows[i].ok);
    EXPECT_DOUBLE_EQ(back.windows[i].latency.p90_ms, s.windows[i].latency.p90_ms);
  }
  // Nothing readable: an empty summary, not a crash.
  EXPECT_EQ(summary_from_json("[").sent, 0u);
  EXPECT_TRUE(summary_from_json(R"({"windows": [1, {"ok": -4}], "sent": "many"})").windows.size() ==
              1u);
}

// A generation run's summary (gen_summary_json) keeps its figures under
// "summary"; the list's columns read them with end-to-end as the latency.
TEST(HistoryFigures, AGenerationSummaryGivesItsFiguresToo) {
  const RunSummary s = summary_from_json(
      R"({"config": {"pattern": "poisson rate=4/s"}, "summary": {"sent": 40, "ok": 38,)"
      R"( "failed": 2, "duration_s": 10.5, "requests_per_s": 3.6,)"
      R"( "ttft_ms": {"p50": 9, "p99": 30}, "e2e_ms": {"p50": 120, "p90": 300,)"
      R"( "p99": 410.5, "mean": 150, "max": 420}}})");
  EXPECT_EQ(s.sent, 40u);
  EXPECT_EQ(s.ok, 38u);
  EXPECT_EQ(s.errors, 2u);
  EXPECT_DOUBLE_EQ(s.duration_s, 10.5);
  EXPECT_DOUBLE_EQ(s.throughput_rps, 3.6);
  EXPECT_DOUBLE_EQ(s.latency.p50_ms, 120);
  EXPECT_DOUBLE_EQ(s.latency.p99_ms, 410.5);
  EXPECT_DOUBLE_EQ(s.latency.max_ms, 420);
  // A tensor run's own "sent" wins over anything else called summary.
  EXPECT_EQ(summary_from_json(R"({"sent": 5, "summary": {"sent": 9}})").sent, 5u);
}

TEST(HistoryFigures, FiguresAndTheirDifferences) {
  HistoryRun a, b;
  a.summary =
      R"({"sent": 100, "ok": 90, "throughput_rps": 45.5, "latency_ms": {"p50": 2, "p99": 8}})";
  b.summary = R"({"sent": 100, "ok": 100, "throughput_rps": 50, "latency_ms": {"p50": 2.5}})";
  const auto f = summary_figures(a.summary);
  EXPECT_EQ(figure(f, "p99_ms"), 8.0);
  EXPECT_FALSE(figure(f, "p90_ms").has_value());
  const auto d = compare_figures(a, b);
  auto row = [&](const std::string& name) {
    for (const FigureDiff& x : d)
      if (x.name == name) return x;
    ADD_FAILURE() << "no row " << name;
    return FigureDiff{};
  };
  EXPECT_EQ(row("ok").a, 90.0);
  EXPECT_EQ(row("ok").b, 100.0);
  EXPECT_EQ(row("p99_ms").a, 8.0);
  EXPECT_FALSE(row("p99_ms").b.has_value()) << "a figure one run lacks is shown as missing";
}

TEST(HistoryFigures, ContextDifferencesNameTheKey) {
  HistoryRun a, b;
  a.context = R"({"machine": {"cpu": "Xeon", "cores": 2}, "model": {"sha256": "aa"}})";
  b.context =
      R"({"machine": {"cpu": "EPYC", "cores": 2}, "model": {"sha256": "bb"}, "gpu": "H200"})";
  b.config.options.max_batch_size = 64;
  a.config.pattern = b.config.pattern = "poisson rate=10";
  const auto d = compare_context(a, b);
  std::map<std::string, std::pair<std::string, std::string>> m;
  for (const ContextDiff& x : d) m[x.key] = {x.a, x.b};
  EXPECT_EQ(m["machine.cpu"], std::make_pair(std::string("Xeon"), std::string("EPYC")));
  EXPECT_EQ(m["model.sha256"], std::make_pair(std::string("aa"), std::string("bb")));
  EXPECT_EQ(m["options.max_batch_size"], std::make_pair(std::string("32"), std::string("64")));
  EXPECT_EQ(m["gpu"], std::make_pair(std::string("-"), std::string("H200")));
  EXPECT_FALSE(m.count("machine.cores"));
  EXPECT_FALSE(m.count("traffic"));
}

TEST(HistoryFigures, ImportsABenchSummaryAndRefusesWhatIsNot) {
  const RunData run = sample_run(40);
  const std::string text = run_summary_json(run, summarize_run(run));
  auto r = import_bench_json(text);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->kind, "bench");
  EXPECT_EQ(r->model, "mlp");
  EXPECT_EQ(r->config.options.max_batch_size, 4u);
  EXPECT_EQ(r->config.options.strategy, StrategyKind::kAdaptive);
  EXPECT_EQ(r->config.seed, 42u);
  EXPECT_EQ(r->requests_seen, 40u);
  EXPECT_TRUE(r->finished());
  EXPECT_EQ(summary_figures(r->summary).size(), summary_figures(text).size());

  auto gen = import_bench_json(
      R"({"config": {"pattern": "poisson rate=10/s", "target": "inproc", "model": "tiny_lm",)"
      R"( "seed": 3}, "summary": {"sent": 20, "ok": 20, "tokens_per_s": 400, "duration_s": 2,)"
      R"( "ttft_ms": {"p50": 5, "p99": 7}, "itl_ms": {"p50": 2, "p99": 4}}})");
  ASSERT_TRUE(gen.ok()) << gen.error().message;
  EXPECT_EQ(gen->kind, "generation");
  EXPECT_EQ(gen->model, "tiny_lm");
  EXPECT_EQ(gen->config.seed, 3u);
  EXPECT_EQ(figure(summary_figures(gen->summary), "ttft_p99_ms"), 7.0);
  auto bad_gen = import_bench_json(R"({"config": {}, "summary": {"sent": 1, "ok": 1}})");
  ASSERT_FALSE(bad_gen.ok());
  EXPECT_EQ(bad_gen.error().message,
            "not a bench --json summary: its \"summary\" has no number \"tokens_per_s\"");

  for (const auto& [bad, says] : std::vector<std::pair<std::string, std::string>>{
           {"", "the file is not JSON"},
           {"[1]", "the top level is not an object"},
           {R"({"sent": 1, "ok": 1})", "it has no number \"throughput_rps\""},
           {R"({"sent": 1, "ok": "1", "throughput_rps": 2})", "it has no number \"ok\""},
           {R"({"sent": 1, "ok": 1, "throughput_rps": 2, "latency_ms": {}})",
            "it has no object \"config\""}}) {
    auto e = import_bench_json(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.error().message, "not a bench --json summary: " + says) << bad;
  }
}

// A Python model with preprocess: its pool's size is part of what ran, 0
// (on the lanes) and 1 (the default) alike; describe() leaves 1 out.
TEST(HistoryFigures, OptionsTextNamesAPythonModelsPoolEvenAtItsDefault) {
  HistoryRun r;
  r.config.options.num_lanes = 2;
  EXPECT_EQ(options_text(r), describe(r.config.options));  // no context: as described
  r.context = R"({"python": {"class": "Digits", "preprocess": true}})";
  EXPECT_NE(options_text(r).find(" num_lanes=2 preprocess_workers=1"), std::string::npos)
      << options_text(r);
  r.config.options.preprocess_workers = 0;
  EXPECT_NE(options_text(r).find(" num_lanes=2 preprocess_workers=0"), std::string::npos);
  r.config.options.preprocess_workers = 3;
  const std::string three = options_text(r);
  EXPECT_EQ(three.find("preprocess_workers="), three.rfind("preprocess_workers=")) << three;
  // A class without preprocess has no pool to name.
  r.config.options.preprocess_workers = 1;
  r.context = R"({"python": {"class": "Mlp", "preprocess": false}})";
  EXPECT_EQ(options_text(r).find("preprocess_workers"), std::string::npos);
  // A generation run's options are the generation engine's.
  r.kind = "generation";
  EXPECT_EQ(options_text(r), describe_generation(r.config.options));
}

// The report of a Python model's runs names what ran them: the class and the
// interpreter where a TorchScript run has LibTorch, and each run's pool.
TEST(HistoryFigures, TheReportOfAPythonModelsRunsSaysWhatRanThem) {
  HistoryRun a;
  a.id = 4;
  a.kind = "bench";
  a.model = "digits";
  a.label = "poisson rate=100/s for 5 s -> inproc";
  a.started_at = a.finished_at = "2026-12-03T13:31:39.948Z";
  a.config.options.num_lanes = 2;
  a.context = R"({"machine": {"cores": 2}, "python": {"class": "Digits", "interpreter":)"
              R"( "/usr/bin/python3", "version": "3.11.2", "numpy": "1.24.2", "preprocess":)"
              R"( true, "postprocess": true, "worker_threads": 1}, "model": {"path": "d.py"}})";
  a.summary = R"({"sent": 10, "ok": 10, "throughput_rps": 100, "latency_ms": {"p50": 17},)"
              R"( "batch_size": {"mean": 1, "histogram": {"1": 10}}})";
  HistoryRun b = a;
  b.id = 5;
  b.config.options.preprocess_workers = 2;
  const std::string html = run_report_html({a, b}, "digits", "Batchscope test", "now");
  for (const char* want :
       {"<td>python.class</td><td>Digits</td><td>Digits</td>",
        "<td>python.interpreter</td><td>/usr/bin/python3</td>", "<td>python.numpy</td>",
        "<td>python.preprocess</td><td>true</td>", "<td>python.worker_threads</td><td>1</td>",
        "num_lanes=2 preprocess_workers=1", "num_lanes=2 preprocess_workers=2"}) {
    EXPECT_NE(html.find(want), std::string::npos) << want;
  }
  EXPECT_EQ(html.find("<td>torch."), std::string::npos);
  // Every batch of one size: the share axis stops at 100%.
  EXPECT_NE(html.find(">100%</text>"), std::string::npos);
  EXPECT_EQ(html.find(">150%</text>"), std::string::npos);
}

TEST(HistoryFigures, StageTimesComeBackAsFiguresAndInTheSummary) {
  RunData run = sample_run(20);
  RequestRecord r;
  r.times.arrival = TimePoint(std::chrono::seconds(1));
  r.times.admitted = r.times.arrival;
  r.times.batched = r.times.arrival + std::chrono::milliseconds(2);
  r.times.run_start = r.times.batched;
  r.times.run_end = r.times.run_start + std::chrono::milliseconds(5);
  r.times.completed = r.times.run_end;
  run.stages.add(r);
  const RunSummary s = summarize_run(run);
  const std::string json = run_summary_json(run, s);
  const auto figs = summary_figures(json);
  ASSERT_TRUE(figure(figs, "model_p50_ms").has_value()) << json;
  EXPECT_NEAR(*figure(figs, "model_p50_ms"), 5.0, 0.05);
  EXPECT_NEAR(*figure(figs, "batch_wait_p99_ms"), 2.0, 0.02);
  EXPECT_FALSE(figure(figs, "preprocess_p50_ms").has_value());
  const RunSummary back = summary_from_json(json);
  ASSERT_EQ(back.stages.size(), s.stages.size());
  EXPECT_EQ(back.stages[2].stage, RunStage::kModel);
  EXPECT_EQ(back.stages[2].count, 1u);
  EXPECT_DOUBLE_EQ(back.stages[2].mean_ms, 5.0);
  // The report draws each run's stages as a bar, and names only those a
  // request went through; a run without them draws none.
  HistoryRun h;
  h.id = 3;
  h.kind = "bench";
  h.summary = json;
  const std::string html = run_report_html({h}, "m", "Batchscope test", "now");
  EXPECT_NE(html.find("Where the time went"), std::string::npos);
  EXPECT_NE(html.find("<title>model: mean 5"), std::string::npos) << html;
  EXPECT_NE(html.find(">7 ms</text>"), std::string::npos);  // 2 waiting + 5 in the model
  EXPECT_EQ(html.find(">preprocess wait</text>"), std::string::npos);
  h.summary = run_summary_json(RunData{}, summarize_run(RunData{}));
  EXPECT_EQ(run_report_html({h}, "m", "t", "now").find("Where the time went"), std::string::npos);
}

}  // namespace
}  // namespace batchscope
