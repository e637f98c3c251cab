// SPDX-License-Identifier: GPL-3.0-or-later
// Reading vLLM's `vllm serve --config` YAML back into options: the flat
// `key: value` lines of engine arguments (long-form names, with dashes or
// underscores). max-num-seqs, max-num-batched-tokens and data-parallel-size
// (lanes) become Batchscope's;
// the rest is named in a note, as what the model or the cache decides or
// what Batchscope does not follow. Nesting, lists and repeated keys are
// refused with their line.

#include <charconv>
#include <map>
#include <string>

#include "export/export_text.h"

namespace batchscope::export_detail {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// The line without its comment: '#' at its start or after a space, outside quotes.
std::string_view uncommented(std::string_view line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      return line.substr(0, i);
    }
  }
  return line;
}

std::string unquoted(std::string_view v) {
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
    v = v.substr(1, v.size() - 2);
  }
  return std::string(v);
}

std::string canonical(std::string key) {
  for (char& c : key) {
    if (c == '_') c = '-';
  }
  return key;
}

Error at(int line, const std::string& message) {
  return invalid_argument("vLLM config line " + std::to_string(line) + ": " + message);
}

}  // namespace

bool looks_like_vllm(std::string_view text) {
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, end - pos);
    for (std::string_view key :
         {"max-num-seqs:", "max_num_seqs:", "max-num-batched-tokens:", "max_num_batched_tokens:"}) {
      if (line.substr(0, key.size()) == key) return true;
    }
    pos = end + 1;
  }
  return false;
}

Expected<ImportResult> import_vllm(std::string_view text, const Options& base) {
  ImportResult r;
  r.options = base;
  r.source = ExportFormat::kVllm;
  if (base.scheduling != Scheduling::kContinuous) {
    r.options.scheduling = Scheduling::kContinuous;
    r.notes.push_back("vLLM batches continuously: scheduling is continuous");
  }
  std::map<std::string, int> seen;  // canonical key, line
  int number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    ++number;
    const std::string_view line = trim(uncommented(raw));
    if (line.empty() || line == "---") continue;
    if (raw.front() == ' ' || raw.front() == '\t' || line.front() == '-') {
      return at(number, "nested values and lists are not engine arguments; expected KEY: VALUE");
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return at(number, "expected KEY: VALUE, got '" + std::string(line.substr(0, 60)) + "'");
    }
    // Shown in notes and errors at most 60 characters long.
    const std::string key = std::string(trim(line.substr(0, colon))).substr(0, 60);
    const std::string value = unquoted(trim(line.substr(colon + 1))).substr(0, 60);
    const std::string name = canonical(key);
    if (auto [it, fresh] = seen.emplace(name, number); !fresh) {
      return at(number, key + " is given twice (lines " + std::to_string(it->second) + " and " +
                            std::to_string(number) + ")");
    }
    if (name == "max-num-seqs" || name == "max-num-batched-tokens") {
      uint64_t n = 0;
      const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || p != value.data() + value.size() || n < 1 || n > (1u << 20)) {
        return at(number, key + " must be a whole number from 1 to 1048576, got '" +
                              value.substr(0, 60) + "'");
      }
      (name == "max-num-seqs" ? r.options.max_num_seqs : r.options.max_num_batched_tokens) =
          static_cast<uint32_t>(n);
    } else if (name == "data-parallel-size") {
      uint64_t n = 0;
      const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || p != value.data() + value.size() || n < 1 || n > 64) {
        return at(number, key + " must be a whole number from 1 to 64 (Batchscope's lanes), got '" +
                              value.substr(0, 60) + "'");
      }
      r.options.num_lanes = static_cast<uint32_t>(n);
    } else if (name == "enable-chunked-prefill") {
      if (value == "true" || value == "True") {
        r.options.chunked_prefill = true;
      } else if (value == "false" || value == "False") {
        r.options.chunked_prefill = false;
      } else {
        return at(number, key + " must be true or false, got '" + value.substr(0, 60) + "'");
      }
    } else if (name == "scheduling-policy") {
      if (value != "fcfs") {
        r.notes.push_back(key + ": " + value +
                          " is not followed: Batchscope serves in arrival "
                          "order (fcfs)");
      }
    } else if (name == "max-model-len" || name == "block-size" ||
               name == "num-gpu-blocks-override" || name == "gpu-memory-utilization") {
      r.notes.push_back(key + ": " + value +
                        " is the model's or the cache's, not a batching "
                        "option: give the model with --model and the cache with --cache-tokens");
    } else {
      r.notes.push_back(key + " is not read: Batchscope has no such option");
    }
  }
  if (Status s = r.options.validate(); !s) return invalid_argument("vLLM config: " + s.message());
  return r;
}

}  // namespace batchscope::export_detail
