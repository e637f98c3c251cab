// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The generation controls: scheduling (continuous or static), max_num_seqs,
// max_num_batched_tokens and, for static batches, how long a batch waits to
// fill (max_wait). Edits apply live through `apply` (the engine's
// set_options) 150 ms after the last change, or at once with apply_now(); the
// scheduling switch applies at once. A refused combination (say a token
// budget below max_num_seqs) is explained in place, the engine keeps the
// options in force, and the controls keep the user's values so they can be
// fixed. The panel also states the options in force and their version; the
// controls follow the engine when its version moves on without an edit here.
// Thread-safety: GUI thread only.

#include <QGroupBox>
#include <functional>

#include "generation/gen_engine.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;
class QTimer;

namespace batchscope {

class GenControls : public QGroupBox {
 public:
  using Apply = std::function<Status(const Options&)>;
  explicit GenControls(Apply apply, QWidget* parent = nullptr);

  // Each tick: the version and options in force.
  void show_status(const GenStatus& s);
  // Applies the edited values now; the engine's answer.
  Status apply_now();
  // The edited values over `base` (the fields without a control here).
  Options edited(const Options& base) const;

  QString problem() const;
  QString in_force_text() const;
  QComboBox* scheduling() const { return scheduling_; }
  QSpinBox* max_num_seqs() const { return seqs_; }
  QSpinBox* max_num_batched_tokens() const { return tokens_; }
  QSpinBox* lanes() const { return lanes_; }
  QDoubleSpinBox* max_wait_ms() const { return wait_ms_; }

 private:
  void changed();
  void set_controls(const Options& o);

  Apply apply_;
  Options in_force_;
  uint64_t version_ = 0;
  bool syncing_ = false;
  bool refused_ = false;  // the last apply was refused: keep the user's values

  QComboBox* scheduling_ = nullptr;
  QSpinBox* seqs_ = nullptr;
  QSpinBox* tokens_ = nullptr;
  QSpinBox* lanes_ = nullptr;
  QDoubleSpinBox* wait_ms_ = nullptr;
  QLabel* in_force_label_ = nullptr;
  QLabel* problem_ = nullptr;
  QTimer* debounce_ = nullptr;
};

}  // namespace batchscope
