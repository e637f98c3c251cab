// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A window over the synthetic stand-in for the window suites: the "toy"
// model (one FP32 input [-1, 4], output 2x + 1), a loader that makes "toy8",
// and a starting configuration with traffic off.

#include <gtest/gtest.h>

#include <QApplication>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include <unistd.h>

#include "batching/synthetic_runner.h"
#include "ui/workbench/traffic_panel.h"
#include "ui/workbench/workbench_window.h"

namespace batchscope {

inline ModelMetadata toy_model(const std::string& name = "toy", uint32_t max_batch = 64) {
  ModelMetadata m;
  m.name = name;
  m.max_batch_size = max_batch;
  m.inputs = {TensorSpec{"data", DType::kFloat32, {-1, 4}, false}};
  m.outputs = {TensorSpec{"output", DType::kFloat32, {-1, 4}, false}};
  return m;
}

inline LoadedModel toy_loaded(const std::string& name = "toy", uint32_t max_batch = 64) {
  LoadedModel m;
  m.metadata = toy_model(name, max_batch);
  m.factory = SyntheticRunner::factory({.fixed_us = 100, .per_item_us = 5});
  m.path = "synthetic:100,5";
  m.profile = {{1, 105, 0}, {2, 110, 0}, {4, 120, 0}, {8, 140, 0}};
  m.synthetic = SyntheticCost{.fixed_us = 100, .per_item_us = 5};
  m.a_us = 100;
  m.c_us = 5;
  m.asymptotic_speedup = 21;
  return m;
}

// Loads "toy8" (max batch 8) for any path but "missing.pt", which fails.
inline ModelLoader toy_loader(std::atomic<int>* calls) {
  return [calls](const ModelRequest& r, const LoadProgress& progress) -> Expected<LoadedModel> {
    ++*calls;
    progress(50, "half way");
    if (r.path == "missing.pt") return invalid_argument("cannot open missing.pt");
    return toy_loaded("toy8", 8);
  };
}

inline WorkbenchConfig toy_config() {
  WorkbenchConfig cfg;
  cfg.loaded = toy_loaded();
  cfg.options = Options{.max_batch_size = 16, .max_wait_us = 1000};
  cfg.traffic_rate = 2000;
  cfg.start_traffic = false;
  return cfg;
}

// XDG_CACHE_HOME pointed at a folder of the test's own while alive (the kept
// costs go there), then put back and the folder removed.
class TempCacheHome {
 public:
  explicit TempCacheHome(const std::string& name)
      : dir_(std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir_);
    if (const char* old = std::getenv("XDG_CACHE_HOME")) saved_ = old;
    ::setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
  }
  ~TempCacheHome() {
    if (saved_)
      ::setenv("XDG_CACHE_HOME", saved_->c_str(), 1);
    else
      ::unsetenv("XDG_CACHE_HOME");
    std::filesystem::remove_all(dir_);
  }

 private:
  std::filesystem::path dir_;
  std::optional<std::string> saved_;
};

inline void wait_for_ok(WorkbenchWindow& w, uint64_t n) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (w.traffic()->counters().ok.load() < n) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "no traffic completed";
    QApplication::processEvents();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace batchscope
