// SPDX-License-Identifier: GPL-3.0-or-later
// The generation view's Tuner tab: the live confirmation of the selected
// configuration on the window's own traffic (gen_tuner.h).
#include <QLabel>
#include <QString>
#include <algorithm>
#include <chrono>

#include "traffic/gen_load.h"
#include "ui/common/qt_text.h"
#include "ui/generation/gen_tuner.h"

namespace batchscope {

namespace {

QString confirm_range(const FigureRange& f, int decimals) {
  return QString::number(f.low, 'f', decimals) + "–" + QString::number(f.high, 'f', decimals);
}

}  // namespace

void GenTunerPanel::add_requests(std::span<const GenRecord> requests) {
  if (!confirming()) return;
  for (const GenRecord& r : requests) {
    if (r.arrival < confirm_since_ || r.arrival >= confirm_until_) continue;
    GenRecord kept = r;
    kept.text.clear();
    confirm_records_.push_back(std::move(kept));
  }
  if (setup_.now && setup_.now() >= confirm_by_) finish_confirmation();
}

Status GenTunerPanel::confirm_selected() {
  if (confirming()) return invalid_argument("a confirmation is running");
  if (!setup_.now) return invalid_argument("there is no engine to confirm on");
  const auto row = selected_row();
  if (!row) {
    confirmed_->setText("Not confirmed: select a configuration in the table first");
    return invalid_argument("select a configuration in the table first");
  }
  if (Status s = apply_selected(); !s) {
    confirmed_->setText("Not confirmed: " + text_of(s.message()));
    return s;
  }
  confirm_ = GenConfirmation{rows_[static_cast<size_t>(*row)], std::nullopt, 0};
  confirm_records_.clear();
  const Duration span = std::chrono::duration_cast<Duration>(
      std::chrono::duration<double>(std::max(0.5, seconds_->value())));
  confirm_since_ = setup_.now();
  confirm_until_ = confirm_since_ + span;
  confirm_by_ = confirm_until_ + std::chrono::seconds(2);
  confirmed_->setText(QString("Confirming live: %1 s of this window's traffic under the "
                              "selected configuration…")
                          .arg(std::max(0.5, seconds_->value())));
  return Status::Ok();
}

void GenTunerPanel::finish_confirmation() {
  // The run the window's traffic made in the confirmation's window.
  GenRun run;
  run.start = confirm_since_;
  for (const GenRecord& r : confirm_records_) {
    GenRequestResult q;
    q.intended = r.arrival - confirm_since_;
    q.prompt_tokens = r.prompt_tokens;
    q.max_tokens = r.output_tokens;  // what it asked is not kept; what it got splits the halves
    q.output_tokens = r.output_tokens;
    q.done = true;
    q.ok = r.reason == FinishReason::kStop || r.reason == FinishReason::kLength;
    q.outcome = finish_reason_name(r.reason);
    q.first = r.first_token;
    q.finished = r.finished;
    q.gaps = r.gaps;
    if (r.first_token != kNever) {
      q.last = r.first_token;
      for (Duration g : r.gaps) q.last += g;
    }
    run.requests.push_back(std::move(q));
  }
  const GenSlo slo = outcome_ ? outcome_->result.slo : GenSlo{};
  const GenSummary summary = summarize_gen(run, slo.ttft_ms, slo.itl_ms);
  confirm_->requests = confirm_records_.size();
  confirm_->measured = gen_evaluated_from(confirm_->predicted.options, summary, slo.quantile);
  confirm_records_.clear();
  confirmed_->setText(confirmation_text());
}

QString GenTunerPanel::confirmation_text() const {
  if (!confirm_) return {};
  if (!confirm_->measured) return confirmed_->text();
  const GenEvaluated& p = confirm_->predicted;
  const GenEvaluated& m = *confirm_->measured;
  const GenSlo slo = outcome_ ? outcome_->result.slo : GenSlo{};
  const QString q = QString("p%1").arg(slo.quantile);
  return QString(
             "Measured live over %1 requests: TTFT %2 %3 ms (predicted %4), ITL %2 %5 ms "
             "(predicted %6), %7 tokens/s (predicted %8), goodput %9 req/s (predicted %10); "
             "%11")
             .arg(confirm_->requests)
             .arg(q)
             .arg(m.ttft_ms, 0, 'f', 1)
             .arg(p.ttft_ms, 0, 'f', 1)
             .arg(m.itl_ms, 0, 'f', 2)
             .arg(p.itl_ms, 0, 'f', 2)
             .arg(m.tokens_per_s, 0, 'f', 0)
             .arg(p.tokens_per_s, 0, 'f', 0)
             .arg(m.goodput_rps, 0, 'f', 2)
             .arg(p.goodput_rps, 0, 'f', 2)
             .arg(meets_gen_slo(m, slo) ? "meets the objective" : "misses the objective") +
         (p.band
              ? (p.band->ttft_ms.low <= m.ttft_ms && m.ttft_ms <= p.band->ttft_ms.high &&
                         p.band->itl_ms.low <= m.itl_ms && m.itl_ms <= p.band->itl_ms.high
                     ? "; inside the predicted band"
                     : "; outside the predicted band (TTFT " + confirm_range(p.band->ttft_ms, 1) +
                           ", ITL " + confirm_range(p.band->itl_ms, 2) + " ms)")
              : QString());
}

}  // namespace batchscope
