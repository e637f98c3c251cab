// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The batching panel: strategy, max batch size (slider and spin box),
// max wait (log slider 0–1000 ms and spin box), queue capacity, request
// timeout, lanes, the p99 target, and the padding policy with its length
// buckets (for a model whose inputs vary in length). Edits are debounced (100 ms) and applied
// through the `apply` callback as the options in force with the edited fields
// changed. A control the user has changed stays marked until the engine's
// status shows its value in force (or, after the apply, a later value that
// replaced it); a refused value is explained in place and the controls
// return to what is in force. The panel also states the options in force and
// their version.
// Thread-safety: GUI thread only.

#include <QGroupBox>
#include <functional>
#include <optional>
#include <set>

#include "batching/engine_types.h"
#include "common/status.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSlider;
class QSpinBox;
class QTimer;

namespace batchscope {

class BatchingPanel : public QGroupBox {
 public:
  using Apply = std::function<Status(const Options&)>;
  explicit BatchingPanel(Apply apply, QWidget* parent = nullptr);

  // The model's max_batch_size: larger values are explained, not applied.
  void set_model_limit(uint32_t max_batch);
  // Whether the model has preprocess: its Preprocess workers control is
  // enabled (a pool of processes ahead of the batcher).
  void set_preprocess(bool has);
  // The engine's status, each tick: the controls follow it unless the user
  // is in the middle of an edit; confirmed edits lose their mark.
  void show_status(const EngineStatus& s);
  // Applies the edited values now instead of after the debounce.
  void apply_now();
  // The edited values over `base` (fields the panel has no control for).
  Options edited(const Options& base) const;

  QString problem() const;
  QString in_force_text() const;
  // Names of the controls still waiting for the engine to confirm them.
  std::set<std::string> pending() const { return pending_; }
  QSlider* batch_slider() const { return batch_slider_; }
  QSlider* wait_slider() const { return wait_slider_; }
  QComboBox* strategy() const { return strategy_; }
  QComboBox* padding() const { return padding_; }
  QLineEdit* length_buckets() const { return buckets_; }
  QSpinBox* preprocess_workers() const { return preprocess_; }

 private:
  void changed(const std::string& field);
  void mark(const std::string& field, bool on);
  QWidget* control(const std::string& field) const;
  void set_controls(const Options& o);

  Apply apply_;
  uint32_t model_limit_ = 1024;
  Options in_force_;
  std::optional<Options> shown_;  // what the controls were last set to
  bool syncing_ = false;          // setting controls from the engine; not a user edit
  bool settle_ = false;           // applied: the next status settles every pending edit
  std::set<std::string> pending_;

  QComboBox* strategy_ = nullptr;
  QSlider* batch_slider_ = nullptr;
  QSpinBox* batch_spin_ = nullptr;
  QSlider* wait_slider_ = nullptr;
  QDoubleSpinBox* wait_spin_ = nullptr;
  QSpinBox* capacity_ = nullptr;
  QSpinBox* timeout_ = nullptr;
  QSpinBox* lanes_ = nullptr;
  QSpinBox* preprocess_ = nullptr;
  QDoubleSpinBox* target_p99_ = nullptr;
  QComboBox* padding_ = nullptr;
  QLineEdit* buckets_ = nullptr;
  QLabel* in_force_label_ = nullptr;
  QLabel* problem_ = nullptr;
  QTimer* debounce_ = nullptr;
};

// The max_wait slider's log scale: position 0 is 0 ms, 1..1000 span 0.01 ms
// to 1000 ms.
double wait_ms_at(int pos);
int wait_pos_of(double ms);

}  // namespace batchscope
