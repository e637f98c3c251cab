#pragma once
// The window's side of configuration files: reading options from a
// Batchscope JSON file or a Triton config.pbtxt, and the "Export config for
// a server" dialog (format, a preview of every file it writes, save).
// Thread-safety: GUI thread only (the dialog); import_options is a free
// function without shared state.

#include <QString>
#include <string>

#include "export_config.h"

class QWidget;

namespace batchscope {


// Writes `files` into `dir` (created if missing); the error names the file.
Status write_export(const std::vector<ExportFile>& files, const QString& dir);

// Shows the export dialog for `input`; returns when it is closed.
void export_config_dialog(QWidget* parent, const ExportInput& input);

}  // namespace batchscope
