// SPDX-License-Identifier: GPL-3.0-or-later
// How closely the predictor matches the live engine, with LibTorch alone (no
// Qt, so it builds on a GPU machine too). For each model (mlp, cnn_mnist,
// linear_128x64 and the synthetic 500 + 20 b us), pattern (poisson, burst,
// step) and configuration (20: fifo at three caps and three waits, fifo with
// two lanes, adaptive at three targets, one at a time), the traffic runs live
// `--runs` times (what `bench --target inproc` runs; default 3) and is
// predicted once (what `bench --target predict` runs) against t(b) and the
// per-request overhead as tune gets them: the model profiled (`batchscope
// profile`, up to b = 128; the synthetic model's formula), then refined by
// calibration runs of the same traffic at another configuration (max batch
// 128, max wait 2 ms, one run per lane count, seed 99), as `tune` does before
// its search. A point is a hit when the predicted p50 is within 10%
// and p99 within 20% of the median of its live runs. Prints each point with
// the live runs' own spread, every miss, the share of hits by model and lane
// count, and the mean absolute error of p50, p99, throughput and mean batch
// size. Each point is also predicted with each size's jitter uniform over
// +-spread in place of its measured quantiles ("uniform"), and with every
// batch's jitter drawn independently ("no streaks"), side by side, and with
// the cost its own first live run measured ("self": where that misses too,
// the miss is in the simulation, not in the cost's transfer from the
// calibration run), beside that run's send lag p99. Adaptive configurations
// plan on their own live fit (make_adaptive_plan), as everywhere by default.
// Each lane's model is loaded once.
//
// --quick: the synthetic model alone, poisson, five configurations, 1 s runs
// (the CI check). --min-share X: exit 1 when fewer than X of the points hit
// (--gate p50: have their p50 within 10%, which a machine's hiccup in the
// one-second calibration run does not move as it moves p99).
//
// --calibration-runs K: K calibration runs per lane count, the cost refined
// by the run of the median level (calibrate_live, as `tune
// --calibration-runs`); each point is then also predicted with the cost of
// the first run alone ("first run"), side by side on the same live runs.
// --halves: the live runs (an even --runs) split into two sets, even and odd
// runs; the prediction is compared with the first set's median, and the
// second set's median with the first's ("live B"): how often the live
// engine meets the bounds against itself on this machine, the most a
// prediction can reach here.
//
// --planner cost: adaptive configurations plan on the calibrated cost
// instead (plan_on_cost), live and predicted alike, to compare the two.
// --configs PREFIX: only the configurations whose name starts with PREFIX
// ("adaptive", "fifo b16").
//
// Usage: validate_predictor [--seconds S] [--runs N] [--device cpu|cuda:N]
//                           [--csv OUT.csv] [--models DIR] [--model NAME]
//                           [--quick] [--min-share X] [--planner fit|cost]
//                           [--configs PREFIX] [--calibration-runs K] [--halves]

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "batching/synthetic_runner.h"
#include "common/metadata_json.h"
#include "runs/run_record.h"
#include "torch/profile.h"
#include "torch/torch_model.h"
#include "traffic/inproc_run.h"
#include "tuning/adaptive_planner.h"
#include "tuning/cost_model.h"
#include "tuning/predictor.h"
#include "tuning/tune_run.h"

using namespace batchscope;

namespace {

// What is compared: latency, throughput and the mean batch.
struct Figures {
  double p50 = 0, p99 = 0, rps = 0, batch = 0;
};

struct Point {
  std::string model, pattern, config;
  uint32_t lanes = 1;
  std::vector<Figures> live;  // each run
  Figures median;             // of the live runs, figure by figure
  Figures predicted;
  Figures uniform;      // predicted with each size's jitter uniform over +-spread
  Figures independent;  // predicted with each batch's jitter drawn apart (no streaks)
  Figures self;         // predicted with the cost the point's first live run measured (a diagnosis)
  Figures first;        // predicted with the first calibration run's cost alone
  Figures other;        // --halves: the median of the second set of live runs
  double lag99 = 0;     // the first live run's send lag p99, ms
  double spread50 = 0, spread99 = 0;  // (max - min) / median of the live runs
};

bool within(double ref, double other, double bound) {
  return ref > 0 ? std::abs(other - ref) / ref <= bound : other == ref;
}
bool hit(const Figures& live, const Figures& predicted) {
  return within(live.p50, predicted.p50, 0.10) && within(live.p99, predicted.p99, 0.20);
}
bool hit(const Point& p) { return hit(p.median, p.predicted); }
double rel_error(double ref, double other) { return ref > 0 ? std::abs(other - ref) / ref : 0.0; }

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

Figures figures_of(const RunSummary& s) {
  return {s.latency.p50_ms, s.latency.p99_ms, s.throughput_rps, s.batch_mean};
}

// A lane's model, loaded once and lent to each run's engine.
class Borrowed final : public Runner {
 public:
  explicit Borrowed(TorchModel& m) : m_(m) {}
  Expected<std::vector<Tensors>> run(std::span<Tensors> in) override { return m_.run(in); }
  Status prepare() override { return m_.warm_up_here(); }  // each run's lane is a new thread

 private:
  TorchModel& m_;
};

struct Args {
  double seconds = 3;
  int runs = 3;
  std::string device = "cpu";
  std::string csv;
  std::string models = BATCHSCOPE_SOURCE_DIR "/models";
  std::string only;  // one model's points alone
  bool quick = false;
  double min_share = 0;
  bool p50_only = false;      // --min-share counts the points whose p50 is within 10%
  bool plan_on_fit = true;    // --planner cost: adaptive plans on the calibrated cost
  std::string config_prefix;  // --configs PREFIX: the configurations named so alone
  int calibration_runs = 1;
  bool halves = false;
};

ArrivalSpec pattern_of(const std::string& model, const std::string& name, double seconds) {
  // Rates that keep every configuration at 20-85% of a lane's capacity on a
  // 2-core machine: the heavier models (cnn_mnist, linear's tiny batches
  // with the engine's per-request work) at the higher ones.
  const bool light = model == "mlp" || model == "synthetic";
  ArrivalSpec a;
  a.duration_s = seconds;
  if (name == "poisson") {
    a.pattern = Pattern::kPoisson;
    a.rate = light ? 3000 : 4000;
  } else if (name == "burst") {
    a.pattern = Pattern::kBurst;
    a.rate = light ? 6000 : 8000;
    a.rate_low = 1000;
    a.on_s = a.off_s = 0.5;
  } else {
    a.pattern = Pattern::kStep;
    const double third = seconds / 3;
    a.steps =
        light ? std::vector<std::pair<double, double>>{{1000, third}, {4000, third}, {2000, third}}
              : std::vector<std::pair<double, double>>{{1000, third}, {6000, third}, {3000, third}};
  }
  return a;
}

std::vector<std::pair<std::string, Options>> configurations(bool quick) {
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
  if (quick) {
    add("fifo b4 w0", 4, 0, 1);
    add("fifo b16 w1", 16, 1, 1);
    add("fifo b64 w4", 64, 4, 1);
    add("fifo b16 w1 x2", 16, 1, 2);
    add("adaptive t5 b32", 32, 4, 1, StrategyKind::kAdaptive, 5);
    return c;
  }
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

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: validate_predictor [--seconds S] [--runs N] [--device cpu|cuda:N] "
               "[--csv OUT.csv] [--models DIR] [--model mlp|cnn_mnist|linear_128x64|synthetic] "
               "[--quick] [--min-share X] [--gate both|p50] [--planner fit|cost] "
               "[--configs PREFIX] [--calibration-runs K] [--halves]\n");
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (a == "--seconds") {
      o.seconds = std::atof(value().c_str());
    } else if (a == "--runs") {
      o.runs = std::atoi(value().c_str());
    } else if (a == "--device") {
      o.device = value();
    } else if (a == "--csv") {
      o.csv = value();
    } else if (a == "--models") {
      o.models = value();
    } else if (a == "--model") {
      o.only = value();
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--min-share") {
      o.min_share = std::atof(value().c_str());
    } else if (a == "--planner") {
      const std::string p = value();
      if (p != "fit" && p != "cost") usage();
      o.plan_on_fit = p == "fit";
    } else if (a == "--calibration-runs") {
      o.calibration_runs = std::atoi(value().c_str());
    } else if (a == "--halves") {
      o.halves = true;
    } else if (a == "--configs") {
      o.config_prefix = value();
    } else if (a == "--gate") {
      const std::string g = value();
      if (g != "both" && g != "p50") usage();
      o.p50_only = g == "p50";
    } else {
      usage();
    }
  }
  if (!(o.seconds > 0 && o.seconds <= 600) || o.runs < 1 || o.runs > 20 ||
      !(o.min_share >= 0 && o.min_share <= 1) || o.calibration_runs < 1 ||
      o.calibration_runs > kMaxCalibrationRuns || (o.halves && o.runs % 2)) {
    std::fprintf(stderr,
                 "--seconds must be in (0, 600], --runs in 1..20 (even with --halves), "
                 "--min-share in [0, 1], --calibration-runs in 1..%d\n",
                 kMaxCalibrationRuns);
    std::exit(2);
  }
  return o;
}

// The runners of one model: the synthetic one, or a TorchScript model loaded
// once for one-lane runs (the machine's threads) and twice for two-lane runs
// (half each), as bench loads them.
struct Loaded {
  ModelMetadata meta;
  CostModel profile;  // t(b) on a quiet machine, as tune starts from
  std::vector<std::unique_ptr<TorchModel>> models;
  RunnerFactory synthetic;
  uint32_t lanes = 1;  // of the run being made
  RunnerFactory factory() {
    if (synthetic) return synthetic;
    return [this](int lane) -> std::unique_ptr<Runner> {
      const size_t i = lanes == 1 ? 0 : 1 + static_cast<size_t>(lane);
      return std::make_unique<Borrowed>(*models.at(i));
    };
  }
};

Expected<std::unique_ptr<Loaded>> load(const std::string& model, const Args& o) {
  auto l = std::make_unique<Loaded>();
  if (model == "synthetic") {
    const SyntheticCost cost{.fixed_us = 500, .per_item_us = 20};
    l->meta = SyntheticRunner::metadata();
    l->synthetic = SyntheticRunner::factory(cost);
    l->profile = CostModel::from_synthetic(cost, 128);
    return l;
  }
  const std::string path = o.models + "/" + model + ".pt";
  auto meta = load_metadata(sidecar_path(path));
  if (!meta) return meta.error();
  l->meta = *meta;
  ProfileOptions po;
  po.device = o.device;
  po.max_batch = std::min<uint32_t>(128, meta->max_batch_size);
  auto prof = profile_model(path, po);
  if (!prof) return prof.error();
  auto cost = CostModel::from_profile_json(profile_json(*prof));
  if (!cost) return cost.error();
  l->profile = *cost;
  for (int lanes : {1, 2, 2}) {
    TorchOptions to;
    to.device = o.device;
    to.lanes = lanes;
    to.warmup_every_size = o.device.starts_with("cuda");  // as bench's --warmup auto
    auto m = TorchModel::load(path, to);
    if (!m) return m.error();
    l->models.push_back(std::move(*m));
  }
  return l;
}

// An adaptive configuration plans on `plan_cost` when given (plan_on_cost),
// else on its own live fit.
Expected<RunData> run_live(Loaded& l, const Options& opts, const ArrivalSpec& spec,
                           const CostModel* plan_cost = nullptr) {
  RunConfig cfg;
  cfg.pattern = spec.describe();
  cfg.target = "inproc";
  cfg.model = l.meta.name;
  cfg.options = opts;
  cfg.duration_s = spec.duration_s;
  cfg.seed = spec.seed;
  l.lanes = opts.num_lanes;
  const AdaptivePlanner planner =
      plan_cost ? plan_on_cost(*plan_cost) : AdaptivePlanner(make_adaptive_plan);
  return run_inproc(l.factory(), l.meta, opts, planner, spec, cfg);
}

void print_point(const Point& p) {
  std::printf(
      "%-13s %-7s %-17s live p50 %7.3f p99 %7.3f (spread %3.0f%% %3.0f%%) | predicted "
      "p50 %7.3f p99 %7.3f %s | self p50 %7.3f p99 %7.3f lag99 %.3f\n",
      p.model.c_str(), p.pattern.c_str(), p.config.c_str(), p.median.p50, p.median.p99,
      100 * p.spread50, 100 * p.spread99, p.predicted.p50, p.predicted.p99, hit(p) ? "ok" : "MISS",
      p.self.p50, p.self.p99, p.lag99);
  std::fflush(stdout);
}

void write_csv(const std::string& path, const std::vector<Point>& points) {
  std::ofstream out(path);
  out << "model,pattern,config,lanes,live_p50_ms,live_p99_ms,live_rps,live_batch,"
         "predicted_p50_ms,predicted_p99_ms,predicted_rps,predicted_batch,spread_p50,"
         "spread_p99,hit,uniform_p50_ms,uniform_p99_ms,uniform_hit,independent_p50_ms,"
         "independent_p99_ms,independent_hit,self_p50_ms,self_p99_ms,lag_p99_ms,runs_p50_ms,"
         "runs_p99_ms,first_p50_ms,first_p99_ms,first_hit,live_b_p50_ms,live_b_p99_ms,"
         "live_b_hit\n";
  for (const Point& p : points) {
    out << p.model << ',' << p.pattern << ',' << p.config << ',' << p.lanes << ',' << p.median.p50
        << ',' << p.median.p99 << ',' << p.median.rps << ',' << p.median.batch << ','
        << p.predicted.p50 << ',' << p.predicted.p99 << ',' << p.predicted.rps << ','
        << p.predicted.batch << ',' << p.spread50 << ',' << p.spread99 << ',' << hit(p) << ','
        << p.uniform.p50 << ',' << p.uniform.p99 << ',' << hit(p.median, p.uniform) << ','
        << p.independent.p50 << ',' << p.independent.p99 << ',' << hit(p.median, p.independent)
        << ',' << p.self.p50 << ',' << p.self.p99 << ',' << p.lag99 << ',';
    for (size_t i = 0; i < p.live.size(); ++i) out << (i ? " " : "") << p.live[i].p50;
    out << ',';
    for (size_t i = 0; i < p.live.size(); ++i) out << (i ? " " : "") << p.live[i].p99;
    out << ',' << p.first.p50 << ',' << p.first.p99 << ',' << hit(p.median, p.first) << ','
        << p.other.p50 << ',' << p.other.p99 << ',' << hit(p.median, p.other) << '\n';
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args o = parse(argc, argv);
  if (o.quick) {
    o.seconds = std::min(o.seconds, 1.0);
    if (o.only.empty()) o.only = "synthetic";
  }
  std::vector<Point> points;
  const auto configs = configurations(o.quick);
  const std::vector<std::string> patterns =
      o.quick ? std::vector<std::string>{"poisson"}
              : std::vector<std::string>{"poisson", "burst", "step"};
  for (const std::string model : {"mlp", "cnn_mnist", "linear_128x64", "synthetic"}) {
    if (!o.only.empty() && model != o.only) continue;
    auto loaded = load(model, o);
    if (!loaded) {
      std::fprintf(stderr, "%s: %s\n", model.c_str(), loaded.error().message.c_str());
      return 1;
    }
    Loaded& l = **loaded;
    for (const std::string& pattern : patterns) {
      const ArrivalSpec spec = pattern_of(model, pattern, o.seconds);
      // The cost as the lanes see it under this traffic, as tune calibrates
      // it: the profile refined by one run per lane count, a run's curve
      // from the batches that started with all its lanes busy.
      CostModel cost = l.profile, first = l.profile;
      for (uint32_t lanes : {1u, 2u}) {
        ConfirmSpec cs;
        l.lanes = lanes;
        cs.factory = l.factory();
        cs.metadata = l.meta;
        cs.traffic = spec;
        cs.traffic.seed = 99;
        auto run = calibrate_live(cs, calibration_options(Options{}, 128, lanes), cost,
                                  o.calibration_runs);
        if (!run) {
          std::fprintf(stderr, "calibration: %s\n", run.error().message.c_str());
          return 1;
        }
        if (!run->observed()) {
          std::fprintf(stderr, "calibration with %u lanes: no size ran 5 times\n", lanes);
          continue;
        }
        if (run->seen.front()) first = first.calibrated(*run->seen.front(), lanes);
        if (run->levels.size() > 1) {
          std::printf("%s %s calibration, %u lane(s): levels", model.c_str(), pattern.c_str(),
                      lanes);
          for (size_t k = 0; k < run->levels.size(); ++k) {
            std::printf(" %.3f%s", run->levels[k], k == run->chosen ? "*" : "");
          }
          std::printf("\n");
        }
      }
      for (size_t i = 0; i < configs.size(); ++i) {
        const auto& [name, opts] = configs[i];
        if (!name.starts_with(o.config_prefix)) continue;
        Point p;
        p.model = model;
        p.pattern = pattern;
        p.config = name;
        p.lanes = opts.num_lanes;
        ArrivalSpec point = spec;
        point.seed = 11 + i;  // each configuration its own traffic, as the calibration's
        for (int r = 0; r < o.runs; ++r) {
          auto run = run_live(l, opts, point, o.plan_on_fit ? nullptr : &cost);
          if (!run) {
            std::fprintf(stderr, "%s %s %s: %s\n", model.c_str(), pattern.c_str(), name.c_str(),
                         run.error().message.c_str());
            return 1;
          }
          const RunSummary sum = summarize_run(*run);
          p.live.push_back(figures_of(sum));
          if (r == 0) {
            p.lag99 = sum.lag_p99_ms;
            if (auto own = CostModel::from_run(*run, 5, opts.num_lanes)) {
              PredictSpec self;
              self.arrivals = point;
              self.options = opts;
              self.cost = cost.calibrated(*own, opts.num_lanes);
              self.plan_on_cost = !o.plan_on_fit;
              p.self = figures_of(predict(self));
            }
          }
        }
        // With --halves, set A (even runs) is compared and set B (odd) is
        // the live engine against itself.
        auto pick = [&](double Figures::*f, size_t set = 0) {
          std::vector<double> v;
          for (size_t r = 0; r < p.live.size(); ++r) {
            if (!o.halves || r % 2 == set) v.push_back(p.live[r].*f);
          }
          return v;
        };
        for (double Figures::*f : {&Figures::p50, &Figures::p99, &Figures::rps, &Figures::batch}) {
          p.median.*f = median_of(pick(f));
          if (o.halves) p.other.*f = median_of(pick(f, 1));
        }
        auto spread = [&](double Figures::*f) {
          const auto v = pick(f);
          const double m = p.median.*f;
          return m > 0 ? (*std::max_element(v.begin(), v.end()) -
                          *std::min_element(v.begin(), v.end())) /
                             m
                       : 0.0;
        };
        p.spread50 = spread(&Figures::p50);
        p.spread99 = spread(&Figures::p99);
        auto predicted_on = [&](const CostModel& c) {
          PredictSpec ps;
          ps.arrivals = point;
          ps.options = opts;
          ps.cost = c;
          ps.plan_on_cost = !o.plan_on_fit;
          return figures_of(predict(ps));
        };
        p.predicted = predicted_on(cost);
        p.uniform = predicted_on(cost.uniform_jitter());
        p.independent = predicted_on(cost.independent_jitter());
        if (o.calibration_runs > 1) p.first = predicted_on(first);
        print_point(p);
        points.push_back(p);
      }
    }
  }

  // A line per model and lane count, and the whole.
  struct Group {
    int points = 0, hits = 0, uniform_hits = 0, independent_hits = 0;
    int first_hits = 0, live_b_hits = 0, against_b_hits = 0;
    std::array<double, 4> error{};  // summed relative errors: p50, p99, req/s, batch
  };
  std::map<std::string, Group> groups;
  for (const Point& p : points) {
    for (const std::string& g :
         {p.model + (p.lanes > 1 ? ", two lanes" : ", one lane"), std::string("all")}) {
      Group& n = groups[g];
      ++n.points;
      n.hits += hit(p);
      n.uniform_hits += hit(p.median, p.uniform);
      n.independent_hits += hit(p.median, p.independent);
      n.first_hits += hit(p.median, p.first);
      n.live_b_hits += hit(p.median, p.other);
      n.against_b_hits += hit(p.other, p.predicted);
      n.error[0] += rel_error(p.median.p50, p.predicted.p50);
      n.error[1] += rel_error(p.median.p99, p.predicted.p99);
      n.error[2] += rel_error(p.median.rps, p.predicted.rps);
      n.error[3] += rel_error(p.median.batch, p.predicted.batch);
    }
  }
  std::printf(
      "\nmisses (predicted against the median of %d live runs%s; spread: the live runs' own "
      "(max - min) / median):\n",
      o.halves ? o.runs / 2 : o.runs, o.halves ? ", set A" : "");
  for (const Point& p : points) {
    if (hit(p)) continue;
    std::printf(
        "  %-13s %-7s %-17s p50 %+4.0f%% p99 %+4.0f%%; live spread p50 %3.0f%% p99 %3.0f%%\n",
        p.model.c_str(), p.pattern.c_str(), p.config.c_str(),
        100 * (p.predicted.p50 / std::max(p.median.p50, 1e-9) - 1),
        100 * (p.predicted.p99 / std::max(p.median.p99, 1e-9) - 1), 100 * p.spread50,
        100 * p.spread99);
  }
  std::printf("\n%-24s %6s %12s %14s %14s   mean absolute error: %6s %6s %6s %6s\n", "group",
              "points", "hits", "uniform", "no streaks", "p50", "p99", "req/s", "batch");
  for (const auto& [g, n] : groups) {
    std::printf(
        "%-24s %6d %5d (%3.0f%%) %6d (%3.0f%%) %6d (%3.0f%%) %24.1f%% %5.1f%% %5.1f%% %5.1f%%\n",
        g.c_str(), n.points, n.hits, 100.0 * n.hits / n.points, n.uniform_hits,
        100.0 * n.uniform_hits / n.points, n.independent_hits,
        100.0 * n.independent_hits / n.points, 100 * n.error[0] / n.points,
        100 * n.error[1] / n.points, 100 * n.error[2] / n.points, 100 * n.error[3] / n.points);
  }
  if (o.halves || o.calibration_runs > 1) {
    std::printf("\n%-24s %6s %14s %14s %14s %14s\n", "group", "points", "hits (A)",
                o.calibration_runs > 1 ? "first run (A)" : "", o.halves ? "hits (B)" : "",
                o.halves ? "live B vs A" : "");
    auto share = [](int k, int n, bool shown) {
      char buf[32] = "";
      if (shown) std::snprintf(buf, sizeof buf, "%d (%3.0f%%)", k, 100.0 * k / n);
      return std::string(buf);
    };
    for (const auto& [g, n] : groups) {
      std::printf("%-24s %6d %14s %14s %14s %14s\n", g.c_str(), n.points,
                  share(n.hits, n.points, true).c_str(),
                  share(n.first_hits, n.points, o.calibration_runs > 1).c_str(),
                  share(n.against_b_hits, n.points, o.halves).c_str(),
                  share(n.live_b_hits, n.points, o.halves).c_str());
    }
  }
  if (!o.csv.empty()) write_csv(o.csv, points);
  int gated = 0;
  for (const Point& p : points) {
    gated += o.p50_only ? within(p.median.p50, p.predicted.p50, 0.10) : hit(p);
  }
  const double share = points.empty() ? 0.0 : static_cast<double>(gated) / points.size();
  if (share < o.min_share) {
    std::printf("\n%.0f%% of points %s, below --min-share %.0f%%\n", 100 * share,
                o.p50_only ? "have p50 within 10%" : "hit", 100 * o.min_share);
    return 1;
  }
  return 0;
}
