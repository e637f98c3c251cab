// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The traffic panel: an arrival pattern and its parameters (poisson,
// constant, burst, sine, closed), a target (the in-process engine, this
// window's HTTP listener, or any URL speaking /infer or KServe v2), start and
// stop, elapsed time and sent/ok/rejected/failed counts. The traffic runs on
// a thread of its own through the load driver, open-ended until stopped.
// Thread-safety: GUI thread only; the traffic thread touches only the
// engine (thread-safe), its own HTTP client and the atomic counters.

#include <QGroupBox>
#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "batching/engine.h"
#include "common/model_metadata.h"
#include "http/http_client.h"
#include "traffic/load_driver.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace batchscope {

struct TrafficHooks {
  std::function<Engine*()> engine;        // the in-process engine, or null while loading
  std::function<ModelMetadata()> model;   // what the payloads must fit
  std::function<Expected<Url>()> listen;  // this window's listener (started if off): its /infer
};

class TrafficPanel : public QGroupBox {
 public:
  enum Target { kInProcess = 0, kSelfHttp = 1, kUrl = 2 };
  TrafficPanel(TrafficHooks hooks, double rate, QWidget* parent = nullptr);
  ~TrafficPanel() override;

  // Starts the traffic; a refusal is also shown in the panel (error()).
  // The pattern and target fields are locked while it runs.
  Status start();
  void stop();
  bool running() const { return thread_.joinable(); }
  // Updates the elapsed time and counts.
  void refresh();

  void set_target(Target t, const QString& url = {});
  // The bearer token sent to a URL target (its own listener's is known).
  void set_token(const QString& token);
  void set_pattern(const QString& name);
  // Sets the peak rate (and a low rate above it to a tenth of it); not an
  // edit by the user.
  void set_rate(double per_s);
  // Whether the user has changed the rate in the panel.
  bool rate_edited() const { return rate_edited_; }
  const LoadCounters& counters() const { return counters_; }
  std::string target_name() const;   // "inproc", "self-http" or the URL
  std::string pattern_text() const;  // "poisson rate=1500/s ..."
  // The pattern as set in the fields, open-ended (duration 1e6 s, seed 1):
  // what start() runs, and what the tuner replays for a duration of its own.
  ArrivalSpec spec() const;
  QString error() const;

  // What the window saves between starts.
  QString pattern() const;
  double rate() const;
  int target() const;
  QString url() const;
  int concurrency() const;
  void set_concurrency(int n);
  // A model whose inputs vary in length: the lengths its requests are drawn
  // from ("lognormal:32,1,256", the forms of bench's --seq-len); empty: the
  // model's default (shown greyed in the field).
  QString lengths() const;
  void set_lengths(const QString& text);

 private:
  Status start_thread();
  void update_fields();

  TrafficHooks hooks_;
  QComboBox* pattern_ = nullptr;
  QDoubleSpinBox* rate_ = nullptr;
  bool rate_edited_ = false, setting_rate_ = false;
  QDoubleSpinBox* low_ = nullptr;
  QDoubleSpinBox* on_s_ = nullptr;
  QDoubleSpinBox* off_s_ = nullptr;
  QDoubleSpinBox* period_ = nullptr;
  QSpinBox* concurrency_ = nullptr;
  QLineEdit* lengths_ = nullptr;
  QComboBox* target_ = nullptr;
  QLineEdit* url_ = nullptr;
  QLineEdit* token_ = nullptr;
  QSpinBox* connections_ = nullptr;
  QPushButton* start_stop_ = nullptr;
  QLabel* label_ = nullptr;
  QLabel* error_ = nullptr;

  std::thread thread_;
  std::atomic<bool> stop_{false};
  LoadCounters counters_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace batchscope
