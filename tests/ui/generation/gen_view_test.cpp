// SPDX-License-Identifier: GPL-3.0-or-later
// The generation view over a real GenEngine and the weightless SyntheticLm:
// the prompt box streams the model's text, the scheduling controls apply
// live or explain a refusal, traffic fills the plots and the step inspector,
// and a view closed mid-stream gets no late callback.
#include <gtest/gtest.h>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QSpinBox>
#include <QTemporaryDir>
#include <chrono>
#include <memory>
#include <thread>

#include "generation/synthetic_lm.h"
#include "runs/history.h"
#include "runs/history_figures.h"
#include "runs/history_writer.h"
#include "tests/ui/generation/gen_test_support.h"
#include "tests/ui/workbench/toy_window.h"
#include "ui/generation/gen_controls.h"
#include "ui/generation/gen_listener.h"
#include "ui/generation/gen_main_window.h"
#include "ui/generation/gen_plots.h"
#include "ui/generation/gen_prompt.h"
#include "ui/generation/gen_record.h"
#include "ui/generation/gen_step_inspector.h"
#include "ui/generation/gen_traffic.h"
#include "ui/generation/gen_view.h"

namespace batchscope {
namespace {

std::unique_ptr<GenEngine> view_engine(double step_us = 0, double token_us = 0) {
  auto e = test::make_gen_engine(step_us, token_us);
  EXPECT_TRUE(e);
  return e;
}

using test::pump_until;

using test::greedy_text;

TEST(GenView, PromptStreamsTheModelsCompletion) {
  auto engine = view_engine(500, 0);
  GenView view(*engine);
  GenPromptBox* box = view.prompt();
  box->set_prompt("Once upon a time");
  box->set_max_tokens(40);
  box->set_temperature(0);
  ASSERT_TRUE(box->generate().ok());
  EXPECT_TRUE(box->streaming());
  ASSERT_TRUE(pump_until([&] { return !box->streaming(); }));
  EXPECT_EQ(box->output().toStdString(), greedy_text("Once upon a time", 40));
  EXPECT_GT(box->chunks(), 1) << "the text came in one piece, not streamed";
  EXPECT_TRUE(box->status_text().contains("length")) << box->status_text().toStdString();
}

TEST(GenView, ChatSendsTheConversationThroughTheChatTemplate) {
  auto engine = view_engine(500, 0);
  GenView view(*engine);
  GenPromptBox* box = view.prompt();
  box->set_chat(true);
  box->set_max_tokens(10);
  box->set_temperature(0);
  box->set_prompt("Hi");
  ASSERT_TRUE(box->generate().ok());
  ASSERT_TRUE(pump_until([&] { return !box->streaming(); }));
  const std::string first = greedy_text("User: Hi\nAssistant: ", 10);
  EXPECT_EQ(box->output().toStdString(), first);
  ASSERT_EQ(box->conversation().size(), 2u);
  box->set_prompt("More");
  ASSERT_TRUE(box->generate().ok());
  ASSERT_TRUE(pump_until([&] { return !box->streaming(); }));
  EXPECT_EQ(box->output().toStdString(),
            greedy_text("User: Hi\nAssistant: " + first + "\nUser: More\nAssistant: ", 10));
  EXPECT_EQ(box->conversation().size(), 4u);
  EXPECT_TRUE(box->status_text().contains("chat of 4 turns")) << box->status_text().toStdString();
  box->new_chat();
  EXPECT_TRUE(box->conversation().empty());
  // New chat after the engine finished a reply but before the window heard
  // of it: the reply does not join the new conversation.
  const uint64_t completed = engine->status().completed;
  box->set_prompt("Again");
  ASSERT_TRUE(box->generate().ok());
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (engine->status().completed == completed && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the GUI loop is not run
  }
  ASSERT_GT(engine->status().completed, completed);
  box->new_chat();
  EXPECT_FALSE(box->streaming());
  QCoreApplication::processEvents();
  EXPECT_TRUE(box->conversation().empty());
  box->set_chat(false);
  box->set_prompt("Hi");
  ASSERT_TRUE(box->generate().ok());
  ASSERT_TRUE(pump_until([&] { return !box->streaming(); }));
  EXPECT_EQ(box->output().toStdString(), greedy_text("Hi", 10));
  EXPECT_TRUE(box->conversation().empty());
}

TEST(GenView, SwitchingToStaticAppliesLive) {
  auto engine = view_engine();
  GenView view(*engine);
  view.refresh();
  const uint64_t before = engine->status().version;
  view.controls()->scheduling()->setCurrentIndex(1);  // static applies at once
  const GenStatus s = engine->status();
  EXPECT_EQ(s.version, before + 1);
  EXPECT_EQ(s.options.scheduling, Scheduling::kStatic);
  view.refresh();
  EXPECT_TRUE(view.controls()->in_force_text().contains("static"));
  EXPECT_TRUE(view.controls()->in_force_text().contains(QString("v%1").arg(before + 1)));

  // A knob follows after its debounce, or at once with apply_now().
  view.controls()->max_num_seqs()->setValue(8);
  ASSERT_TRUE(view.controls()->apply_now().ok());
  EXPECT_EQ(engine->status().options.max_num_seqs, 8u);
  EXPECT_EQ(engine->status().options.scheduling, Scheduling::kStatic);
}

// The options in force are shown whole: the label is as tall as its lines,
// in the window as it opens (a label given one line for two cut off the
// text's top and its underscores).
TEST(GenView, TheOptionsInForceGetTheHeightOfTheirLines) {
  auto engine = view_engine(200, 1);
  GenView view(*engine);
  view.resize(1600, 1000);
  view.show();
  view.refresh();
  view.controls()->lanes()->setValue(2);
  ASSERT_TRUE(view.controls()->apply_now().ok());
  ASSERT_TRUE(pump_until([&] { return engine->status().lanes == 2; }));
  view.refresh();
  for (int i = 0; i < 5; ++i) QCoreApplication::processEvents();  // the layout's requests
  QLabel* shown = nullptr;
  for (QLabel* l : view.controls()->findChildren<QLabel*>()) {
    if (l->text() == view.controls()->in_force_text()) shown = l;
  }
  ASSERT_TRUE(shown);
  // As tall as its text needs at its width, wrapped or not, and as wide.
  const int needed = std::max(shown->sizeHint().height(), shown->heightForWidth(shown->width()));
  EXPECT_GE(shown->height(), needed) << shown->text().toStdString();
  EXPECT_GE(shown->width(), shown->sizeHint().width()) << shown->text().toStdString();
  EXPECT_TRUE(shown->text().contains("max_num_batched_tokens 512")) << shown->text().toStdString();
}

TEST(GenView, TheLanesControlAddsAndRetiresModelCopiesLive) {
  auto engine = view_engine(200, 1);
  GenView view(*engine);
  view.refresh();
  view.controls()->lanes()->setValue(2);
  ASSERT_TRUE(view.controls()->apply_now().ok());
  EXPECT_EQ(engine->status().options.num_lanes, 2u);
  ASSERT_TRUE(pump_until([&] { return engine->status().lanes == 2; }));
  view.refresh();
  EXPECT_TRUE(view.controls()->in_force_text().contains("2 lanes"))
      << view.controls()->in_force_text().toStdString();
  view.controls()->lanes()->setValue(1);
  ASSERT_TRUE(view.controls()->apply_now().ok());
  EXPECT_EQ(engine->status().lanes, 1u);
}

TEST(GenView, RefusedKnobsAreExplainedAndLeaveTheOptions) {
  auto engine = view_engine();
  GenView view(*engine);
  view.refresh();
  const GenStatus before = engine->status();
  view.controls()->max_num_seqs()->setValue(64);
  view.controls()->max_num_batched_tokens()->setValue(32);
  const Status s = view.controls()->apply_now();
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(view.controls()->problem().contains("max_num_batched_tokens"))
      << view.controls()->problem().toStdString();
  const GenStatus after = engine->status();
  EXPECT_EQ(after.version, before.version);
  EXPECT_EQ(after.options, before.options);
  // The user's values stay for fixing; a fix applies and clears the message.
  view.refresh();
  EXPECT_EQ(view.controls()->max_num_seqs()->value(), 64);
  view.controls()->max_num_batched_tokens()->setValue(256);
  ASSERT_TRUE(view.controls()->apply_now().ok());
  EXPECT_TRUE(view.controls()->problem().isEmpty());
  EXPECT_EQ(engine->status().options.max_num_seqs, 64u);
  EXPECT_EQ(engine->status().options.max_num_batched_tokens, 256u);
}

TEST(GenView, TrafficFillsThePlotsAndTheStepInspector) {
  auto engine = view_engine(1000, 10);
  GenViewConfig cfg;
  cfg.traffic_rate = 60;
  GenView view(*engine, cfg);
  view.traffic()->set_prompt_tokens("fixed:16");
  view.traffic()->set_max_tokens("uniform:4,12");
  ASSERT_TRUE(view.traffic()->start().ok());
  EXPECT_TRUE(view.traffic()->running());
  ASSERT_TRUE(pump_until([&] {
    return view.plots()->ttft_points() > 0 && view.plots()->itl_points() > 0 &&
           view.plots()->throughput_points() > 0;
  })) << "the plots stayed empty";
  view.traffic()->stop();
  EXPECT_GT(view.traffic()->counters().sent.load(), 0u);

  GenStepModel* steps = view.inspector()->model();
  ASSERT_GT(steps->rowCount(), 0);
  // Newest first, each row's sequences matching its counts; some prefilled.
  bool prefill_seen = false, decode_seen = false;
  for (int row = 0; row < steps->rowCount(); ++row) {
    const StepRecord& s = steps->step_at(row);
    if (row > 0) EXPECT_LT(s.step, steps->step_at(row - 1).step);
    EXPECT_EQ(s.seqs.size(), s.decodes + s.prefills);
    const QString text =
        steps->data(steps->index(row, GenStepModel::kSequences), Qt::DisplayRole).toString();
    EXPECT_EQ(text, GenStepModel::sequences_text(s));
    for (const auto& [id, prefill] : s.seqs) {
      EXPECT_TRUE(text.contains('#' + QString::number(id)));
      if (prefill > 0) {
        prefill_seen = true;
        EXPECT_TRUE(text.contains(QString("#%1:%2").arg(id).arg(prefill)));
      } else {
        decode_seen = true;
      }
    }
  }
  EXPECT_TRUE(prefill_seen);
  EXPECT_TRUE(decode_seen);
  EXPECT_TRUE(view.figures_text().contains("output tokens/s"));
}

// Real traffic through the generative engine, recorded into a run history
// file: the run is there, as it goes and finished at Stop, with every
// finished request's token timings and a summary with TTFT and ITL.
TEST(GenView, ARecordedRunGoesIntoTheRunHistory) {
  QTemporaryDir dir;
  const std::string path = dir.filePath("h.sqlite").toStdString();
  auto store = History::open(path);
  ASSERT_TRUE(store.ok());
  HistoryWriter writer(std::move(*store));
  auto engine = view_engine(1000, 10);
  GenViewConfig cfg;
  cfg.traffic_rate = 60;
  {
    GenView view(*engine, cfg);
    view.recorder()->set_history(&writer, [&] {
      GenRecordBox::RunInfo info;
      info.model = "synthetic_lm";
      info.options = engine->status().options;
      info.traffic = view.traffic()->describe();
      return info;
    });
    view.traffic()->set_prompt_tokens("fixed:16");
    view.traffic()->set_max_tokens("uniform:4,12");
    view.recorder()->start("gen live");
    ASSERT_TRUE(view.traffic()->start().ok());
    ASSERT_TRUE(pump_until([&] { return view.recorder()->recorded() >= 20; }));
    writer.flush();
    {
      auto runs = (*History::open(path, {.read_only = true}))->list();
      ASSERT_EQ(runs->size(), 1u);
      EXPECT_FALSE((*runs)[0].finished()) << "still recording";
      EXPECT_GT((*runs)[0].requests_kept, 0u) << "written as it goes";
    }
    view.traffic()->stop();
    view.refresh();
    ASSERT_NE(view.recorder()->stop(), 0u);
    EXPECT_TRUE(view.recorder()->status().contains("TTFT p99"))
        << view.recorder()->status().toStdString();
  }
  writer.flush();
  auto h = History::open(path, {.read_only = true});
  const HistoryRun r = (*(*h)->list())[0];
  EXPECT_EQ(r.kind, "generation");
  EXPECT_EQ(r.label, "gen live");
  EXPECT_TRUE(r.finished());
  EXPECT_NE(r.config.pattern.find("poisson rate=60/s"), std::string::npos) << r.config.pattern;
  auto rows = (*h)->load_generation(r.id, TimePoint{});
  ASSERT_EQ(rows->size(), r.requests_kept);
  for (const HistoryGenRequest& q : *rows) {
    EXPECT_TRUE(q.ok);
    EXPECT_NE(q.first, kNever);
    EXPECT_EQ(q.gaps.size() + 1, q.output_tokens);
  }
  auto steps = (*h)->load_steps(r.id, TimePoint{});
  ASSERT_TRUE(steps.ok());
  EXPECT_GT(steps->size(), 0u) << "the engine's steps are kept too";
  const auto figs = summary_figures(r.summary);
  EXPECT_TRUE(figure(figs, "ttft_p99_ms").has_value());
  EXPECT_EQ(figure(figs, "sent"), static_cast<double>(rows->size()));
}

// The listener's Record switch keeps what the engine finishes as a run of
// kind serve, read back as generative; it stays off where the Record box
// records already.
TEST(GenView, TheListenersRecordSwitchKeepsAServeRun) {
  QTemporaryDir dir;
  const std::string path = dir.filePath("h.sqlite").toStdString();
  auto store = History::open(path);
  ASSERT_TRUE(store.ok());
  HistoryWriter writer(std::move(*store));
  auto engine = view_engine(1000, 10);
  GenViewConfig cfg;
  cfg.traffic_rate = 60;
  {
    GenView view(*engine, cfg);
    view.recorder()->set_history(&writer, [&] {
      GenRecordBox::RunInfo info;
      info.model = "synthetic_lm";
      info.options = engine->status().options;
      return info;
    });
    QCheckBox* record = nullptr;
    for (QCheckBox* c : view.listener()->findChildren<QCheckBox*>())
      if (c->text() == "Record as a serve run") record = c;
    ASSERT_NE(record, nullptr);
    view.recorder()->start("by hand");
    record->setChecked(true);
    EXPECT_FALSE(record->isChecked()) << "the Record box records already";
    EXPECT_TRUE(view.recorder()->recording()) << "and goes on";
    ASSERT_NE(view.recorder()->stop(), 0u);

    record->setChecked(true);
    ASSERT_TRUE(view.recorder()->recording());
    view.traffic()->set_prompt_tokens("fixed:16");
    view.traffic()->set_max_tokens("uniform:4,12");
    ASSERT_TRUE(view.traffic()->start().ok());
    ASSERT_TRUE(pump_until([&] { return view.recorder()->recorded() >= 10; }));
    view.traffic()->stop();
    view.refresh();
    record->setChecked(false);
    EXPECT_FALSE(view.recorder()->recording());
  }
  writer.flush();
  auto h = History::open(path, {.read_only = true});
  auto runs = (*h)->list({.kind = "serve"});
  ASSERT_EQ(runs->size(), 1u);
  const HistoryRun& r = (*runs)[0];
  EXPECT_EQ(r.label, "served clients");
  EXPECT_TRUE(r.generative());
  EXPECT_TRUE(r.finished());
  EXPECT_GE(r.requests_kept, 10u);
}

TEST(GenView, InspectorKeepsOnlyTheNewestSteps) {
  GenStepModel model(3);
  std::vector<StepRecord> steps(5);
  for (size_t i = 0; i < steps.size(); ++i) steps[i].step = i + 1;
  model.add({steps.begin(), steps.begin() + 2});
  model.add({steps.begin() + 2, steps.end()});
  ASSERT_EQ(model.rowCount(), 3);
  EXPECT_EQ(model.step_at(0).step, 5u);
  EXPECT_EQ(model.step_at(2).step, 3u);
}

TEST(GenView, ClosingTheViewWhileAGenerationStreamsIsSafe) {
  auto engine = view_engine(3000, 0);  // about 3 ms a token: long enough to close mid-stream
  auto* view = new GenView(*engine);
  GenPromptBox* box = view->prompt();
  box->set_max_tokens(500);
  ASSERT_TRUE(box->generate().ok());
  ASSERT_TRUE(pump_until([&] { return box->chunks() > 2; }));
  delete view;  // cancels; callbacks already posted find no box
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  while (std::chrono::steady_clock::now() < until) QApplication::processEvents();
  ASSERT_TRUE(pump_until([&] { return engine->status().completed == 1; }));
  EXPECT_LT(engine->status().output_tokens, 500u) << "the generation was not cancelled";
}

TEST(GenView, WindowClosesWithTrafficRunning) {
  GenViewConfig cfg;
  cfg.traffic_rate = 200;
  cfg.start_traffic = true;
  auto window = std::make_unique<GenMainWindow>(view_engine(500, 5), cfg);
  window->resize(1400, 900);
  window->show();
  ASSERT_TRUE(pump_until([&] { return window->engine().status().admitted > 5; }));
  EXPECT_TRUE(window->view()->traffic()->running());
  window->view()->prompt()->generate();
  window.reset();  // the view (traffic, prompt) goes before the engine
}

TEST(GenView, WorkbenchOffersModelsToItsGenerativeHookFirst) {
  std::atomic<int> calls{0};
  WorkbenchConfig cfg = toy_config();
  cfg.loader = toy_loader(&calls);
  std::vector<std::string> offered;
  cfg.open_generative = [&](const ModelRequest& r, QWidget* parent) -> std::optional<Status> {
    EXPECT_NE(parent, nullptr);
    offered.push_back(r.path);
    if (r.path == "lm.pt") return Status::Ok();
    if (r.path == "broken_lm.pt") return invalid_argument("broken_lm.pt: no cache layout");
    return std::nullopt;
  };
  WorkbenchWindow w(cfg);
  ModelRequest r;
  r.path = "lm.pt";
  w.load_model(r);
  EXPECT_FALSE(w.loading());
  r.path = "broken_lm.pt";
  w.load_model(r);
  EXPECT_FALSE(w.loading());
  EXPECT_TRUE(w.model_panel()->error_text().contains("no cache layout"));
  EXPECT_EQ(calls.load(), 0);
  r.path = "mlp.pt";  // not generative: the loader's
  w.load_model(r);
  ASSERT_TRUE(w.wait_loaded(20000));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(offered, (std::vector<std::string>{"lm.pt", "broken_lm.pt", "mlp.pt"}));
}

}  // namespace
}  // namespace batchscope
