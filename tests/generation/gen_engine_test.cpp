// SPDX-License-Identifier: GPL-3.0-or-later
// The generation engine on its thread: many clients, live retuning, the
// queue bound, deadlines on a manual clock, and stopping.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "generation/gen_engine.h"
#include "generation/synthetic_lm.h"

namespace batchscope {
namespace {

constexpr auto kSafety = std::chrono::seconds(20);

std::vector<int32_t> tokens_of(std::string_view s) {
  std::vector<int32_t> t;
  for (char c : s) t.push_back(static_cast<unsigned char>(c));
  return t;
}

// Records every on_done; waits for a count.
struct Done {
  std::mutex mu;
  std::condition_variable cv;
  std::map<uint64_t, GenRecord> records;
  std::map<std::string, GenRecord> by_name;
  int calls = 0;
  GenOnDone callback(std::string name) {
    return [this, name](const GenRecord& r) {
      std::lock_guard g(mu);
      ++calls;
      by_name[name] = r;
      cv.notify_all();
    };
  }
  bool wait(int n) {
    std::unique_lock g(mu);
    return cv.wait_for(g, kSafety, [&] { return calls >= n; });
  }
};

// A model step a test can hold until it lets go.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool closed = false;
  bool holding = false;
  void pass() {
    std::unique_lock g(mu);
    holding = true;
    cv.notify_all();
    cv.wait(g, [&] { return !closed; });
    holding = false;
  }
  bool await_holding() {
    std::unique_lock g(mu);
    return cv.wait_for(g, kSafety, [&] { return holding; });
  }
  void open() {
    std::lock_guard g(mu);
    closed = false;
    cv.notify_all();
  }
};

GenRequest request(std::string_view prompt, uint32_t max_tokens, GenOnDone done) {
  GenRequest r;
  r.prompt = tokens_of(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  r.on_done = std::move(done);
  return r;
}

std::string expected(const SyntheticLm& lm, std::string_view prompt, uint32_t n) {
  std::vector<int32_t> h = tokens_of(prompt);
  std::string out;
  for (uint32_t i = 0; i < n; ++i) {
    h.push_back(lm.next_after(h));
    out.push_back(static_cast<char>(h.back()));
  }
  return out;
}

TEST(GenEngine, ManyClientsEachGetOneAnswerWithTheirOwnText) {
  SyntheticLmOptions mo;
  mo.num_blocks = 64;  // small enough to preempt under this load
  Options o;
  o.max_num_seqs = 16;
  o.max_num_batched_tokens = 64;
  GenEngine engine(std::make_unique<SyntheticLm>(mo), o);
  ASSERT_TRUE(engine.start().ok());
  const SyntheticLm reference(mo);
  Done done;
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < 50; ++i) {
        const std::string name = "client " + std::to_string(c) + " request " + std::to_string(i);
        auto id = engine.submit(request(name, 1 + (i * 7) % 40, done.callback(name)));
        ASSERT_TRUE(id.ok()) << id.error().message;
      }
    });
  }
  for (auto& t : clients) t.join();
  ASSERT_TRUE(done.wait(200));
  std::lock_guard g(done.mu);
  EXPECT_EQ(done.calls, 200);
  for (const auto& [name, r] : done.by_name) {
    const int i = std::stoi(name.substr(name.rfind(' ') + 1));
    EXPECT_EQ(r.text, expected(reference, name, 1 + (i * 7) % 40)) << name;
    EXPECT_EQ(r.reason, FinishReason::kLength);
  }
  // The figures follow once the step that ran the last callback has ended.
  const auto give_up = std::chrono::steady_clock::now() + kSafety;
  while (engine.status().completed < 200 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  const GenStatus s = engine.status();
  EXPECT_EQ(s.completed, 200u);
  EXPECT_EQ(s.blocks_used, 0u);
  EXPECT_GT(s.steps, 0u);
}

TEST(GenEngine, OptionsAreRetunedLiveAndVersioned) {
  GenEngine engine(std::make_unique<SyntheticLm>(SyntheticLmOptions{}), Options{});
  ASSERT_TRUE(engine.start().ok());
  Options o = engine.status().options;
  o.scheduling = Scheduling::kStatic;
  o.max_num_seqs = 4;
  o.max_num_batched_tokens = 4;
  ASSERT_TRUE(engine.set_options(o).ok());
  const GenStatus s = engine.status();
  EXPECT_EQ(s.version, 2u);
  EXPECT_EQ(s.options.scheduling, Scheduling::kStatic);
  o.max_num_batched_tokens = 3;
  EXPECT_EQ(engine.set_options(o).message(),
            "max_num_batched_tokens = 3 is less than max_num_seqs = 4; every running sequence "
            "decodes one token per step");
  Done done;
  ASSERT_TRUE(engine.submit(request("after", 5, done.callback("a"))).ok());
  ASSERT_TRUE(done.wait(1));
  EXPECT_EQ(done.by_name["a"].output_tokens, 5u);
}

TEST(GenEngine, AFullQueueRefusesAtOnce) {
  Gate gate;
  gate.closed = true;
  SyntheticLmOptions mo;
  mo.spend = [&](Duration) { gate.pass(); };
  Options o;
  o.queue_capacity = 2;
  GenEngine engine(std::make_unique<SyntheticLm>(mo), o);
  ASSERT_TRUE(engine.start().ok());
  Done done;
  ASSERT_TRUE(engine.submit(request("one", 2, done.callback("1"))).ok());
  ASSERT_TRUE(gate.await_holding());
  ASSERT_TRUE(engine.submit(request("two", 2, done.callback("2"))).ok());
  auto third = engine.submit(request("three", 2, done.callback("3")));
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code, ErrorCode::kQueueFull);
  gate.open();
  ASSERT_TRUE(done.wait(2));
  EXPECT_EQ(engine.status().rejected, 1u);
}

TEST(GenEngine, ADeadlineOnTheManualClockTimesTheRequestOut) {
  auto clock = std::make_shared<ManualClock>();
  Options o;
  o.scheduling = Scheduling::kStatic;
  o.max_wait_us = 10'000'000;  // the batch would wait 10 s to fill
  o.request_timeout_ms = 250;
  GenEngine engine(std::make_unique<SyntheticLm>(SyntheticLmOptions{}), o, clock);
  ASSERT_TRUE(engine.start().ok());
  Done done;
  const TimePoint t = clock->now();
  ASSERT_TRUE(engine.submit(request("late", 3, done.callback("a"))).ok());
  ASSERT_TRUE(clock->await_parked(t + milliseconds(250)));
  clock->advance(milliseconds(250));
  ASSERT_TRUE(done.wait(1));
  EXPECT_EQ(done.by_name["a"].reason, FinishReason::kTimedOut);
}

TEST(GenEngine, StoppingFailsWhatTheGraceLeavesAndRefusesNewWork) {
  Gate gate;
  gate.closed = true;
  SyntheticLmOptions mo;
  mo.spend = [&](Duration) { gate.pass(); };
  GenEngine engine(std::make_unique<SyntheticLm>(mo), Options{});
  ASSERT_TRUE(engine.start().ok());
  Done done;
  ASSERT_TRUE(engine.submit(request("long", 500, done.callback("a"))).ok());
  ASSERT_TRUE(gate.await_holding());
  std::thread stopper([&] { engine.stop(Duration::zero()); });
  while (!engine.status().stopping) std::this_thread::yield();
  auto refused = engine.submit(request("new", 2, done.callback("b")));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kShuttingDown);
  gate.open();
  stopper.join();
  ASSERT_TRUE(done.wait(1));
  EXPECT_EQ(done.by_name["a"].reason, FinishReason::kError);
  EXPECT_EQ(done.by_name["a"].error, "the engine is stopping");
  EXPECT_EQ(done.calls, 1);
}

// Lanes are model replicas: each request goes to the lane with the fewest
// outstanding, every one gets its own text once, and lanes come and go live.
TEST(GenEngine, LanesShareTheLoadGrowAndRetireLive) {
  SyntheticLmOptions mo;
  mo.step_us = 200;  // the steps sleep, so requests overlap
  mo.spend = [](Duration d) { std::this_thread::sleep_for(d); };
  std::atomic<int> made{1};
  Options o;
  o.max_num_seqs = 4;
  o.num_lanes = 3;
  GenEngine engine(std::make_unique<SyntheticLm>(mo), o, nullptr, [&](int) {
    ++made;
    return std::make_unique<SyntheticLm>(mo);
  });
  ASSERT_TRUE(engine.start().ok());
  EXPECT_EQ(engine.status().lanes, 3u);
  EXPECT_EQ(made.load(), 3);
  const SyntheticLm reference(mo);
  Done done;
  for (int i = 0; i < 60; ++i) {
    const std::string name = "request " + std::to_string(i);
    ASSERT_TRUE(engine.submit(request(name, 8, done.callback(name))).ok());
  }
  // Shrink while they run: the retired lanes finish what they hold.
  o.num_lanes = 1;
  ASSERT_TRUE(engine.set_options(o).ok());
  EXPECT_EQ(engine.status().lanes, 1u);
  for (int i = 60; i < 80; ++i) {
    const std::string name = "request " + std::to_string(i);
    ASSERT_TRUE(engine.submit(request(name, 8, done.callback(name))).ok());
  }
  ASSERT_TRUE(done.wait(80));
  {
    std::lock_guard g(done.mu);
    EXPECT_EQ(done.calls, 80);
    for (const auto& [name, r] : done.by_name) {
      EXPECT_EQ(r.text, expected(reference, name, 8)) << name;
    }
  }
  std::vector<GenRecord> records;
  std::vector<StepRecord> steps;
  engine.drain(records, steps);
  std::map<uint32_t, uint64_t> per_lane;
  for (const StepRecord& s : steps) ++per_lane[s.lane];
  EXPECT_EQ(per_lane.size(), 3u) << "the first 60 were spread over three lanes";
  // Grown again: a retired lane's model is made anew.
  o.num_lanes = 2;
  ASSERT_TRUE(engine.set_options(o).ok());
  const auto give_up = std::chrono::steady_clock::now() + kSafety;
  auto settled = [&] {
    const GenStatus now = engine.status();
    return now.lanes == 2 && now.completed == 80 && now.per_lane.size() == 3 &&
           !now.per_lane[2].ready;
  };
  while (!settled() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  EXPECT_EQ(engine.status().lanes, 2u);
  EXPECT_GE(made.load(), 4);
  const GenStatus s = engine.status();
  EXPECT_EQ(s.completed, 80u);
  ASSERT_EQ(s.per_lane.size(), 3u);
  EXPECT_TRUE(s.per_lane[1].ready);
  EXPECT_FALSE(s.per_lane[2].ready);
}

TEST(GenEngine, ALaneThatCannotMakeItsModelFailsStartByName) {
  Options o;
  o.num_lanes = 2;
  GenEngine engine(std::make_unique<SyntheticLm>(SyntheticLmOptions{}), o, nullptr,
                   [](int lane) -> std::unique_ptr<LmRunner> {
                     throw std::runtime_error("no memory for lane " + std::to_string(lane));
                   });
  const Status s = engine.start();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "lane 1 could not make its model: no memory for lane 1");
  // Without a factory, more than one lane is refused by value.
  GenEngine single(std::make_unique<SyntheticLm>(SyntheticLmOptions{}), Options{});
  ASSERT_TRUE(single.start().ok());
  const Status more = single.set_options(o);
  ASSERT_FALSE(more.ok());
  EXPECT_NE(more.message().find("num_lanes 2"), std::string::npos) << more.message();
}

}  // namespace
}  // namespace batchscope
