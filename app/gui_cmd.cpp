// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <QApplication>
#include <QSettings>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "api/options_json.h"
#include "app/cli_args.h"
#include "app/model_flags.h"
#include "app/run_output.h"
#include "common/build_info.h"
#include "model/history_keeping.h"
#include "model/model_paths.h"
#include "model/window_loader.h"
#include "ui/common/app_resources.h"
#include "ui/common/window_show.h"
#include "ui/generation/gen_main_window.h"
#include "ui/workbench/workbench_window.h"
#ifdef BATCHSCOPE_WITH_TORCH
#include "torch/torch_model.h"
#endif

namespace batchscope {

std::string gui_help() {
  return "usage: batchscope gui [--model PATH | --synthetic A_US,C_US[,L_US]]\n"
         "                      [--device cpu|cuda:N] [--rate R] [--no-traffic] [--listen PORT]\n"
         "                      [--token TOKEN] [--no-remote-config] [--max-connections N]\n"
         "                      [--fresh] [--history FILE | --no-history] [serving options]\n"
         "Opens the workbench window (docs/workbench.md): live latency, queue, batch size and\n"
         "throughput plots, the batching options applied live, traffic, the model and its\n"
         "cost, an HTTP listener, a batch inspector and recorded runs. Default model\n"
         "models/mlp.pt with Poisson traffic at half what the model serves, at most 1500\n"
         "req/s (--rate R: R), unless --no-traffic.\n"
         "--listen PORT starts the listener at once, guarded by --token TOKEN (default\n"
         "$BATCHSCOPE_TOKEN), --no-remote-config and --max-connections N as serve's.\n"
         "The window remembers its layout and choices; flags win, --fresh ignores them.\n"
         "Space starts and stops traffic; P pauses the plots. --screenshot FILE.png\n"
         "[--after S] saves the window S seconds after the model is ready (default 10) and\n"
         "exits; with QT_QPA_PLATFORM=offscreen it needs no display.\n"
         "The Runs tab keeps runs in the run history as they go (batchscope runs):\n" +
         history_flags_help() +
         "A generative model opens the generation view instead: TTFT and ITL fans, tokens/s,\n"
         "sequences and cache, a step inspector, the scheduling applied live, a prompt box,\n"
         "generation traffic (--rate, default 25 req/s) and a listener serving OpenAI's and\n"
         "Triton's generation routes, whose clients show beside the traffic (--listen 0: a\n"
         "free port, printed). --prompt TEXT generates TEXT's completion at once.\n" +
         lm_flags_help() + python_flags_help() + "Serving options (the starting values):\n" +
         cli::options_help();
}

bool display_available() {
  return std::getenv("DISPLAY") || std::getenv("WAYLAND_DISPLAY") || std::getenv("QT_QPA_PLATFORM");
}

namespace {

const Fail fail{"gui"};

// The flags both windows read: the listener's (--listen, --token,
// --no-remote-config, --max-connections, as serve's), the traffic's, and
// --screenshot FILE --after S.
struct WindowFlags {
  int listen_port = -1;
  ServiceAccess access;
  size_t max_connections = 0;
  double rate = 0;  // 0: the window's default
  bool no_traffic = false, fresh = false;
  std::string screenshot, prompt;
  double after_s = 10;
};
Expected<WindowFlags> take_window_flags(Flags& flags, double rate_lo, double rate_hi) {
  WindowFlags w;
  // The listener's bearer token before the flags: $BATCHSCOPE_TOKEN, as serve reads it.
  if (const char* env = std::getenv("BATCHSCOPE_TOKEN")) w.access.token = env;
  bool local_config_only = false;
  if (Status s = cli::take_fields(
          flags,
          {cli::number("listen", 0, 65535, w.listen_port), cli::text("token", w.access.token),
           cli::on("no-remote-config", local_config_only),
           cli::number("rate", rate_lo, rate_hi, w.rate), cli::on("no-traffic", w.no_traffic),
           cli::on("fresh", w.fresh), cli::text("screenshot", w.screenshot),
           cli::number("after", 0, 3600, w.after_s), cli::max_connections(w.max_connections)});
      !s) {
    return s.error();
  }
  w.access.remote_config = !local_config_only;
  return w;
}

// The generation view over a generative model, in a window of its own.
int run_gen_gui(int argc, char** argv, Flags flags) {
  const bool history_named = flags.count("history") > 0;
  auto history = take_history_flags(flags);
  if (!history) return fail(history.error().message);
  auto options = cli::take_options(flags);
  if (!options) return fail(options.error().message);
  auto choice = take_lm_flags(flags, "models/tiny_lm.pt");
  if (!choice) return fail(choice.error().message);
  auto w = take_window_flags(flags, 0.1, 1e5);  // --fresh: this window saves nothing
  if (!w) return fail(w.error().message);
  GenViewConfig cfg;
  if (Status s = cli::take_fields(flags, {cli::text("prompt", cfg.prompt)}); !s)
    return fail(s.message());
  if (!flags.empty()) {
    return fail("unknown option --" + flags.begin()->first +
                " for a generative model (see batchscope gui --help)");
  }
  cfg.start_traffic = !w->no_traffic;
  if (w->rate > 0) cfg.traffic_rate = w->rate;
  cfg.listener.listen_port = w->listen_port;
  cfg.listener.access = w->access;
  cfg.listener.max_connections = w->max_connections;
  cfg.listener.version = batchscope::build_version();
  QApplication app(argc, argv);
  name_application();
  auto model = LocalModel::open(*choice);
  if (!model) return fail(model.error().message, 1);
  if (!w->screenshot.empty() && !history_named) history->off = true;
  // Before the window and after it: its recordings are written through it.
  HistoryWriterPtr writer = open_history_writer(*history, "batchscope gui", terminal_say());
  int rc = 0;
  {
    // A screenshot's few seconds are no run to learn from.
    auto opened = GenMainWindow::open(*model, *options, cfg, w->screenshot.empty(), terminal_say());
    if (!opened) return fail(opened.error().message, 1);
    GenMainWindow& window = **opened;
    if (writer) window.keep_runs_in(writer.get(), choice->file(), model->device());
    if (GenListener* l = window.view()->listener(); l->running()) {
      std::printf("listening on http://%s:%u\n", cfg.listener.host.c_str(), l->port());
      std::fflush(stdout);
    } else if (cfg.listener.listen_port >= 0) {
      std::cerr << "batchscope gui: " << l->text().toStdString() << "\n";
    }
    fit_to_screen(window, QSize(1600, 1000));
    window.show();
    if (!w->screenshot.empty()) {
      screenshot_when_ready(
          window, w->screenshot, static_cast<int>(w->after_s * 1000), {},
          [&window] { window.view()->refresh(); }, rc);
    }
    const int exec_rc = app.exec();
    rc = rc ? rc : exec_rc;
  }
  return rc;
}

}  // namespace

int run_gui(int argc, char** argv, const std::vector<std::string>& args) {
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
  auto w = take_window_flags(*flags, 1, 1e6);
  if (!w) return fail(w.error().message);
  if (Status s = cli::no_flags_left(*flags, "gui"); !s) return fail(s.message());
  WorkbenchConfig cfg;
  cfg.access = w->access;
  cfg.listen_port = w->listen_port;
  cfg.max_connections = w->max_connections;
  if (w->rate > 0) cfg.traffic_rate = w->rate;
  cfg.traffic_rate_given = w->rate > 0;
  cfg.start_traffic = !w->no_traffic;

  QApplication app(argc, argv);
  name_application();
  // A screenshot shows the defaults, whatever this machine saved.
  const bool remember = !w->fresh && w->screenshot.empty();
  cfg.restore_settings = remember;
  cfg.model.path = choice->synthetic ? synthetic_path(*choice->synthetic) : choice->path;
  cfg.model.device = choice->device;
  cfg.model.python = choice->python;
  cfg.options = *options;
  if (remember) restore_saved_choices(cfg, model_given, options_given);
  // The window and the traffic need a core: OpenBLAS's spinning threads would
  // otherwise fight them for every one.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cfg.loader =
      make_model_loader(std::max(1, (cores - 1) / static_cast<int>(cfg.options.num_lanes)));
  cfg.describer = make_model_describer();
  if (const std::string dir = models_dir(); !dir.empty())
    cfg.models_dir = QString::fromStdString(dir);
#ifdef BATCHSCOPE_WITH_TORCH
  cfg.devices = available_devices();
#endif
  cfg.version = batchscope::build_version();
  cfg.open_generative = [access = cfg.access](const ModelRequest& r, QWidget* parent) {
    if (!is_generative_file(r.path)) return std::optional<Status>();
    return std::optional<Status>(
        GenMainWindow::open_beside(r.path, r.device, access, terminal_say(), parent));
  };
  if (!w->screenshot.empty() && !history_named) history->off = true;
  // Opened before the window and closed after it: the window's recordings
  // are written through it until the last one is finished.
  std::string history_problem;
  HistoryWriterPtr writer =
      open_history_writer(*history, "batchscope gui", terminal_say(), &history_problem);
  int rc = 0;
  {
    WorkbenchWindow window(cfg);
    window.keep_runs_in(writer.get(), history_problem, QCoreApplication::applicationFilePath());
    if (!remember || !QSettings().contains("window/geometry")) {  // else the saved geometry
      fit_to_screen(window, QSize(1700, 1000));
    }
    window.show();
    if (!w->screenshot.empty()) {  // the window itself once it has run a while, then close
      screenshot_when_ready(
          window, w->screenshot, static_cast<int>(w->after_s * 1000),
          [&window] { return window.wait_loaded(120'000) && window.engine(); },
          [&window] { window.refresh(); }, rc);
    }
    const int exec_rc = app.exec();
    rc = rc ? rc : exec_rc;
  }  // the window stops its traffic, listener and engine
  return rc;
}

}  // namespace batchscope
