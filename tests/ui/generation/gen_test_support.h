// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Shared by the generation window's tests: a started GenEngine over the
// weightless SyntheticLm, the text it writes greedily, and an event-loop
// pump that waits for a condition.

#include <QApplication>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "generation/gen_engine.h"
#include "generation/synthetic_lm.h"

namespace batchscope::test {

// Each step sleeps step_us + token_us per token (0, 0: as fast as it goes).
inline std::unique_ptr<GenEngine> make_gen_engine(double step_us = 0, double token_us = 0) {
  SyntheticLmOptions o;
  o.step_us = step_us;
  o.token_us = token_us;
  if (step_us > 0 || token_us > 0) o.spend = [](Duration d) { std::this_thread::sleep_for(d); };
  // Lanes beyond the first are the same model again.
  auto e = std::make_unique<GenEngine>(std::make_unique<SyntheticLm>(o), Options{}, nullptr,
                                       [o](int) { return std::make_unique<SyntheticLm>(o); });
  if (!e->start().ok()) return nullptr;
  return e;
}

// Runs the event loop until `done`, for at most `limit`.
template <class F>
bool pump_until(F done, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    QApplication::processEvents();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// What the synthetic model writes after `prompt` when decoding greedily.
inline std::string greedy_text(const std::string& prompt, int max_tokens) {
  SyntheticLm lm(SyntheticLmOptions{});
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  std::string text;
  for (int i = 0; i < max_tokens; ++i) {
    const int32_t t = lm.next_after(history);
    if (t == lm.info().eos_token) break;
    history.push_back(t);
    text += static_cast<char>(t);
  }
  return text;
}

}  // namespace batchscope::test
