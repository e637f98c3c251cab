// SPDX-License-Identifier: GPL-3.0-or-later
// The HTTP fronts a bench hands down: over this process's own listener
// (self-http) and over another server's URL, every request sent answered
// through the model, on real sockets at 127.0.0.1.

#include "api/http_fronts.h"

#include <condition_variable>
#include <mutex>

#include "tests/api/generation_fixture.h"
#include "tests/api/server_fixture.h"

namespace batchscope::test {
namespace {

// Sends `n` requests through `target`; how many came back ok.
size_t send_all(LoadTarget& target, size_t n) {
  std::mutex mu;
  std::condition_variable cv;
  size_t done = 0, ok = 0;
  for (size_t i = 0; i < n; ++i) {
    target.send(i, [&](const LoadTarget::Result& r) {
      std::lock_guard g(mu);
      ++done;
      if (r.outcome == Outcome::kOk) ++ok;
      cv.notify_all();
    });
  }
  std::unique_lock g(mu);
  EXPECT_TRUE(cv.wait_for(g, kSafety, [&] { return done == n; })) << done << " of " << n;
  return ok;
}

using TensorFrontTest = ServerTest;

TEST_F(TensorFrontTest, SelfHttpServesTheRunsEngineOnAListenerOfItsOwn) {
  start();
  TensorHttpFront front(std::nullopt, "cpu", 4, 1, {}, std::nullopt);
  auto target = front.open(engine_.get(), meta_, {});
  ASSERT_TRUE(target.ok()) << target.error().message;
  EXPECT_EQ(send_all(**target, 20), 20u);
  front.close();
  EXPECT_EQ(engine_->status().counters.ok, 20u);
  EXPECT_EQ(server_->counters().parsed, 0u);  // not the fixture's listener
}

TEST_F(TensorFrontTest, AUrlIsAnotherServersWithTheBodiesGiven) {
  start();
  auto url = target_url("http://127.0.0.1:" + std::to_string(port_) + "/infer", "");
  ASSERT_TRUE(url.ok()) << url.error().message;
  TensorHttpFront front(*url, "cpu", 2, 1, {data_body(1), data_body(2)}, std::nullopt);
  auto target = front.open(nullptr, meta_, {});
  ASSERT_TRUE(target.ok()) << target.error().message;
  EXPECT_EQ(send_all(**target, 10), 10u);
  front.close();
  EXPECT_EQ(settled_counters().written, 10u);
}

TEST(TensorFront, ATargetThatIsNoUrlIsRefusedByName) {
  auto url = target_url("ftp://example", "t");
  ASSERT_FALSE(url.ok());
  EXPECT_NE(url.error().message.find("--target: "), std::string::npos) << url.error().message;
  EXPECT_NE(url.error().message.find("; use inproc, self-http or a URL"), std::string::npos);
  TensorHttpFront nowhere(std::nullopt, "cpu", 1, 1, {}, std::nullopt);
  EXPECT_FALSE(nowhere.open(nullptr, ModelMetadata{}, {}).ok());
  auto bearer = target_url("http://127.0.0.1:9/infer", "secret");
  ASSERT_TRUE(bearer.ok());
  EXPECT_EQ(bearer->bearer_token, "secret");
}

using LmFrontTest = GenerationTest;

TEST_F(LmFrontTest, ItSaysTheRouteAndModelAndRenamesAChatRun) {
  start();
  std::string said;
  LmOpenAiFront front(*parse_url("http://127.0.0.1:" + std::to_string(port_)), "chat", "", "cpu", 2,
                      [&](const std::string& line) { said = line; });
  GenRun run;
  run.target = "http://127.0.0.1";
  run.model = "remote";
  auto target = front.open(nullptr, run);
  ASSERT_TRUE(target.ok()) << target.error().message;
  EXPECT_EQ(said, "POST /v1/chat/completions (chat), model " + engine_->info().name);
  EXPECT_EQ(run.target, "http://127.0.0.1 (chat)");
  EXPECT_EQ(run.model, engine_->info().name);  // as the server lists it
  std::mutex mu;
  std::condition_variable cv;
  bool ended = false, ok = false;
  GenTarget::Callbacks cb;
  cb.on_tokens = [](TimePoint, uint32_t) {};
  cb.on_prompt_tokens = [](uint32_t) {};
  cb.on_done = [&](bool good, uint32_t, TimePoint, std::string) {
    std::lock_guard g(mu);
    ended = true;
    ok = good;
    cv.notify_all();
  };
  (*target)->send("hello", 4, std::move(cb));
  std::unique_lock g(mu);
  ASSERT_TRUE(cv.wait_for(g, kSafety, [&] { return ended; }));
  EXPECT_TRUE(ok);
  g.unlock();
  front.close();
}

TEST_F(LmFrontTest, SelfHttpAsksForTheRunsOwnModel) {
  start();
  std::string said;
  LmOpenAiFront front(Url{}, "", "", "cpu", 1, [&](const std::string& line) { said = line; });
  GenRun run;
  run.target = "self-http";
  run.model = "mine";
  auto target = front.open(engine_.get(), run);
  ASSERT_TRUE(target.ok()) << target.error().message;
  EXPECT_EQ(said, "POST /v1/completions (completions), model mine");
  EXPECT_EQ(run.target, "self-http");
  EXPECT_EQ(run.model, "mine");
  front.close();
}

}  // namespace
}  // namespace batchscope::test
