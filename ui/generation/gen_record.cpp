// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/generation/gen_record.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "runs/history_writer.h"
#include "traffic/gen_load.h"

namespace batchscope {

GenRecordBox::GenRecordBox(QWidget* parent) : QGroupBox("Record a run", parent) {
  now_ = [] { return SteadyClock().now(); };
  auto* col = new QVBoxLayout(this);
  auto* row = new QHBoxLayout;
  name_edit_ = new QLineEdit;
  name_edit_->setPlaceholderText("name (optional)");
  button_ = new QPushButton("Record");
  row->addWidget(name_edit_, 1);
  row->addWidget(button_);
  col->addLayout(row);
  status_ = new QLabel;
  status_->setWordWrap(true);
  col->addWidget(status_);
  button_->setEnabled(false);
  status_->setText("The run history is off: there is nothing to record into.");
  connect(button_, &QPushButton::clicked, this, [this] {
    if (recording())
      stop();
    else
      start(name_edit_->text());
  });
}

void GenRecordBox::set_history(HistoryWriter* writer, std::function<RunInfo()> describe) {
  writer_ = writer;
  describe_ = std::move(describe);
  button_->setEnabled(writer_ != nullptr);
  status_->setText(writer_ ? QString("Keeps the requests from now on as a generation run in %1.")
                                 .arg(QString::fromStdString(writer_->path()))
                           : QString("The run history is off: there is nothing to record into."));
}

void GenRecordBox::start(const QString& name, const std::string& kind) {
  if (!writer_ || recording()) return;
  ++made_;
  name_ = name.trimmed().isEmpty() ? QString("generation run %1").arg(made_) : name.trimmed();
  info_ = describe_ ? describe_() : RunInfo{};
  start_ = now_();
  rows_.clear();
  steps_ = 0;
  HistoryRun h;
  kind_ = kind;
  h.kind = kind;
  h.label = name_.toStdString();
  h.model = info_.model;
  h.config.model = info_.model;
  h.config.pattern = kind == "serve" ? HistoryRun::kServedGenerationPattern : info_.traffic;
  h.config.target = "inproc";
  h.config.options = info_.options;
  h.context = info_.context;
  token_ = writer_->begin(std::move(h), start_);
  button_->setText("Stop");
  name_edit_->setEnabled(false);
  status_->setText(QString("Recording \"%1\"…").arg(name_));
}

void GenRecordBox::add(const std::vector<GenRecord>& finished,
                       const std::vector<StepRecord>& steps) {
  if (!recording()) return;
  std::vector<HistoryGenRequest> rows;
  for (const GenRecord& r : finished) {
    if (r.arrival >= start_) rows.push_back(history_row_of(r, start_));
  }
  std::vector<StepRecord> kept_steps;
  for (const StepRecord& x : steps) {
    if (x.start >= start_) kept_steps.push_back(x);
  }
  if (rows.empty() && kept_steps.empty()) return;
  rows_.insert(rows_.end(), rows.begin(), rows.end());
  steps_ += kept_steps.size();
  writer_->append_generation(token_, std::move(rows), std::move(kept_steps));
  status_->setText(QString("Recording \"%1\": %2 requests finished").arg(name_).arg(rows_.size()));
}

uint64_t GenRecordBox::stop() {
  if (!recording()) return 0;
  const TimePoint end = now_();
  GenRun run;
  run.pattern = info_.traffic;
  run.target = "inproc";
  run.model = info_.model;
  run.options = describe_generation(info_.options);
  run.start = start_;
  for (const HistoryGenRequest& q : rows_) run.requests.push_back(gen_result_of(q));
  const GenSummary s = summarize_gen(run, 0, 0);
  writer_->finish(token_, gen_summary_json(run, s),
                  std::chrono::duration<double>(end - start_).count());
  const uint64_t done = token_;
  token_ = 0;
  button_->setText("Record");
  name_edit_->setEnabled(true);
  name_edit_->clear();
  status_->setText(QString("Kept \"%1\": %2 requests, %3 tokens/s, TTFT p99 %4 ms (batchscope "
                           "runs list).")
                       .arg(name_)
                       .arg(rows_.size())
                       .arg(s.tokens_per_s, 0, 'f', 0)
                       .arg(s.ttft.p99, 0, 'f', 1));
  return done;
}

QString GenRecordBox::status() const { return status_->text(); }

}  // namespace batchscope
