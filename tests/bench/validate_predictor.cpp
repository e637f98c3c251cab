// How closely the predictor matches the live engine, with LibTorch alone (no
// Qt, so it builds on a GPU machine too): 20 configurations x 3 patterns
// (poisson, burst, step) on mlp and cnn_mnist, each run live (what `bench
// --target inproc` runs) and predicted (what `bench --target predict` runs)
// against t(b) and the per-request overhead as the engine ran them in a
// calibration run of the same traffic at another configuration (max batch
// 128, max wait 2 ms, the point's lanes, seed 99; what `bench --cost-out`
// writes). Counts the points whose predicted p50 is within 10% and p99 within
// 20% of the live figure; with --repeat each live point runs twice and the
// same bounds are applied to the two live runs: how often the engine agrees
// with itself on this machine. Each lane's model is loaded once.
//
// Usage: validate_predictor [--seconds S] [--device cpu|cuda:N] [--repeat]
//                           [--csv OUT.csv] [--models DIR] [--model mlp|cnn_mnist]

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runs/run_record.h"
#include "torch/metadata_json.h"
#include "torch/torch_model.h"
#include "traffic/inproc_run.h"
#include "tuning/adaptive_planner.h"
#include "tuning/cost_model.h"
#include "tuning/predictor.h"

using namespace batchscope;

namespace {

struct Point {
  std::string model, pattern, config;
  uint32_t lanes = 1;
  double live_p50 = 0, live_p99 = 0, pred_p50 = 0, pred_p99 = 0;
  double again_p50 = 0, again_p99 = 0;
};

bool within(double ref, double other, double bound) {
  return ref > 0 ? std::abs(other - ref) / ref <= bound : other == ref;
}
bool close(double r50, double r99, double o50, double o99) {
  return within(r50, o50, 0.10) && within(r99, o99, 0.20);
}

// A lane's model, loaded once and lent to each run's engine.
class Borrowed final : public Runner {
 public:
  explicit Borrowed(TorchModel& m) : m_(m) {}
  Expected<std::vector<Tensors>> run(std::span<Tensors> in) override { return m_.run(in); }

 private:
  TorchModel& m_;
};

struct Args {
  double seconds = 3;
  std::string device = "cpu";
  bool repeat = false;
  std::string csv;
  std::string models = BATCHSCOPE_SOURCE_DIR "/models";
  std::string only;  // one model's points alone
};

ArrivalSpec pattern_of(const std::string& model, const std::string& name, double seconds) {
  const bool mlp = model == "mlp";
  ArrivalSpec a;
  a.duration_s = seconds;
  if (name == "poisson") {
    a.pattern = Pattern::kPoisson;
    a.rate = mlp ? 3000 : 4000;
  } else if (name == "burst") {
    a.pattern = Pattern::kBurst;
    a.rate = mlp ? 6000 : 8000;
    a.rate_low = 1000;
    a.on_s = a.off_s = 0.5;
  } else {
    a.pattern = Pattern::kStep;
    a.steps = mlp ? std::vector<std::pair<double, double>>{{1000, 1}, {4000, 1}, {2000, 1}}
                  : std::vector<std::pair<double, double>>{{1000, 1}, {6000, 1}, {3000, 1}};
  }
  return a;
}

std::vector<std::pair<std::string, Options>> configurations() {
  std::vector<std::pair<std::string, Options>> c;
  auto add = [&c](std::string name, uint32_t b, double wait_ms, uint32_t lanes,
                  StrategyKind s = StrategyKind::kFifo, double target = 50) {
    Options o;
    o.max_batch_size = b;
    o.max_wait_us = static_cast<int64_t>(wait_ms * 1000);
    o.num_lanes = lanes;
    o.strategy = s;
    o.target_p99_ms = target;
    c.emplace_back(std::move(name), o);
  };
  for (uint32_t b : {4u, 16u, 64u})
    for (double w : {0.0, 1.0, 4.0})
      add("fifo b" + std::to_string(b) + " w" + std::to_string(static_cast<int>(w)), b, w, 1);
  for (uint32_t b : {16u, 64u})
    for (double w : {0.0, 1.0})
      add("fifo b" + std::to_string(b) + " w" + std::to_string(static_cast<int>(w)) + " x2", b, w,
          2);
  for (double t : {2.0, 5.0, 10.0})
    for (uint32_t b : {32u, 128u})
      add("adaptive t" + std::to_string(static_cast<int>(t)) + " b" + std::to_string(b), b, 4, 1,
          StrategyKind::kAdaptive, t);
  add("fifo b1 w0", 1, 0, 1);
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  Args o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seconds") {
      o.seconds = std::atof(value().c_str());
    } else if (a == "--device") {
      o.device = value();
    } else if (a == "--repeat") {
      o.repeat = true;
    } else if (a == "--csv") {
      o.csv = value();
    } else if (a == "--models") {
      o.models = value();
    } else if (a == "--model") {
      o.only = value();
    } else {
      std::fprintf(stderr,
                   "usage: validate_predictor [--seconds S] [--device cpu|cuda:N] [--repeat] "
                   "[--csv OUT.csv] [--models DIR] [--model mlp|cnn_mnist]\n");
      return 2;
    }
  }
  if (!(o.seconds > 0 && o.seconds <= 600)) {
    std::fprintf(stderr, "--seconds must be above 0 and at most 600\n");
    return 2;
  }

  std::vector<Point> points;
  const auto configs = configurations();
  for (const std::string model : {"mlp", "cnn_mnist"}) {
    if (!o.only.empty() && model != o.only) continue;
    const std::string path = o.models + "/" + model + ".pt";
    auto meta = load_metadata(sidecar_path(path));
    if (!meta) {
      std::fprintf(stderr, "%s\n", meta.error().message.c_str());
      return 1;
    }
    // One model for one-lane runs with the machine's threads, and two for
    // two-lane runs with half each, as bench loads them.
    std::vector<std::unique_ptr<TorchModel>> models;
    for (int lanes : {1, 2, 2}) {
      TorchOptions to;
      to.device = o.device;
      to.lanes = lanes;
      auto m = TorchModel::load(path, to);
      if (!m) {
        std::fprintf(stderr, "%s\n", m.error().message.c_str());
        return 1;
      }
      models.push_back(std::move(*m));
    }
    uint32_t run_lanes = 1;  // the lane count of the run being made
    const RunnerFactory factory = [&models, &run_lanes](int lane) -> std::unique_ptr<Runner> {
      const size_t i = run_lanes == 1 ? 0 : 1 + static_cast<size_t>(lane);
      return std::make_unique<Borrowed>(*models.at(i));
    };
    auto live = [&](const Options& opts, ArrivalSpec spec) -> Expected<RunSummary> {
      RunConfig cfg;
      cfg.pattern = spec.describe();
      cfg.target = "inproc";
      cfg.model = model;
      cfg.options = opts;
      cfg.duration_s = spec.duration_s;
      cfg.seed = spec.seed;
      run_lanes = opts.num_lanes;
      auto run = run_inproc(factory, *meta, opts, make_adaptive_plan, spec, cfg);
      if (!run) return run.error();
      return summarize_run(*run);
    };
    for (const std::string pattern : {"poisson", "burst", "step"}) {
      const ArrivalSpec spec = pattern_of(model, pattern, o.seconds);
      std::map<uint32_t, CostModel> cost;
      for (uint32_t l : {1u, 2u}) {
        Options cal;
        cal.max_batch_size = 128;
        cal.max_wait_us = 2000;
        cal.num_lanes = l;
        ArrivalSpec cs = spec;
        cs.seed = 99;
        RunConfig cfg;
        cfg.pattern = cs.describe();
        cfg.target = "inproc";
        cfg.model = model;
        cfg.options = cal;
        run_lanes = l;
        auto run = run_inproc(factory, *meta, cal, make_adaptive_plan, cs, cfg);
        if (!run) {
          std::fprintf(stderr, "calibration: %s\n", run.error().message.c_str());
          return 1;
        }
        auto m = CostModel::from_run(*run);
        if (!m) {
          std::fprintf(stderr, "calibration: %s\n", m.error().message.c_str());
          return 1;
        }
        cost.emplace(l, std::move(*m));
      }
      for (size_t i = 0; i < configs.size(); ++i) {
        const auto& [name, opts] = configs[i];
        Point p{model, pattern, name, opts.num_lanes};
        ArrivalSpec point = spec;
        point.seed = 11 + i;  // each configuration its own traffic, as the calibration's
        auto first = live(opts, point);
        if (!first) {
          std::fprintf(stderr, "%s %s %s: %s\n", model.c_str(), pattern.c_str(), name.c_str(),
                       first.error().message.c_str());
          return 1;
        }
        p.live_p50 = first->latency.p50_ms;
        p.live_p99 = first->latency.p99_ms;
        if (o.repeat) {
          auto again = live(opts, point);
          if (!again) return 1;
          p.again_p50 = again->latency.p50_ms;
          p.again_p99 = again->latency.p99_ms;
        }
        const RunSummary pred = predict(PredictSpec{point, opts, cost.at(opts.num_lanes)});
        p.pred_p50 = pred.latency.p50_ms;
        p.pred_p99 = pred.latency.p99_ms;
        const bool ok = close(p.live_p50, p.live_p99, p.pred_p50, p.pred_p99);
        std::printf("%-10s %-8s %-20s live p50 %8.3f p99 %8.3f | predicted p50 %8.3f p99 %8.3f %s",
                    model.c_str(), pattern.c_str(), name.c_str(), p.live_p50, p.live_p99,
                    p.pred_p50, p.pred_p99, ok ? "ok" : "MISS");
        if (o.repeat) {
          std::printf(" | again p50 %8.3f p99 %8.3f %s", p.again_p50, p.again_p99,
                      close(p.live_p50, p.live_p99, p.again_p50, p.again_p99) ? "ok" : "MISS");
        }
        std::printf("\n");
        std::fflush(stdout);
        points.push_back(p);
      }
    }
  }

  // A line per model and lane count, and the whole.
  std::map<std::string, std::array<int, 3>> groups;  // points, predicted ok, repeated ok
  for (const Point& p : points) {
    for (const std::string& g :
         {p.model + (p.lanes > 1 ? ", two lanes" : ", one lane"), std::string("all")}) {
      auto& n = groups[g];
      ++n[0];
      n[1] += close(p.live_p50, p.live_p99, p.pred_p50, p.pred_p99);
      n[2] += o.repeat && close(p.live_p50, p.live_p99, p.again_p50, p.again_p99);
    }
  }
  std::printf("\n%-22s %6s %10s%s\n", "group", "points", "predicted", o.repeat ? "  repeated" : "");
  for (const auto& [g, n] : groups) {
    std::printf("%-22s %6d %5d (%2.0f%%)", g.c_str(), n[0], n[1], 100.0 * n[1] / n[0]);
    if (o.repeat) std::printf(" %5d (%2.0f%%)", n[2], 100.0 * n[2] / n[0]);
    std::printf("\n");
  }
  if (!o.csv.empty()) {
    std::ofstream out(o.csv);
    out << "model,pattern,config,lanes,live_p50_ms,live_p99_ms,predicted_p50_ms,"
           "predicted_p99_ms,again_p50_ms,again_p99_ms\n";
    for (const Point& p : points) {
      out << p.model << ',' << p.pattern << ',' << p.config << ',' << p.lanes << ',' << p.live_p50
          << ',' << p.live_p99 << ',' << p.pred_p50 << ',' << p.pred_p99 << ',' << p.again_p50
          << ',' << p.again_p99 << '\n';
    }
  }
  return 0;
}
