// SPDX-License-Identifier: GPL-3.0-or-later
// The Python lane with real worker processes (Debian's python3 and numpy):
// batches through shared memory, each fault the handler can make, and the
// restart after a worker is lost.
#include "python/python_runner.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "tests/python/python_files.h"

namespace batchscope {
namespace {

using test::handler;

WorkerSetup setup_for(const std::string& file, int timeout_ms = 30000) {
  PythonSpec spec = test::spec(file);
  spec.worker_timeout_ms = timeout_ms;
  auto h = describe_python(spec);
  EXPECT_TRUE(h.ok()) << h.error().message;
  WorkerSetup w;
  w.spec = spec;
  if (h.ok()) w.metadata = h->metadata;
  w.warm_batch = 4;
  w.threads = 1;
  return w;
}

std::vector<Tensors> rows(std::initializer_list<float> firsts) {
  std::vector<Tensors> out;
  for (float f : firsts) {
    const float v[4] = {f, 1, 2, 3};
    out.push_back({Tensor::from_floats(v, {4})});
  }
  return out;
}

// The runner's answer to requests whose first values are `firsts`.
Expected<std::vector<Tensors>> run(PythonRunner& r, std::initializer_list<float> firsts) {
  auto batch = rows(firsts);
  return r.run(std::span<Tensors>(batch));
}

void expect_served(PythonRunner& r) {
  auto out = run(r, {0, 5});
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[1][0].as<float>()[0], 11.0f);
  EXPECT_EQ((*out)[1][0].as<float>()[3], 7.0f);
  EXPECT_EQ((*out)[0][0].shape(), Shape{4});
}

TEST(PythonRunner, AnswersEachRequestOfABatchWithItsOwnRow) {
  WorkerSetup w = setup_for(handler("faults.py"));
  w.spec.options = {{"scale", "0.5"}};
  PythonRunner r(w, 0);
  ASSERT_TRUE(r.prepare().ok());
  EXPECT_GT(r.pid(), 0);
  EXPECT_EQ(w.counts->ready.load(), 1);
  auto out = run(r, {1, 2, 3});
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_EQ(out->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const auto y = (*out)[i][0].as<float>();
    EXPECT_EQ(y[0], 2.0f * (i + 1) + 0.5f);
    EXPECT_EQ(y[1], 2.5f);
  }
}

TEST(PythonRunner, AnExceptionFailsItsBatchAndTheWorkerStays) {
  WorkerSetup w = setup_for(handler("faults.py"));
  PythonRunner r(w, 0);
  ASSERT_TRUE(r.prepare().ok());
  const int pid = r.pid();
  auto out = run(r, {13, 1});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, ErrorCode::kModelError);
  EXPECT_NE(out.error().message.find("ValueError: thirteen is unlucky"), std::string::npos)
      << out.error().message;
  EXPECT_NE(out.error().message.find("faults.py:"), std::string::npos) << out.error().message;
  EXPECT_FALSE(r.needs_recovery());
  EXPECT_EQ(r.pid(), pid);
  expect_served(r);
}

struct WrongOutput {
  float code;
  const char* says;
};

TEST(PythonRunner, AWrongOutputIsRefusedNamingWhatWasExpected) {
  WorkerSetup w = setup_for(handler("faults.py"));
  PythonRunner r(w, 0);
  ASSERT_TRUE(r.prepare().ok());
  for (const WrongOutput& c :
       {WrongOutput{17, "has shape [2, 3] for a batch of 2; expected [2, 4]"},
        WrongOutput{18, "has datatype float64; expected FP32"},
        WrongOutput{19, "has no output 'y'"}, WrongOutput{21, "returned list; expected a dict"}}) {
    auto out = run(r, {c.code, 1});
    ASSERT_FALSE(out.ok()) << c.code;
    EXPECT_EQ(out.error().code, ErrorCode::kModelError);
    EXPECT_NE(out.error().message.find(c.says), std::string::npos) << out.error().message;
    EXPECT_FALSE(r.needs_recovery());
  }
  expect_served(r);
}

TEST(PythonRunner, AWorkerThatSegfaultsFailsOnlyItsBatchAndIsRestarted) {
  WorkerSetup w = setup_for(handler("faults.py"));
  PythonRunner r(w, 0);
  ASSERT_TRUE(r.prepare().ok());
  const int pid = r.pid();
  auto out = run(r, {14, 1});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(out.error().message.find("killed by signal 11 (SIGSEGV)"), std::string::npos)
      << out.error().message;
  EXPECT_NE(out.error().message.find("a batch of 2"), std::string::npos);
  EXPECT_TRUE(r.needs_recovery());
  EXPECT_EQ(w.counts->ready.load(), 0);
  EXPECT_EQ(w.counts->deaths.load(), 1u);
  r.recover();
  ASSERT_FALSE(r.needs_recovery());
  EXPECT_NE(r.pid(), pid);
  EXPECT_EQ(w.counts->restarts.load(), 1u);
  EXPECT_EQ(w.counts->ready.load(), 1);
  expect_served(r);
}

TEST(PythonRunner, AWorkerThatExitsQuotesItsStatusAndLastLines) {
  WorkerSetup w = setup_for(handler("faults.py"));
  PythonRunner r(w, 0);
  ASSERT_TRUE(r.prepare().ok());
  auto out = run(r, {15});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(out.error().message.find("exited with status 3"), std::string::npos)
      << out.error().message;
  r.recover();
  expect_served(r);
}

TEST(PythonRunner, AWorkerKilledWhileIdleFailsTheNextBatchAndComesBack) {
  WorkerSetup w = setup_for(handler("faults.py"));
  PythonRunner r(w, 0);
  ASSERT_TRUE(r.prepare().ok());
  ASSERT_EQ(::kill(r.pid(), SIGKILL), 0);
  auto out = run(r, {1});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(out.error().message.find("SIGKILL"), std::string::npos) << out.error().message;
  EXPECT_TRUE(r.needs_recovery());
  r.recover();
  expect_served(r);
}

TEST(PythonRunner, APredictPastTheTimeoutIsKilledAndAnswered504) {
  WorkerSetup w = setup_for(handler("faults.py"), 300);
  PythonRunner r(w, 0);
  ASSERT_TRUE(r.prepare().ok());
  const int pid = r.pid();
  auto out = run(r, {16});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, ErrorCode::kModelTimedOut);
  EXPECT_NE(out.error().message.find("--worker-timeout-ms = 300"), std::string::npos)
      << out.error().message;
  EXPECT_EQ(::kill(pid, 0), -1);  // gone
  EXPECT_EQ(w.counts->timeouts.load(), 1u);
  r.recover();
  expect_served(r);
}

TEST(PythonRunner, VariableLengthsArePaddedInAndCutOutPerRequest) {
  WorkerSetup w = setup_for(handler("ragged.py"));
  PythonRunner r(w, 0);
  ASSERT_TRUE(r.prepare().ok());
  const int64_t a[2] = {3, 4};
  const int64_t b[5] = {3, 5, 6, 7, 8};
  std::vector<Tensors> batch = {{Tensor::from_int64(a, {2})}, {Tensor::from_int64(b, {5})}};
  auto out = r.run(std::span<Tensors>(batch));
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ((*out)[0][0].shape(), Shape{2});
  EXPECT_EQ((*out)[0][0].as<int64_t>()[1], 40);
  EXPECT_EQ((*out)[1][0].shape(), Shape{5});
  EXPECT_EQ((*out)[1][0].as<int64_t>()[4], 80);
  EXPECT_EQ((*out)[1][1].shape(), Shape{3});  // "wide" is 3 wide, not a length
}

TEST(PythonRunner, OutputsLargerThanTheRegionGrowIt) {
  WorkerSetup w = setup_for(handler("ragged.py"));
  PythonRunner r(w, 0);
  ASSERT_TRUE(r.prepare().ok());
  const size_t before = r.region_bytes();
  const int64_t width = 3'000'000;  // 12 MB of output per request
  const int64_t a[1] = {width};
  std::vector<Tensors> batch = {{Tensor::from_int64(a, {1})}, {Tensor::from_int64(a, {1})}};
  auto out = r.run(std::span<Tensors>(batch));
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ((*out)[1][1].shape(), Shape{width});
  EXPECT_EQ((*out)[1][1].as<float>()[width - 1], 1.0f);
  EXPECT_GT(r.region_bytes(), before);
  // Past the region's limit the batch is refused by name, and the worker serves on.
  w.spec.max_region_bytes = 4 << 20;
  PythonRunner small(w, 1);
  ASSERT_TRUE(small.prepare().ok());
  auto refused = small.run(std::span<Tensors>(batch));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("above the worker region's limit of 4194304"),
            std::string::npos)
      << refused.error().message;
  const int64_t one[1] = {1};
  std::vector<Tensors> again = {{Tensor::from_int64(one, {1})}};
  EXPECT_TRUE(small.run(std::span<Tensors>(again)).ok());
}

TEST(PythonRunner, ABatchThatWouldPadPastTheRegionIsRefusedBeforeAnythingIsWritten) {
  WorkerSetup w = setup_for(handler("four_ways.py"));
  PythonRunner r(w, 0);
  ASSERT_TRUE(r.prepare().ok());
  // Four requests of 65,536 values, each long in another dimension: padded
  // together they would be 2^64 values, which wraps to 0 in 64 bits.
  std::vector<Tensors> batch;
  for (int d = 0; d < 4; ++d) {
    Shape s{1, 1, 1, 1};
    s[static_cast<size_t>(d)] = 65536;
    batch.push_back({Tensor(DType::kFloat32, s)});
  }
  auto out = r.run(std::span<Tensors>(batch));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message.find("padded to [4, 65536, 65536, 65536, 65536] for input 'x' "
                                     "needs more shared memory than the worker region's limit"),
            std::string::npos)
      << out.error().message;
  EXPECT_FALSE(r.needs_recovery());
  const float one[2] = {1, 2};
  std::vector<Tensors> small = {{Tensor::from_floats(one, {1, 1, 1, 2})}};
  auto fine = r.run(std::span<Tensors>(small));
  ASSERT_TRUE(fine.ok()) << fine.error().message;
  EXPECT_EQ((*fine)[0][0].as<float>()[0], 3.0f);
}

TEST(PythonRunner, AHandlerThatFailsToStartFailsPrepareWithItsTraceback) {
  WorkerSetup w = setup_for(handler("broken_init.py"));
  PythonRunner r(w, 0);
  Status s = r.prepare();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Model.__init__ failed"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("RuntimeError: no weights found at /nowhere"), std::string::npos)
      << s.message();
  EXPECT_EQ(w.counts->ready.load(), 0);
}

}  // namespace
}  // namespace batchscope
