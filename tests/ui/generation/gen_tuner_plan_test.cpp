// SPDX-License-Identifier: GPL-3.0-or-later
// The generation view's Tuner tab in "Plan for a GPU" mode: a shipped
// config.json (llama-3.1-8b) planned for an h100-sxm, the traffic panel's
// traffic tuned there on the roofline's step cost, the front plotted and
// tabled, Apply off, and an export that carries the serving plan (kserve);
// a model refused by name (mixtral-8x7b) is said, and nothing runs.
#include <gtest/gtest.h>

#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QImage>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableWidget>
#include <cstdlib>
#include <optional>
#include <string>

#include "export/export_config.h"
#include "model/planned_tune.h"
#include "tests/ui/generation/gen_test_support.h"
#include "tuning/tune_space.h"
#include "ui/generation/gen_traffic.h"
#include "ui/generation/gen_tuner.h"
#include "ui/generation/gen_tuner_plan.h"
#include "ui/generation/gen_view.h"

namespace batchscope {
namespace {

using test::pump_until;

constexpr const char* kPlanSpace = "max_num_seqs=8|32,max_num_batched_tokens=512|2048";

// The source tree's models/, wherever the suite runs from: a build's
// share/batchscope/models holds them only where the build copied them.
class ShippedModels {
 public:
  ShippedModels() {
    if (const char* v = std::getenv("BATCHSCOPE_MODELS")) saved_ = v;
    ::setenv("BATCHSCOPE_MODELS", BATCHSCOPE_SOURCE_DIR "/models", 1);
  }
  ~ShippedModels() {
    if (saved_) {
      ::setenv("BATCHSCOPE_MODELS", saved_->c_str(), 1);
    } else {
      ::unsetenv("BATCHSCOPE_MODELS");
    }
  }
  ShippedModels(const ShippedModels&) = delete;
  ShippedModels& operator=(const ShippedModels&) = delete;

 private:
  std::optional<std::string> saved_;
};

TEST(GenTunerPlan, PlansAShippedConfigForAGpuAndExportsItsServingPlan) {
  const ShippedModels models;
  auto engine = test::make_gen_engine();
  ASSERT_TRUE(engine);
  GenViewConfig cfg;
  cfg.exact_cost = GenStepCost::synthetic(500, 10);
  GenView view(*engine, cfg);
  view.traffic()->set_rate(4);
  GenTunerPanel* tuner = view.tuner();
  EXPECT_FALSE(tuner->planning());
  EXPECT_TRUE(tuner->apply_button()->isEnabled());

  tuner->mode()->setCurrentIndex(1);  // Plan for a GPU
  ASSERT_TRUE(tuner->planning());
  EXPECT_EQ(tuner->space()->text().toStdString(), default_planned_space_text())
      << "the planned tune's default space";
  EXPECT_FALSE(tuner->apply_button()->isEnabled()) << "the model is not here";
  EXPECT_TRUE(tuner->apply_button()->toolTip().contains("not here"))
      << tuner->apply_button()->toolTip().toStdString();
  GenTunerPlanInputs* plan = tuner->plan();
  ASSERT_TRUE(plan->select_config("llama-3.1-8b")) << "models/llm-configs is found";
  ASSERT_TRUE(plan->select_gpu("h100-sxm"));
  plan->tp()->setValue(2);
  tuner->space()->setText(kPlanSpace);
  tuner->seconds()->setValue(3);
  tuner->ttft_ms()->setValue(500);
  tuner->itl_ms()->setValue(50);
  tuner->find_capacity()->setChecked(true);
  EXPECT_FALSE(plan->refused()) << plan->planned_text().toStdString();
  EXPECT_TRUE(plan->planned_text().contains("h100-sxm")) << plan->planned_text().toStdString();
  EXPECT_TRUE(tuner->run_button()->isEnabled());

  ASSERT_TRUE(tuner->run().ok()) << tuner->error_text().toStdString();
  ASSERT_TRUE(
      pump_until([&] { return !tuner->running() && tuner->outcome(); }, std::chrono::seconds(120)));
  const GenTunerOutcome& out = *tuner->outcome();
  ASSERT_TRUE(out.result.best.ok()) << out.result.best.error().message;
  ASSERT_TRUE(out.planned);
  EXPECT_EQ(out.result.space_size, 4u);
  EXPECT_EQ(out.plan_reserve.max_num_seqs, 32u) << "the space's largest";
  EXPECT_EQ(out.plan_reserve.max_num_batched_tokens, 2048u);
  EXPECT_DOUBLE_EQ(out.headroom.needed, 1.15);
  EXPECT_TRUE(tuner->status_text().contains("roofline")) << tuner->status_text().toStdString();

  // The front: tabled, the best first, and plotted.
  ASSERT_GE(tuner->table()->rowCount(), 1);
  EXPECT_TRUE(tuner->table()->item(0, 0)->text().startsWith("best"));
  EXPECT_GE(tuner->plotted_points(), 1);
  ASSERT_TRUE(out.capacity);
  EXPECT_GT(out.capacity_rps, 4.0) << "an 8B model on an H100 serves more than 4 req/s";
  EXPECT_TRUE(tuner->capacity_text().contains("req/s")) << tuner->capacity_text().toStdString();
  EXPECT_FALSE(tuner->apply_button()->isEnabled());
  EXPECT_FALSE(tuner->apply_selected().ok()) << "nothing here to apply to";
  EXPECT_EQ(engine->status().options.max_num_seqs, Options{}.max_num_seqs);

  // The export carries the plan: kserve, as well as vLLM, takes it.
  auto in = tuner->export_input();
  ASSERT_TRUE(in.ok()) << in.error().message;
  ASSERT_TRUE(in->plan);
  ASSERT_TRUE(in->lm);
  EXPECT_EQ(in->plan->gpu, "h100-sxm");
  EXPECT_EQ(in->plan->tp, 2u);
  EXPECT_EQ(in->plan->replicas, 1u);
  EXPECT_DOUBLE_EQ(in->plan->headroom, 0.15);
  EXPECT_DOUBLE_EQ(in->plan->capacity_rps, out.capacity_rps);
  EXPECT_GT(in->plan->e2e_p50_ms, 0);
  EXPECT_FALSE(in->plan->caveats.empty());
  EXPECT_FALSE(in->plan->model_id.empty());
  EXPECT_EQ(in->lm->name, out.planned->info.name);
  EXPECT_EQ(in->lm->num_blocks, out.planned->info.num_blocks);
  EXPECT_TRUE(in->tuning.hardware.empty()) << "not this machine's";
  auto kserve = export_config(ExportFormat::kKserve, *in);
  ASSERT_TRUE(kserve.ok()) << kserve.error().message;
  ASSERT_FALSE(kserve->empty());
  EXPECT_NE(kserve->front().text.find("h100-sxm"), std::string::npos) << kserve->front().text;
  auto vllm = export_config(ExportFormat::kVllm, *in);
  ASSERT_TRUE(vllm.ok()) << vllm.error().message;
  EXPECT_NE(vllm->front().text.find("tensor-parallel-size: 2"), std::string::npos)
      << vllm->front().text;

  // Offscreen, the view with its Tuner tab in plan mode (a picture to look at).
  if (auto* tabs = view.findChild<QTabWidget*>()) tabs->setCurrentWidget(tuner);
  view.resize(1500, 1000);
  const QImage img = view.grab().toImage();
  ASSERT_FALSE(img.isNull());
  EXPECT_TRUE(img.save(QDir::temp().filePath("batchscope_gen_tuner_plan_test.png")));

  // Back to this model: the default space again, Apply back, the plan's
  // results gone.
  tuner->mode()->setCurrentIndex(0);
  EXPECT_FALSE(tuner->planning());
  EXPECT_EQ(tuner->space()->text(), kPlanSpace) << "a typed space stays";
  EXPECT_TRUE(tuner->apply_button()->isEnabled());
  EXPECT_FALSE(tuner->outcome());
  EXPECT_EQ(tuner->table()->rowCount(), 0);
}

TEST(GenTunerPlan, AModelRefusedByNameIsSaidAndNothingRuns) {
  const ShippedModels models;
  auto engine = test::make_gen_engine();
  ASSERT_TRUE(engine);
  GenViewConfig cfg;
  cfg.exact_cost = GenStepCost::synthetic(500, 10);
  GenView view(*engine, cfg);
  GenTunerPanel* tuner = view.tuner();
  tuner->mode()->setCurrentIndex(1);
  GenTunerPlanInputs* plan = tuner->plan();
  ASSERT_TRUE(plan->select_config("mixtral-8x7b"));
  EXPECT_TRUE(plan->refused());
  EXPECT_TRUE(plan->planned_text().contains("expert")) << plan->planned_text().toStdString();
  EXPECT_FALSE(tuner->run_button()->isEnabled());
  EXPECT_FALSE(tuner->run().ok());
  EXPECT_FALSE(tuner->running());
  EXPECT_FALSE(tuner->error_text().isEmpty());
  tuner->resize(1200, 900);  // the refusal, in red (a picture to look at)
  EXPECT_TRUE(tuner->grab().toImage().save(
      QDir::temp().filePath("batchscope_gen_tuner_plan_refused_test.png")));
  // Another model plans again, and Run is back.
  ASSERT_TRUE(plan->select_config("qwen3-8b"));
  EXPECT_FALSE(plan->refused()) << plan->planned_text().toStdString();
  EXPECT_TRUE(tuner->run_button()->isEnabled());
  // A config added by path (what "Other…" does with its file) is picked.
  plan->add_config(QString::fromStdString(shipped_llm_configs().front().second));
  EXPECT_FALSE(plan->refused()) << plan->planned_text().toStdString();
  // A GPU too small for the weights: refused, said, Run off.
  plan->select_config("llama-3.1-70b");
  ASSERT_TRUE(plan->select_gpu("l4"));
  EXPECT_TRUE(plan->refused());
  EXPECT_FALSE(tuner->run_button()->isEnabled());
}

}  // namespace
}  // namespace batchscope
