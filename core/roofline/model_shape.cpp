// SPDX-License-Identifier: GPL-3.0-or-later
#include "roofline/model_shape.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "common/file_text.h"
#include "common/text_out.h"

namespace batchscope {

namespace {

constexpr uintmax_t kMaxConfigBytes = 4u << 20;

struct Family {
  const char* architecture;
  const char* model_type;
  bool tied_by_default;  // the family's default where config.json leaves it out
  bool qkv_bias;
  int norms_per_layer;
  bool qk_norm;  // Qwen3's per-head norms of q and k
};

constexpr std::array kFamilies{
    Family{"LlamaForCausalLM", "llama", false, false, 2, false},
    Family{"MistralForCausalLM", "mistral", false, false, 2, false},
    Family{"Qwen2ForCausalLM", "qwen2", false, true, 2, false},
    Family{"Qwen3ForCausalLM", "qwen3", false, false, 2, true},
    Family{"GemmaForCausalLM", "gemma", true, false, 2, false},
    Family{"Gemma2ForCausalLM", "gemma2", true, false, 4, false},
};

std::string supported_list() {
  std::string out;
  for (const Family& f : kFamilies) out += std::string(out.empty() ? "" : ", ") + f.architecture;
  return out;
}

const Family* family_of(const std::string& architecture) {
  for (const Family& f : kFamilies) {
    if (architecture == f.architecture) return &f;
  }
  return nullptr;
}

std::string quoted(const nlohmann::json& v) { return v.dump().substr(0, 80); }

// The experts a mixture-of-experts config names, or nullopt for a dense one.
std::optional<std::string> experts_of(const nlohmann::json& c, const std::string& architecture) {
  std::string found;
  for (const char* key : {"num_local_experts", "num_experts", "n_routed_experts",
                          "num_experts_per_tok", "moe_intermediate_size"}) {
    const auto it = c.find(key);
    if (it == c.end() || !it->is_number() || it->get<double>() <= 1) continue;
    found += (found.empty() ? "" : ", ") + std::string(key) + " " + it->dump();
  }
  const bool named = architecture.find("Moe") != std::string::npos ||
                     architecture.find("MoE") != std::string::npos ||
                     architecture.find("Mixtral") != std::string::npos;
  if (found.empty() && !named) return std::nullopt;
  return found.empty() ? std::string("by its architecture") : found;
}

}  // namespace

double dtype_bytes(std::string_view dtype) {
  if (dtype == "bf16" || dtype == "bfloat16" || dtype == "fp16" || dtype == "float16") return 2;
  if (dtype == "fp32" || dtype == "float32") return 4;
  if (dtype == "fp8") return 1;
  return 0;
}

uint64_t ModelShape::parameters() const {
  const uint64_t embedding = vocab * hidden;
  return matmul_parameters() + (tied_embeddings ? 0 : embedding);
}

uint64_t ModelShape::matmul_parameters() const {
  const uint64_t q = heads * head_dim, kv = kv_heads * head_dim;
  const Family* f = family_of(architecture);
  const int norms = f ? f->norms_per_layer : 2;
  uint64_t layer = hidden * q + 2 * hidden * kv + q * hidden + 3 * hidden * intermediate +
                   static_cast<uint64_t>(norms) * hidden;
  if (qkv_bias) layer += q + 2 * kv;
  if (f && f->qk_norm) layer += 2 * head_dim;
  return layers * layer + hidden + vocab * hidden;  // the final norm, the head
}

double ModelShape::kv_bytes_per_token(std::string_view kv_dtype) const {
  return 2.0 * static_cast<double>(layers * kv_heads * head_dim) * dtype_bytes(kv_dtype);
}

double ModelShape::flops_per_token() const {
  return 2.0 * static_cast<double>(matmul_parameters());
}

double ModelShape::attention_flops_per_context_token() const {
  return 4.0 * static_cast<double>(layers * heads * head_dim);
}

std::string ModelShape::describe() const {
  std::string out;
  append_format(
      out,
      "%s: %s, %llu layers, hidden %llu, %llu heads (%llu kv, %llu each), MLP %llu, "
      "vocab %llu, %.2f B parameters, %s",
      name.c_str(), architecture.c_str(), static_cast<unsigned long long>(layers),
      static_cast<unsigned long long>(hidden), static_cast<unsigned long long>(heads),
      static_cast<unsigned long long>(kv_heads), static_cast<unsigned long long>(head_dim),
      static_cast<unsigned long long>(intermediate), static_cast<unsigned long long>(vocab),
      static_cast<double>(parameters()) / 1e9, dtype.c_str());
  return out;
}

Expected<ModelShape> parse_model_config(std::string_view json, const std::string& name) {
  const std::string where = name + "'s config.json";
  nlohmann::json c;
  try {
    c = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument(where + " is not JSON: " + e.what());
  }
  if (!c.is_object()) return invalid_argument(where + " must be a JSON object, not " + quoted(c));
  ModelShape s;
  s.name = name;
  const auto arch = c.find("architectures");
  if (arch == c.end() || !arch->is_array() || arch->empty() || !(*arch)[0].is_string()) {
    return invalid_argument(where +
                            ": \"architectures\" must be a list naming the model's class "
                            "(as [\"LlamaForCausalLM\"]), not " +
                            (arch == c.end() ? std::string("missing") : quoted(*arch)));
  }
  s.architecture = (*arch)[0].get<std::string>();
  if (auto experts = experts_of(c, s.architecture)) {
    return invalid_argument(
        where + ": " + s.architecture + " is a mixture of experts (" + *experts +
        "); the step cost covers dense decoder-only models (" + supported_list() +
        "); a mixture of experts would need its routing and the weights of the experts each "
        "step reads");
  }
  const Family* family = family_of(s.architecture);
  if (!family) {
    return invalid_argument(where + ": the architecture " + quoted((*arch)[0]) +
                            " is not one the step cost covers: " + supported_list());
  }
  s.model_type = family->model_type;
  s.qkv_bias = family->qkv_bias;
  if (const auto b = c.find("attention_bias"); b != c.end() && b->is_boolean()) {
    s.qkv_bias = b->get<bool>();
  }

  // `otherwise`: the value where the key is left out; 0: it may not be.
  auto whole = [&](const char* key, uint64_t lo, uint64_t hi,
                   uint64_t otherwise) -> Expected<uint64_t> {
    const auto it = c.find(key);
    if (it == c.end() || it->is_null()) {
      if (otherwise > 0) return otherwise;
      return invalid_argument(where + ": \"" + key + "\" is missing");
    }
    if (!it->is_number_unsigned() || it->get<uint64_t>() < lo || it->get<uint64_t>() > hi) {
      return invalid_argument(where + ": \"" + key + "\" must be a whole number from " +
                              std::to_string(lo) + " to " + std::to_string(hi) + ", not " +
                              quoted(*it));
    }
    return it->get<uint64_t>();
  };
  struct Field {
    const char* key;
    uint64_t ModelShape::*member;
    uint64_t hi;
  };
  for (const Field& f : {Field{"hidden_size", &ModelShape::hidden, 1u << 20},
                         Field{"num_hidden_layers", &ModelShape::layers, 4096},
                         Field{"num_attention_heads", &ModelShape::heads, 4096},
                         Field{"intermediate_size", &ModelShape::intermediate, 1u << 22},
                         Field{"vocab_size", &ModelShape::vocab, 1u << 24},
                         Field{"max_position_embeddings", &ModelShape::max_position, 1u << 26}}) {
    auto v = whole(f.key, 1, f.hi, 0);
    if (!v) return v.error();
    s.*f.member = *v;
  }
  // Left out, as the families read them: as many kv heads as heads, and the
  // hidden size split over the heads.
  auto kv = whole("num_key_value_heads", 1, s.heads, s.heads);
  if (!kv) return kv.error();
  if (s.heads % *kv != 0) {
    return invalid_argument(where + ": \"num_key_value_heads\" must divide num_attention_heads (" +
                            std::to_string(s.heads) + "), not " + std::to_string(*kv));
  }
  s.kv_heads = *kv;
  auto hd = whole("head_dim", 1, 4096, s.hidden % s.heads == 0 ? s.hidden / s.heads : 0);
  if (!hd) return hd.error();
  s.head_dim = *hd;

  auto dtype = c.find("torch_dtype");
  if (dtype == c.end()) dtype = c.find("dtype");  // newer files' name
  if (dtype == c.end() || dtype->is_null()) {
    s.dtype = "bf16";
  } else if (dtype->is_string() && dtype_bytes(dtype->get<std::string>()) > 0) {
    const std::string d = dtype->get<std::string>();
    s.dtype = d == "bfloat16" ? "bf16" : d == "float16" ? "fp16" : d == "float32" ? "fp32" : d;
  } else {
    return invalid_argument(where +
                            ": \"torch_dtype\" must be \"bfloat16\", \"float16\" or "
                            "\"float32\", not " +
                            quoted(*dtype));
  }
  if (const auto n = c.find("_name_or_path"); n != c.end() && n->is_string()) {
    s.name_or_path = n->get<std::string>().substr(0, 256);
  }
  s.tied_embeddings = family->tied_by_default;
  if (const auto t = c.find("tie_word_embeddings"); t != c.end() && !t->is_null()) {
    if (!t->is_boolean()) {
      return invalid_argument(where + ": \"tie_word_embeddings\" must be true or false, not " +
                              quoted(*t));
    }
    s.tied_embeddings = t->get<bool>();
  }
  return s;
}

Expected<ModelShape> read_model_config(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path file(path);
  if (fs::is_directory(file, ec)) file /= "config.json";
  const uintmax_t size = fs::file_size(file, ec);
  if (ec) return invalid_argument("--model-config: cannot read " + file.string());
  if (size > kMaxConfigBytes) {
    return invalid_argument("--model-config: " + file.string() + " is " + std::to_string(size) +
                            " bytes; a config.json is at most " + std::to_string(kMaxConfigBytes) +
                            " bytes");
  }
  auto text = read_file_text(file.string());
  if (!text) return text.error();
  // config.json is named by its folder (as a Hugging Face repository
  // holds it), any other file by its own name.
  std::string name = file.filename() == "config.json" ? file.parent_path().filename().string()
                                                      : file.stem().string();
  if (name.empty() || name == "." || name == "..") name = "model";
  return parse_model_config(*text, name);
}

}  // namespace batchscope
