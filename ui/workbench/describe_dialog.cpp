// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/workbench/describe_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMetaObject>
#include <QPointer>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <filesystem>

#include "common/sidecar_path.h"
#include "ui/common/gui_thread.h"

namespace batchscope {

DescribeDialog::DescribeDialog(QString model_path, ModelDescriber describer, QWidget* parent)
    : QDialog(parent), path_(std::move(model_path)), describer_(std::move(describer)) {
  setWindowTitle("Describe " + QFileInfo(path_).fileName());
  auto* layout = new QVBoxLayout(this);
  auto* intro = new QLabel(
      QString("%1 has no sidecar. Give each input of its forward() a datatype and a shape "
              "without the batch dimension (3,224,224); one forward pass on zeros checks them "
              "and records the outputs.")
          .arg(QFileInfo(path_).fileName()));
  intro->setWordWrap(true);
  layout->addWidget(intro);
  form_ = new QFormLayout;
  layout->addLayout(form_);
  max_batch_ = new QSpinBox;
  max_batch_->setRange(1, 4096);
  max_batch_->setValue(64);
  max_batch_->setToolTip("The largest batch the model accepts");
  form_->addRow("Max batch size", max_batch_);
  message_ = new QLabel("Reading the model's forward()…");
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(message_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel);
  write_ = buttons->addButton("Write sidecar", QDialogButtonBox::AcceptRole);
  write_->setEnabled(false);
  layout->addWidget(buttons);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(write_, &QPushButton::clicked, this, [this] { write(); });

  ready_now_ = false;
  QPointer<DescribeDialog> self(this);
  worker_ = std::thread([self, d = describer_, path = path_.toStdString()] {
    auto args = d.arguments ? d.arguments(path)
                            : Expected<std::vector<std::pair<std::string, std::string>>>(
                                  invalid_argument("no describer"));
    QMetaObject::invokeMethod(
        self,
        [self, args = std::move(args)] {
          if (self) self->show_arguments(args);
        },
        Qt::QueuedConnection);
  });
}

DescribeDialog::~DescribeDialog() { join(); }

void DescribeDialog::join() {
  if (worker_.joinable()) worker_.join();
  ready_now_ = true;
}

void DescribeDialog::show_arguments(
    const Expected<std::vector<std::pair<std::string, std::string>>>& args) {
  assert_gui_thread("DescribeDialog::show_arguments");
  join();
  ready_ = true;
  if (!args) {
    message_->setText(QString::fromStdString(args.error().message));
    return;
  }
  int at = 0;
  for (const auto& [name, type] : *args) {
    Row r;
    r.name = name;
    r.dtype = new QComboBox;
    r.dtype->addItems({"FP32", "FP16", "FP64", "INT64", "INT32", "UINT8", "BOOL"});
    r.shape = new QLineEdit;
    r.shape->setPlaceholderText("3,224,224");
    r.shape->setToolTip(QString("Shape of '%1' without the batch dimension").arg(name.c_str()));
    auto* row = new QHBoxLayout;
    row->addWidget(r.dtype);
    row->addWidget(r.shape, 1);
    form_->insertRow(at++, QString("%1 (%2)").arg(name.c_str(), type.c_str()), row);
    rows_.push_back(r);
  }
  message_->setText(rows_.empty() ? "The model's forward() takes no tensor." : QString());
  write_->setEnabled(!rows_.empty());
}

void DescribeDialog::write() {
  if (!ready_ || rows_.empty() || busy()) return;
  std::vector<TensorSpec> inputs;
  for (const Row& r : rows_) {
    auto spec = parse_input_spec(r.name + ":" + r.dtype->currentText().toStdString() + ":" +
                                 r.shape->text().toStdString());
    if (!spec) {
      message_->setText(QString::fromStdString(spec.error().message));
      return;
    }
    inputs.push_back(std::move(*spec));
  }
  write_->setEnabled(false);
  message_->setText("Running forward() on zeros…");
  ready_now_ = false;
  QPointer<DescribeDialog> self(this);
  worker_ = std::thread([self, d = describer_, path = path_.toStdString(), inputs,
                         max = static_cast<uint32_t>(max_batch_->value())] {
    auto written = d.write ? d.write(path, inputs, max)
                           : Expected<std::string>(invalid_argument("no describer"));
    QMetaObject::invokeMethod(
        self,
        [self, written = std::move(written)] {
          if (self) self->show_written(written);
        },
        Qt::QueuedConnection);
  });
}

void DescribeDialog::show_written(const Expected<std::string>& path) {
  assert_gui_thread("DescribeDialog::show_written");
  join();
  write_->setEnabled(true);
  if (!path) {
    // The forward pass's own message, its first line being LibTorch's error.
    message_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    message_->setText(QString::fromStdString(path.error().message));
    return;
  }
  written_ = QString::fromStdString(*path);
  accept();
}

bool ensure_sidecar(QWidget* parent, const QString& path, const ModelDescriber& describer) {
  std::error_code ec;
  // A Python model declares its inputs in its class (or fails to load, saying how).
  if (path.endsWith(".py") || !describer.write ||
      std::filesystem::exists(sidecar_path(path.toStdString()), ec))
    return true;
  DescribeDialog dialog(path, describer, parent);
  return dialog.exec() == QDialog::Accepted;
}

}  // namespace batchscope
