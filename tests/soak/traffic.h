// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The soak's main traffic: requests for a model with one FP32 input, drawn
// from a pool of 64 fixed inputs, sent over keep-alive connections (the
// project's HttpLoadClient), closed loop to measure capacity or open loop
// (Poisson) at a rate. Most are valid (/infer, or KServe v2 of 1..3 rows);
// a few carry a negative value (the test model throws on those) or are
// invalid in one of several ways. Every 200 is checked: an output of the
// model's length per row, and for each pool input the same output every
// time (within float rounding), so an answer crossed with another request's
// would show.
// Thread-safety: one controlling thread; answers are checked on the load
// client's thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "http/http_client.h"
#include "tests/soak/tally.h"

namespace batchscope::soak {

struct ModelShape {
  std::string name;
  std::string input;  // the input's name
  int64_t in = 0;     // values per row in
  int64_t out = 0;    // values per row out
};

// A whole HTTP/1.1 request to 127.0.0.1 (test_client.h's), with the bearer
// token when there is one.
std::string http_request(const std::string& auth, std::string_view method, std::string_view path,
                         std::string_view body = {});

struct Mix {
  double negative = 0.005;  // share of requests with a negative input
  double invalid = 0.05;    // share of invalid requests, spread over five kinds
  double rows = 0.15;       // share of valid requests sent as KServe v2 rows
};

class Traffic {
 public:
  Traffic(std::string host, uint16_t port, ModelShape model, std::string auth, Tally& tally,
          uint64_t seed, int connections);
  ~Traffic();
  bool start();
  // Requests of the same mix as open_loop(), `concurrency` in flight, for
  // `d`: answers per second, the capacity the open loop takes a share of.
  double closed_loop(int concurrency, const Mix& mix, std::chrono::milliseconds d);
  // Poisson arrivals at `rate` until `stop` is set, with the given mix. An
  // arrival due while `max_backlog` requests are in flight is skipped and
  // counted, so an overloaded server shows as skips, not as a client queue
  // that grows without end.
  void open_loop(double rate, const Mix& mix, const std::atomic<bool>& stop, Kind valid_kind,
                 int64_t max_backlog);
  uint64_t skipped() const { return skipped_.load(); }
  // Waits until every request sent has its answer (or failed): false on timeout.
  bool drain(std::chrono::seconds timeout);
  int64_t in_flight() const { return in_flight_.load(); }
  uint64_t wrong_outputs() const { return wrong_.load(); }
  uint64_t checked_outputs() const { return checked_.load(); }

  // One request of `kind` (for the pool row `k`), and the rows it carries.
  std::string build(Kind kind, std::mt19937_64& rng, std::vector<int>& rows) const;

 private:
  void send(Kind kind, std::mt19937_64& rng);
  Kind pick(const Mix& mix, Kind valid_kind, std::mt19937_64& rng) const;
  void check(Kind kind, const std::vector<int>& rows, int status, std::string_view body);
  bool same_as_before(int row, const std::vector<double>& got);

  std::string host_;
  uint16_t port_;
  ModelShape model_;
  std::string auth_;
  Tally& tally_;
  std::unique_ptr<HttpLoadClient> client_;
  std::vector<std::vector<float>> pool_;
  std::vector<std::string> pool_json_;  // each row's values as a JSON array
  std::mutex ref_mu_;
  std::vector<std::optional<std::vector<double>>> reference_;
  std::atomic<int64_t> in_flight_{0};
  std::atomic<uint64_t> wrong_{0};
  std::atomic<uint64_t> checked_{0};
  std::atomic<uint64_t> skipped_{0};
};

}  // namespace batchscope::soak
