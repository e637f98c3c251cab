// SPDX-License-Identifier: GPL-3.0-or-later
// The executable's own helpers: the manual page and bash completion made
// from the --help texts, and the model flags read into core/model's choice.

#include <gtest/gtest.h>

#include <map>

#include "app/help_pages.h"
#include "app/model_flags.h"

namespace batchscope {
namespace {
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
