// SPDX-License-Identifier: GPL-3.0-or-later
// The Runs panel's side of the run history: writing a recording as it goes,
// listing and filtering what the history keeps, loading a kept run's
// records when they are needed, removing and relabelling kept runs.

#include <QComboBox>
#include <QDateTime>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QTableView>
#include <map>
#include <set>

#include "runs/history_figures.h"
#include "runs/history_writer.h"
#include "traffic/kept_summary.h"
#include "ui/runs/runs_panel.h"

namespace batchscope {
namespace {

// "2026-11-28T19:40:00Z" as local time, "2026-11-28 20:40".
QString local_time(const std::string& utc) {
  QDateTime t = QDateTime::fromString(QString::fromStdString(utc), Qt::ISODate);
  if (!t.isValid()) return QString::fromStdString(utc);
  return t.toLocalTime().toString("yyyy-MM-dd HH:mm");
}

// The history's filter applied to a run recorded here.
bool matches(const HistoryFilter& f, const RecordedRun& r) {
  const std::string name = r.name.toStdString();
  if (!f.model.empty() && r.config.model != f.model) return false;
  if (!f.kind.empty() && r.kind.toStdString() != f.kind) return false;
  if (!f.text.empty() && name.find(f.text) == std::string::npos &&
      r.config.model.find(f.text) == std::string::npos)
    return false;
  return true;  // `since`: a run recorded here is newer than any date asked for
}

HistoryRun as_history_run(const RecordedRun& r) {
  HistoryRun h;
  h.context = r.context;
  h.config = r.config;
  h.model = r.config.model;
  return h;
}

}  // namespace

void RunsPanel::set_history(HistoryWriter* writer) {
  writer_ = writer;
  reader_.reset();
  history_status_.clear();
  filters_->setVisible(writer_ != nullptr);
  if (!writer_) return;
  auto reader = History::open(writer_->path(), {.read_only = true});
  if (!reader) {
    history_status_ = QString::fromStdString(reader.error().message);
    status_->setText("The run history cannot be read: " + history_status_);
    return;
  }
  reader_ = std::move(*reader);
  refresh_history();
}

void RunsPanel::set_context_provider(std::function<std::string()> context) {
  context_ = std::move(context);
}

void RunsPanel::set_confirm(std::function<bool(const QString&)> confirm) {
  confirm_ = std::move(confirm);
}

QString RunsPanel::history_status() const { return history_status_; }

void RunsPanel::show_history_problem(const QString& why) {
  history_status_ = why;
  status_->setText("The run history is off (" + why +
                   "); runs recorded now are kept in this window only.");
}

void RunsPanel::set_filter(const QString& model, const QString& kind, const QString& text) {
  filter_.model = model.toStdString();
  filter_.kind = kind.toStdString();
  filter_.text = text.trimmed().toStdString();
  refresh_history();
}

void RunsPanel::fill_model_filter() {
  auto models = reader_->models();
  if (!models) return;
  const QString current = QString::fromStdString(filter_.model);
  const QSignalBlocker quiet(model_filter_);
  model_filter_->clear();
  model_filter_->addItem("any model");
  for (const std::string& m : *models) model_filter_->addItem(QString::fromStdString(m));
  const int at = current.isEmpty() ? 0 : model_filter_->findText(current);
  model_filter_->setCurrentIndex(at < 0 ? 0 : at);
}

void RunsPanel::resolve_history_ids() {
  if (!writer_) return;
  auto resolve = [this](RecordedRun& r) {
    if (r.token != 0 && r.history_id == 0) {
      if (auto id = writer_->id_of(r.token)) r.history_id = *id;
    }
  };
  for (int i = 0; i < run_count(); ++i) resolve(model_->at(i));
  for (RecordedRun& r : pending_) resolve(r);
}

void RunsPanel::refresh_history() {
  if (!reader_) return;
  auto kept = reader_->list(filter_);
  if (!kept) {
    history_status_ = QString::fromStdString(kept.error().message);
    status_->setText("The run history cannot be read: " + history_status_);
    return;
  }
  // After the list: a run the writer wrote meanwhile is either listed or,
  // below, still shown as recorded here; never both, never neither.
  resolve_history_ids();
  std::set<int64_t> listed;
  for (const HistoryRun& h : *kept) listed.insert(h.id);
  std::vector<RecordedRun> rows;
  std::map<int64_t, const RecordedRun*> here;
  for (int i = 0; i < run_count(); ++i) {
    if (run(i).history_id > 0) here[run(i).history_id] = &run(i);
  }
  for (const RecordedRun& r : pending_) {
    if (listed.count(r.history_id))
      here[r.history_id] = &r;
    else if (matches(filter_, r))
      rows.push_back(r);  // recorded here and not (yet) listed: stays on top
  }
  for (const HistoryRun& h : *kept) {
    RecordedRun r;
    r.name =
        QString::fromStdString(h.label.empty() ? h.kind + " " + std::to_string(h.id) : h.label);
    // A run cut short kept no summary: make it from its records.
    auto summary = kept_summary(*reader_, h);
    r.summary = summary_from_json(summary ? *summary : h.summary);
    r.config = h.config;
    if (!h.finished()) r.config.duration_s = r.summary.duration_s;
    r.history_id = h.id;
    r.kind = QString::fromStdString(h.kind);
    r.started = local_time(h.started_at);
    r.finished = h.finished();
    r.context = h.context;
    if (auto it = here.find(h.id); it != here.end()) {
      r.key = it->second->key;
      r.data = it->second->data;  // records already in memory stay there
      r.token = it->second->token;
    } else {
      r.key = next_key_++;
    }
    rows.push_back(std::move(r));
  }
  model_->reset(std::move(rows));
  // A run the history lists no longer needs keeping here.
  std::erase_if(pending_, [&](const RecordedRun& r) { return listed.count(r.history_id) > 0; });
  fill_model_filter();
}

void RunsPanel::append_to_history() {
  if (!writer_ || token_ == 0) return;
  const RunData& d = recorder_.so_far();
  auto from = [](const auto& v, size_t at) {
    return std::vector<typename std::decay_t<decltype(v)>::value_type>(v.begin() + at, v.end());
  };
  if (d.requests.size() == appended_requests_ && d.batches.size() == appended_batches_ &&
      d.depth.size() == appended_depth_)
    return;
  writer_->append(token_, from(d.requests, appended_requests_), from(d.batches, appended_batches_),
                  from(d.depth, appended_depth_));
  appended_requests_ = d.requests.size();
  appended_batches_ = d.batches.size();
  appended_depth_ = d.depth.size();
  if (!failure_shown_) {
    if (auto why = writer_->failure()) {
      failure_shown_ = true;
      history_status_ = QString::fromStdString(*why);
      status_->setText("The run history stopped (" + history_status_ +
                       "); runs recorded now are kept in this window only.");
    }
  }
}

bool RunsPanel::ensure_loaded(int i) {
  if (!can_load(i)) return false;
  RecordedRun& r = model_->at(i);
  if (r.data) return true;
  auto data = reader_->load(r.history_id);
  if (!data) {
    history_status_ = QString::fromStdString(data.error().message);
    status_->setText("Cannot read \"" + r.name + "\": " + history_status_);
    return false;
  }
  r.data = std::make_shared<const RunData>(std::move(*data));
  return true;
}

void RunsPanel::keep_loaded(uint64_t key, std::shared_ptr<const RunData> data) {
  for (int i = 0; i < run_count(); ++i) {
    if (model_->at(i).key == key && !model_->at(i).data) model_->at(i).data = data;
  }
}

bool RunsPanel::can_load(int i) {
  if (i < 0 || i >= run_count()) return false;
  RecordedRun& r = model_->at(i);
  if (r.data) return true;
  if (r.kind == "generation" ||
      (r.kind == "serve" && r.config.pattern == HistoryRun::kServedGenerationPattern)) {
    history_status_ = QString(
                          "\"%1\" is a generation run; it exports from the command "
                          "line: batchscope runs export %2 --format csv|trace|png")
                          .arg(r.name)
                          .arg(r.history_id);
    status_->setText(history_status_);
    return false;
  }
  if (!reader_ || r.history_id == 0) {
    history_status_ = QString("\"%1\" has no records here and none in a history").arg(r.name);
    return false;
  }
  return true;
}

QString RunsPanel::context_differences(const RecordedRun& a, const RecordedRun& b) const {
  const auto diffs = compare_context(as_history_run(a), as_history_run(b));
  if (diffs.empty()) return QString();
  QStringList parts;
  for (size_t k = 0; k < diffs.size() && k < 4; ++k) {
    parts << QString("%1 (%2 | %3)")
                 .arg(QString::fromStdString(diffs[k].key), QString::fromStdString(diffs[k].a),
                      QString::fromStdString(diffs[k].b));
  }
  QString text = "\nThey differ in " + parts.join(", ");
  if (diffs.size() > 4) text += QString(" and %1 more").arg(diffs.size() - 4);
  return text + ".";
}

void RunsPanel::remove_selected() {
  std::vector<int> rows = selected_rows();
  if (rows.empty()) {
    status_->setText("Select the runs to remove.");
    return;
  }
  QString question = rows.size() == 1 ? QString("Remove the run \"%1\"?").arg(run(rows[0]).name)
                                      : QString("Remove these %1 runs?").arg(rows.size());
  if (writer_) {
    question += QString("\nThey are removed from the run history (%1) too; this cannot be undone.")
                    .arg(QString::fromStdString(writer_->path()));
  }
  const bool yes = confirm_
                       ? confirm_(question)
                       : QMessageBox::question(this, "Remove runs", question) == QMessageBox::Yes;
  if (!yes) return;
  std::sort(rows.rbegin(), rows.rend());
  for (int r : rows) remove_run(r);
  history_status_ = QString("Removed %1 run(s).").arg(rows.size());
  status_->setText(history_status_);
}

}  // namespace batchscope
