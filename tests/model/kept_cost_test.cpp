// SPDX-License-Identifier: GPL-3.0-or-later
// The kept cost's key: what makes two runs the same model on the same
// machine and device.

#include "model/kept_cost.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace batchscope {
namespace {
namespace fs = std::filesystem;

#ifdef BATCHSCOPE_WITH_HISTORY
// The kept cost's key follows the model file's bytes, not its name or place:
// a changed file is another model, a copy elsewhere the same one.
TEST(CostKey, FollowsTheModelFilesBytes) {
  const fs::path dir =
      fs::temp_directory_path() / ("batchscope_cost_key_" + std::to_string(::getpid()));
  fs::create_directories(dir / "copy");
  for (const char* f : {"linear_128x64.pt", "linear_128x64.json"}) {
    fs::copy_file(fs::path(BATCHSCOPE_SOURCE_DIR) / "models" / f, dir / f);
    fs::copy_file(fs::path(BATCHSCOPE_SOURCE_DIR) / "models" / f, dir / "copy" / f);
  }
  ModelChoice m;
  m.path = (dir / "linear_128x64.pt").string();
  auto before = cost_key_for(m);
  ASSERT_TRUE(before.ok()) << before.error().message;
  EXPECT_EQ(before->model, "linear_128x64");
  EXPECT_EQ(before->model_id.rfind("sha256:", 0), 0u);
  EXPECT_NE(before->machine.find("\"cores\""), std::string::npos) << before->machine;
  ModelChoice copy = m;
  copy.path = (dir / "copy" / "linear_128x64.pt").string();
  EXPECT_EQ(cost_key_for(copy)->id(), before->id());
  std::ofstream(m.path, std::ios::app) << 'x';
  auto after = cost_key_for(m);
  ASSERT_TRUE(after.ok());
  EXPECT_NE(after->model_id, before->model_id);
  EXPECT_NE(after->id(), before->id());
  ModelChoice gpu = copy;
  gpu.device = "cuda:0";
  EXPECT_NE(cost_key_for(gpu)->id(), before->id());
  ModelChoice synthetic;
  synthetic.synthetic = SyntheticCost{300, 20};
  EXPECT_EQ(cost_key_for(synthetic)->model_id, "synthetic:300,20,0,0,spin");
  fs::remove_all(dir);
}
#endif

}  // namespace
}  // namespace batchscope
