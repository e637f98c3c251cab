// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/preprocess_profile.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <vector>

#include "common/model_metadata.h"
#include "runs/histogram.h"

namespace batchscope {

namespace {

using Steady = std::chrono::steady_clock;

double us_since(Steady::time_point t0) {
  return std::chrono::duration<double, std::micro>(Steady::now() - t0).count();
}

// The class's examples in turn (random inputs where it has none).
std::vector<Tensors> examples(const ModelMetadata& m, size_t n) {
  std::vector<Tensors> out;
  for (size_t i = 0; i < n; ++i) out.push_back(random_inputs(m, i));
  return out;
}

struct PoolRun {
  std::vector<double> us;         // the timed requests'
  std::vector<Tensors> prepared;  // what came back for the first requests, in turn
};

// `k` processes kept busy for `seconds` after a warm-up of 2k requests.
Expected<PoolRun> pool_run(const StageMaker& make, uint32_t k, const std::vector<Tensors>& raw,
                           double seconds) {
  std::shared_ptr<Engine::PrepareStage> stage = make();
  Options o;
  o.preprocess_workers = k;
  if (Status st = stage->configure(o); !st) return st.error();
  std::mutex mu;
  std::condition_variable cv;
  PoolRun run;
  std::optional<Error> failed;
  size_t sent = 0, back = 0;
  const size_t warm = 2 * size_t{k};
  auto send = [&](size_t i) {
    Tensors input = raw[i % raw.size()];
    stage->prepare(std::move(input), [&, i, t0 = Steady::now()](Expected<Tensors>&& got) {
      const double us = us_since(t0);
      std::lock_guard<std::mutex> g(mu);
      if (!got) {
        if (!failed) failed = got.error();
      } else {
        if (i >= warm) run.us.push_back(us);
        if (run.prepared.size() < raw.size() && i < raw.size()) {
          run.prepared.resize(std::max(run.prepared.size(), i + 1));
          run.prepared[i] = std::move(*got);
        }
      }
      ++back;
      cv.notify_one();
    });
  };
  const auto until = Steady::now() + std::chrono::duration<double>(seconds);
  for (; sent < k; ++sent) send(sent);
  std::unique_lock<std::mutex> lk(mu);
  for (;;) {
    const size_t done = back;
    const bool enough = run.us.size() >= 64 && Steady::now() >= until;
    const bool too_long = Steady::now() >= until + std::chrono::duration<double>(3 * seconds);
    if (failed || enough || too_long) {
      cv.wait(lk, [&] { return back == sent; });
      break;
    }
    while (sent < done + k) {
      const size_t i = sent++;
      lk.unlock();
      send(i);
      lk.lock();
    }
    cv.wait(lk, [&] { return back > done; });
  }
  if (failed) return *failed;
  return run;
}

}  // namespace

Status profile_preprocess(const LocalModel& model, uint32_t most, double seconds_per_step,
                          std::unique_ptr<Runner> lane, ProfileResult& result) {
  const StageMaker make = model.prepare_stage({});
  // Without examples the requests would be random values, which a
  // preprocess that reads an image or a text refuses: nothing to measure.
  if (!make || model.metadata().examples.empty()) return Status::Ok();
  const std::vector<Tensors> raw = examples(model.metadata(), 16);
  std::vector<Tensors> prepared;
  for (uint32_t k = 1; k <= most; ++k) {
    auto run = pool_run(make, k, raw, seconds_per_step);
    if (!run) return run.error();
    result.preprocess_pool_us.push_back(even_quantiles(run->us));
    result.preprocess_pool_requests.push_back(run->us.size());
    if (prepared.empty()) prepared = std::move(run->prepared);
  }
  // A lane's batch of raw requests against the same requests prepared.
  const size_t b = std::min<size_t>({8, prepared.size(), model.metadata().max_batch_size});
  if (b == 0 || !lane) return Status::Ok();
  std::vector<double> per_request;
  const auto until = Steady::now() + std::chrono::duration<double>(seconds_per_step);
  for (int round = 0; round < 200 && (round < 16 || Steady::now() < until); ++round) {
    std::vector<Tensors> a(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(b));
    std::vector<Tensors> p(prepared.begin(), prepared.begin() + static_cast<std::ptrdiff_t>(b));
    auto t0 = Steady::now();
    auto got = lane->run(a);
    const double raw_us = us_since(t0);
    if (!got) return got.error();
    t0 = Steady::now();
    got = lane->run(p);
    const double ready_us = us_since(t0);
    if (!got) return got.error();
    if (round >= 2)
      per_request.push_back(std::max(0.0, (raw_us - ready_us) / static_cast<double>(b)));
  }
  result.preprocess_lane_us = even_quantiles(per_request);
  result.preprocess_lane_requests = per_request.size() * b;
  return Status::Ok();
}

}  // namespace batchscope
