// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Recording in the generation view: a Record button that keeps a stretch of
// the engine's requests (the built-in traffic's, the listener's clients',
// the prompt box's) as a generation run in the run history. Each refresh's
// finished requests are handed to the history's writer as they come, so a
// run recorded when the program dies is there after a restart, marked
// unfinished; Stop stores its summary (what `bench --json` writes for a
// generation run: TTFT, ITL, end-to-end latency, tokens/s). Without a
// history the button is off and says why.
// Thread-safety: GUI thread only.

#include <QGroupBox>
#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "generation/gen_types.h"
#include "runs/history.h"

class QLabel;
class QLineEdit;
class QPushButton;

namespace batchscope {

class HistoryWriter;

class GenRecordBox : public QGroupBox {
 public:
  explicit GenRecordBox(QWidget* parent = nullptr);

  // The history to record into (null: none); `describe` gives what a new
  // run is (its options, traffic, model and context) when it starts.
  struct RunInfo {
    std::string model;
    Options options;
    std::string traffic;  // "poisson rate=25/s", or "" for whatever comes
    std::string context;  // JSON: machine, LibTorch, model file
  };
  void set_history(HistoryWriter* writer, std::function<RunInfo()> describe);
  void set_clock(std::function<TimePoint()> now) { now_ = std::move(now); }

  // The requests and steps one refresh drained; kept while recording.
  void add(const std::vector<GenRecord>& finished, const std::vector<StepRecord>& steps = {});
  // `kind`: "generation", or "serve" for the listener's Record switch (the
  // history then reads its records as generative: HistoryRun::generative()).
  void start(const QString& name = QString(), const std::string& kind = "generation");
  // Finishes the run; its token, or 0 when nothing was recorded.
  uint64_t stop();
  bool recording() const { return token_ != 0; }
  const std::string& recording_kind() const { return kind_; }
  size_t recorded() const { return rows_.size(); }
  QString status() const;

 private:
  HistoryWriter* writer_ = nullptr;
  std::function<RunInfo()> describe_;
  std::function<TimePoint()> now_;
  uint64_t token_ = 0;
  std::string kind_ = "generation";
  TimePoint start_{};
  RunInfo info_;
  QString name_;
  int made_ = 0;
  std::vector<HistoryGenRequest> rows_;  // this run's, for its summary
  size_t steps_ = 0;

  QLineEdit* name_edit_ = nullptr;
  QPushButton* button_ = nullptr;
  QLabel* status_ = nullptr;
};

}  // namespace batchscope
