// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/stream_event.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace batchscope {

StreamEvent read_stream_event(std::string_view data) {
  StreamEvent ev;
  if (data == "[DONE]") {
    ev.done = true;
    return ev;
  }
  const QJsonObject o =
      QJsonDocument::fromJson(QByteArray(data.data(), static_cast<qsizetype>(data.size())))
          .object();
  if (const QJsonValue e = o.value("error"); !e.isUndefined() && !e.isNull()) {
    const QString message = e.isString() ? e.toString() : e.toObject().value("message").toString();
    ev.error = message.isEmpty() ? "an error event" : message.toStdString();
    return ev;
  }
  const QJsonObject choice = o.value("choices").toArray().at(0).toObject();
  QJsonValue text = choice.value("text");
  if (!text.isString()) text = choice.value("delta").toObject().value("content");
  if (text.isString()) ev.text = text.toString().toStdString();
  const QJsonValue reason = choice.value("finish_reason");
  ev.finished = reason.isString() && !reason.toString().isEmpty();
  const QJsonObject usage = o.value("usage").toObject();
  const auto count = [&usage](const char* key) -> std::optional<uint64_t> {
    const QJsonValue v = usage.value(key);
    if (!v.isDouble() || !(v.toDouble() >= 0 && v.toDouble() < 1e15)) return std::nullopt;
    return static_cast<uint64_t>(v.toDouble());
  };
  ev.completion_tokens = count("completion_tokens");
  ev.prompt_tokens = count("prompt_tokens");
  return ev;
}

}  // namespace batchscope
