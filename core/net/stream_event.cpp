#include "net/stream_event.h"

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
      QJsonDocument::fromJson(QByteArray(data.data(), static_cast<qsizetype>(data.size()))).object();
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
  const QJsonValue tokens = o.value("usage").toObject().value("completion_tokens");
  if (tokens.isDouble() && tokens.toDouble() >= 0 && tokens.toDouble() < 1e15) {
    ev.completion_tokens = static_cast<uint64_t>(tokens.toDouble());
  }
  return ev;
}

}  // namespace batchscope
