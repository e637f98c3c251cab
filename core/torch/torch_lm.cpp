// SPDX-License-Identifier: GPL-3.0-or-later
// Torch first: LibTorch uses the identifier `slots`, which Qt defines as a
// macro (this target never includes Qt).
#include <torch/script.h>

#include "torch/torch_lm.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/metadata_json.h"
#include "torch/torch_threads.h"

namespace batchscope {

namespace {

using nlohmann::json;

struct LmSidecarError {
  std::string message;
};

// What the sidecar says: the engine's view, and the cache's shape.
struct LmSidecar {
  LmInfo info;
  int layers = 0;
  int heads = 0;
  int head_dim = 0;
  double parameters = 0;  // optional; 0 when the sidecar does not say
};

const json& field(const json& obj, const char* key, const std::string& where,
                  const std::string& prefix = "") {
  auto it = obj.find(key);
  if (it == obj.end()) throw LmSidecarError{where + ": '" + prefix + key + "' is missing"};
  return *it;
}

std::string text_field(const json& obj, const char* key, const std::string& where,
                       const std::string& prefix = "") {
  const json& v = field(obj, key, where, prefix);
  if (!v.is_string()) throw LmSidecarError{where + ": '" + prefix + key + "' must be a string"};
  return v.get<std::string>();
}

void expect_text(const json& obj, const char* key, const std::string& want,
                 const std::string& where, const std::string& prefix = "") {
  const std::string got = text_field(obj, key, where, prefix);
  if (got != want) {
    throw LmSidecarError{where + ": '" + prefix + key + "' is \"" + got + "\"; only \"" + want +
                         "\" is supported"};
  }
}

int whole_field(const json& obj, const char* key, int lo, int hi, const std::string& where,
                const std::string& prefix = "") {
  const json& v = field(obj, key, where, prefix);
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
    throw LmSidecarError{where + ": '" + prefix + key + "' must be a whole number from " +
                         std::to_string(lo) + " to " + std::to_string(hi) + ", got " + v.dump()};
  }
  return static_cast<int>(v.get<int64_t>());
}

Expected<json> read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return invalid_argument("cannot read the model's metadata " + path +
                            " (each model NAME.pt needs a NAME.json beside it)");
  }
  std::ostringstream body;
  body << in.rdbuf();
  try {
    return json::parse(body.str());
  } catch (const json::parse_error& e) {
    return invalid_argument(path + " is not valid JSON: " + e.what());
  }
}

Expected<LmSidecar> parse_lm_sidecar(const json& root, const std::string& origin) {
  LmSidecar s;
  LmInfo& i = s.info;
  try {
    if (!root.is_object()) throw LmSidecarError{origin + " must hold a JSON object"};
    const auto kind = root.find("kind");
    if (kind == root.end() || !kind->is_string() || *kind != "generative") {
      throw LmSidecarError{origin + ": 'kind' is " +
                           (kind == root.end() ? "missing" : kind->dump()) +
                           "; a generative model's sidecar says \"kind\": \"generative\""};
    }
    i.name = text_field(root, "name", origin);
    if (auto d = root.find("description"); d != root.end() && d->is_string()) {
      i.description = d->get<std::string>();
    }
    expect_text(root, "tokenizer", "bytes", origin);
    i.tokenizer = "bytes";
    i.vocab_size = whole_field(root, "vocab_size", 256, 1'000'000, origin);
    i.eos_token = whole_field(root, "eos_token", 0, i.vocab_size - 1, origin);
    i.context_length = whole_field(root, "context_length", 1, 1 << 20, origin);
    const auto kv_at = root.find("kv_cache");
    if (kv_at == root.end()) throw LmSidecarError{origin + ": 'kv_cache' is missing"};
    const json& kv = *kv_at;
    if (!kv.is_object()) throw LmSidecarError{origin + ": 'kv_cache' must be an object"};
    const std::string p = "kv_cache.";
    expect_text(kv, "layout", "paged", origin, p);
    expect_text(kv, "dtype", "float32", origin, p);
    i.block_size = whole_field(kv, "block_size", 1, 4096, origin, p);
    s.layers = whole_field(kv, "layers", 1, 4096, origin, p);
    s.heads = whole_field(kv, "heads", 1, 4096, origin, p);
    s.head_dim = whole_field(kv, "head_dim", 1, 65536, origin, p);
    if (auto c = root.find("chat_template"); c != root.end()) {
      if (!c->is_object()) throw LmSidecarError{origin + ": 'chat_template' must be an object"};
      const std::string q = "chat_template.";
      std::string system = text_field(*c, "system", origin, q);  // read in order: the
      std::string user = text_field(*c, "user", origin, q);      // first one missing is named
      std::string assistant = text_field(*c, "assistant", origin, q);
      std::string generation = text_field(*c, "generation", origin, q);
      std::vector<std::string> stop;
      if (auto st = c->find("stop"); st != c->end()) {
        if (!st->is_array())
          throw LmSidecarError{origin + ": 'chat_template.stop' must be an array of strings"};
        for (const json& x : *st) {
          if (!x.is_string())
            throw LmSidecarError{origin + ": 'chat_template.stop' must be an array of strings"};
          stop.push_back(x.get<std::string>());
        }
      }
      auto t = make_chat_template(std::move(system), std::move(user), std::move(assistant),
                                  std::move(generation), std::move(stop));
      if (!t) throw LmSidecarError{origin + ": " + t.error().message};
      i.chat = *t;
    }
    if (auto n = root.find("parameters"); n != root.end()) {
      if (!n->is_number() || !(n->get<double>() >= 0 && n->get<double>() <= 1e13)) {
        throw LmSidecarError{origin + ": 'parameters' is " + n->dump() +
                             "; expected a count from 0 to 1e13"};
      }
      s.parameters = n->get<double>();
    }
  } catch (const LmSidecarError& b) {
    return invalid_argument(b.message);
  }
  return s;
}

Expected<LmSidecar> load_lm_sidecar(const std::string& json_path) {
  auto root = read_json(json_path);
  if (!root) return root.error();
  return parse_lm_sidecar(*root, json_path);
}

int blocks_for(int positions, int block_size) { return (positions + block_size - 1) / block_size; }

// Checks one sequence's part of a step: tokens at positions [start, start +
// tokens.size()), read through `blocks`.
Status check_sequence(const LmInfo& info, const std::string& what, std::span<const int32_t> tokens,
                      int start, std::span<const int32_t> blocks) {
  if (tokens.empty()) return invalid_argument(what + " has no tokens");
  const int64_t end = static_cast<int64_t>(start) + static_cast<int64_t>(tokens.size());
  if (start < 0 || end > info.context_length) {
    return invalid_argument(what + " covers positions " + std::to_string(start) + " to " +
                            std::to_string(end - 1) + "; the model's context is positions 0 to " +
                            std::to_string(info.context_length - 1));
  }
  for (size_t k = 0; k < tokens.size(); ++k) {
    if (tokens[k] < 0 || tokens[k] >= info.vocab_size) {
      return invalid_argument(what + ": token " + std::to_string(tokens[k]) + " at position " +
                              std::to_string(start + static_cast<int64_t>(k)) +
                              " is outside the vocabulary [0, " + std::to_string(info.vocab_size) +
                              ")");
    }
  }
  const int need = blocks_for(static_cast<int>(end), info.block_size);
  if (static_cast<int>(blocks.size()) < need) {
    return invalid_argument(what + ": its block table has " + std::to_string(blocks.size()) +
                            " blocks; positions up to " + std::to_string(end - 1) + " need " +
                            std::to_string(need));
  }
  for (int k = 0; k < need; ++k) {
    if (blocks[k] < 0 || blocks[k] >= info.num_blocks) {
      return invalid_argument(what + ": block id " + std::to_string(blocks[k]) + " (table entry " +
                              std::to_string(k) + ") is outside the cache's blocks [0, " +
                              std::to_string(info.num_blocks) + ")");
    }
  }
  return Status::Ok();
}

}  // namespace

struct TorchLm::Impl {
  LmSidecar side;
  torch::jit::Module module;
  torch::Device device{torch::kCPU};
  std::string device_name = "cpu";
  TorchThreadCounts threads;
  bool cuda = false;
  at::Tensor k_cache;
  at::Tensor v_cache;

  const LmInfo& info() const { return side.info; }

  Status validate(const LmStep& step) const {
    for (size_t c = 0; c < step.prefills.size(); ++c) {
      const PrefillChunk& p = step.prefills[c];
      Status s =
          check_sequence(info(), "prefill chunk " + std::to_string(c), p.tokens, p.start, p.blocks);
      if (!s) return s;
    }
    for (size_t d = 0; d < step.decodes.size(); ++d) {
      const DecodeItem& item = step.decodes[d];
      Status s =
          check_sequence(info(), "decode " + std::to_string(d),
                         std::span<const int32_t>(&item.token, 1), item.position, item.blocks);
      if (!s) return s;
    }
    return Status::Ok();
  }

  // An int64 host tensor (pinned when the device is a GPU), to fill in place.
  at::Tensor host_longs(at::IntArrayRef shape) const {
    return at::empty(shape, at::TensorOptions().dtype(at::kLong).pinned_memory(cuda));
  }

  at::Tensor to_device(const at::Tensor& host) const {
    return cuda ? host.to(device, /*non_blocking=*/true) : host;
  }

  at::Tensor longs(std::span<const int32_t> values) const {
    at::Tensor t = host_longs({static_cast<int64_t>(values.size())});
    std::copy(values.begin(), values.end(), t.data_ptr<int64_t>());
    return to_device(t);
  }

  at::Tensor prefill(const PrefillChunk& p) {
    const int end = p.start + static_cast<int>(p.tokens.size());
    const auto used = static_cast<size_t>(blocks_for(end, info().block_size));
    std::vector<c10::IValue> args{longs(p.tokens),
                                  static_cast<int64_t>(p.start),
                                  longs(p.blocks.first(used)),
                                  k_cache,
                                  v_cache,
                                  p.want_logits};
    at::Tensor logits = module.get_method("prefill")(std::move(args)).toTensor();
    if (!p.want_logits) return {};
    if (logits.dim() != 1 || logits.size(0) != info().vocab_size) {
      throw std::runtime_error("prefill() returned logits of shape " +
                               std::string(c10::str(logits.sizes())) + ", expected [" +
                               std::to_string(info().vocab_size) + "]");
    }
    return logits.view({1, info().vocab_size});
  }

  at::Tensor decode(const std::vector<DecodeItem>& items) {
    const auto rows = static_cast<int64_t>(items.size());
    int width = 1;
    for (const DecodeItem& d : items) {
      width = std::max(width, blocks_for(d.position + 1, info().block_size));
    }
    at::Tensor tokens = host_longs({rows});
    at::Tensor positions = host_longs({rows});
    // Rows are padded with block 0: any valid id does, the positions mask it.
    at::Tensor tables = host_longs({rows, width}).zero_();
    auto* tok = tokens.data_ptr<int64_t>();
    auto* pos = positions.data_ptr<int64_t>();
    auto* tab = tables.data_ptr<int64_t>();
    for (int64_t r = 0; r < rows; ++r) {
      const DecodeItem& d = items[r];
      tok[r] = d.token;
      pos[r] = d.position;
      const int used = blocks_for(d.position + 1, info().block_size);
      std::copy_n(d.blocks.begin(), used, tab + r * width);
    }
    std::vector<c10::IValue> args{to_device(tokens), to_device(positions), to_device(tables),
                                  k_cache, v_cache};
    at::Tensor logits = module.get_method("decode")(std::move(args)).toTensor();
    if (logits.dim() != 2 || logits.size(0) != rows || logits.size(1) != info().vocab_size) {
      throw std::runtime_error(
          "decode() returned logits of shape " + std::string(c10::str(logits.sizes())) + " for " +
          std::to_string(rows) + " sequences, expected [" + std::to_string(rows) + ", " +
          std::to_string(info().vocab_size) + "]");
    }
    return logits;
  }

  // A decode call costs about as much as this many cached block rows read:
  // the weights, read once per call, over one sequence's block of keys and
  // values (64 where the sidecar gives no parameter count; tiny_lm's is 62);
  // a row is padded to the longest in its call. On a GPU a call also
  // launches every kernel of the model again, which costs far more than a
  // block's read there, so a step is never split.
  int64_t call_cost_in_blocks() const {
    if (cuda) return int64_t{1} << 40;
    const double block = 2.0 * info().block_size * side.layers * side.heads * side.head_dim;
    if (side.parameters <= 0 || block <= 0) return 64;
    return static_cast<int64_t>(std::clamp(side.parameters / block, 1.0, 1e9));
  }

  // Decodes of very different lengths in one call would each read as many
  // blocks as the longest: sorted by length, they are split into the calls
  // that read the fewest blocks in all, counting each call's own cost.
  at::Tensor decode_grouped(const std::vector<DecodeItem>& items) {
    const size_t n = items.size();
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    const auto width = [&](size_t i) {
      return static_cast<int64_t>(blocks_for(items[i].position + 1, info().block_size));
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return width(a) < width(b); });
    // best[j]: the least cost of the first j (sorted) rows; cut[j]: where its last call starts.
    std::vector<int64_t> best(n + 1, 0);
    std::vector<size_t> cut(n + 1, 0);
    const int64_t call = call_cost_in_blocks();
    for (size_t j = 1; j <= n; ++j) {
      best[j] = INT64_MAX;
      for (size_t i = 0; i < j; ++i) {
        const int64_t c = best[i] + call + static_cast<int64_t>(j - i) * width(order[j - 1]);
        if (c < best[j]) best[j] = c, cut[j] = i;
      }
    }
    if (cut[n] == 0) return decode(items);
    at::Tensor out = at::empty({static_cast<int64_t>(n), info().vocab_size},
                               at::TensorOptions().dtype(at::kFloat).device(device));
    for (size_t j = n; j > 0; j = cut[j]) {
      std::vector<DecodeItem> group;
      std::vector<int64_t> where;
      for (size_t k = cut[j]; k < j; ++k) {
        group.push_back(items[order[k]]);
        where.push_back(static_cast<int64_t>(order[k]));
      }
      at::Tensor logits = decode(group).to(at::kFloat);
      out.index_copy_(0, to_device(at::tensor(where, at::kLong)), logits);
    }
    return out;
  }

  LmLogits run(const LmStep& step) {
    c10::InferenceMode guard;
    std::vector<at::Tensor> rows;
    for (const PrefillChunk& p : step.prefills) {
      at::Tensor logits = prefill(p);
      if (logits.defined()) rows.push_back(std::move(logits));
    }
    if (!step.decodes.empty()) rows.push_back(decode_grouped(step.decodes));
    LmLogits out;
    if (rows.empty()) return out;
    at::Tensor all = rows.size() == 1 ? rows[0] : at::cat(rows);
    // On a GPU this copy waits for the step: the one device-to-host transfer.
    all = all.to(at::kCPU, at::kFloat).contiguous();
    out.rows = static_cast<size_t>(all.size(0));
    out.values.resize(static_cast<size_t>(all.numel()));
    std::memcpy(out.values.data(), all.data_ptr<float>(), out.values.size() * sizeof(float));
    return out;
  }

  // The module's own sizes, where it records them, must match the sidecar.
  void check_attributes(const std::string& model_path, const std::string& json_path) const {
    const std::pair<const char*, int> expected[] = {
        {"n_layer", side.layers},           {"n_head", side.heads},
        {"head_dim", side.head_dim},        {"block_size", info().block_size},
        {"context", info().context_length},
    };
    for (const auto& [name, want] : expected) {
      if (!module.hasattr(name)) continue;
      const c10::IValue v = module.attr(name);
      if (v.isInt() && v.toInt() != want) {
        throw LmSidecarError{model_path + " does not match " + json_path + ": the module's " +
                             name + " is " + std::to_string(v.toInt()) + ", the sidecar says " +
                             std::to_string(want)};
      }
    }
    for (const char* method : {"prefill", "decode"}) {
      if (!module.find_method(method)) {
        throw LmSidecarError{model_path + " has no " + method +
                             "() method; a generative model exports prefill() and decode()"};
      }
    }
  }
};

TorchLm::TorchLm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TorchLm::~TorchLm() = default;

const LmInfo& TorchLm::info() const { return impl_->info(); }
const std::string& TorchLm::device() const { return impl_->device_name; }
int TorchLm::intra_op_threads() const { return impl_->threads.intra_op; }
int TorchLm::blas_threads() const { return impl_->threads.blas; }
size_t TorchLm::cache_bytes() const { return impl_->k_cache.nbytes() + impl_->v_cache.nbytes(); }

void TorchLm::warm_up(uint32_t max_seqs, uint32_t max_batched_tokens) {
  const LmInfo& m = info();
  const int longest = m.context_length - 1;
  if (longest < 1 || m.num_blocks < 1) return;
  const std::vector<int32_t> table(static_cast<size_t>(blocks_for(m.context_length, m.block_size)),
                                   0);
  const int cap =
      std::min<int>(longest, static_cast<int>(std::max<uint32_t>(max_batched_tokens, 1)));
  std::vector<int32_t> tokens(static_cast<size_t>(cap));
  for (int k = 0; k < cap; ++k) tokens[static_cast<size_t>(k)] = 'a' + k % 26;
  for (int n = std::min(8, cap);; n = std::min(2 * n, cap)) {
    LmStep s;
    // A block table as wide as a real sequence's of that length.
    const auto width = static_cast<size_t>(blocks_for(n + 1, m.block_size));
    s.prefills.push_back(
        PrefillChunk{std::span<const int32_t>(tokens.data(), static_cast<size_t>(n)), 0,
                     std::span<const int32_t>(table.data(), width), true});
    (void)step(s);
    if (n == cap) break;
  }
  const int seqs = static_cast<int>(std::max<uint32_t>(max_seqs, 1));
  for (int position : {std::min(8, longest), std::min(cap, longest)}) {
    for (int k = 1;; k = std::min(2 * k, seqs)) {
      LmStep s;
      const auto width = static_cast<size_t>(blocks_for(position + 1, m.block_size));
      for (int i = 0; i < k; ++i) {
        s.decodes.push_back(
            DecodeItem{tokens[0], position, std::span<const int32_t>(table.data(), width)});
      }
      (void)step(s);
      if (k == seqs) break;
    }
  }
}

Expected<LmLogits> TorchLm::step(const LmStep& step) {
  if (Status s = impl_->validate(step); !s) return s.error();
  if (step.prefills.empty() && step.decodes.empty()) return LmLogits{};
  configure_torch_thread(impl_->threads);
  try {
    return impl_->run(step);
  } catch (const std::exception& e) {
    return Error{ErrorCode::kModelError,
                 "model '" + impl_->info().name + "' failed: " + torch_error_message(e)};
  }
}

Expected<LmInfo> TorchLm::read_lm_sidecar(const std::string& json_path) {
  auto s = load_lm_sidecar(json_path);
  if (!s) return s.error();
  return s->info;
}

bool is_generative_sidecar(const std::string& model_path) {
  auto root = read_json(sidecar_path(model_path));
  if (!root || !root->is_object()) return false;
  auto kind = root->find("kind");
  return kind != root->end() && *kind == "generative";
}

Expected<std::unique_ptr<TorchLm>> TorchLm::load(const std::string& model_path,
                                                 const TorchOptions& options, int cache_tokens) {
  const std::string json_path = sidecar_path(model_path);
  auto side = load_lm_sidecar(json_path);
  if (!side) return side.error();
  auto impl = std::make_unique<Impl>();
  impl->side = std::move(*side);

  const auto devices = available_devices();
  if (std::find(devices.begin(), devices.end(), options.device) == devices.end()) {
    std::string have;
    for (const auto& d : devices) have += (have.empty() ? "" : ", ") + d;
    return invalid_argument("device '" + options.device +
                            "' is not available; this LibTorch offers " + have);
  }
  impl->device_name = options.device;
  impl->device = torch::Device(options.device);
  impl->cuda = impl->device.is_cuda();
  impl->threads = torch_thread_counts(options);
  set_inter_op_threads_once(std::max(1, options.inter_op_threads));
  configure_torch_thread(impl->threads);

  if (options.cancelled && options.cancelled()) {
    return Error{ErrorCode::kCancelled, "loading " + model_path + " was cancelled"};
  }
  try {
    impl->module = torch::jit::load(model_path, impl->device);
    impl->module.eval();
  } catch (const std::exception& e) {
    return Error{ErrorCode::kModelError,
                 "cannot load the TorchScript model " + model_path + ": " + torch_error_message(e)};
  }
  try {
    impl->check_attributes(model_path, json_path);
  } catch (const LmSidecarError& b) {
    return invalid_argument(b.message);
  }

  LmInfo& info = impl->side.info;
  const int tokens = cache_tokens > 0 ? cache_tokens : kDefaultCacheTokens;
  info.num_blocks = blocks_for(tokens, info.block_size);
  const std::vector<int64_t> shape{impl->side.layers, info.num_blocks, impl->side.heads,
                                   info.block_size, impl->side.head_dim};
  try {
    c10::InferenceMode guard;
    const auto opts = at::TensorOptions().dtype(at::kFloat).device(impl->device);
    // Zero-filled: positions a sequence has not written yet are masked out of
    // its attention, and must hold finite numbers for that to leave no trace.
    impl->k_cache = at::zeros(shape, opts);
    impl->v_cache = at::zeros(shape, opts);
  } catch (const std::exception& e) {
    return Error{ErrorCode::kModelError, "cannot allocate the key/value cache of " +
                                             std::to_string(tokens) + " positions for " +
                                             model_path + " on " + options.device + ": " +
                                             torch_error_message(e)};
  }

  auto lm = std::unique_ptr<TorchLm>(new TorchLm(std::move(impl)));
  // Warm-up: a short prompt in block 0, then one decode after it, so that the
  // first real step pays no first-call costs and the module proves it fits
  // its sidecar.
  const int n = std::min(8, info.context_length - 1);
  if (n >= 1 && info.num_blocks >= 1) {
    std::vector<int32_t> prompt(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) prompt[k] = 'a' + k % 26;
    const std::vector<int32_t> table(static_cast<size_t>(blocks_for(n + 1, info.block_size)), 0);
    LmStep warm;
    warm.prefills.push_back(PrefillChunk{prompt, 0, table, true});
    if (auto r = lm->step(warm); !r) {
      return invalid_argument(model_path + " does not run as " + json_path +
                              " describes (warm-up prefill): " + r.error().message);
    }
    warm.prefills.clear();
    warm.decodes.push_back(DecodeItem{prompt[0], n, table});
    auto r = lm->step(warm);
    if (!r || r->rows != 1 || r->values.size() != static_cast<size_t>(info.vocab_size)) {
      return invalid_argument(model_path + " does not run as " + json_path +
                              " describes (warm-up decode)" +
                              (r ? std::string() : ": " + r.error().message));
    }
  }
  return lm;
}

}  // namespace batchscope
