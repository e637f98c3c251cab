// SPDX-License-Identifier: GPL-3.0-or-later
// Throughput of a recorded run with the run history on and off: an engine
// over the synthetic runner (busy-spinning a + c*b) under a closed loop of
// requests, its records drained every 100 ms into a RunRecorder as the Runs
// panel drains them, and, with the history on, every drain's new records
// handed to a HistoryWriter, whose thread writes them to the file meanwhile.
// Prints one line: mode, answered requests per second, requests recorded,
// and with the history on the rows kept, transactions and bytes of the file
// (and its WAL) per request. scripts/bench-history runs it on and off,
// alternating, and compares.
// Usage: bench_history SECONDS on|off FILE

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "batching/engine.h"
#include "batching/synthetic_runner.h"
#include "runs/history.h"
#include "runs/history_writer.h"
#include "runs/run_recorder.h"
#include "tests/bench/closed_loop.h"

using namespace batchscope;

namespace {

Tensors small_input(size_t) {
  static const std::vector<float> x(4, 1.0f);
  Tensors in;
  in.push_back(Tensor::from_floats(x));
  return in;
}

long long file_bytes(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<long long>(st.st_size) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || (std::strcmp(argv[2], "on") != 0 && std::strcmp(argv[2], "off") != 0)) {
    std::fprintf(stderr, "usage: bench_history SECONDS on|off FILE\n");
    return 2;
  }
  const double seconds = std::atof(argv[1]);
  const bool on = std::strcmp(argv[2], "on") == 0;
  const std::string path = argv[3];

  std::unique_ptr<HistoryWriter> writer;
  if (on) {
    auto h = History::open(path);
    if (!h) {
      std::fprintf(stderr, "%s\n", h.error().message.c_str());
      return 1;
    }
    writer = std::make_unique<HistoryWriter>(std::move(*h));
  }
  const SyntheticCost cost{.fixed_us = 200, .per_item_us = 4, .busy_spin = true};
  Engine engine(SyntheticRunner::factory(cost),
                Options{.max_batch_size = 32, .max_wait_us = 500, .queue_capacity = 1u << 16});
  if (!engine.start().ok()) return 1;

  SteadyClock clock;
  RunRecorder recorder;
  RunConfig config;
  config.pattern = "closed window=128";
  config.target = "inproc";
  config.model = "synthetic";
  recorder.start(config, clock.now());
  HistoryWriter::Token token = 0;
  if (writer) {
    HistoryRun h;
    h.kind = "recorded";
    h.label = "bench_history";
    h.model = "synthetic";
    h.config = config;
    token = writer->begin(h, recorder.start_time());
  }
  size_t handed_requests = 0, handed_batches = 0, handed_depth = 0, drains = 0;
  auto drain = [&] {
    RecordBatch records;
    engine.drain_records(records);
    recorder.add(records);
    ++drains;
    if (!writer) return;
    const RunData& d = recorder.so_far();
    writer->append(token, {d.requests.begin() + handed_requests, d.requests.end()},
                   {d.batches.begin() + handed_batches, d.batches.end()},
                   {d.depth.begin() + handed_depth, d.depth.end()});
    handed_requests = d.requests.size();
    handed_batches = d.batches.size();
    handed_depth = d.depth.size();
  };

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> sent{0};
  std::thread producer([&] {
    bench::ClosedLoop loop(engine, 128, 64, small_input);
    while (!stop.load()) {
      loop.run(2000);
      sent += 2000;
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  const auto until = t0 + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    drain();
  }
  const uint64_t ok_at_end = engine.status().counters.ok;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stop = true;
  producer.join();
  drain();
  const RunData run = recorder.finish(clock.now());
  if (writer) {
    writer->finish(token, "{}", run.config.duration_s);
    writer->flush();
  }
  engine.stop();
  std::printf("history=%s  req/s %.0f  recorded %zu  drains %zu", on ? "on" : "off",
              static_cast<double>(ok_at_end) / elapsed, run.requests.size(), drains);
  if (writer) {
    if (auto why = writer->failure()) {
      std::printf("\nhistory failed: %s\n", why->c_str());
      return 1;
    }
    const long long bytes = file_bytes(path) + file_bytes(path + "-wal");
    std::printf(
        "  kept %zu  file+wal bytes/request %.1f", handed_requests,
        static_cast<double>(bytes) / static_cast<double>(std::max<size_t>(handed_requests, 1)));
  }
  std::printf("\n");
  return 0;
}
