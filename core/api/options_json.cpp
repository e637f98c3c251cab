// SPDX-License-Identifier: GPL-3.0-or-later
#include "api/options_json.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>

#include <algorithm>
#include <cmath>

#include "common/text_out.h"

namespace batchscope {

namespace {

// A JSON number as it reads back: what the client sent, in shortest form.
std::string shown(double v) {
  std::string s;
  append_json_number(s, v);
  return s;
}

std::string known() {
  return "known: strategy, scheduling, padding, length_buckets, " + numeric_option_names();
}

// The GET /v1/config document, {"version": N, "options": {...}}: its options.
// A tune's result (tensor or generative), {"best": {"options": {...}, ...},
// ...}: its best configuration's options.
Expected<QJsonObject> unwrap(const QJsonObject& obj) {
  if (obj.contains("best") && obj.contains("space")) {
    const QJsonValue best = obj.value("best");
    if (best.isNull()) {
      return invalid_argument("the tune found no configuration: " +
                              quoted_excerpt(obj.value("error").toString().toStdString()));
    }
    if (!best.isObject() || !best.toObject().value("options").isObject()) {
      return invalid_argument("a tune's 'best' must hold an 'options' object");
    }
    return best.toObject().value("options").toObject();
  }
  if (!obj.contains("options")) return obj;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (it.key() != "options" && it.key() != "version") {
      return invalid_argument("unknown field " + quoted_excerpt(it.key().toStdString()) +
                              " beside 'options'; a configuration document holds "
                              "\"version\" and \"options\" only");
    }
  }
  if (!obj.value("options").isObject()) {
    return invalid_argument("'options' must be a JSON object of options (" + known() + ")");
  }
  if (obj.contains("version") && !obj.value("version").isDouble()) {
    return invalid_argument("'version' must be a number");
  }
  return obj.value("options").toObject();
}

}  // namespace

Expected<Options> options_from_json(std::string_view json, Options o) {
  QJsonParseError pe{};
  const QJsonDocument doc =
      QJsonDocument::fromJson(QByteArray(json.data(), static_cast<qsizetype>(json.size())), &pe);
  if (pe.error != QJsonParseError::NoError) {
    return invalid_argument("the options are not valid JSON: " + pe.errorString().toStdString() +
                            " at offset " + std::to_string(pe.offset));
  }
  if (!doc.isObject()) return invalid_argument("the options must be a JSON object");
  auto obj = unwrap(doc.object());
  if (!obj) return obj.error();
  for (auto it = obj->begin(); it != obj->end(); ++it) {
    const std::string key = it.key().toStdString();
    const QJsonValue v = it.value();
    if (key == "strategy") {
      auto k = v.isString() ? parse_strategy(v.toString().toStdString()) : std::nullopt;
      if (!k) {
        const std::string got =
            v.isString() ? quoted_excerpt(v.toString().toStdString()) : "not a string";
        return invalid_argument("strategy must be \"fifo\" or \"adaptive\", got " + got);
      }
      o.strategy = *k;
      continue;
    }
    if (key == "scheduling") {
      auto k = v.isString() ? parse_scheduling(v.toString().toStdString()) : std::nullopt;
      if (!k) {
        const std::string got =
            v.isString() ? quoted_excerpt(v.toString().toStdString()) : "not a string";
        return invalid_argument("scheduling must be \"continuous\" or \"static\", got " + got);
      }
      o.scheduling = *k;
      continue;
    }
    if (key == "padding") {
      auto k = v.isString() ? parse_padding(v.toString().toStdString()) : std::nullopt;
      if (!k) {
        const std::string got =
            v.isString() ? quoted_excerpt(v.toString().toStdString()) : "not a string";
        return invalid_argument("padding must be \"longest\", \"buckets\" or \"sorted\", got " +
                                got);
      }
      o.padding = *k;
      continue;
    }
    if (key == "length_buckets") {
      // [32, 64, 128] as the text "32,64,128", which parse_length_buckets checks.
      if (!v.isArray()) return invalid_argument("length_buckets must be an array of lengths");
      std::string text;
      for (const QJsonValue& x : v.toArray()) {
        if (!x.isDouble() || x.toDouble() != std::floor(x.toDouble()) || x.toDouble() < 0 ||
            x.toDouble() > 1e9) {
          return invalid_argument(
              "length_buckets must hold whole lengths from 1, got " +
              quoted_excerpt(
                  QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact).toStdString()));
        }
        text += (text.empty() ? "" : ",") + std::to_string(static_cast<int64_t>(x.toDouble()));
      }
      if (Status s = parse_length_buckets(text, o); !s) return s.error();
      continue;
    }
    if (key == "chunked_prefill" && v.isBool()) {
      o.chunked_prefill = v.toBool();
      continue;
    }
    const NumericOption* f = find_numeric_option(key);
    if (!f) return invalid_argument("unknown option " + quoted_excerpt(key) + "; " + known());
    if (!v.isDouble()) {
      return invalid_argument(key + " must be " + (f->whole ? "a whole number" : "a number"));
    }
    if (Status s = set_numeric_option(o, key, v.toDouble(), shown(v.toDouble())); !s) {
      return s.error();
    }
  }
  if (Status s = o.validate(); !s) return s.error();
  return o;
}

namespace {
// hardware_text() on the machine object itself.
std::string hardware_of(const std::string& device, const QJsonObject& m);
}  // namespace

namespace {

// A whole number in [lo, hi], or nullopt.
std::optional<int64_t> whole_in(const QJsonValue& v, double lo, double hi) {
  if (!v.isDouble()) return std::nullopt;
  const double d = v.toDouble();
  if (!(d >= lo && d <= hi) || d != std::floor(d)) return std::nullopt;
  return static_cast<int64_t>(d);
}

// A figure in [0, hi]; 0 where missing or out of range.
double figure(const QJsonValue& v, double hi) {
  const double d = v.toDouble();
  return std::isfinite(d) && d >= 0 && d <= hi ? d : 0.0;
}

// The tune's "lm": nullopt unless each number is in range.
std::optional<GenModelInfo> lm_of(const QJsonObject& o) {
  const auto context = whole_in(o.value("context_length"), 2, 1 << 30);
  const auto block = whole_in(o.value("block_size"), 1, 4096);
  const auto blocks = whole_in(o.value("num_blocks"), 1, 1 << 30);
  if (!context || !block || !blocks) return std::nullopt;
  return GenModelInfo{o.value("name").toString().left(256).toStdString(),
                      static_cast<int>(*context), static_cast<int>(*block),
                      static_cast<int>(*blocks)};
}

// A planned tune's "plan": nullopt unless its GPU, TP and replicas are given
// and in range.
std::optional<ServingPlan> plan_of(const QJsonObject& o) {
  const auto tp = whole_in(o.value("tp"), 1, 1024);
  const auto replicas = whole_in(o.value("replicas"), 1, 1'000'000);
  const auto fewest = whole_in(o.value("min_replicas"), 1, 1'000'000);
  const auto text = [&o](const char* key) {
    return o.value(key).toString().left(512).toStdString();
  };
  if (!tp || !replicas || text("gpu").empty()) return std::nullopt;
  ServingPlan p;
  p.model_id = text("model_id");
  p.model_config = text("model_config");
  p.gpu = text("gpu");
  p.tp = static_cast<uint32_t>(*tp);
  p.dtype = text("dtype");
  p.kv_dtype = text("kv_dtype");
  p.gpu_memory_utilization = figure(o.value("gpu_memory_utilization"), 1);
  if (p.gpu_memory_utilization <= 0) p.gpu_memory_utilization = 0.9;
  p.replicas = static_cast<uint32_t>(*replicas);
  p.min_replicas = static_cast<uint32_t>(std::min(*replicas, fewest.value_or(*replicas)));
  p.target_rate_rps = figure(o.value("target_rate_rps"), 1e9);
  p.capacity_rps = figure(o.value("capacity_rps"), 1e9);
  p.headroom = figure(o.value("headroom"), 3);
  p.e2e_p50_ms = figure(o.value("e2e_p50_ms"), 1e9);
  for (const QJsonValue& c : o.value("caveats").toArray()) {
    if (c.isString() && p.caveats.size() < 32) p.caveats.push_back(c.toString().toStdString());
  }
  return p;
}

}  // namespace

std::optional<TuneOutcome> tune_outcome_from_json(std::string_view json) {
  const QJsonDocument doc =
      QJsonDocument::fromJson(QByteArray(json.data(), static_cast<qsizetype>(json.size())));
  if (!doc.isObject()) return std::nullopt;
  const QJsonObject obj = doc.object();
  if (!obj.contains("space") || !obj.value("best").isObject()) return std::nullopt;
  const QJsonObject best = obj.value("best").toObject();
  TuneOutcome t;
  t.traffic = obj.value("traffic").toString().toStdString();
  t.generation = obj.value("kind").toString() == "generation";
  t.measured = best.value("measured").isObject();
  const QJsonObject f = best.value(t.measured ? "measured" : "predicted").toObject();
  const auto number = [&](const std::string& key) {
    const double v = f.value(QString::fromStdString(key)).toDouble();
    return std::isfinite(v) && v >= 0 ? v : 0.0;
  };
  if (t.generation) {
    t.quantile = obj.value("slo").toObject().value("quantile").toInt(99);
    // At the objective's quantile: "ttft_p99_ms"; before, "ttft_ms".
    const std::string q = "_p" + std::to_string(t.quantile) + "_ms";
    const auto at_quantile = [&](const std::string& name) {
      return f.contains(QString::fromStdString(name + q)) ? number(name + q) : number(name + "_ms");
    };
    t.p50_ms = number("e2e_p50_ms");
    t.p99_ms = at_quantile("e2e");
    t.throughput_rps = number("requests_per_s");
    t.ttft_ms = at_quantile("ttft");
    t.itl_ms = at_quantile("itl");
    t.tokens_per_s = number("tokens_per_s");
  } else {
    t.p50_ms = number("p50_ms");
    t.p99_ms = number("p99_ms");
    t.throughput_rps = number("throughput_rps");
  }
  if (const QJsonObject on = obj.value("measured_on").toObject(); !on.isEmpty()) {
    const std::string device = on.value("device").toString().toStdString();
    if (!device.empty()) t.hardware = hardware_of(device, on.value("machine").toObject());
  }
  if (t.generation) {
    t.lm = lm_of(obj.value("lm").toObject());
    t.model_file = obj.value("model_file").toString().toStdString();
    if (t.lm) t.plan = plan_of(obj.value("plan").toObject());
  }
  return t;
}

std::string hardware_text(const std::string& device, std::string_view machine_json) {
  return hardware_of(
      device, QJsonDocument::fromJson(
                  QByteArray(machine_json.data(), static_cast<qsizetype>(machine_json.size())))
                  .object());
}

namespace {

std::string hardware_of(const std::string& device, const QJsonObject& m) {
  const auto text = [&m](const char* key) { return m.value(key).toString().toStdString(); };
  if (device.rfind("cuda", 0) == 0) {
    std::string gpus;
    for (const QJsonValue& g : m.value("gpus").toArray()) {
      if (!g.isString()) continue;
      gpus += (gpus.empty() ? "" : ", ") + g.toString().toStdString();
    }
    if (gpus.empty()) return device;
    const std::string driver = text("nvidia_driver");
    return device + " on " + gpus + (driver.empty() ? "" : ", NVIDIA driver " + driver);
  }
  const std::string cpu = text("cpu");
  if (cpu.empty() || cpu == "unknown") return device;
  const int cores = m.value("cores").toInt(0);
  return device + ": " + cpu + (cores > 0 ? ", " + std::to_string(cores) + " cores" : "");
}

}  // namespace

}  // namespace batchscope
