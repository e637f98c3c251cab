#include "gui_cmd.h"

#include <QApplication>
#include <QTimer>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "cli_args.h"
#include "model_setup.h"
#include "workbench_window.h"
#ifdef BATCHSCOPE_WITH_TORCH
#include "torch_info.h"
#endif

namespace batchscope {

std::string gui_help() {
  return "usage: batchscope gui [--model PATH | --synthetic A_US,C_US[,L_US]] [--device "
         "cpu|cuda:N]\n"
         "                      [--rate R] [--no-traffic] [serving options]\n"
         "Opens the workbench window: live latency, queue depth, batch size and throughput\n"
         "plots, the batching options applied live, and in-process traffic. Default model\n"
         "models/mlp.pt with Poisson traffic at 1500 req/s (--rate), started at once unless\n"
         "--no-traffic. Space starts and stops traffic; P pauses the plots.\n"
         "--screenshot FILE.png [--after S] saves the window after S seconds (default 10)\n"
         "and exits; with QT_QPA_PLATFORM=offscreen it needs no display.\n"
         "Serving options (the starting values):\n" +
         cli::options_help();
}

bool display_available() {
  return std::getenv("DISPLAY") || std::getenv("WAYLAND_DISPLAY") || std::getenv("QT_QPA_PLATFORM");
}

int run_gui(int argc, char** argv, const std::vector<std::string>& args) {
  auto fail = [](const std::string& m, int code = 2) {
    std::cerr << "batchscope gui: " << m << "\n";
    return code;
  };
  auto flags = cli::parse_flags(args, {"no-traffic"});
  std::string screenshot;
  double after_s = 10;
  if (!flags) return fail(flags.error().message);
  auto options = cli::take_options(*flags);
  if (!options) return fail(options.error().message);
  auto choice = take_model_flags(*flags, "models/mlp.pt");
  if (!choice) return fail(choice.error().message);
  WorkbenchConfig cfg;
  for (auto& [name, value] : *flags) {
    if (name == "rate") {
      auto r = cli::parse_number(name, value, 1, 1e6);
      if (!r) return fail(r.error().message);
      cfg.traffic_rate = *r;
    } else if (name == "no-traffic") {
      cfg.start_traffic = false;
    } else if (name == "screenshot") {
      screenshot = value;
    } else if (name == "after") {
      auto a = cli::parse_number(name, value, 0, 3600);
      if (!a) return fail(a.error().message);
      after_s = *a;
    } else {
      return fail("unknown option --" + name + " (see batchscope gui --help)");
    }
  }
  // The window and the traffic need a core: OpenBLAS's spinning threads would
  // otherwise fight them for every one.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int blas = std::max(1, (cores - 1) / static_cast<int>(options->num_lanes));
  auto model = make_model(*choice, *options, true, blas);
  if (!model) return fail(model.error().message, 1);

  QApplication app(argc, argv);
  Engine engine(model->factory, *options);
  const ModelMetadata meta = model->metadata;
  engine.set_validator([meta](const Tensors& in) { return check_inputs(meta, in); });
  if (Status s = engine.start(); !s) return fail(s.message(), 1);

  cfg.model = model->metadata;
  cfg.device = model->device;
  cfg.version = BATCHSCOPE_VERSION;
#ifdef BATCHSCOPE_WITH_TORCH
  if (!choice->synthetic) cfg.blas = torch_info().blas_name;
#endif
  int rc = 0;
  {
    WorkbenchWindow window(engine, cfg);
    window.resize(1560, 960);
    window.move(0, 0);
    window.show();
    if (!screenshot.empty()) {  // capture the window itself, then close
      QTimer::singleShot(static_cast<int>(after_s * 1000), &window, [&] {
        window.refresh();
        if (!window.grab().save(QString::fromStdString(screenshot))) {
          std::cerr << "batchscope gui: cannot write " << screenshot << "\n";
          rc = 1;
        }
        app.quit();
      });
    }
    const int exec_rc = app.exec();
    rc = rc ? rc : exec_rc;
  }  // the window stops its traffic before the engine stops
  engine.stop(StopMode::kDrain);
  return rc;
}

}  // namespace batchscope
