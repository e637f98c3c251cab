// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/workbench/model_list.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

#include "common/sidecar_path.h"

namespace batchscope {

ModelListModel::ModelListModel(QString dir, QObject* parent)
    : QAbstractListModel(parent), dir_(std::move(dir)) {
  entries_ = scan();
}

std::vector<ModelListModel::Entry> ModelListModel::scan() const {
  std::vector<Entry> found;
  const QDir d(dir_);
  for (const QFileInfo& f : d.entryInfoList({"*.pt"}, QDir::Files | QDir::Readable, QDir::Name)) {
    const QString sidecar =
        QString::fromStdString(sidecar_path(f.absoluteFilePath().toStdString()));
    QFile json(sidecar);
    if (!json.open(QIODevice::ReadOnly)) continue;
    Entry e;
    e.name = f.completeBaseName();
    e.path = f.absoluteFilePath();
    // A sidecar is a few hundred bytes; a broken one is reported on loading.
    const QJsonDocument doc = QJsonDocument::fromJson(json.read(1 << 20));
    e.description = doc.isObject() ? doc.object().value("description").toString()
                                   : QString("(%1 does not parse as JSON)").arg(sidecar);
    found.push_back(std::move(e));
  }
  // Python models: each .py with a class (beside the TorchScript files, or
  // in their python/ folder), described by its docstring's first line.
  for (const QDir& where : {d, QDir(d.filePath("python"))}) {
    for (const QFileInfo& f :
         where.entryInfoList({"*.py"}, QDir::Files | QDir::Readable, QDir::Name)) {
      QFile py(f.absoluteFilePath());
      if (!py.open(QIODevice::ReadOnly)) continue;
      const QString head = QString::fromUtf8(py.read(8192));
      if (!head.contains("def predict")) continue;  // not a handler (a script, a helper)
      Entry e;
      e.name = f.fileName();
      e.path = f.absoluteFilePath();
      const int open = head.indexOf("\"\"\"");
      e.description =
          open < 0 ? QString("a Python model") : head.mid(open + 3).section('\n', 0, 0).trimmed();
      found.push_back(std::move(e));
    }
  }
  return found;
}

void ModelListModel::refresh() {
  std::vector<Entry> found = scan();
  beginResetModel();
  entries_ = std::move(found);
  endResetModel();
}

QString ModelListModel::path(int row) const {
  return row >= 0 && row < rowCount() ? entries_[static_cast<size_t>(row)].path : QString();
}

int ModelListModel::row_of(const QString& path) const {
  // The same file by another route (a link, a relative path) is the same row.
  const auto same = [](const QString& p) {
    const QFileInfo f(p);
    return f.canonicalFilePath().isEmpty() ? f.absoluteFilePath() : f.canonicalFilePath();
  };
  const QString want = same(path);
  for (size_t i = 0; i < entries_.size(); ++i)
    if (same(entries_[i].path) == want) return static_cast<int>(i);
  return -1;
}

int ModelListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(entries_.size());
}

QVariant ModelListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return {};
  const Entry& e = entries_[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole: return e.name;
    case Qt::ToolTipRole: return e.description.isEmpty() ? e.path : e.path + "\n" + e.description;
    case kPathRole: return e.path;
    case kDescriptionRole: return e.description;
    default: return {};
  }
}

}  // namespace batchscope
