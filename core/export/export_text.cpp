// SPDX-License-Identifier: GPL-3.0-or-later
#include "export/export_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace batchscope::export_detail {

Expected<Device> parse_device(std::string_view text) {
  Device d;
  if (text == "cpu") {
    d.name = "cpu";
    return d;
  }
  if (text == "cuda") {
    d.gpu = true;
    d.name = "cuda:0";
    return d;
  }
  if (text.substr(0, 5) == "cuda:" && text.size() > 5 && text.size() <= 8) {
    const std::string_view digits = text.substr(5);
    int index = 0;
    const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (r.ec == std::errc() && r.ptr == digits.data() + digits.size() && index >= 0) {
      d.gpu = true;
      d.index = index;
      d.name = "cuda:" + std::to_string(index);
      return d;
    }
  }
  return invalid_argument("device '" + std::string(text) +
                          "' is not one of cpu, cuda, cuda:N (N a GPU index)");
}

Expected<Checked> check_input(const ExportInput& in) {
  if (Status s = in.options.validate(); !s) return s.error();
  auto device = parse_device(in.device);
  if (!device) return device.error();
  const Options& o = in.options;
  if (in.model) {
    if (Status s = in.model->validate(); !s) {
      return invalid_argument("model '" + in.model->name + "': " + s.message());
    }
    if (o.max_batch_size > in.model->max_batch_size) {
      return invalid_argument("max_batch_size = " + std::to_string(o.max_batch_size) +
                              " is above model '" + in.model->name + "''s max_batch_size " +
                              std::to_string(in.model->max_batch_size));
    }
  }
  if (in.lm) {
    const GenModelInfo& m = *in.lm;
    if (m.context_length < 2 || m.block_size < 1 || m.num_blocks < 1 ||
        int64_t{m.num_blocks} * m.block_size < m.context_length) {
      return invalid_argument(
          "model '" + m.name + "': context " + std::to_string(m.context_length) + ", " +
          std::to_string(m.num_blocks) + " cache blocks of " + std::to_string(m.block_size) +
          "; the cache must hold one whole context");
    }
  }
  std::vector<uint32_t> sizes = in.batch_sizes;
  for (uint32_t b : sizes) {
    if (b < 1 || b > o.max_batch_size) {
      return invalid_argument(
          "batch_sizes: " + std::to_string(b) +
          " is out of range; allowed 1 to max_batch_size = " + std::to_string(o.max_batch_size));
    }
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return Checked{in, *device, std::move(sizes)};
}

std::string model_name(const ExportInput& in, std::string_view fallback) {
  return in.model && !in.model->name.empty() ? in.model->name : std::string(fallback);
}

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "?";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
  if (r.ec != std::errc()) return "?";
  return std::string(buf, r.ptr);
}

std::string shortest(double v) {
  if (!std::isfinite(v)) return "?";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string whole(int64_t v) { return std::to_string(v); }

std::string exact_decimal(int64_t value, int digits) {
  int64_t scale = 1;
  for (int i = 0; i < digits; ++i) scale *= 10;
  const bool negative = value < 0;
  const uint64_t mag = negative ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  std::string out = (negative ? "-" : "") + std::to_string(mag / static_cast<uint64_t>(scale));
  uint64_t frac = mag % static_cast<uint64_t>(scale);
  if (frac == 0) return out;
  std::string f = std::to_string(frac);
  f.insert(0, static_cast<size_t>(digits) - f.size(), '0');
  while (!f.empty() && f.back() == '0') f.pop_back();
  return out + "." + f;
}

int64_t nearest_ms(int64_t us) { return (us + 500) / 1000; }

int64_t ceil_seconds(int64_t ms) { return std::max<int64_t>(1, (ms + 999) / 1000); }

std::string comment(std::string_view text, std::string_view marker, size_t width) {
  std::string out;
  std::string line(marker);
  bool empty_line = true;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n')) ++i;
    if (i >= text.size()) break;
    size_t j = i;
    while (j < text.size() && text[j] != ' ' && text[j] != '\n') ++j;
    const std::string_view word = text.substr(i, j - i);
    if (!empty_line && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = std::string(marker);
      empty_line = true;
    }
    if (!empty_line) line += ' ';
    line += word;
    empty_line = false;
    i = j;
  }
  if (!empty_line) out += line + "\n";
  return out;
}

std::string one_line(std::string_view s) {
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    out += (c < 0x20 || c == 0x7f) ? ' ' : ch;
  }
  return out;
}

std::vector<std::string> context_paragraphs(const Checked& c) {
  std::vector<std::string> p;
  if (c.in.lm) {
    const GenModelInfo& m = *c.in.lm;
    p.push_back("Batchscope options in force: " + describe_generation(c.o()) + ".");
    const std::string where = c.in.plan ? "planned for " + one_line(c.in.plan->gpu) + " x" +
                                              whole(c.in.plan->tp) + " (tensor parallel)"
                                        : "on " + c.device.name;
    p.push_back("Model " + one_line(m.name) + " " + where + ": a context of " +
                whole(m.context_length) + " tokens, a cache of " + whole(m.num_blocks) +
                " blocks of " + whole(m.block_size) + " (" +
                whole(int64_t{m.num_blocks} * m.block_size) + " tokens).");
    if (const auto& plan = c.in.plan) {
      std::string r = "Replicas: " + whole(plan->replicas) + " of " + whole(plan->tp) + " GPU" +
                      (plan->tp > 1 ? "s" : "") + " (" + whole(plan->gpus()) +
                      (plan->gpus() > 1 ? " GPUs" : " GPU") + " in all)";
      if (plan->target_rate_rps > 0) {
        r += " for " + shortest(plan->target_rate_rps) + " requests/s with " +
             shortest(plan->headroom * 100) + "% held back";
      }
      if (plan->capacity_rps > 0) {
        r += "; one replica serves " + fixed(plan->capacity_rps, 2) +
             " requests/s within the objective";
      }
      p.push_back(r + ".");
      for (const std::string& caveat : plan->caveats) p.push_back("Assumed: " + one_line(caveat));
    }
  } else {
    p.push_back("Batchscope options in force: " + describe(c.o()) + ".");
  }
  if (!c.in.lm) {
    p.push_back(c.in.model ? "Model " + one_line(c.in.model->name) + " on " + c.device.name + "."
                           : "Device " + c.device.name + "; no model was given.");
  }
  const TuningContext& t = c.in.tuning;
  if (!t.traffic.empty()) p.push_back("Tuned under traffic: " + one_line(t.traffic) + ".");
  if (!t.measured && !t.predicted) return p;
  const std::string there = t.measured ? "Measured there: " : "Predicted there, not measured: ";
  if (t.tokens_per_s > 0) {
    const std::string q = "p" + std::to_string(t.quantile) + " ";
    p.push_back(there + "TTFT " + q + fixed(t.ttft_ms, 2) + " ms, ITL " + q + fixed(t.itl_ms, 2) +
                " ms, " + fixed(t.tokens_per_s, 1) + " tokens/s, end to end p50 " +
                fixed(t.p50_ms, 2) + " ms and " + q + fixed(t.p99_ms, 2) + " ms, " +
                fixed(t.throughput_rps, 2) + " requests/s.");
  } else {
    p.push_back(there + "p50 " + fixed(t.p50_ms, 2) + " ms, p99 " + fixed(t.p99_ms, 2) +
                " ms, throughput " + fixed(t.throughput_rps, 1) + " requests/s.");
  }
  if (!t.hardware.empty()) {
    p.push_back(std::string(t.measured ? "Measured on " : "Predicted from costs measured on ") +
                one_line(t.hardware) + "; other hardware gives other figures.");
  }
  return p;
}

std::string context_block(const Checked& c, std::string_view marker) {
  std::string bare(marker);
  while (!bare.empty() && bare.back() == ' ') bare.pop_back();
  std::string out = bare + "\n";
  for (const std::string& p : context_paragraphs(c)) out += comment(p, marker);
  return out + bare + "\n";
}

std::string yaml_scalar(std::string_view s) {
  const auto plain = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '/' || c == '@' || c == '+' || c == '-';
  };
  if (!s.empty() && s.front() != '-' && std::all_of(s.begin(), s.end(), plain)) {
    return std::string(s);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string shell_word(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string pbtxt_string(std::string_view s) {
  static constexpr char kOct[] = "01234567";
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += '\\';
          out += kOct[(c >> 6) & 7];
          out += kOct[(c >> 3) & 7];
          out += kOct[c & 7];
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string padding_note(const Checked& c, std::string_view server, std::string_view marker) {
  if (!c.in.model || !has_variable_inputs(*c.in.model)) return {};
  std::string names;
  for (const TensorSpec& t : c.in.model->inputs) {
    if (t.variable()) names += (names.empty() ? "" : ", ") + t.describe();
  }
  const Options& o = c.o();
  std::string policy = padding_name(o.padding);
  if (o.padding == Padding::kBuckets) policy += ", length_buckets " + length_buckets_text(o);
  return comment("Inputs of varying length (" + names +
                     "): Batchscope padded each batch to its longest request (padding = " + policy +
                     "). " + std::string(server),
                 marker);
}

}  // namespace batchscope::export_detail
