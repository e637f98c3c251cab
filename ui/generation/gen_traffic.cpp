// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/generation/gen_traffic.h"

#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <algorithm>
#include <chrono>

#include "traffic/arrivals.h"

namespace batchscope {

GenTraffic::GenTraffic(GenEngine& engine, double rate, QWidget* parent)
    : QGroupBox("Traffic", parent), engine_(engine) {
  rate_ = new QDoubleSpinBox;
  rate_->setRange(0.1, 100'000);
  rate_->setDecimals(1);
  rate_->setSuffix(" req/s");
  rate_->setValue(rate);
  rate_->setToolTip("Poisson arrivals at this mean rate");
  prompt_ = new QLineEdit("uniform:16,64");
  prompt_->setToolTip(
      "prompt length in tokens: fixed:N, uniform:LO,HI or "
      "lognormal:MEDIAN,SIGMA[,MAX]");
  max_tokens_ = new QLineEdit("lognormal:32,0.8,256");
  max_tokens_->setToolTip(
      "max_tokens: fixed:N, uniform:LO,HI or lognormal:MEDIAN,SIGMA[,MAX] "
      "(a long tail, like real traffic); each request runs to its length");
  start_stop_ = new QPushButton("Start traffic");
  counts_ = new QLabel("stopped");
  counts_->setWordWrap(true);
  error_ = new QLabel;
  error_->setWordWrap(true);
  error_->setStyleSheet("color: #b00000;");
  error_->hide();
  auto* form = new QFormLayout(this);
  form->addRow("rate", rate_);
  form->addRow("prompt tokens", prompt_);
  form->addRow("max_tokens", max_tokens_);
  form->addRow(start_stop_);
  form->addRow(error_);
  form->addRow(counts_);
  connect(start_stop_, &QPushButton::clicked, this, [this] {
    if (running())
      stop();
    else
      start();
  });
}

GenTraffic::~GenTraffic() { stop(); }

Status GenTraffic::start() {
  if (running()) return Status::Ok();
  auto fail = [&](const Error& e) {
    error_->setText(QString::fromStdString(e.message));
    error_->show();
    return Status(e);
  };
  auto prompt = LengthDist::parse(prompt_->text().toStdString(), "prompt tokens");
  if (!prompt) return fail(prompt.error());
  auto max_tokens = LengthDist::parse(max_tokens_->text().toStdString(), "max_tokens");
  if (!max_tokens) return fail(max_tokens.error());
  error_->clear();
  error_->hide();
  stop_ = false;
  const double rate = rate_->value();
  const uint64_t seed = ++runs_;
  thread_ =
      std::thread([this, rate, p = *prompt, m = *max_tokens, seed] { run(rate, p, m, seed); });
  for (QWidget* w : std::initializer_list<QWidget*>{rate_, prompt_, max_tokens_})
    w->setEnabled(false);
  start_stop_->setText("Stop traffic");
  refresh();
  return Status::Ok();
}

void GenTraffic::stop() {
  if (!thread_.joinable()) return;
  stop_ = true;
  thread_.join();
  for (QWidget* w : std::initializer_list<QWidget*>{rate_, prompt_, max_tokens_})
    w->setEnabled(true);
  start_stop_->setText("Start traffic");
  refresh();
}

void GenTraffic::run(double rate, LengthDist prompt, LengthDist max_tokens, uint64_t seed) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kPoisson;
  spec.rate = rate;
  spec.duration_s = 1e7;  // until stopped
  spec.seed = seed;
  ArrivalSchedule schedule(spec);
  GenWorkload workload(prompt, max_tokens, seed);
  const int context = engine_.info().context_length;
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<GenTrafficCounters> counters = counters_;
  while (!stop_) {
    const auto offset = schedule.next();
    if (!offset) break;
    const auto at =
        start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(*offset);
    // Sleep in slices so that stop() is answered within a few milliseconds.
    for (auto now = std::chrono::steady_clock::now(); now < at && !stop_;
         now = std::chrono::steady_clock::now())
      std::this_thread::sleep_for(
          std::min<std::chrono::steady_clock::duration>(at - now, std::chrono::milliseconds(10)));
    if (stop_) break;
    GenLengths len = workload.next();
    // Keep prompt and output within the model's context.
    len.prompt = std::clamp<uint32_t>(len.prompt, 1, static_cast<uint32_t>(context / 2));
    len.max_tokens =
        std::clamp<uint32_t>(len.max_tokens, 1, static_cast<uint32_t>(context) - len.prompt);
    const std::string text = workload.prompt_text(len.prompt);
    GenRequest r;
    r.prompt.reserve(text.size());
    for (unsigned char c : text) r.prompt.push_back(c);
    r.max_tokens = len.max_tokens;
    r.ignore_eos = true;
    r.on_done = [counters](const GenRecord& rec) {
      counters->finished.fetch_add(1, std::memory_order_relaxed);
      counters->output_tokens.fetch_add(rec.output_tokens, std::memory_order_relaxed);
    };
    if (engine_.submit(std::move(r)))
      counters->sent.fetch_add(1, std::memory_order_relaxed);
    else
      counters->refused.fetch_add(1, std::memory_order_relaxed);
  }
}

void GenTraffic::refresh() {
  const GenTrafficCounters& c = *counters_;
  counts_->setText(QString("%1: sent %2, refused %3, finished %4, %5 output tokens")
                       .arg(running() ? "running" : "stopped")
                       .arg(c.sent.load())
                       .arg(c.refused.load())
                       .arg(c.finished.load())
                       .arg(c.output_tokens.load()));
}

void GenTraffic::set_rate(double per_s) { rate_->setValue(per_s); }
void GenTraffic::set_max_tokens(const QString& dist) { max_tokens_->setText(dist); }
void GenTraffic::set_prompt_tokens(const QString& dist) { prompt_->setText(dist); }
std::string GenTraffic::describe() const {
  return QString("poisson rate=%1/s, prompt %2, max_tokens %3")
      .arg(rate_->value())
      .arg(prompt_->text(), max_tokens_->text())
      .toStdString();
}

QString GenTraffic::error() const { return error_->text(); }

std::string GenTrafficSpec::describe() const {
  return QString("poisson rate=%1/s, prompt %2, max_tokens %3")
      .arg(rate)
      .arg(QString::fromStdString(prompt.describe()), QString::fromStdString(max_tokens.describe()))
      .toStdString();
}

Expected<GenTrafficSpec> GenTraffic::spec() const {
  auto prompt = LengthDist::parse(prompt_->text().toStdString(), "prompt tokens");
  if (!prompt) return prompt.error();
  auto max_tokens = LengthDist::parse(max_tokens_->text().toStdString(), "max_tokens");
  if (!max_tokens) return max_tokens.error();
  return GenTrafficSpec{rate_->value(), *prompt, *max_tokens};
}

}  // namespace batchscope
