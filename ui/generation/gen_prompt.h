// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The prompt box: a prompt, max_tokens and temperature, Generate and Stop,
// and an output box the completion streams into as the engine generates it.
// The prompt goes in as bytes (the byte-level tokenizer). One generation at
// a time: Generate while one streams cancels it and starts the new one.
// With Chat on, the prompt is the next user message of a conversation: the
// conversation so far and it go through the model's chat template (as POST
// /v1/chat/completions does), and the reply joins the conversation when it
// ends by stop or length. New chat forgets the conversation.
//
// The engine calls on_text and on_done on its own thread; each is posted to
// the GUI thread (a queued call on the application object) and delivered
// through a QPointer and the generation's serial number, so a box that has
// been closed, or a generation that has been replaced, never sees a late
// callback. Closing the box cancels the generation in flight.
// Thread-safety: GUI thread only (the engine's callbacks only post).

#include <QWidget>
#include <cstdint>
#include <optional>

#include <vector>

#include "generation/chat_template.h"
#include "generation/gen_engine.h"

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;

namespace batchscope {

class GenPromptBox : public QWidget {
 public:
  explicit GenPromptBox(GenEngine& engine, QWidget* parent = nullptr);
  ~GenPromptBox() override;  // cancels the generation in flight

  // Submits the prompt in the box; a refusal is shown in the status line.
  Status generate();
  // Cancels the generation in flight (its text so far stays).
  void stop();
  bool streaming() const { return id_.has_value(); }

  void set_prompt(const QString& text);
  void set_max_tokens(int n);
  void set_temperature(double t);
  void set_chat(bool on);
  // Forgets the conversation (and cancels the reply in flight).
  void new_chat();
  // The conversation so far: user and assistant turns, in order.
  const std::vector<ChatMessage>& conversation() const { return conversation_; }
  QString output() const;
  QString status_text() const;
  // Text chunks received for the current generation so far.
  int chunks() const { return chunks_; }

 private:
  void on_text(uint64_t serial, const QString& text, uint32_t tokens);
  void on_done(uint64_t serial, const GenRecord& record);

  GenEngine& engine_;
  QPlainTextEdit* prompt_ = nullptr;
  QSpinBox* max_tokens_ = nullptr;
  QDoubleSpinBox* temperature_ = nullptr;
  QPushButton* generate_ = nullptr;
  QPushButton* stop_ = nullptr;
  QCheckBox* chat_ = nullptr;
  QPushButton* new_chat_ = nullptr;
  QPlainTextEdit* output_ = nullptr;
  QLabel* status_ = nullptr;

  std::optional<uint64_t> id_;  // the engine's id of the generation in flight
  uint64_t serial_ = 0;         // numbers generations: late callbacks of old ones are ignored
  uint32_t tokens_ = 0;
  int chunks_ = 0;
  std::vector<ChatMessage> conversation_;
  bool chat_turn_ = false;  // the generation in flight is a chat turn
  std::string asked_;       // the user message of the reply in flight (chat)
  std::string reply_;       // its text so far
};

}  // namespace batchscope
