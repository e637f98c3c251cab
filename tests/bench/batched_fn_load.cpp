// SPDX-License-Identifier: GPL-3.0-or-later
// BatchedFn under a closed-loop load, as one process per run so that its
// system calls can be counted from outside (perf stat, strace -f -c):
// P producer threads each keep B requests in flight (the oldest is taken
// before the next is sent); the handler maps x to x + 1.
//
//   batched_fn_load B P N [future|std]
//
// `future` takes each answer through BatchedFn's own Future, `std` through
// the std::future it converts to. Prints one line: req/s, the whole
// process's CPU microseconds per request, heap allocations per request, and
// the mean batch. Exits 1 when an answer is wrong. scripts/peer-batched-fn
// runs it beside the Rust crate batched-fn under the same load.

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "batched_fn.h"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace {

using batchscope::BatchedFn;
using batchscope::Expected;

double cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

template <class F>
long drive(BatchedFn<uint64_t, uint64_t>& fn, int p, long n, size_t window) {
  long bad = 0;
  std::deque<std::pair<uint64_t, F>> q;
  auto take = [&] {
    Expected<uint64_t> r = q.front().second.get();
    if (!r || *r != q.front().first + 1) ++bad;
    q.pop_front();
  };
  for (long i = 0; i < n; ++i) {
    const uint64_t x = uint64_t(p) << 40 | uint64_t(i);
    q.emplace_back(x, fn.call(x));
    if (q.size() >= window) take();
  }
  while (!q.empty()) take();
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::fprintf(stderr, "usage: batched_fn_load B P N [future|std]\n");
    return 2;
  }
  const int b = std::atoi(argv[1]), producers = std::atoi(argv[2]);
  const long n = std::atol(argv[3]);
  const std::string mode = argc == 5 ? argv[4] : "future";
  if (b < 1 || producers < 1 || n < producers || (mode != "future" && mode != "std")) {
    std::fprintf(stderr, "batched_fn_load: B, P >= 1, N >= P, and future or std, not '%s'\n",
                 mode.c_str());
    return 2;
  }
  std::atomic<long> calls{0}, items{0}, bad{0};
  batchscope::Options o;
  o.max_batch_size = uint32_t(b);
  o.max_wait_us = 1000;
  o.queue_capacity = 1 << 20;
  BatchedFn<uint64_t, uint64_t> fn(
      [&](std::span<uint64_t> in) {
        ++calls;
        items += long(in.size());
        std::vector<uint64_t> out(in.size());
        for (size_t i = 0; i < in.size(); ++i) out[i] = in[i] + 1;
        return out;
      },
      o);
  const long per = n / producers, done = per * producers;
  const long allocations0 = g_allocations.load();
  const double c0 = cpu_s();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> ts;
  for (int p = 0; p < producers; ++p)
    ts.emplace_back([&, p] {
      bad += mode == "std" ? drive<std::future<Expected<uint64_t>>>(fn, p, per, size_t(b))
                           : drive<batchscope::Future<Expected<uint64_t>>>(fn, p, per, size_t(b));
    });
  for (auto& t : ts) t.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_s() - c0;
  const long allocations = g_allocations.load() - allocations0;
  std::printf(
      "batchscope-%s B=%d P=%d req/s=%.0f cpu_us/req=%.3f allocs/req=%.3f mean_batch=%.1f "
      "bad=%ld\n",
      mode.c_str(), b, producers, double(done) / wall, cpu * 1e6 / double(done),
      double(allocations) / double(done), double(items) / double(calls), bad.load());
  return bad ? 1 : 0;
}
