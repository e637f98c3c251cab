// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/runs/runs_panel.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>

#include "runs/history_writer.h"
#include "ui/common/gui_thread.h"
#include "ui/common/number_text.h"
#include "ui/common/picture.h"
#include "ui/runs/run_files.h"
#include "ui/runs/run_plot.h"

namespace batchscope {

namespace {

constexpr int kExportSteps = 6;  // reading the records, four text files, then the PNG

// The summary window length `batchscope bench` picks for a run this long:
// about 40 windows, 0.1 s to 10 s each.
Duration window_for(double duration_s) {
  const double w = std::clamp(duration_s / 40.0, 0.1, 10.0);
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(w));
}

// Puts the plot's legend in a row above the axis rect, or takes it out.
void place_legend(QCustomPlot& plot, bool shown) {
  QCPLayoutGrid* layout = plot.plotLayout();
  const bool placed = layout->rowCount() > 1;
  if (shown && !placed) {
    layout->insertRow(0);
    layout->addElement(0, 0, plot.legend);
    layout->setRowStretchFactor(0, 0.001);
  } else if (!shown && placed) {
    layout->take(plot.legend);
    layout->simplify();
  }
  plot.legend->setVisible(shown);
}

}  // namespace

RunsPanel::RunsPanel(QWidget* parent) : QWidget(parent), model_(new RunListModel(this)) {
  config_ = [] {
    RunConfig c;
    c.target = "inproc";
    return c;
  };
  now_ = [] { return SteadyClock().now(); };

  auto* split = new QSplitter(Qt::Horizontal, this);
  auto* outer = new QHBoxLayout(this);
  outer->setContentsMargins(4, 4, 4, 4);
  outer->addWidget(split);

  auto* left = new QWidget;
  auto* col = new QVBoxLayout(left);
  col->setContentsMargins(0, 0, 4, 0);
  auto* rec_row = new QHBoxLayout;
  name_ = new QLineEdit;
  name_->setPlaceholderText("name of the next run (optional)");
  record_ = new QPushButton("Record");
  rec_row->addWidget(name_, 1);
  rec_row->addWidget(record_);
  col->addLayout(rec_row);
  rec_status_ = new QLabel("Record a stretch of the live traffic to keep, compare and export it.");
  rec_status_->setWordWrap(true);
  col->addWidget(rec_status_);

  // The history's filters, shown while the history is on.
  filters_ = new QWidget;
  auto* filter_row = new QHBoxLayout(filters_);
  filter_row->setContentsMargins(0, 0, 0, 0);
  model_filter_ = new QComboBox;
  model_filter_->setToolTip("Show the runs of one model");
  model_filter_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  model_filter_->setMinimumContentsLength(10);
  kind_filter_ = new QComboBox;
  kind_filter_->addItems({"any kind", "bench", "tune", "recorded", "generation", "serve"});
  kind_filter_->setToolTip("Show one kind of run");
  text_filter_ = new QLineEdit;
  text_filter_->setPlaceholderText("filter by name or model");
  text_filter_->setClearButtonEnabled(true);
  filter_row->addWidget(model_filter_);
  filter_row->addWidget(kind_filter_);
  filter_row->addWidget(text_filter_, 1);
  filters_->setVisible(false);
  col->addWidget(filters_);

  table_ = new QTableView;
  table_->setModel(model_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
  table_->verticalHeader()->setVisible(false);
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setSectionResizeMode(RunListModel::kName, QHeaderView::Stretch);
  col->addWidget(table_, 1);

  auto* buttons = new QHBoxLayout;
  compare_ = new QPushButton("Compare");
  compare_->setToolTip("Overlay the latency fans of the two selected runs");
  export_ = new QPushButton("Export…");
  export_->setToolTip("Write the selected run as JSON, CSV, trace and PNG into a directory");
  remove_ = new QPushButton("Remove");
  buttons->addWidget(compare_);
  buttons->addWidget(export_);
  buttons->addWidget(remove_);
  buttons->addStretch();
  col->addLayout(buttons);
  progress_ = new QProgressBar;
  progress_->setRange(0, kExportSteps);
  progress_->setVisible(false);
  col->addWidget(progress_);
  status_ = new QLabel;
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  col->addWidget(status_);
  split->addWidget(left);

  compare_plot_ = new QCustomPlot;
  compare_plot_->setMinimumSize(320, 180);
  compare_plot_->xAxis->setLabel("time since run start (s)");
  compare_plot_->yAxis->setLabel("latency (ms)");
  // The legend sits in a row of its own above the plot, two runs side by
  // side, so that it never covers a fan.
  // It is placed only while a comparison shows: an empty legend in the
  // layout would pin the plot to its own (zero) width.
  QCPLegend* legend = compare_plot_->legend;
  compare_plot_->axisRect()->insetLayout()->take(legend);
  compare_plot_->axisRect()->insetLayout()->simplify();
  compare_plot_->plotLayout()->setRowSpacing(0);
  legend->setFillOrder(QCPLayoutGrid::foRowsFirst);
  legend->setWrap(2);
  legend->setFont(QFont(font().family(), 8));
  legend->setBorderPen(Qt::NoPen);
  legend->setMargins(QMargins(0, 2, 0, 0));
  auto* note = new QCPItemText(compare_plot_);
  note->setObjectName("note");
  note->position->setType(QCPItemPosition::ptAxisRectRatio);
  note->position->setAxisRect(compare_plot_->axisRect());
  note->position->setCoords(0.5, 0.5);
  note->setColor(QColor(0x55, 0x55, 0x55));
  split->addWidget(compare_plot_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  split->setSizes({600, 400});
  clear_compare("Select two runs and press Compare\nto overlay their latency fans.");

  connect(record_, &QPushButton::clicked, this, [this] {
    if (recording())
      stop_recording();
    else
      start_recording(name_->text());
  });
  connect(compare_, &QPushButton::clicked, this, [this] {
    const std::vector<int> rows = selected_rows();
    if (rows.size() != 2 || !compare(rows[0], rows[1]))
      status_->setText("Select exactly two runs (Ctrl+click) to compare them.");
  });
  connect(export_, &QPushButton::clicked, this, [this] {
    const std::vector<int> rows = selected_rows();
    if (rows.size() != 1) return status_->setText("Select one run to export.");
    const QString dir = QFileDialog::getExistingDirectory(this, "Export the run into");
    if (!dir.isEmpty()) export_run(rows[0], dir);
  });
  connect(remove_, &QPushButton::clicked, this, [this] { remove_selected(); });
  // A name edited in place, or by rename(), is the kept run's label too.
  connect(model_, &QAbstractItemModel::dataChanged, this,
          [this](const QModelIndex& from, const QModelIndex& to) {
            if (from.column() > RunListModel::kName || to.column() < RunListModel::kName) return;
            for (int row = from.row(); row <= to.row(); ++row) relabel_in_history(row);
          });
  auto refilter = [this] {
    set_filter(model_filter_->currentIndex() > 0 ? model_filter_->currentText() : QString(),
               kind_filter_->currentIndex() > 0 ? kind_filter_->currentText() : QString(),
               text_filter_->text());
  };
  connect(model_filter_, &QComboBox::currentIndexChanged, this, refilter);
  connect(kind_filter_, &QComboBox::currentIndexChanged, this, refilter);
  connect(text_filter_, &QLineEdit::textChanged, this, refilter);
}

RunsPanel::~RunsPanel() {
  // The thread checks the flag between files; what it posts after this is
  // dropped with this object's pending events.
  export_cancel_ = true;
  if (export_thread_.joinable()) export_thread_.join();
  // A legend out of the layout has no owner to delete it.
  if (compare_plot_->plotLayout()->rowCount() < 2) delete compare_plot_->legend;
}

void RunsPanel::set_config_provider(std::function<RunConfig()> provider) {
  if (provider) config_ = std::move(provider);
}

void RunsPanel::set_clock(std::function<TimePoint()> now) {
  if (now) now_ = std::move(now);
}

void RunsPanel::add(const RecordBatch& records) {
  if (!recorder_.recording()) return;
  recorder_.add(records);
  append_to_history();
  const double secs = std::chrono::duration<double>(now_() - recorder_.start_time()).count();
  rec_status_->setText(
      QString("Recording \"%1\" · %2 s · %3 requests · %4 batches")
          .arg(recording_name_, number_text(std::max(secs, 0.0), 1),
               QLocale(QLocale::English).toString(qulonglong(recorder_.requests())),
               QLocale(QLocale::English).toString(qulonglong(recorder_.batches()))));
}

void RunsPanel::start_recording(const QString& name, const QString& kind) {
  if (recording()) return;
  recording_kind_ = kind;
  ++runs_made_;
  recording_name_ = name.trimmed().isEmpty() ? QString("run %1").arg(runs_made_) : name.trimmed();
  const RunConfig config = config_();
  const TimePoint start = now_();
  recorder_.start(config, start);
  others_.emplace("/proc", false);
  if (writer_) {
    HistoryRun h;
    h.kind = recording_kind_.toStdString();
    h.label = recording_name_.toStdString();
    h.model = config.model;
    h.config = config;
    h.context = context_ ? context_() : std::string("{}");
    recording_context_ = h.context;
    token_ = writer_->begin(std::move(h), start);
    appended_requests_ = appended_batches_ = appended_depth_ = 0;
  }
  record_->setText("Stop");
  name_->setEnabled(false);
  rec_status_->setText(QString("Recording \"%1\"…").arg(recording_name_));
}

int RunsPanel::stop_recording() {
  if (!recording()) return -1;
  const uint64_t dropped = recorder_.dropped();
  RunData data = recorder_.finish(now_());
  if (others_) data.others = others_->load();
  others_.reset();
  RunSummary summary = summarize_run(data, window_for(data.config.duration_s));
  const QString name = recording_name_;
  RecordedRun r;
  r.name = name;
  r.kind = recording_kind_;
  r.config = data.config;
  r.summary = summary;
  r.started = QDateTime::currentDateTime()
                  .addMSecs(-static_cast<qint64>(data.config.duration_s * 1000))
                  .toString("yyyy-MM-dd HH:mm");
  r.key = next_key_++;
  if (writer_) {
    writer_->finish(token_, run_summary_json(data, summary), data.config.duration_s);
    r.token = token_;
    r.context = recording_context_;  // what it began under, asked once
    token_ = 0;
  }
  r.data = std::make_shared<const RunData>(std::move(data));
  if (on_recorded_) on_recorded_(r.data);
  // Newest first while the history is on, as it lists; in order otherwise.
  int row = model_->size();
  if (writer_) {
    row = 0;
    pending_.push_back(r);
    model_->insert(0, std::move(r));
  } else {
    model_->add(std::move(r));
  }
  record_->setText("Record");
  name_->setEnabled(true);
  name_->clear();
  QString text = QString("Recorded \"%1\": %2 requests in %3 s.")
                     .arg(name, QLocale(QLocale::English).toString(qulonglong(summary.sent)),
                          number_text(run(row).config.duration_s, 1));
  if (dropped > 0) {
    text += QString(" The engine dropped %1 records while it ran, so the run is incomplete.")
                .arg(dropped);
  }
  rec_status_->setText(text);
  table_->selectRow(row);
  return row;
}

bool RunsPanel::rename(int i, const QString& name) {
  return model_->setData(model_->index(i, RunListModel::kName), name, Qt::EditRole);
}

void RunsPanel::relabel_in_history(int i) {
  if (!writer_ || i < 0 || i >= run_count()) return;
  resolve_history_ids();
  // A run recorded a moment ago may not be written yet: the writer finds it
  // by its token in turn, and this thread never waits for the disk.
  if (run(i).history_id > 0) {
    writer_->relabel(run(i).history_id, run(i).name.toStdString());
  } else if (run(i).token != 0) {
    writer_->relabel_run(run(i).token, run(i).name.toStdString());
  }
  for (RecordedRun& r : pending_) {
    if (r.key == run(i).key) r.name = run(i).name;
  }
}

void RunsPanel::remove_run(int i) {
  if (i < 0 || i >= run_count()) return;
  const uint64_t gone = run(i).key;
  if (writer_) {
    resolve_history_ids();
    if (run(i).history_id > 0) {
      writer_->remove(run(i).history_id);
    } else if (run(i).token != 0) {  // recorded a moment ago: by its token, in turn
      writer_->remove_run(run(i).token);
    }
  }
  std::erase_if(pending_, [gone](const RecordedRun& r) { return r.key == gone; });
  if (std::find(compared_.begin(), compared_.end(), gone) != compared_.end())
    clear_compare("A compared run was removed.\nSelect two runs and press Compare.");
  model_->remove(i);
}

std::vector<int> RunsPanel::selected_rows() const {
  std::vector<int> rows;
  for (const QModelIndex& i : table_->selectionModel()->selectedRows()) rows.push_back(i.row());
  std::sort(rows.begin(), rows.end());
  return rows;
}

void RunsPanel::clear_compare(const QString& note) {
  compare_plot_->clearGraphs();
  compared_.clear();
  place_legend(*compare_plot_, false);
  compare_plot_->xAxis->setRange(0, 1);
  compare_plot_->yAxis->setRange(0, 1);
  compare_plot_->xAxis->setTickLabels(false);
  compare_plot_->yAxis->setTickLabels(false);
  auto* text = compare_plot_->findChild<QCPItemText*>("note");
  text->setText(note);
  text->setVisible(true);
  compare_plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool RunsPanel::compare(int i, int j) {
  if (i < 0 || j < 0 || i >= run_count() || j >= run_count() || i == j) return false;
  compare_plot_->clearGraphs();
  compared_ = {run(i).key, run(j).key};
  const auto [x_max, y_max] = draw_fan_overlay(
      *compare_plot_,
      {{run(i).name.toStdString(), &run(i).summary}, {run(j).name.toStdString(), &run(j).summary}});
  compare_plot_->findChild<QCPItemText*>("note")->setVisible(false);
  place_legend(*compare_plot_, true);
  compare_plot_->xAxis->setTickLabels(true);
  compare_plot_->yAxis->setTickLabels(true);
  compare_plot_->xAxis->setRange(0, x_max > 0 ? x_max : 1);
  compare_plot_->yAxis->setRange(0, y_max > 0 ? y_max * 1.15 : 1);
  compare_plot_->replot(QCustomPlot::rpQueuedReplot);
  status_->setText(
      QString("Comparing \"%1\" (blue) with \"%2\" (orange).").arg(run(i).name, run(j).name) +
      context_differences(run(i), run(j)));
  return true;
}

Status RunsPanel::export_run_sync(int i, const QString& dir) {
  if (i < 0 || i >= run_count()) return invalid_argument("no run " + std::to_string(i));
  if (!ensure_loaded(i)) return invalid_argument(history_status().toStdString());
  const RecordedRun& r = run(i);
  if (Status s = write_run_text_files(r, dir, [](int, const QString&) {}); !s) return s;
  return write_run_plot(*r.data, r.summary, run_png_path(r, dir).toStdString());
}

bool RunsPanel::export_run(int i, const QString& dir) {
  if (exporting_ || i < 0 || i >= run_count()) return false;
  if (!can_load(i)) return false;
  if (export_thread_.joinable()) export_thread_.join();
  exporting_ = true;
  export_->setEnabled(false);
  progress_->setValue(0);
  progress_->setVisible(true);
  RecordedRun r = run(i);  // shares the run; a rename or removal does not touch it
  status_->setText(QString("Exporting \"%1\"…").arg(r.name));
  export_cancel_ = false;
  // A kept run's records are read on the export's thread, through a
  // connection of its own: a run of a million requests takes seconds to
  // read, and the window goes on meanwhile.
  const std::string path = r.data || !reader_ ? std::string() : reader_->path();
  export_thread_ = std::thread([this, r, dir, path]() mutable {
    auto post = [this](std::function<void()> f) {
      QMetaObject::invokeMethod(
          this,
          [f = std::move(f)] {
            assert_gui_thread("RunsPanel export progress");
            f();
          },
          Qt::QueuedConnection);
    };
    if (!r.data) {
      post([this, name = r.name] {
        status_->setText(
            QString("Exporting \"%1\": reading its records (1 of %2)").arg(name).arg(kExportSteps));
      });
      auto h = History::open(path, {.read_only = true});
      auto data = h ? (*h)->load(r.history_id) : Expected<RunData>(h.error());
      if (!data) {
        post([this, r, dir, s = Status(data.error())] { finish_export(r, dir, s); });
        return;
      }
      r.data = std::make_shared<const RunData>(std::move(*data));
      post([this, key = r.key, d = r.data] { keep_loaded(key, d); });
    }
    const Status s = write_run_text_files(
        r, dir,
        [this, post, name = r.name](int k, const QString& file) {
          post([this, name, k, file] {
            progress_->setValue(k + 1);
            status_->setText(QString("Exporting \"%1\": writing %2 (%3 of %4)")
                                 .arg(name, file)
                                 .arg(k + 2)
                                 .arg(kExportSteps));
          });
        },
        &export_cancel_);
    post([this, r, dir, s] { finish_export(r, dir, s); });
  });
  return true;
}

void RunsPanel::finish_export(const RecordedRun& r, const QString& dir, const Status& text_files) {
  // The thread's last act was to post this call; it is done or about to be.
  if (export_thread_.joinable()) export_thread_.join();
  if (!text_files) return end_export(r, dir, text_files);
  const QString png = run_png_path(r, dir);
  progress_->setValue(kExportSteps - 1);
  status_->setText(QString("Exporting \"%1\": drawing %2 (%3 of %3)")
                       .arg(r.name, QFileInfo(png).fileName())
                       .arg(kExportSteps));
  // A kept run's picture is drawn by a process of its own where one is set:
  // drawing 50,000 batch dots holds a thread for a third of a second.
  if (!png_program_.isEmpty() && r.history_id > 0 && reader_) {
    auto* p = new QProcess(this);
    p->setProcessChannelMode(QProcess::MergedChannels);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    p->setProcessEnvironment(env);
    connect(p, &QProcess::finished, this, [this, p, r, dir](int code, QProcess::ExitStatus how) {
      const QString said = QString::fromLocal8Bit(p->readAll()).trimmed();
      p->deleteLater();
      end_export(
          r, dir,
          how == QProcess::NormalExit && code == 0
              ? Status::Ok()
              : Status(Error{ErrorCode::kInternal, "drawing the PNG: " + said.toStdString()}));
    });
    connect(p, &QProcess::errorOccurred, this, [this, p, r, dir](QProcess::ProcessError e) {
      if (e != QProcess::FailedToStart) return;
      p->deleteLater();
      end_export(r, dir, Error{ErrorCode::kInternal, "cannot start " + png_program_.toStdString()});
    });
    p->start(png_program_, {"runs", "export", QString::number(r.history_id), "--format", "png",
                            "--out", png, "--history", QString::fromStdString(reader_->path())});
    return;
  }
  // Widgets draw on this thread; the PNG is encoded (the longer part for a
  // large run) on the export's.
  auto image = render_run_plot(*r.data, r.summary);
  if (!image) return end_export(r, dir, image.error());
  export_thread_ = std::thread([this, r, dir, png, image = std::move(*image)] {
    const Status s = picture::save_image(image, png.toStdString(), "run plot");
    QMetaObject::invokeMethod(
        this,
        [this, r, dir, s] {
          if (export_thread_.joinable()) export_thread_.join();
          end_export(r, dir, s);
        },
        Qt::QueuedConnection);
  });
}

void RunsPanel::end_export(const RecordedRun& r, const QString& dir, const Status& s) {
  assert_gui_thread("RunsPanel::end_export");
  progress_->setValue(kExportSteps);
  progress_->setVisible(false);
  export_->setEnabled(true);
  exporting_ = false;
  status_->setText(
      s ? QString("Exported \"%1\" to %2 (%3.json, -requests.csv, -windows.csv, "
                  "-trace.json, .png).")
              .arg(r.name, QDir::toNativeSeparators(dir), run_file_base(r.name))
        : QString("Export of \"%1\" failed: %2").arg(r.name, QString::fromStdString(s.message())));
}

QString RunsPanel::export_status() const { return status_->text(); }

}  // namespace batchscope
