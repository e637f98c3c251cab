// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The models in a folder, as the model panel offers them.
// Thread-safety: GUI thread only.

#include <QAbstractListModel>
#include <QString>
#include <vector>

namespace batchscope {

// The models in a folder: every NAME.pt that has NAME.json beside it, sorted
// by name. Display: NAME; tooltip: the path and the sidecar's description.
// refresh() looks again (a model reset).
class ModelListModel : public QAbstractListModel {
 public:
  static constexpr int kPathRole = Qt::UserRole;
  static constexpr int kDescriptionRole = Qt::UserRole + 1;

  explicit ModelListModel(QString dir, QObject* parent = nullptr);

  void refresh();
  const QString& dir() const { return dir_; }
  QString path(int row) const;
  int row_of(const QString& path) const;  // -1 if absent

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 private:
  struct Entry {
    QString name;
    QString path;
    QString description;
  };
  std::vector<Entry> scan() const;

  QString dir_;
  std::vector<Entry> entries_;
};

}  // namespace batchscope
