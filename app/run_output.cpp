// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/run_output.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#ifdef BATCHSCOPE_WITH_QT
#include <QApplication>
#endif

namespace batchscope {

int Fail::operator()(const std::string& message, int code) const {
  std::cerr << "batchscope " << command << ": " << message << "\n";
  return code;
}

Say terminal_say() {
  return Say(
      [](const std::string& s) {
        std::fputs(s.c_str(), stdout);
        std::fflush(stdout);
      },
      [](const std::string& s) {
        std::fflush(stdout);
        std::fputs(s.c_str(), stderr);
      });
}

Status qt_free_check(const std::string& target, const std::string& plot_out,
                     const std::string& payload_file) {
  const char* why = "this build has no Qt, which ";
  if (target != "inproc" && target != "predict") {
    return invalid_argument("--target " + target + ": " + why +
                            "the HTTP targets need; use inproc or predict");
  }
  if (!plot_out.empty()) {
    return invalid_argument("--plot " + plot_out + ": " + why +
                            "drawing needs; use --json or --csv");
  }
  if (!payload_file.empty()) {
    return invalid_argument("--payload " + payload_file + ": " + why +
                            "reading a request body needs");
  }
  return {};
}

bool save_export(const std::string& path, const std::string& text, const char* what) {
  if (path.empty()) return true;
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) {
    std::cerr << "batchscope: cannot write " << path << "\n";
    return false;
  }
  std::printf("  wrote %s (%s)\n", path.c_str(), what);
  return true;
}

#ifdef BATCHSCOPE_WITH_QT
std::unique_ptr<QCoreApplication> run_application(int& argc, char** argv, bool plot,
                                                  bool self_http) {
  if (plot) {
    if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
    return std::make_unique<QApplication>(argc, argv);
  }
  if (self_http) return std::make_unique<QCoreApplication>(argc, argv);
  return nullptr;
}
#endif

}  // namespace batchscope
