// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/history_keeping.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include "common/build_info.h"
#include "common/text_out.h"
#include "model/local_model.h"
#include "python/worker_process.h"
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

void bool_field(std::string& out, const char* key, bool value) {
  if (out.size() > 1) out.push_back(',');
  append_json_string(out, key);
  out += value ? ":true" : ":false";
}

// The interpreter's Python and numpy versions, asked once per interpreter:
// {"3.11.2", "1.24.2"}; empty where the interpreter or numpy would not say.
std::pair<std::string, std::string> python_versions(const std::string& python) {
  static std::mutex mu;
  static std::map<std::string, std::pair<std::string, std::string>> asked;
  std::lock_guard<std::mutex> g(mu);
  if (auto it = asked.find(python); it != asked.end()) return it->second;
  std::pair<std::string, std::string> v;
  SpawnRequest r;
  r.argv = {python, "-c",
            "import sys\n"
            "print('%d.%d.%d' % sys.version_info[:3])\n"
            "try:\n"
            "    import numpy\n"
            "    print(numpy.__version__)\n"
            "except Exception:\n"
            "    print('')\n"};
  r.separate_stdout = true;
  if (auto child = ChildProcess::spawn(r)) {
    const std::string out = (*child)->read_all(30000);
    const size_t nl = out.find('\n');
    if (nl != std::string::npos && (*child)->end() && (*child)->end()->status == 0) {
      v.first = out.substr(0, nl);
      v.second = out.substr(nl + 1, out.find('\n', nl + 1) - nl - 1);
    }
  }
  asked[python] = v;
  return v;
}

}  // namespace

int python_worker_threads(uint32_t lanes, int threads) {
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  if (threads > 0) return threads;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / static_cast<int>(std::max(1u, lanes)));
}

std::optional<PythonContext> python_context(const LocalModel& model, uint32_t lanes, int threads) {
  const PythonHandler* h = model.python_handler();
  if (!h) return std::nullopt;
  PythonContext c;
  c.class_name = h->class_name;
  c.interpreter = model.choice().python.interpreter;
  std::tie(c.version, c.numpy) = python_versions(c.interpreter);
  c.preprocess = h->has_preprocess;
  c.postprocess = h->has_postprocess;
  c.worker_threads = python_worker_threads(lanes, threads);
  return c;
}

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

std::string run_context_json(const std::string& model_path, const std::string& device,
                             const std::optional<PythonContext>& python) {
#ifdef BATCHSCOPE_WITH_HISTORY
  std::string self = "{";  // which build ran it
  text_field(self, "version", build_version());
  text_field(self, "commit", build_commit());
  self.push_back('}');
  std::string out = "{\"batchscope\":" + self + ",\"machine\":" + machine_json();
  if (python) {
    // The class runs in worker processes of its own interpreter, with its
    // own numpy and BLAS: Batchscope's LibTorch is not what ran it.
    std::string py = "{";
    text_field(py, "class", python->class_name);
    text_field(py, "interpreter", python->interpreter);
    text_field(py, "version", python->version);
    text_field(py, "numpy", python->numpy);
    bool_field(py, "preprocess", python->preprocess);
    bool_field(py, "postprocess", python->postprocess);
    if (python->worker_threads > 0) number_field(py, "worker_threads", python->worker_threads);
    py.push_back('}');
    out += ",\"python\":" + py;
  } else {
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
  }
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
  (void)model_path, (void)device, (void)python;
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
