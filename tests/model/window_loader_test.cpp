// SPDX-License-Identifier: GPL-3.0-or-later
// The workbench's model loader on real TorchScript files: a load reports its
// steps (sidecar, warm-up of each lane, each point of the profile) and comes
// back ready; a load cancelled at its first warm-up step stops there with
// kCancelled, loads no further lane and never reaches the profile; the token
// of a finished load does not reach lanes the engine adds later; a Python
// model's load keeps what requests send apart from what its lanes run.

#include "model/window_loader.h"
#include "tests/torch/model_files.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace batchscope {
namespace {

using test::kModels;

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

int count_starting(const std::vector<std::string>& said, const char* prefix) {
  int n = 0;
  for (const std::string& s : said) n += starts_with(s, prefix);
  return n;
}

ModelRequest two_lanes(const std::string& file) {
  ModelRequest r;
  r.path = kModels + file;
  r.options.num_lanes = 2;
  r.options.max_batch_size = 8;
  return r;
}

TEST(ModelLoader, ACancelAtTheFirstWarmUpStepStopsTheLoadBeforeTheProfile) {
  ModelRequest r = two_lanes("mlp.pt");
  std::vector<std::string> said;
  const ModelLoader load = make_model_loader(1);
  auto m = load(r, [&](int, const std::string& what) {
    said.push_back(what);
    if (starts_with(what, "Warming up")) r.cancel.cancel();  // the window closes
  });
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kCancelled);
  EXPECT_NE(m.error().message.find("mlp.pt was cancelled"), std::string::npos) << m.error().message;
  EXPECT_EQ(count_starting(said, "Warming up"), 1);  // no further size, no second lane
  EXPECT_EQ(count_starting(said, "Measuring"), 0);
  EXPECT_EQ(count_starting(said, "Ready"), 0);
}

TEST(ModelLoader, ALoadReportsEachStepAndTheTokenOfAFinishedLoadReachesNoLaterLane) {
  ModelRequest r = two_lanes("linear_128x64.pt");
  std::vector<std::string> said;
  const ModelLoader load = make_model_loader(1);
  auto m = load(r, [&said](int, const std::string& what) { said.push_back(what); });
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(count_starting(said, "Warming up lane 1 of 2"), 4);  // b = 1, 2, 4, 8
  EXPECT_EQ(count_starting(said, "Warming up lane 2 of 2"), 4);
  // The profile runs to min(the model's maximum, 256): one report per point.
  EXPECT_EQ(count_starting(said, "Measuring t(b): batch"), static_cast<int>(m->profile.size()));
  EXPECT_EQ(said.back(), "Ready");
  // A lane the engine adds later loads afresh, whatever became of the token.
  r.cancel.cancel();
  const size_t reports = said.size();
  EXPECT_NE(m->factory(2), nullptr);
  EXPECT_EQ(said.size(), reports);  // and reports to no progress bar
}

// A class with preprocess and postprocess: what requests send and get is
// its request_inputs and response_outputs, what its lanes run its inputs and
// outputs; the window's exports need both.
TEST(ModelLoader, APythonModelKeepsWhatRequestsSendApartFromWhatItsLanesRun) {
  ModelRequest r;
  r.path = kModels + "python/sentiment.py";
  r.options.max_batch_size = 2;
  auto m = make_model_loader(1)(r, [](int, const std::string&) {});
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_EQ(m->metadata.inputs.size(), 1u);
  EXPECT_EQ(m->metadata.inputs[0].name, "text");
  EXPECT_EQ(m->metadata.outputs[0].name, "sentiment");
  ASSERT_EQ(m->lane_metadata.inputs.size(), 1u);
  EXPECT_EQ(m->lane_metadata.inputs[0].name, "tokens");
  EXPECT_EQ(m->lane_metadata.outputs[0].name, "logits");
  // Any other model's lanes run what its requests send.
  auto t = make_model_loader(1)(two_lanes("mlp.pt"), [](int, const std::string&) {});
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->lane_metadata.inputs[0].name, t->metadata.inputs[0].name);
}

TEST(ModelLoader, APythonModelRunsTheClassTheRequestNames) {
  ModelRequest r;
  r.path = std::string(BATCHSCOPE_SOURCE_DIR) + "/tests/python/handlers/two_classes.py";
  r.options.max_batch_size = 4;
  const auto quiet = [](int, const std::string&) {};
  // Two classes with a predict, none named: the load says which to name.
  auto none = make_model_loader(1)(r, quiet);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("--class"), std::string::npos) << none.error().message;
  r.python.class_name = "Second";
  auto second = make_model_loader(1)(r, quiet);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(second->metadata.max_batch_size, 8u);  // Second's own
  ASSERT_TRUE(second->python.has_value());
  EXPECT_EQ(second->python->class_name, "Second");
}

}  // namespace
}  // namespace batchscope
