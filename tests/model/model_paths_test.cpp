// SPDX-License-Identifier: GPL-3.0-or-later
// Finding a --model value from any folder: the models folder from
// $BATCHSCOPE_MODELS or the install prefix, a file here first.

#include "model/model_paths.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace batchscope {
namespace {
namespace fs = std::filesystem;

class FindModel : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("batchscope_find_model_" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "shipped");
    fs::create_directories(dir_ / "here" / "models");
    std::ofstream(dir_ / "shipped" / "mlp.pt") << "x";
    std::ofstream(dir_ / "shipped" / "cnn.pt") << "x";
    std::ofstream(dir_ / "here" / "models" / "cnn.pt") << "x";
    old_cwd_ = fs::current_path();
    fs::current_path(dir_ / "here");
    ::setenv("BATCHSCOPE_MODELS", (dir_ / "shipped").c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("BATCHSCOPE_MODELS");
    fs::current_path(old_cwd_);
    fs::remove_all(dir_);
  }
  std::string shipped(const std::string& name) {
    return (fs::canonical(dir_ / "shipped") / name).string();
  }
  fs::path dir_, old_cwd_;
};

TEST_F(FindModel, TheModelsFolderComesFromTheEnvironment) {
  EXPECT_EQ(models_dir(), fs::canonical(dir_ / "shipped").string());
  ::setenv("BATCHSCOPE_MODELS", (dir_ / "missing").c_str(), 1);
  EXPECT_EQ(models_dir(), "");
}

TEST_F(FindModel, AFileHereWinsAndOtherwiseTheModelsFolderIsTried) {
  EXPECT_EQ(find_model("models/cnn.pt"), "models/cnn.pt");  // exists here
  EXPECT_EQ(find_model("models/mlp.pt"), shipped("mlp.pt"));
  EXPECT_EQ(find_model("mlp.pt"), shipped("mlp.pt"));
  EXPECT_EQ(find_model("mlp"), shipped("mlp.pt"));
  EXPECT_EQ(find_model("./models/mlp.pt"), shipped("mlp.pt"));
  EXPECT_EQ(find_model("elsewhere/mlp.pt"), shipped("mlp.pt"));  // by its file name
}

TEST_F(FindModel, AValueFoundNowhereIsKeptForTheError) {
  EXPECT_EQ(find_model("models/nothing.pt"), "models/nothing.pt");
  EXPECT_EQ(find_model("nothing"), "nothing");
  EXPECT_EQ(find_model("/abs/mlp.pt"), "/abs/mlp.pt");  // absolute: never redirected
  EXPECT_EQ(find_model(""), "");
}

TEST_F(FindModel, WithoutTheEnvironmentThePrefixBesideTheExecutableIsUsed) {
  ::unsetenv("BATCHSCOPE_MODELS");
  fs::current_path(dir_);  // no models/ here
  ASSERT_EQ(fs::path(executable_dir()).filename(), "bin");
  // The build tree has the installed layout when it builds the executable.
  const fs::path prefix =
      fs::path(executable_dir()).parent_path() / "share" / "batchscope" / "models";
  if (fs::is_directory(prefix)) {
    EXPECT_EQ(models_dir(), fs::canonical(prefix).string());
    EXPECT_EQ(find_model("mlp"), (fs::canonical(prefix) / "mlp.pt").string());
  } else {
    EXPECT_EQ(models_dir(), "");
    EXPECT_EQ(find_model("mlp"), "mlp");
  }
}

}  // namespace
}  // namespace batchscope
