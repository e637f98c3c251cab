// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/generation/gen_prompt.h"

#include <QCheckBox>
#include <QCoreApplication>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPointer>
#include <QPushButton>
#include <QSpinBox>
#include <QTextCursor>
#include <QVBoxLayout>

#include "common/clock.h"

namespace batchscope {

namespace {

// Runs `f` on the GUI thread if `box` still exists by then.
template <class F>
void post(QPointer<GenPromptBox> box, F f) {
  QMetaObject::invokeMethod(
      QCoreApplication::instance(),
      [box, f = std::move(f)]() mutable {
        if (box) f(box.data());
      },
      Qt::QueuedConnection);
}

}  // namespace

GenPromptBox::GenPromptBox(GenEngine& engine, QWidget* parent) : QWidget(parent), engine_(engine) {
  prompt_ = new QPlainTextEdit("The quick brown fox");
  prompt_->setPlaceholderText("Prompt");
  prompt_->setMaximumHeight(fontMetrics().height() * 4 + 12);
  max_tokens_ = new QSpinBox;
  max_tokens_->setRange(1, 4096);
  max_tokens_->setValue(128);
  max_tokens_->setPrefix("max_tokens ");
  temperature_ = new QDoubleSpinBox;
  temperature_->setRange(0, 2);
  temperature_->setSingleStep(0.1);
  temperature_->setValue(0);
  temperature_->setPrefix("temperature ");
  temperature_->setToolTip("0: greedy (the most likely token)");
  generate_ = new QPushButton("Generate");
  stop_ = new QPushButton("Stop");
  stop_->setEnabled(false);
  chat_ = new QCheckBox("Chat");
  chat_->setToolTip(
      "Send the prompt as the next user message: the conversation goes through the "
      "model's chat template, as POST /v1/chat/completions does");
  new_chat_ = new QPushButton("New chat");
  new_chat_->setEnabled(false);
  output_ = new QPlainTextEdit;
  output_->setReadOnly(true);
  output_->setPlaceholderText("The completion streams in here.");
  status_ = new QLabel;
  status_->setWordWrap(true);
  auto* knobs = new QHBoxLayout;
  knobs->addWidget(max_tokens_, 1);
  knobs->addWidget(temperature_, 1);
  auto* row = new QHBoxLayout;
  row->addWidget(chat_);
  row->addWidget(new_chat_);
  row->addStretch(1);
  row->addWidget(generate_);
  row->addWidget(stop_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(prompt_);
  layout->addLayout(knobs);
  layout->addLayout(row);
  layout->addWidget(output_, 1);
  layout->addWidget(status_);
  connect(generate_, &QPushButton::clicked, this, [this] { generate(); });
  connect(stop_, &QPushButton::clicked, this, [this] { stop(); });
  connect(new_chat_, &QPushButton::clicked, this, [this] { new_chat(); });
  connect(chat_, &QCheckBox::toggled, this, [this](bool on) {
    if (!on) new_chat();
    new_chat_->setEnabled(on);
  });
}

GenPromptBox::~GenPromptBox() {
  if (id_) engine_.cancel(*id_);
}

Status GenPromptBox::generate() {
  if (id_) engine_.cancel(*id_);
  id_.reset();
  const QByteArray typed = prompt_->toPlainText().toUtf8();
  asked_ = typed.toStdString();
  reply_.clear();
  std::string text = asked_;
  chat_turn_ = chat_->isChecked();
  if (chat_turn_) {
    std::vector<ChatMessage> turns = conversation_;
    turns.push_back({"user", asked_});
    text = render_chat(engine_.info().chat, turns);
  }
  GenRequest r;
  for (char c : text) r.prompt.push_back(static_cast<unsigned char>(c));
  if (chat_turn_) r.stop = engine_.info().chat.stop;
  r.max_tokens = static_cast<uint32_t>(max_tokens_->value());
  r.sampling.temperature = temperature_->value();
  const uint64_t serial = ++serial_;
  QPointer<GenPromptBox> self(this);
  r.on_text = [self, serial](std::string_view text, uint32_t tokens, TimePoint) {
    post(self, [serial, t = QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size())),
                tokens](GenPromptBox* box) { box->on_text(serial, t, tokens); });
  };
  r.on_done = [self, serial](const GenRecord& record) {
    GenRecord copy = record;
    copy.text.clear();  // streamed already
    copy.gaps.clear();
    post(self, [serial, copy = std::move(copy)](GenPromptBox* box) { box->on_done(serial, copy); });
  };
  output_->clear();
  tokens_ = 0;
  chunks_ = 0;
  auto id = engine_.submit(std::move(r));
  if (!id) {
    status_->setText("Refused: " + QString::fromStdString(id.error().message));
    stop_->setEnabled(false);
    return id.error();
  }
  id_ = *id;
  status_->setText(QString("Generating (request %1)...").arg(*id));
  stop_->setEnabled(true);
  return Status::Ok();
}

void GenPromptBox::stop() {
  if (id_) engine_.cancel(*id_);
}

void GenPromptBox::on_text(uint64_t serial, const QString& text, uint32_t tokens) {
  if (serial != serial_) return;
  tokens_ += tokens;
  ++chunks_;
  reply_ += text.toStdString();
  QTextCursor end(output_->document());
  end.movePosition(QTextCursor::End);
  end.insertText(text);
  output_->ensureCursorVisible();
  status_->setText(QString("Generating: %1 tokens").arg(tokens_));
}

void GenPromptBox::on_done(uint64_t serial, const GenRecord& r) {
  if (serial != serial_) return;
  id_.reset();
  stop_->setEnabled(false);
  QString text = QString("Done (%1): %2 prompt tokens, %3 output tokens")
                     .arg(finish_reason_name(r.reason))
                     .arg(r.prompt_tokens)
                     .arg(r.output_tokens);
  if (r.first_token != kNever)
    text += QString(", TTFT %1 ms").arg(to_ms(r.first_token - r.arrival), 0, 'f', 1);
  const double total = to_ms(r.finished - r.arrival);
  text += QString(", total %1 ms").arg(total, 0, 'f', 1);
  if (r.output_tokens > 1 && r.first_token != kNever && r.finished > r.first_token)
    text += QString(", %1 tokens/s after the first")
                .arg((r.output_tokens - 1) / (to_ms(r.finished - r.first_token) / 1000), 0, 'f', 1);
  if (!r.error.empty()) text += ": " + QString::fromStdString(r.error);
  if (chat_turn_ && (r.reason == FinishReason::kStop || r.reason == FinishReason::kLength)) {
    conversation_.push_back({"user", asked_});
    conversation_.push_back({"assistant", reply_});
    text += QString(" · chat of %1 turns").arg(conversation_.size());
  }
  status_->setText(text);
}

void GenPromptBox::set_chat(bool on) { chat_->setChecked(on); }

void GenPromptBox::new_chat() {
  if (id_) engine_.cancel(*id_);
  // A reply already finished but not yet delivered must not join the new
  // conversation: a new serial makes its callbacks stale.
  ++serial_;
  id_.reset();
  stop_->setEnabled(false);
  conversation_.clear();
  status_->setText(chat_->isChecked() ? "New chat" : "");
}

void GenPromptBox::set_prompt(const QString& text) { prompt_->setPlainText(text); }
void GenPromptBox::set_max_tokens(int n) { max_tokens_->setValue(n); }
void GenPromptBox::set_temperature(double t) { temperature_->setValue(t); }
QString GenPromptBox::output() const { return output_->toPlainText(); }
QString GenPromptBox::status_text() const { return status_->text(); }

}  // namespace batchscope
