// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/gui_cmd.h"

#include <QApplication>
#include <QScreen>
#include <QSettings>
#include <QTimer>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "api/options_json.h"
#include "app/build_info.h"
#include "app/cli_args.h"
#include "app/gen_predict.h"
#include "app/history_setup.h"
#include "app/install_paths.h"
#include "app/lm_setup.h"
#include "app/model_loader.h"
#include "app/model_setup.h"
#include "ui/common/app_resources.h"
#include "ui/generation/gen_main_window.h"
#include "ui/generation/gen_record.h"
#include "ui/generation/gen_traffic.h"
#include "ui/generation/gen_view.h"
#include "ui/runs/runs_panel.h"
#include "ui/workbench/workbench_window.h"
#ifdef BATCHSCOPE_WITH_TORCH
#include "torch/torch_lm.h"
#include "torch/torch_model.h"
#endif

namespace batchscope {

std::string gui_help() {
  return "usage: batchscope gui [--model PATH | --synthetic A_US,C_US[,L_US]] [--device "
         "cpu|cuda:N]\n"
         "                      [--rate R] [--no-traffic] [--listen PORT] [--token TOKEN]\n"
         "                      [--no-remote-config] [--max-connections N] [--fresh]\n"
         "                      [--history FILE | --no-history] [serving options]\n"
         "Opens the workbench window: live latency, queue depth, batch size and throughput\n"
         "plots, the batching options applied live, traffic, the model and its cost profile,\n"
         "an HTTP listener, a batch inspector and recorded runs. Default model models/mlp.pt\n"
         "with Poisson traffic at 1500 req/s (--rate), started once the model is loaded\n"
         "unless --no-traffic. --listen PORT starts the HTTP listener at once; --token TOKEN\n"
         "(default $BATCHSCOPE_TOKEN) and --no-remote-config guard it as they do serve's, and\n"
         "--max-connections N limits its connections as serve's (see serve --help).\n"
         "The window remembers its layout, traffic, server, model and options between starts;\n"
         "flags given here win, and --fresh ignores what was saved.\n"
         "Space starts and stops traffic; P pauses the plots.\n"
         "--screenshot FILE.png [--after S] saves the window S seconds after the model is\n"
         "ready (default 10) and exits; with QT_QPA_PLATFORM=offscreen it needs no display\n"
         "(and shows no history unless --history names one).\n"
         "The Runs tab records runs into the run history as they go and lists what it keeps\n"
         "(batchscope runs; a recording cut short by a crash is there, marked unfinished):\n" +
         history_flags_help() +
         "A generative model (a --model whose sidecar says \"kind\": \"generative\", or\n"
         "--synthetic-lm S,T) opens the generation view instead: TTFT and ITL fans, tokens/s,\n"
         "sequences and cache, a step inspector, the scheduling applied live, a prompt box and\n"
         "generation traffic (--rate, default 25 req/s, started unless --no-traffic) and an\n"
         "HTTP listener whose clients' requests show beside the traffic: POST\n"
         "/v1/chat/completions and /v1/completions (streamed or not), POST\n"
         "/v2/models/{m}/generate[_stream], GET /metrics, /v1/config.\n"
         "--listen PORT (0: a free one, printed at start), --token, --no-remote-config and\n"
         "--max-connections work there as above; "
         "--prompt TEXT generates TEXT's completion at once.\n" +
         lm_flags_help() + "Serving options (the starting values):\n" + cli::options_help();
}

bool display_available() {
  return std::getenv("DISPLAY") || std::getenv("WAYLAND_DISPLAY") || std::getenv("QT_QPA_PLATFORM");
}

namespace {

// What the application calls itself: QSettings' names, the version the About
// box shows, the window icon, and the desktop entry it belongs to.
void name_application() {
  QApplication::setOrganizationName("Batchscope");
  QApplication::setApplicationName("batchscope");
  QApplication::setApplicationVersion(QString::fromStdString(batchscope::build_label()));
  QApplication::setWindowIcon(app_icon());
  QGuiApplication::setDesktopFileName("org.batchscope.batchscope");
}

// --listen PORT, --token TOKEN, --no-remote-config and --max-connections N,
// the same for both windows: true when `name` is one of them, an error when
// its value is bad.
Expected<bool> take_listener_flag(const std::string& name, const std::string& value,
                                  int& listen_port, ServiceAccess& access,
                                  size_t& max_connections) {
  if (name == "max-connections") {
    auto n = cli::parse_max_connections(value);
    if (!n) return n.error();
    max_connections = *n;
  } else if (name == "listen") {
    auto p = cli::parse_number(name, value, 0, 65535);
    if (!p) return p.error();
    listen_port = static_cast<int>(*p);
  } else if (name == "token") {
    access.token = value;
  } else if (name == "no-remote-config") {
    access.remote_config = false;
  } else {
    return false;
  }
  return true;
}

// The listener's bearer token before the flags: $BATCHSCOPE_TOKEN, as serve reads it.
ServiceAccess default_access() {
  ServiceAccess access;
  if (const char* env = std::getenv("BATCHSCOPE_TOKEN")) access.token = env;
  return access;
}

// The generation view over a generative model, in a window of its own.
int run_gen_gui(int argc, char** argv, std::map<std::string, std::string> flags) {
  auto fail = [](const std::string& m, int code = 2) {
    std::cerr << "batchscope gui: " << m << "\n";
    return code;
  };
  const bool history_named = flags.count("history") > 0;
  auto history = take_history_flags(flags);
  if (!history) return fail(history.error().message);
  auto options = cli::take_options(flags);
  if (!options) return fail(options.error().message);
  auto choice = take_lm_flags(flags, "models/tiny_lm.pt");
  if (!choice) return fail(choice.error().message);
  GenViewConfig cfg;
  cfg.start_traffic = true;
  cfg.listener.access = default_access();
  cfg.listener.version = batchscope::build_version();
  std::string screenshot;
  double after_s = 10;
  for (auto& [name, value] : flags) {
    auto listener = take_listener_flag(name, value, cfg.listener.listen_port, cfg.listener.access,
                                       cfg.listener.max_connections);
    if (!listener) return fail(listener.error().message);
    if (*listener) continue;
    if (name == "rate") {
      auto r = cli::parse_number(name, value, 0.1, 1e5);
      if (!r) return fail(r.error().message);
      cfg.traffic_rate = *r;
    } else if (name == "no-traffic") {
      cfg.start_traffic = false;
    } else if (name == "fresh") {  // this window saves nothing between starts
    } else if (name == "prompt") {
      cfg.prompt = value;
    } else if (name == "screenshot") {
      screenshot = value;
    } else if (name == "after") {
      auto a = cli::parse_number(name, value, 0, 3600);
      if (!a) return fail(a.error().message);
      after_s = *a;
    } else {
      return fail("unknown option --" + name +
                  " for a generative model (see batchscope gui --help)");
    }
  }
  QApplication app(argc, argv);
  name_application();
  choice->lanes = static_cast<int>(options->num_lanes);
  auto lm = make_lm(*choice);
  if (!lm) return fail(lm.error().message, 1);
  cfg.model_text = lm->runner->info().name + " (" + lm->device + ")";
  cfg.listener.device = lm->device;
  cfg.device = lm->device;
  // The Tuner's step cost, and the window's steps refining the kept one.
  if (choice->synthetic) {
    cfg.exact_cost = GenStepCost::synthetic(choice->synthetic->first, choice->synthetic->second);
  } else if (auto kept = kept_step_cost(*choice)) {
    cfg.kept_cost = kept->first;
    cfg.kept_cost_source = kept->second;
  }
  // A screenshot's few seconds are no run to learn from.
  if (screenshot.empty()) {
    cfg.keep_steps = [c = *choice](std::span<const StepRecord> steps, uint32_t lanes) {
      refine_kept_steps(c, steps, lanes);
    };
  }
  auto engine =
      std::make_unique<GenEngine>(std::move(lm->runner), *options, nullptr, lm_factory(*choice));
  if (Status s = engine->start(); !s) return fail(s.message(), 1);
  if (!screenshot.empty() && !history_named) history->off = true;
  // Before the window and after it: its recordings are written through it.
  HistoryWriterPtr writer = open_history_writer(*history, "batchscope gui");
  const std::string model_path = choice->synthetic ? "" : choice->path;
  const std::string device = lm->device;
  int rc = 0;
  {
    GenMainWindow window(std::move(engine), cfg);
    if (writer) {
      GenView* view = window.view();
      window.view()->recorder()->set_history(writer.get(), [view, model_path, device] {
        GenRecordBox::RunInfo info;
        info.model = view->engine().info().name;
        info.options = view->engine().status().options;
        info.traffic = view->traffic()->running() ? view->traffic()->describe() : "";
        info.context = run_context_json(model_path, device);
        return info;
      });
    }
    if (GenListener* l = window.view()->listener(); l->running()) {
      std::printf("listening on http://%s:%u\n", cfg.listener.host.c_str(), l->port());
      std::fflush(stdout);
    } else if (cfg.listener.listen_port >= 0) {
      std::cerr << "batchscope gui: " << l->text().toStdString() << "\n";
    }
    QSize size(1600, 1000);
    const QString platform = QGuiApplication::platformName();
    if (platform != "offscreen" && platform != "minimal")
      size = size.boundedTo(QGuiApplication::primaryScreen()->availableGeometry().size());
    window.resize(size);
    window.move(0, 0);
    window.show();
    if (!screenshot.empty()) {
      QTimer::singleShot(static_cast<int>(after_s * 1000), &window, [&] {
        window.view()->refresh();
        if (!window.grab().save(QString::fromStdString(screenshot))) {
          std::cerr << "batchscope gui: cannot write " << screenshot << "\n";
          rc = 1;
        }
        app.quit();
      });
    }
    const int exec_rc = app.exec();
    rc = rc ? rc : exec_rc;
  }
  return rc;
}

// A generative model asked for in the workbench (model panel, File > Open)
// opens in a generation window of its own, a child of the workbench.
std::optional<Status> open_generative(const ModelRequest& r, QWidget* parent,
                                      const ServiceAccess& access) {
#ifdef BATCHSCOPE_WITH_TORCH
  if (!is_generative_sidecar(r.path)) return std::nullopt;
  LmChoice choice;
  choice.path = r.path;
  choice.device = r.device;
  auto lm = make_lm(choice);
  if (!lm) return Status(lm.error());
  GenViewConfig cfg;
  cfg.model_text = lm->runner->info().name + " (" + lm->device + ")";
  cfg.start_traffic = false;
  cfg.listener.access = access;  // the workbench's, should its listener be started
  cfg.listener.device = lm->device;
  cfg.listener.version = batchscope::build_version();
  auto engine =
      std::make_unique<GenEngine>(std::move(lm->runner), Options{}, nullptr, lm_factory(choice));
  if (Status s = engine->start(); !s) return s;
  auto* window = new GenMainWindow(std::move(engine), cfg, parent);
  window->setWindowFlag(Qt::Window);
  window->setAttribute(Qt::WA_DeleteOnClose);
  window->resize(1500, 950);
  window->show();
  return Status::Ok();
#else
  (void)r;
  (void)parent;
  (void)access;
  return std::nullopt;
#endif
}

}  // namespace

int run_gui(int argc, char** argv, const std::vector<std::string>& args) {
  auto fail = [](const std::string& m, int code = 2) {
    std::cerr << "batchscope gui: " << m << "\n";
    return code;
  };
  auto flags = cli::parse_flags(args, {"no-traffic", "fresh", "no-remote-config", "no-history"});
  if (!flags) return fail(flags.error().message);
  if (wants_lm(*flags, "models/mlp.pt")) return run_gen_gui(argc, argv, std::move(*flags));
  // A screenshot shows a window without this machine's runs, unless a
  // history is named.
  const bool history_named = flags->count("history") > 0;
  auto history = take_history_flags(*flags);
  if (!history) return fail(history.error().message);
  const bool model_given = flags->count("model") || flags->count("synthetic");
  const size_t before = flags->size();
  auto options = cli::take_options(*flags);
  if (!options) return fail(options.error().message);
  const bool options_given = flags->size() != before;
  auto choice = take_model_flags(*flags, "models/mlp.pt");
  if (!choice) return fail(choice.error().message);
  WorkbenchConfig cfg;
  cfg.access = default_access();
  std::string screenshot;
  double after_s = 10;
  bool fresh = false;
  for (auto& [name, value] : *flags) {
    auto listener =
        take_listener_flag(name, value, cfg.listen_port, cfg.access, cfg.max_connections);
    if (!listener) return fail(listener.error().message);
    if (*listener) continue;
    if (name == "rate") {
      auto r = cli::parse_number(name, value, 1, 1e6);
      if (!r) return fail(r.error().message);
      cfg.traffic_rate = *r;
    } else if (name == "no-traffic") {
      cfg.start_traffic = false;
    } else if (name == "fresh") {
      fresh = true;
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

  QApplication app(argc, argv);
  name_application();
  // A screenshot shows the defaults, whatever this machine saved.
  const bool remember = !fresh && screenshot.empty();
  cfg.restore_settings = remember;
  cfg.model.path = choice->synthetic ? synthetic_path(*choice->synthetic) : choice->path;
  cfg.model.device = choice->device;
  cfg.options = *options;
  if (remember) {
    QSettings saved;
    if (!model_given && saved.contains("model/path")) {
      cfg.model.path = saved.value("model/path").toString().toStdString();
      cfg.model.device = saved.value("model/device", "cpu").toString().toStdString();
    }
    if (!options_given && saved.contains("options/json")) {
      auto o = options_from_json(saved.value("options/json").toString().toStdString(), *options);
      if (o) cfg.options = *o;
    }
  }
  // The window and the traffic need a core: OpenBLAS's spinning threads would
  // otherwise fight them for every one.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int blas = std::max(1, (cores - 1) / static_cast<int>(cfg.options.num_lanes));
  cfg.loader = make_model_loader(blas);
  cfg.describer = make_model_describer();
  if (const std::string dir = models_dir(); !dir.empty())
    cfg.models_dir = QString::fromStdString(dir);
#ifdef BATCHSCOPE_WITH_TORCH
  cfg.devices = available_devices();
#endif
  cfg.version = batchscope::build_version();
  cfg.open_generative = [access = cfg.access](const ModelRequest& r, QWidget* parent) {
    return open_generative(r, parent, access);
  };

  if (!screenshot.empty() && !history_named) history->off = true;
  // Opened before the window and closed after it: the window's recordings
  // are written through it until the last one is finished.
  std::string history_problem;
  HistoryWriterPtr writer = open_history_writer(*history, "batchscope gui", &history_problem);
  int rc = 0;
  {
    WorkbenchWindow window(cfg);
    if (writer) {
      window.runs()->set_context_provider([&window] {
        const LoadedModel& m = window.model();
        return run_context_json(m.path.rfind("synthetic", 0) == 0 ? "" : m.path, m.device);
      });
      window.runs()->set_history(writer.get());
      window.runs()->set_png_program(QCoreApplication::applicationFilePath());
    } else if (!history_problem.empty()) {
      window.runs()->show_history_problem(QString::fromStdString(history_problem));
    }
    if (!remember || !QSettings().contains("window/geometry")) {  // else the saved geometry
      QSize size(1700, 1000);
      const QString platform = QGuiApplication::platformName();
      if (platform != "offscreen" && platform != "minimal")  // these report a small screen
        size = size.boundedTo(QGuiApplication::primaryScreen()->availableGeometry().size());
      window.resize(size);
      window.move(0, 0);
    }
    window.show();
    if (!screenshot.empty()) {  // capture the window itself once it has run a while, then close
      QTimer::singleShot(0, &window, [&] {
        if (!window.wait_loaded(120'000) || !window.engine()) {
          std::cerr << "batchscope gui: the model did not load\n";
          rc = 1;
          app.quit();
          return;
        }
        QTimer::singleShot(static_cast<int>(after_s * 1000), &window, [&] {
          window.refresh();
          if (!window.grab().save(QString::fromStdString(screenshot))) {
            std::cerr << "batchscope gui: cannot write " << screenshot << "\n";
            rc = 1;
          }
          app.quit();
        });
      });
    }
    const int exec_rc = app.exec();
    rc = rc ? rc : exec_rc;
  }  // the window stops its traffic, listener and engine
  return rc;
}

}  // namespace batchscope
