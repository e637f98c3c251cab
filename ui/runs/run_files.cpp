// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/runs/run_files.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

namespace batchscope {
namespace {

Status write_file(const QString& path, const std::string& text) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
      f.write(text.data(), static_cast<qint64>(text.size())) != static_cast<qint64>(text.size())) {
    return invalid_argument("cannot write " + path.toStdString() + ": " +
                            f.errorString().toStdString());
  }
  return Status::Ok();
}

}  // namespace

QString run_file_base(const QString& name) {
  QString base;
  for (QChar c : name.trimmed()) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '-' || c == '_';
    base += plain ? c : QChar('_');
  }
  while (base.startsWith('.')) base.remove(0, 1);
  return base.isEmpty() ? QStringLiteral("run") : base;
}

Status write_run_text_files(const RecordedRun& run, const QString& dir,
                            const std::function<void(int, const QString&)>& progress,
                            const std::atomic<bool>* cancel) {
  if (!QDir().mkpath(dir)) return invalid_argument("cannot make directory " + dir.toStdString());
  const QString base = QDir(dir).filePath(run_file_base(run.name));
  const RunData& data = *run.data;
  const struct {
    QString path;
    std::function<std::string()> text;
  } files[] = {
      {base + ".json", [&] { return run_summary_json(data, run.summary); }},
      {base + "-requests.csv", [&] { return run_requests_csv(data); }},
      {base + "-windows.csv", [&] { return run_windows_csv(run.summary); }},
      {base + "-trace.json", [&] { return run_trace_json(data); }},
  };
  int k = 0;
  for (const auto& file : files) {
    if (cancel && cancel->load()) return Error{ErrorCode::kCancelled, "export cancelled"};
    progress(k++, QFileInfo(file.path).fileName());
    if (Status s = write_file(file.path, file.text()); !s) return s;
  }
  return Status::Ok();
}

QString run_png_path(const RecordedRun& run, const QString& dir) {
  return QDir(dir).filePath(run_file_base(run.name) + ".png");
}

}  // namespace batchscope
