// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/generation/gen_step_inspector.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollBar>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "common/clock.h"

namespace batchscope {

GenStepModel::GenStepModel(size_t capacity, QObject* parent)
    : QAbstractTableModel(parent), capacity_(std::max<size_t>(capacity, 1)) {}

void GenStepModel::add(const std::vector<StepRecord>& steps) {
  // Only the newest `capacity_` of this batch can stay.
  const size_t from = steps.size() > capacity_ ? steps.size() - capacity_ : 0;
  const size_t n = steps.size() - from;
  if (n == 0) {
    if (!steps_.empty())
      emit dataChanged(index(0, kAgo), index(rowCount() - 1, kAgo), {Qt::DisplayRole});
    return;
  }
  const size_t keep = std::min(steps_.size(), capacity_ - n);
  if (keep < steps_.size()) {  // the oldest rows are at the bottom
    beginRemoveRows({}, static_cast<int>(keep), static_cast<int>(steps_.size()) - 1);
    steps_.erase(steps_.begin(),
                 steps_.begin() + static_cast<std::ptrdiff_t>(steps_.size() - keep));
    endRemoveRows();
  }
  beginInsertRows({}, 0, static_cast<int>(n) - 1);
  steps_.insert(steps_.end(), steps.begin() + static_cast<std::ptrdiff_t>(from), steps.end());
  endInsertRows();
  if (steps_.size() > n)
    emit dataChanged(index(static_cast<int>(n), kAgo), index(rowCount() - 1, kAgo),
                     {Qt::DisplayRole});
}

void GenStepModel::clear() {
  beginResetModel();
  steps_.clear();
  endResetModel();
}

const StepRecord& GenStepModel::step_at(int row) const {
  return steps_[steps_.size() - 1 - static_cast<size_t>(row)];
}

int GenStepModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(steps_.size());
}

int GenStepModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumns;
}

QString GenStepModel::sequences_text(const StepRecord& s) {
  QString out;
  for (const auto& [id, prefill] : s.seqs) {
    if (!out.isEmpty()) out += ' ';
    out += '#' + QString::number(id);
    if (prefill > 0) out += ':' + QString::number(prefill);
  }
  return out;
}

QVariant GenStepModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const StepRecord& s = step_at(index.row());
  if (role == Qt::TextAlignmentRole)
    return static_cast<int>(index.column() == kSequences ? Qt::AlignLeft | Qt::AlignVCenter
                                                         : Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole && index.column() == kSequences) {
    return QString("%1 decodes, %2 prefill chunks (%3 tokens)\n%4")
        .arg(s.decodes)
        .arg(s.prefills)
        .arg(s.prefill_tokens)
        .arg(sequences_text(s));
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case kStep: return QVariant::fromValue<qulonglong>(s.step);
    case kLane: return s.lane;
    case kAgo: return QString::number(std::max(0.0, to_ms(now_ - s.end) / 1000), 'f', 1);
    case kDuration: return QString::number(to_ms(s.end - s.start), 'f', 2);
    case kDecodes: return s.decodes;
    case kPrefills: return s.prefills;
    case kPrefillTokens: return s.prefill_tokens;
    case kOutput: return s.output_tokens;
    case kRunning: return s.running;
    case kWaiting: return s.waiting;
    case kBlocks: return QString("%1/%2").arg(s.blocks_used).arg(s.blocks_total);
    case kPreempted: return s.preempted;
    case kSequences: return sequences_text(s);
    default: return {};
  }
}

QVariant GenStepModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) return {};
  static const char* names[kColumns] = {"step",
                                        "lane",
                                        "s ago",
                                        "ms",
                                        "decodes",
                                        "prefills",
                                        "prefill tok",
                                        "out tok",
                                        "running",
                                        "waiting",
                                        "blocks",
                                        "preempt",
                                        "sequences (#id, #id:prefill)"};
  static const char* tips[kColumns] = {
      "step number, counted per lane",
      "the engine lane (model copy) that ran it",
      "seconds since the step ended",
      "the step's duration in milliseconds",
      "sequences that decoded one token",
      "prefill chunks",
      "prompt tokens prefilled",
      "tokens sampled and kept",
      "its lane's sequences holding cache after the step",
      "its lane's admitted requests not yet running",
      "its lane's cache blocks in use / in that lane's pool",
      "sequences preempted (their cache given up, to be recomputed)",
      "the step's sequences: #id decoded one token, #id:N prefilled N prompt tokens"};
  if (section < 0 || section >= kColumns) return {};
  if (role == Qt::DisplayRole) return QString(names[section]);
  if (role == Qt::ToolTipRole) return QString(tips[section]);
  return {};
}

GenStepInspector::GenStepInspector(size_t capacity, QWidget* parent) : QWidget(parent) {
  model_ = new GenStepModel(capacity, this);
  table_ = new QTableView;
  table_->setModel(model_);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 4);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setAlternatingRowColors(true);
  table_->setWordWrap(false);
  auto* header = table_->horizontalHeader();
  // Widths from the headers, set once: measuring thousands of rows every tick costs.
  header->setSectionResizeMode(QHeaderView::Interactive);
  for (int c = 0; c < GenStepModel::kSequences; ++c) {
    const QString name = model_->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
    const QString widest = c == GenStepModel::kBlocks     ? QString("16384/16384")
                           : c == GenStepModel::kDuration ? QString("00000.00")
                                                          : name;
    header->resizeSection(c, std::max(48, fontMetrics().horizontalAdvance(widest) + 18));
  }
  header->setStretchLastSection(true);
  follow_ = new QCheckBox("follow the newest step");
  follow_->setChecked(true);
  summary_ = new QLabel;
  auto* top = new QHBoxLayout;
  top->addWidget(summary_, 1);
  top->addWidget(follow_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(top);
  layout->addWidget(table_, 1);
  summary_->setText("no steps yet");
}

void GenStepInspector::add(const std::vector<StepRecord>& steps, TimePoint now) {
  model_->set_now(now);
  QScrollBar* bar = table_->verticalScrollBar();
  const int before = bar->value();
  model_->add(steps);
  seen_ += steps.size();
  if (follow_->isChecked()) {
    table_->scrollToTop();
  } else {  // keep the rows in view where they are: new ones went in above
    bar->setValue(before + static_cast<int>(std::min<size_t>(steps.size(), model_->capacity())));
  }
  if (!steps.empty())
    summary_->setText(QString("%1 steps so far; the last %2 shown, newest first")
                          .arg(seen_)
                          .arg(model_->rowCount()));
}

void GenStepInspector::clear() {
  model_->clear();
  seen_ = 0;
  summary_->setText("no steps yet");
}

}  // namespace batchscope
