// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/config_io.h"

#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace batchscope {

void export_config_dialog(QWidget* parent, const ExportInput& input) {
  QDialog dialog(parent);
  dialog.setWindowTitle("Export configuration for a server");
  dialog.resize(760, 560);
  auto* col = new QVBoxLayout(&dialog);
  auto* format = new QComboBox;
  for (ExportFormat f : export_formats(input.lm.has_value()))
    format->addItem(export_format_title(f), static_cast<int>(f));
  col->addWidget(format);
  auto* preview = new QPlainTextEdit;
  preview->setReadOnly(true);
  preview->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  col->addWidget(preview, 1);
  auto* status = new QLabel;
  status->setWordWrap(true);
  col->addWidget(status);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Close);
  col->addWidget(buttons);

  std::vector<ExportFile> files;
  auto update = [&] {
    const auto f = static_cast<ExportFormat>(format->currentData().toInt());
    auto out = export_config(f, input);
    files = out ? *out : std::vector<ExportFile>{};
    QString text;
    for (const ExportFile& file : files)
      text += QString("==> %1 <==\n%2\n")
                  .arg(QString::fromStdString(file.name), QString::fromStdString(file.text));
    preview->setPlainText(out ? text : QString::fromStdString(out.error().message));
    buttons->button(QDialogButtonBox::Save)->setEnabled(out.ok());
    status->clear();
  };
  QObject::connect(format, qOverload<int>(&QComboBox::currentIndexChanged), &dialog, update);
  QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  QObject::connect(buttons, &QDialogButtonBox::accepted, &dialog, [&] {
    const QString dir = QFileDialog::getExistingDirectory(&dialog, "Export into folder");
    if (dir.isEmpty()) return;
    const Status s = write_export(files, dir.toStdString());
    status->setText(s ? QString("Wrote %1 file(s) into %2").arg(files.size()).arg(dir)
                      : QString::fromStdString(s.message()));
  });
  update();
  dialog.exec();
}

}  // namespace batchscope
