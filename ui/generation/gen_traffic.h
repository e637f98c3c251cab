// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The generation view's built-in traffic: Poisson arrivals at a rate, each a
// request whose prompt length and max_tokens are drawn from distributions
// ("fixed:N", "uniform:LO,HI", "lognormal:MEDIAN,SIGMA[,MAX]"), its prompt cut
// from an English passage, submitted to the engine with ignore_eos so every
// request runs to its drawn length. Open loop: a thread of its own sends each
// request at its time whether or not earlier ones have finished; a full
// queue counts as refused. The rate and distributions are locked while it
// runs. Sent, refused, finished and token counts show in the panel.
// Thread-safety: GUI thread only; the traffic thread touches only the engine
// (thread-safe) and the counters, which the engine's callbacks also update
// (atomics, shared so that callbacks may outlive the panel).

#include <QGroupBox>
#include <atomic>
#include <memory>
#include <thread>

#include "generation/gen_engine.h"
#include "traffic/gen_workload.h"

class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;

namespace batchscope {

// The traffic as the panel stands: what it sends, or would send on Start.
struct GenTrafficSpec {
  double rate = 0;  // requests per second, Poisson
  LengthDist prompt;
  LengthDist max_tokens;
  // "poisson rate=25/s, prompt uniform 16..64, max_tokens lognormal ..."
  std::string describe() const;
};

struct GenTrafficCounters {
  std::atomic<uint64_t> sent{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<uint64_t> finished{0};
  std::atomic<uint64_t> output_tokens{0};
};

class GenTraffic : public QGroupBox {
 public:
  GenTraffic(GenEngine& engine, double rate, QWidget* parent = nullptr);
  ~GenTraffic() override;  // stops the thread

  // Starts sending; a bad rate or distribution is refused and shown in place.
  Status start();
  void stop();
  bool running() const { return thread_.joinable(); }
  void refresh();  // the counts

  void set_rate(double per_s);
  void set_max_tokens(const QString& dist);
  void set_prompt_tokens(const QString& dist);
  const GenTrafficCounters& counters() const { return *counters_; }
  QString error() const;
  // "poisson rate=25/s, prompt uniform:16,64, max_tokens lognormal:32,1,512"
  std::string describe() const;
  // The rate and lengths in the panel; a distribution that does not parse
  // is the error, named as Start names it.
  Expected<GenTrafficSpec> spec() const;

 private:
  void run(double rate, LengthDist prompt, LengthDist max_tokens, uint64_t seed);

  GenEngine& engine_;
  QDoubleSpinBox* rate_ = nullptr;
  QLineEdit* prompt_ = nullptr;
  QLineEdit* max_tokens_ = nullptr;
  QPushButton* start_stop_ = nullptr;
  QLabel* counts_ = nullptr;
  QLabel* error_ = nullptr;

  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::shared_ptr<GenTrafficCounters> counters_ = std::make_shared<GenTrafficCounters>();
  uint64_t runs_ = 0;  // seeds each run differently
};

}  // namespace batchscope
