// SPDX-License-Identifier: GPL-3.0-or-later
// The context a run keeps of its model: a Python model's is its class, its
// interpreter (with the Python and numpy it runs) and its workers' threads,
// not LibTorch's facts, which do not describe what ran it.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>

#include "model/history_keeping.h"
#include "model/local_model.h"

namespace batchscope {
namespace {

using nlohmann::json;

TEST(RunContext, APythonModelsContextIsItsClassAndInterpretersNotLibTorchs) {
  ModelChoice m;
  m.path = std::string(BATCHSCOPE_SOURCE_DIR) + "/models/python/sentiment.py";
  auto model = LocalModel::open(m);
  if (!model) GTEST_SKIP() << "no Python model here: " << model.error().message;
  const auto py = python_context(*model, 2, 3);
  ASSERT_TRUE(py);
  EXPECT_EQ(py->class_name, "Sentiment");
  EXPECT_EQ(py->interpreter, "/usr/bin/python3");
  EXPECT_TRUE(py->preprocess);
  EXPECT_TRUE(py->postprocess);
  EXPECT_EQ(py->version.rfind("3.", 0), 0u) << py->version;
  EXPECT_FALSE(py->numpy.empty());  // the model imports numpy, so the interpreter has it
  if (std::getenv("OMP_NUM_THREADS") == nullptr) EXPECT_EQ(py->worker_threads, 3);

  const json j = json::parse(run_context_json(m.path, "cpu", py));
  ASSERT_TRUE(j.contains("python")) << j.dump();
  EXPECT_EQ(j["python"]["class"], "Sentiment");
  EXPECT_EQ(j["python"]["preprocess"], true);
  EXPECT_EQ(j["python"]["numpy"], py->numpy);
  EXPECT_FALSE(j.contains("torch")) << "LibTorch did not run the class";
  EXPECT_TRUE(j["model"].contains("sha256"));

  // Any other model: no Python context, and LibTorch's facts as before.
  ModelChoice synthetic;
  synthetic.synthetic = SyntheticCost{100, 10};
  auto other = LocalModel::open(synthetic);
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_FALSE(python_context(*other, 1));
  const json t = json::parse(run_context_json("", "cpu"));
  EXPECT_TRUE(t.contains("torch"));
  EXPECT_FALSE(t.contains("python"));
}

TEST(RunContext, AWorkersThreadsAreTheCoresOverTheLanesUnlessGiven) {
  if (std::getenv("OMP_NUM_THREADS") != nullptr) GTEST_SKIP() << "OMP_NUM_THREADS is set";
  EXPECT_EQ(python_worker_threads(1, 5), 5);
  EXPECT_GE(python_worker_threads(1), python_worker_threads(64));
  EXPECT_EQ(python_worker_threads(100000), 1);
}

}  // namespace
}  // namespace batchscope
