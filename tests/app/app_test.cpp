// SPDX-License-Identifier: GPL-3.0-or-later
// The executable's own helpers: finding a --model value from any folder
// (the models folder from $BATCHSCOPE_MODELS or the install prefix), and the
// manual page and bash completion made from the --help texts.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "app/cost_setup.h"
#include "app/help_pages.h"
#include "app/install_paths.h"
#include "app/model_setup.h"

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

const FlagHelp* flag(const std::vector<FlagHelp>& flags, const std::string& name) {
  for (const FlagHelp& f : flags)
    if (f.flag == name) return &f;
  return nullptr;
}

TEST(HelpPages, FlagsAreReadWithWhatTheirValuesAre) {
  const std::string help =
      "usage: x [--model PATH | --synthetic A_US,C_US] [--device cpu|cuda:N]\n"
      "  --strategy fifo|adaptive  how\n"
      "  --rate R     per second\n"
      "  --plot FILE.png  a picture\n"
      "--no-traffic keeps it idle; --json=FILE writes; a--b is not a flag, nor is --1.\n";
  const auto flags = flags_in_help(help);
  ASSERT_EQ(flags.size(), 8u);
  EXPECT_TRUE(flag(flags, "--model")->takes_file);
  EXPECT_TRUE(flag(flags, "--synthetic")->takes_value);
  EXPECT_FALSE(flag(flags, "--synthetic")->takes_file);
  EXPECT_EQ(flag(flags, "--device")->values, std::vector<std::string>{"cpu"});
  EXPECT_EQ(flag(flags, "--strategy")->values, (std::vector<std::string>{"fifo", "adaptive"}));
  EXPECT_TRUE(flag(flags, "--rate")->takes_value);
  EXPECT_TRUE(flag(flags, "--plot")->takes_file);
  EXPECT_FALSE(flag(flags, "--no-traffic")->takes_value);
  EXPECT_TRUE(flag(flags, "--json")->takes_file);
  EXPECT_EQ(flag(flags, "--b"), nullptr);
}

TEST(HelpPages, TheManualPageEscapesWhatRoffWouldTakeAsControls) {
  const std::string page =
      man_page("1.2.3", "usage: batchscope\n",
               {{"serve", "usage: serve --port N\n.dot starts a line\n'quote too\na \\ b\n"}});
  EXPECT_NE(page.find(".TH BATCHSCOPE 1 \"\" \"batchscope 1.2.3\""), std::string::npos);
  EXPECT_NE(page.find(".SS \"batchscope serve\"\n.nf\nusage: serve \\-\\-port N\n"),
            std::string::npos);
  EXPECT_NE(page.find("\n\\&.dot starts a line\n"), std::string::npos);
  EXPECT_NE(page.find("\n\\&'quote too\n"), std::string::npos);
  EXPECT_NE(page.find("\na \\e b\n"), std::string::npos);
}

TEST(HelpPages, TheCompletionHasACaseForEachCommand) {
  const std::string script =
      bash_completion({{"serve", "--model PATH --strategy fifo|adaptive --port N --json FILE"},
                       {"demo", "--seconds S"}},
                      {"--help", "--version"});
  EXPECT_NE(script.find("compgen -W \"serve demo --help --version\""), std::string::npos) << script;
  EXPECT_NE(script.find("    serve)\n"), std::string::npos);
  EXPECT_NE(script.find("--strategy) COMPREPLY=($(compgen -W \"fifo adaptive\""),
            std::string::npos);
  EXPECT_NE(script.find("--json) compopt -o filenames"), std::string::npos);
  EXPECT_NE(script.find("--model) compopt -o filenames"), std::string::npos);
  EXPECT_NE(script.find("$(compgen -W \"$(_batchscope_models)\""), std::string::npos);
  EXPECT_NE(script.find("--port) return ;;"), std::string::npos);
  EXPECT_NE(script.find("flags=\"--seconds\""), std::string::npos);
  EXPECT_NE(script.find("complete -F _batchscope batchscope"), std::string::npos);
}

TEST(HelpPages, TheCompletionAsksTheHistoryForRunIds) {
  const std::string script = bash_completion({{"runs", "usage: runs list"}}, {});
  EXPECT_NE(script.find("compgen -W \"list show compare export rm import\""), std::string::npos);
  EXPECT_NE(script.find("runs ids 2>/dev/null"), std::string::npos) << script;
}

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

// --warmup: auto warms every size on a GPU (cuDNN's plans) and doubles on a
// CPU; a value it does not know is quoted.
TEST(ModelFlags, WarmupIsReadAndAutoFollowsTheDevice) {
  std::map<std::string, std::string> flags{{"synthetic", "100,10"}};
  auto plain = take_model_flags(flags, "");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->warmup, "auto");
  EXPECT_FALSE(plain->warmup_every_size());
  plain->device = "cuda:0";
  EXPECT_TRUE(plain->warmup_every_size());
  flags = {{"synthetic", "100,10"}, {"warmup", "doubling"}, {"device", "cuda:1"}};
  auto doubling = take_model_flags(flags, "");
  ASSERT_TRUE(doubling.ok());
  EXPECT_FALSE(doubling->warmup_every_size());
  EXPECT_TRUE(flags.empty());
  flags = {{"synthetic", "100,10"}, {"warmup", "every"}};
  auto every = take_model_flags(flags, "");
  ASSERT_TRUE(every.ok());
  EXPECT_TRUE(every->warmup_every_size());
  flags = {{"synthetic", "100,10"}, {"warmup", "twice"}};
  auto bad = take_model_flags(flags, "");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "--warmup must be auto, doubling or every, not 'twice'");
}

}  // namespace
}  // namespace batchscope
