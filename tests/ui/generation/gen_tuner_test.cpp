// SPDX-License-Identifier: GPL-3.0-or-later
// The generation view's Tuner tab over a real GenEngine and the synthetic
// model: it tunes the traffic panel's traffic on the step predictor, finds
// what `gen_search` finds on the same inputs, answers the capacity, applies
// the best live and exports it; without a cost it says how to get one, and a
// bad space is named.
#include <gtest/gtest.h>

#include <QCheckBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QImage>
#include <QLineEdit>
#include <QTableWidget>
#include <memory>
#include <vector>

#include "export/export_config.h"
#include "generation/synthetic_lm.h"
#include "tests/ui/generation/gen_test_support.h"
#include "tuning/gen_predictor.h"
#include "tuning/gen_tune.h"
#include "ui/generation/gen_traffic.h"
#include "ui/generation/gen_tuner.h"
#include "ui/generation/gen_view.h"

namespace batchscope {
namespace {

using test::pump_until;

// Small, so that the capacity's bisection (a search at each rate it tries)
// stays quick under the sanitizers.
constexpr const char* kSpace =
    "scheduling=continuous|static,max_num_seqs=4|16,max_num_batched_tokens=512,max_wait_ms=0|5";

TEST(GenTuner, TunesTheTrafficOnThePredictorAppliesTheBestAndExportsIt) {
  auto engine = test::make_gen_engine(500, 10);
  ASSERT_TRUE(engine);
  GenViewConfig cfg;
  cfg.exact_cost = GenStepCost::synthetic(500, 10);
  GenView view(*engine, cfg);
  view.traffic()->set_rate(40);
  GenTunerPanel* tuner = view.tuner();
  tuner->space()->setText(kSpace);
  tuner->seconds()->setValue(1);
  tuner->ttft_ms()->setValue(60);
  tuner->itl_ms()->setValue(12);
  tuner->find_capacity()->setChecked(true);
  ASSERT_TRUE(tuner->run().ok()) << tuner->error_text().toStdString();
  EXPECT_TRUE(tuner->running());
  ASSERT_TRUE(
      pump_until([&] { return !tuner->running() && tuner->outcome(); }, std::chrono::seconds(180)));
  const GenTunerOutcome& out = *tuner->outcome();
  ASSERT_TRUE(out.result.best.ok()) << out.result.best.error().message;
  EXPECT_EQ(out.result.space_size, 8u);

  // The same search, made here on the same inputs, picks the same best.
  ArrivalSpec spec;
  spec.pattern = Pattern::kPoisson;
  spec.rate = 40;
  spec.duration_s = 1;
  spec.seed = 1;
  auto t = view.traffic()->spec();
  ASSERT_TRUE(t.ok());
  const LmInfo info = engine->info();
  GenTuneSettings settings;
  settings.slo.ttft_ms = 60;
  settings.slo.itl_ms = 12;
  const GenTuneResult direct = gen_search(
      *TuneSpace::parse(kSpace), engine->status().options, settings, [&](const Options& o) {
        GenWorkload w(t->prompt, t->max_tokens, spec.seed);
        const GenRun run = predict_gen(spec, w, o, info, GenStepCost::synthetic(500, 10));
        return gen_evaluated_from(o, summarize_gen(run, 60, 12), 99);
      });
  ASSERT_TRUE(direct.best.ok());
  // The search's best heads the ones ranked by headroom; the choice is the
  // first of those that holds at the band's slow end.
  const GenHeadroomResult& h = out.headroom;
  ASSERT_FALSE(h.checked.empty());
  EXPECT_EQ(describe_generation(direct.best->options),
            describe_generation(h.checked.front().options));
  EXPECT_EQ(direct.best->goodput_rps, h.checked.front().goodput_rps);
  EXPECT_DOUBLE_EQ(h.needed, 1.15) << "no drift kept for the synthetic model: +-15%";
  const GenEvaluated* chosen = h.chosen();
  ASSERT_NE(chosen, nullptr);
  EXPECT_EQ(describe_generation(chosen->options), describe_generation(out.result.best->options));
  for (const GenEvaluated& e : h.checked) {
    ASSERT_TRUE(e.band && e.headroom) << describe_generation(e.options);
    EXPECT_LE(e.band->ttft_ms.low, e.ttft_ms) << "the band holds the nominal prediction";
    EXPECT_GE(e.band->ttft_ms.high, e.ttft_ms);
    EXPECT_LE(e.band->itl_ms.low, e.itl_ms);
    EXPECT_GE(e.band->itl_ms.high, e.itl_ms);
  }
  if (!h.fragile()) EXPECT_GE(chosen->headroom->slowdown, h.needed);
  EXPECT_TRUE(tuner->status_text().contains("Band: the step cost x0.85..x1.15"))
      << tuner->status_text().toStdString();

  // The table: the best first, then the rest of the front, each with its
  // bands and the best few their headroom.
  QTableWidget* table = tuner->table();
  ASSERT_GE(table->rowCount(), 1);
  EXPECT_EQ(table->item(0, 0)->text().toStdString(), h.fragile() ? "best, fragile" : "best");
  EXPECT_EQ(table->item(0, 2)->text().toInt(), static_cast<int>(chosen->options.max_num_seqs));
  ASSERT_EQ(table->columnCount(), 14);
  EXPECT_EQ(table->horizontalHeaderItem(10)->text().toStdString(), "TTFT band");
  EXPECT_EQ(table->horizontalHeaderItem(12)->text().toStdString(), "headroom\nstep cost, rate");
  for (int row = 0; row < table->rowCount(); ++row) {
    EXPECT_TRUE(table->item(row, 10)->text().contains("–")) << row;
    EXPECT_TRUE(table->item(row, 11)->text().contains("–")) << row;
  }
  EXPECT_TRUE(table->item(0, 12)->text().contains("×")) << table->item(0, 12)->text().toStdString();
  // Offscreen, the tab renders with its bars (a picture to look at).
  tuner->resize(1200, 900);
  const QImage img = tuner->grab().toImage();
  ASSERT_FALSE(img.isNull());
  EXPECT_TRUE(img.save(QDir::temp().filePath("batchscope_gen_tuner_test.png")));
  // The capacity: a rate above the traffic's, since the best meets it there.
  ASSERT_TRUE(out.capacity);
  EXPECT_GE(out.capacity->factor, 1.0);
  EXPECT_TRUE(tuner->capacity_text().contains("req/s")) << tuner->capacity_text().toStdString();

  // Apply puts the best in force; the engine says so.
  ASSERT_TRUE(tuner->apply_selected().ok());
  EXPECT_EQ(engine->status().options.max_num_seqs, chosen->options.max_num_seqs);
  EXPECT_EQ(engine->status().options.scheduling, chosen->options.scheduling);

  // Export: a generative format, with the predicted figures in its comments.
  auto in = tuner->export_input();
  ASSERT_TRUE(in.ok()) << in.error().message;
  ASSERT_TRUE(in->lm);
  EXPECT_TRUE(in->tuning.predicted);
  auto files = export_config(ExportFormat::kVllm, *in);
  ASSERT_TRUE(files.ok()) << files.error().message;
  EXPECT_NE(
      files->front().text.find("max-num-seqs: " + std::to_string(chosen->options.max_num_seqs)),
      std::string::npos)
      << files->front().text;
  EXPECT_NE(files->front().text.find("Predicted there, not measured"), std::string::npos)
      << files->front().text;
  // And the hardware the costs came from: this machine's CPU.
  EXPECT_EQ(in->tuning.hardware.rfind("cpu: ", 0), 0u) << in->tuning.hardware;
  EXPECT_NE(files->front().text.find("Predicted from costs measured on cpu: "), std::string::npos)
      << files->front().text;
}

TEST(GenTuner, WithoutACostItMeasuresTheWindowsOwnSteps) {
  auto engine = test::make_gen_engine(300, 5);
  ASSERT_TRUE(engine);
  GenView view(*engine);
  GenTunerPanel* tuner = view.tuner();
  EXPECT_FALSE(tuner->run().ok());
  EXPECT_TRUE(tuner->error_text().contains("run the traffic for a few seconds"))
      << tuner->error_text().toStdString();
  // The window's traffic runs; its steps become the cost.
  ASSERT_TRUE(view.traffic()->start().ok());
  ASSERT_TRUE(pump_until([&] { return tuner->step_cost().ok(); }, std::chrono::seconds(30)));
  view.traffic()->stop();
  auto cost = tuner->step_cost();
  EXPECT_NE(cost->second.find("this window's"), std::string::npos) << cost->second;
  // A one-decode step sleeps 305 us; under load the fit may split it
  // between the fixed and the per-decode term, so the step is checked whole.
  EXPECT_GE(cost->first.of_step(1, 0), std::chrono::microseconds(290)) << cost->first.text();
  EXPECT_GT(cost->first.between_us, 0) << cost->first.text();
}

// Confirm live: the selected configuration in force, the window's own
// traffic measured beside the prediction. The synthetic model sleeps its
// exact cost, so the two agree within the sleeps' overshoot.
TEST(GenTuner, ConfirmsTheSelectedConfigurationOnTheWindowsOwnTraffic) {
  auto engine = test::make_gen_engine(500, 10);
  ASSERT_TRUE(engine);
  GenViewConfig cfg;
  cfg.exact_cost = GenStepCost::synthetic(500, 10);
  cfg.traffic_rate = 40;
  GenView view(*engine, cfg);
  GenTunerPanel* tuner = view.tuner();
  tuner->space()->setText("max_num_seqs=4|16,lanes=1|2");
  tuner->seconds()->setValue(2);
  tuner->ttft_ms()->setValue(60);
  EXPECT_FALSE(tuner->confirm_selected().ok()) << "nothing to confirm yet";
  ASSERT_TRUE(tuner->run().ok()) << tuner->error_text().toStdString();
  ASSERT_TRUE(
      pump_until([&] { return !tuner->running() && tuner->outcome(); }, std::chrono::seconds(60)));
  ASSERT_TRUE(tuner->outcome()->result.best.ok());
  ASSERT_TRUE(view.traffic()->start().ok());
  ASSERT_TRUE(tuner->confirm_selected().ok());  // the best is selected
  EXPECT_TRUE(tuner->confirming());
  EXPECT_FALSE(tuner->confirm_selected().ok()) << "one at a time";
  const Options best = tuner->outcome()->result.best->options;
  EXPECT_EQ(engine->status().options.max_num_seqs, best.max_num_seqs);
  EXPECT_EQ(engine->status().options.num_lanes, best.num_lanes);
  ASSERT_TRUE(pump_until(
      [&] {
        view.refresh();
        return !tuner->confirming();
      },
      std::chrono::seconds(30)));
  view.traffic()->stop();
  const GenConfirmation& c = *tuner->confirmation();
  ASSERT_TRUE(c.measured);
  EXPECT_GT(c.requests, 40u);  // about 80 in two seconds at 40 req/s
  EXPECT_EQ(c.measured->ok, c.measured->sent);
  EXPECT_NEAR(c.measured->tokens_per_s / c.predicted.tokens_per_s, 1.0, 0.25);
  EXPECT_TRUE(tuner->confirmation_text().contains("Measured live over"))
      << tuner->confirmation_text().toStdString();
  EXPECT_TRUE(tuner->confirmation_text().contains("(predicted "));
  ASSERT_TRUE(c.predicted.band) << "the best carries its band";
  EXPECT_TRUE(tuner->confirmation_text().contains("the predicted band"))
      << tuner->confirmation_text().toStdString();
}

TEST(GenTuner, ABadSpaceIsNamedAndNothingRuns) {
  auto engine = test::make_gen_engine();
  ASSERT_TRUE(engine);
  GenViewConfig cfg;
  cfg.exact_cost = GenStepCost::synthetic(500, 10);
  GenView view(*engine, cfg);
  GenTunerPanel* tuner = view.tuner();
  tuner->space()->setText("max_batch_size=8|16");
  EXPECT_FALSE(tuner->run().ok());
  EXPECT_FALSE(tuner->running());
  EXPECT_TRUE(tuner->error_text().contains("max_batch_size=8|16 is a tensor model's option"))
      << tuner->error_text().toStdString();
  EXPECT_FALSE(tuner->apply_selected().ok()) << "nothing to apply yet";
}

TEST(GenTuner, CancelStopsTheSearchAndClosingTheViewMidRunIsSafe) {
  auto engine = test::make_gen_engine();
  ASSERT_TRUE(engine);
  GenViewConfig cfg;
  cfg.exact_cost = GenStepCost::synthetic(500, 10);
  {
    GenView view(*engine, cfg);
    GenTunerPanel* tuner = view.tuner();
    tuner->seconds()->setValue(30);  // the default space, long traffic: slow
    ASSERT_TRUE(tuner->run().ok());
    tuner->cancel();
    ASSERT_TRUE(pump_until([&] { return !tuner->running() && tuner->outcome(); }));
    EXPECT_TRUE(tuner->outcome()->result.cancelled);
    EXPECT_TRUE(tuner->status_text().contains("Cancelled")) << tuner->status_text().toStdString();
    ASSERT_TRUE(tuner->run().ok());
  }  // the view goes while its search runs
  SUCCEED();
}

}  // namespace
}  // namespace batchscope
