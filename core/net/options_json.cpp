#include "options_json.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>
#include <cmath>

#include "infer_json.h"

namespace batchscope {

Expected<Options> options_from_json(std::string_view json, Options o) {
  QJsonParseError pe{};
  const QJsonDocument doc =
      QJsonDocument::fromJson(QByteArray(json.data(), static_cast<qsizetype>(json.size())), &pe);
  if (pe.error != QJsonParseError::NoError) {
    return invalid_argument("the options are not valid JSON: " + pe.errorString().toStdString());
  }
  if (!doc.isObject()) return invalid_argument("the options must be a JSON object");
  const QJsonObject obj = doc.object();
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string key = it.key().toStdString();
    const QJsonValue v = it.value();
    auto whole = [&](int64_t& out) -> Status {
      if (!v.isDouble() || v.toDouble() != std::floor(v.toDouble())) {
        return invalid_argument(key + " must be a whole number");
      }
      out = static_cast<int64_t>(v.toDouble());
      return Status::Ok();
    };
    int64_t n = 0;
    Status s;
    auto to_u32 = [](int64_t x) {
      return static_cast<uint32_t>(std::clamp<int64_t>(x, 0, UINT32_MAX));
    };
    if (key == "strategy") {
      auto k = v.isString() ? parse_strategy(v.toString().toStdString()) : std::nullopt;
      if (!k) return invalid_argument("strategy must be \"fifo\" or \"adaptive\"");
      o.strategy = *k;
    } else if (key == "max_batch_size") {
      if (s = whole(n); s) o.max_batch_size = to_u32(n);
    } else if (key == "max_wait_us") {
      if (s = whole(n); s) o.max_wait_us = n;
    } else if (key == "max_wait_ms") {
      if (!v.isDouble()) return invalid_argument("max_wait_ms must be a number");
      o.max_wait_us = std::llround(v.toDouble() * 1000.0);
    } else if (key == "queue_capacity") {
      if (s = whole(n); s) o.queue_capacity = to_u32(n);
    } else if (key == "request_timeout_ms") {
      if (s = whole(n); s) o.request_timeout_ms = n;
    } else if (key == "num_lanes") {
      if (s = whole(n); s) o.num_lanes = to_u32(n);
    } else if (key == "target_p99_ms") {
      if (!v.isDouble()) return invalid_argument("target_p99_ms must be a number");
      o.target_p99_ms = v.toDouble();
    } else {
      return invalid_argument("unknown option '" + key +
                              "'; known: strategy, max_batch_size, max_wait_us (or max_wait_ms), "
                              "queue_capacity, request_timeout_ms, num_lanes, target_p99_ms");
    }
    if (!s) return s.error();
  }
  if (Status s = o.validate(); !s) return s.error();
  return o;
}

std::string options_to_json(const Options& o) {
  std::string out = "{\"strategy\":";
  append_json_string(out, strategy_name(o.strategy));
  out += ",\"max_batch_size\":" + std::to_string(o.max_batch_size);
  out += ",\"max_wait_us\":" + std::to_string(o.max_wait_us);
  out += ",\"queue_capacity\":" + std::to_string(o.queue_capacity);
  out += ",\"request_timeout_ms\":" + std::to_string(o.request_timeout_ms);
  out += ",\"num_lanes\":" + std::to_string(o.num_lanes);
  out += ",\"target_p99_ms\":";
  append_json_number(out, o.target_p99_ms);
  return out + "}";
}

}  // namespace batchscope
