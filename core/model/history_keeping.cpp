// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/history_keeping.h"

#include <filesystem>
#include <map>

#include "common/build_info.h"
#include "common/text_out.h"
#include "runs/history.h"
#include "traffic/gen_load.h"
#ifdef BATCHSCOPE_WITH_HISTORY
#include "runs/history_writer.h"
#include "runs/run_context.h"
#endif
#ifdef BATCHSCOPE_WITH_TORCH
#include "torch/torch_info.h"
#endif

namespace batchscope {
namespace {

// "key": "text" into an object under way.
void text_field(std::string& out, const char* key, const std::string& value) {
  if (out.size() > 1) out.push_back(',');
  append_json_string(out, key);
  out.push_back(':');
  append_json_string(out, value);
}

void number_field(std::string& out, const char* key, double value) {
  if (out.size() > 1) out.push_back(',');
  append_json_string(out, key);
  out.push_back(':');
  append_json_number(out, value);
}

}  // namespace

void HistoryWriterDelete::operator()(HistoryWriter* w) const {
#ifdef BATCHSCOPE_WITH_HISTORY
  delete w;
#else
  (void)w;
#endif
}

HistoryChoice default_history_choice() {
  HistoryChoice c;
#ifdef BATCHSCOPE_WITH_HISTORY
  c.path = default_history_path();
#else
  c.off = true;
#endif
  return c;
}

HistoryWriterPtr open_history_writer(const HistoryChoice& c, const char* command, const Say& say,
                                     std::string* why) {
#ifdef BATCHSCOPE_WITH_HISTORY
  if (c.off) return nullptr;
  auto h = History::open(c.path);
  if (!h) {
    say.err("%s: warning: %s; the history is off for this run\n", command,
            h.error().message.c_str());
    if (why) *why = h.error().message;
    return nullptr;
  }
  return HistoryWriterPtr(new HistoryWriter(std::move(*h), c.request_cap));
#else
  (void)c, (void)command, (void)say, (void)why;
  return nullptr;
#endif
}

std::string run_context_json(const std::string& model_path, const std::string& device) {
#ifdef BATCHSCOPE_WITH_HISTORY
  std::string self = "{";  // which build ran it
  text_field(self, "version", build_version());
  text_field(self, "commit", build_commit());
  self.push_back('}');
  std::string out = "{\"batchscope\":" + self + ",\"machine\":" + machine_json();
  std::string torch = "{";
#ifdef BATCHSCOPE_WITH_TORCH
  const TorchInfo t = torch_info();
  text_field(torch, "version", t.torch_version);
  text_field(torch, "blas", t.blas_name);
  text_field(torch, "blas_library", t.blas_library);
  number_field(torch, "intra_op_threads", t.intra_op_threads);
  number_field(torch, "inter_op_threads", t.inter_op_threads);
  number_field(torch, "blas_threads", t.blas_threads);
#endif
  text_field(torch, "device", device);
  torch.push_back('}');
  out += ",\"torch\":" + torch;
  std::string model = "{";
  std::error_code ec;
  if (!model_path.empty() && std::filesystem::is_regular_file(model_path, ec)) {
    // A file is hashed once while its size and time stay the same: the window
    // asks at every recording.
    static std::map<std::string, std::pair<std::string, std::string>>
        hashed;  // path -> (stamp, json)
    const auto size = std::filesystem::file_size(model_path, ec);
    const auto time = std::filesystem::last_write_time(model_path, ec).time_since_epoch().count();
    const std::string stamp = std::to_string(size) + "/" + std::to_string(time);
    auto it = hashed.find(model_path);
    if (it != hashed.end() && it->second.first == stamp) {
      model = it->second.second;
    } else {
      model = model_file_json(model_path);
      hashed[model_path] = {stamp, model};
    }
  } else {
    text_field(model, "path", model_path.empty() ? "synthetic" : model_path);
    model.push_back('}');
  }
  if (model == "{") model = "{}";
  out += ",\"model\":" + model + "}";
  return out;
#else
  (void)model_path, (void)device;
  return "{}";
#endif
}

std::string cut_text(size_t requests, uint64_t cap) {
  if (requests <= cap) return {};
  return " (" + std::to_string(cap) + " of " + std::to_string(requests) +
         " requests: --history-requests)";
}

bool keep_run(HistoryWriter& w, const std::string& kind, const RunData& run,
              const std::string& summary_json, const std::string& context_json, const Say& say) {
#ifdef BATCHSCOPE_WITH_HISTORY
  HistoryRun h;
  h.kind = kind;
  h.label = run.config.pattern + " -> " + run.config.target;
  h.model = run.config.model;
  h.config = run.config;
  h.context = context_json;
  const auto t = w.begin(std::move(h), run.start);
  w.append(t, run.requests, run.batches, run.depth);
  w.finish(t, summary_json);
  w.flush();
  if (auto why = w.failure()) {
    say.err("  not kept in the history: %s\n", why->c_str());
    return false;
  }
  const auto id = w.id_of(t);
  say.out("  kept as run %lld in %s%s\n", static_cast<long long>(id.value_or(0)), w.path().c_str(),
          cut_text(run.requests.size(), w.request_cap()).c_str());
  return true;
#else
  (void)w, (void)kind, (void)run, (void)summary_json, (void)context_json, (void)say;
  return false;
#endif
}

bool report_kept_tune(HistoryWriter& w, uint64_t tune, size_t live_runs, const Say& say) {
#ifdef BATCHSCOPE_WITH_HISTORY
  w.flush();
  if (auto why = w.failure()) {
    say.err("  not kept in the history: %s\n", why->c_str());
    return false;
  }
  say.out("  kept as run %lld (with its %zu live run(s)) in %s\n",
          static_cast<long long>(w.id_of(tune).value_or(0)), live_runs, w.path().c_str());
  return true;
#else
  (void)w, (void)tune, (void)live_runs, (void)say;
  return false;
#endif
}

}  // namespace batchscope
