// SPDX-License-Identifier: GPL-3.0-or-later
// The predictor's entry points; the simulation they run is
// predict_simulation.h's.

#include "tuning/predictor.h"

#include <string>

#include "tuning/predict_simulation.h"

namespace batchscope {

Status PredictSpec::validate() const {
  if (Status s = options.validate(); !s) return s;
  if (Status s = arrivals.validate(); !s) return s;
  if (engine_overhead < Duration::zero()) {
    return invalid_argument("engine_overhead = " + std::to_string(engine_overhead.count()) +
                            " ns must be >= 0");
  }
  if (start == TimePoint{}) {
    return invalid_argument("start must not be the zero TimePoint, which records read as never");
  }
  return Status::Ok();
}

RunData predict_run(const PredictSpec& spec) {
  if (!spec.validate()) {
    RunData empty;
    empty.start = spec.start;
    empty.config.options = spec.options;
    return empty;
  }
  return predict_detail::Simulation(spec).run();
}

RunSummary predict(const PredictSpec& spec, Duration window) {
  return summarize_run(predict_run(spec), window);
}

}  // namespace batchscope
