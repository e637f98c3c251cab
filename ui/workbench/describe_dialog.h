// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The dialog that makes the sidecar of a TorchScript model opened without
// one, as `batchscope describe` does: a row per forward() argument, named as
// the module names it (its datatype, and its shape without the batch
// dimension), the largest batch, and Write. Reading the arguments and the
// forward pass on zeros load the module, so both run on a thread of the
// dialog's own; a forward pass that fails shows LibTorch's message in place,
// and the dialog stays open for another try.
// Thread-safety: GUI thread only; the worker posts its results back to it.

#include <QDialog>
#include <QString>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "model/model_load.h"

class QComboBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace batchscope {

class DescribeDialog : public QDialog {
 public:
  DescribeDialog(QString model_path, ModelDescriber describer, QWidget* parent = nullptr);
  ~DescribeDialog() override;  // waits for a forward pass under way

  // The sidecar's path once written (the dialog is then accepted).
  QString written() const { return written_; }
  // Writes with the rows' values, as the Write button does.
  void write();
  // True once the arguments have been read (the rows are there) or failed.
  bool ready() const { return ready_; }
  bool busy() const { return worker_.joinable() && !ready_now_; }

  int rows() const { return static_cast<int>(rows_.size()); }
  QComboBox* dtype(int row) const { return rows_.at(static_cast<size_t>(row)).dtype; }
  QLineEdit* shape(int row) const { return rows_.at(static_cast<size_t>(row)).shape; }
  QSpinBox* max_batch() const { return max_batch_; }
  QLabel* message() const { return message_; }
  QPushButton* write_button() const { return write_; }

 private:
  struct Row {
    std::string name;
    QComboBox* dtype = nullptr;
    QLineEdit* shape = nullptr;
  };
  void show_arguments(const Expected<std::vector<std::pair<std::string, std::string>>>& args);
  void show_written(const Expected<std::string>& path);
  void join();

  QString path_;
  ModelDescriber describer_;
  QFormLayout* form_ = nullptr;
  std::vector<Row> rows_;
  QSpinBox* max_batch_ = nullptr;
  QLabel* message_ = nullptr;
  QPushButton* write_ = nullptr;
  QString written_;
  bool ready_ = false;
  bool ready_now_ = true;  // no worker running
  std::thread worker_;
};

// Where `path` has no sidecar (beside it or in the config folder) and a
// describer is given, runs the dialog: true once a sidecar exists, false if
// the person cancelled.
bool ensure_sidecar(QWidget* parent, const QString& path, const ModelDescriber& describer);

}  // namespace batchscope
