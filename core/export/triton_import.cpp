// SPDX-License-Identifier: GPL-3.0-or-later
// Reading a Triton config.pbtxt into options: max_batch_size, the
// dynamic_batching block and instance_group. Fields Batchscope has no use for
// (input, output, optimization, ...) are passed over; the ones it reads are
// checked for type and range, and refused with their path and line.

#include <algorithm>
#include <charconv>
#include <set>

#include "api/options_json.h"
#include "export/export_text.h"
#include "export/pbtxt.h"

namespace batchscope::export_detail {

namespace {

Error fail(const PbField& f, const std::string& path, const std::string& message) {
  return invalid_argument("config.pbtxt line " + std::to_string(f.line) + ": " + path + " " +
                          message);
}

std::string shown(const PbField& f) {
  switch (f.kind) {
    case PbField::Kind::kString: return "the string \"" + f.text + "\"";
    case PbField::Kind::kMessage: return "a block";
    default: return "'" + f.text + "'";
  }
}

// The one field called `name` in `fields`, or null; given twice is an error,
// as protobuf reads a field that is not repeated.
Expected<const PbField*> single(const std::vector<PbField>& fields, std::string_view name,
                                const std::string& path) {
  const PbField* found = nullptr;
  for (const PbField& f : fields) {
    if (f.name != name) continue;
    if (found) {
      return fail(f, path,
                  "is given twice (lines " + std::to_string(found->line) + " and " +
                      std::to_string(f.line) + ")");
    }
    found = &f;
  }
  return found;
}

std::vector<const PbField*> repeated(const std::vector<PbField>& fields, std::string_view name) {
  std::vector<const PbField*> out;
  for (const PbField& f : fields) {
    if (f.name == name) out.push_back(&f);
  }
  return out;
}

Expected<int64_t> whole_number(const PbField& f, const std::string& path, int64_t lo, int64_t hi,
                               const std::string& allowed) {
  if (f.kind != PbField::Kind::kNumber) {
    return fail(f, path, "must be a whole number, got " + shown(f));
  }
  std::string_view s = f.text;
  const bool negative = !s.empty() && s[0] == '-';
  if (negative) s.remove_prefix(1);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
  }
  uint64_t mag = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), mag, base);
  if (r.ptr != s.data() + s.size()) return fail(f, path, "must be a whole number, got " + shown(f));
  if (r.ec != std::errc() || mag > static_cast<uint64_t>(INT64_MAX)) {
    return fail(f, path, "= " + f.text + " is out of range; " + allowed);
  }
  const int64_t v = negative ? -static_cast<int64_t>(mag) : static_cast<int64_t>(mag);
  if (v < lo || v > hi) return fail(f, path, "= " + f.text + " is out of range; " + allowed);
  return v;
}

Expected<const PbField*> block(const std::vector<PbField>& fields, std::string_view name,
                               const std::string& path) {
  auto f = single(fields, name, path);
  if (!f) return f.error();
  if (*f && (*f)->kind != PbField::Kind::kMessage) {
    return fail(**f, path, "must be a block { ... }, got " + shown(**f));
  }
  return *f;
}

// strategy and target_p99_ms, which Triton has no field for, from the
// exporter's "# batchscope-options: {...}" comment line.
Status read_carried(std::string_view text, Options& o, std::vector<std::string>& notes) {
  static constexpr std::string_view kMark = "# batchscope-options:";
  int line = 1;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = text.substr(at, end - at);
    while (!l.empty() && (l.front() == ' ' || l.front() == '\t')) l.remove_prefix(1);
    if (l.substr(0, kMark.size()) == kMark) {
      auto carried = options_from_json(l.substr(kMark.size()), o);
      if (!carried) {
        return invalid_argument("config.pbtxt line " + std::to_string(line) +
                                ": the batchscope-options comment: " + carried.error().message);
      }
      o.strategy = carried->strategy;
      o.target_p99_ms = carried->target_p99_ms;
      o.padding = carried->padding;
      o.length_buckets = carried->length_buckets;
      notes.push_back(std::string("strategy ") + strategy_name(o.strategy) + " and target_p99_ms" +
                      (o.padding != Padding::kLongest ? " and the padding policy" : "") +
                      " were read from the batchscope-options comment.");
      return Status::Ok();
    }
    at = end + 1;
    ++line;
  }
  return Status::Ok();
}

Status read_queue_policy(const PbField& policy, Options& o, std::vector<std::string>& notes) {
  const std::string path = "dynamic_batching.default_queue_policy.";
  auto size = single(policy.fields, "max_queue_size", path + "max_queue_size");
  if (!size) return size.error();
  int64_t n = 0;
  if (*size) {
    auto v = whole_number(**size, path + "max_queue_size", 0, 1 << 24,
                          "Batchscope allows 1 to 16777216 (0 is Triton's unbounded queue)");
    if (!v) return v.error();
    n = *v;
  }
  if (n > 0) {
    o.queue_capacity = static_cast<uint32_t>(n);
  } else {
    notes.push_back("Triton's queue is unbounded (no max_queue_size); queue_capacity stays " +
                    std::to_string(o.queue_capacity) + ".");
  }

  auto timeout =
      single(policy.fields, "default_timeout_microseconds", path + "default_timeout_microseconds");
  if (!timeout) return timeout.error();
  int64_t us = 0;
  if (*timeout) {
    auto v =
        whole_number(**timeout, path + "default_timeout_microseconds", 0, int64_t{3'600'000} * 1000,
                     "Batchscope allows up to 3600000000 (one hour; 0 is no timeout)");
    if (!v) return v.error();
    us = *v;
  }
  if (us > 0) {
    o.request_timeout_ms = (us + 999) / 1000;
    if (us % 1000 != 0) {
      notes.push_back("default_timeout_microseconds " + std::to_string(us) +
                      " is rounded up to request_timeout_ms " +
                      std::to_string(o.request_timeout_ms) + " (whole milliseconds).");
    }
  } else {
    notes.push_back(
        "Triton times out no queued request (no default_timeout_microseconds); "
        "request_timeout_ms stays " +
        std::to_string(o.request_timeout_ms) + ".");
  }

  auto action = single(policy.fields, "timeout_action", path + "timeout_action");
  if (!action) return action.error();
  if (*action) {
    const PbField& a = **action;
    if (a.kind != PbField::Kind::kIdentifier || (a.text != "REJECT" && a.text != "DELAY")) {
      return fail(a, path + "timeout_action", "must be REJECT or DELAY, got " + shown(a));
    }
    if (a.text == "DELAY") {
      notes.push_back(
          "timeout_action DELAY has no Batchscope equivalent: a request still queued "
          "at request_timeout_ms is refused, as with REJECT.");
    }
  }
  return Status::Ok();
}

Status read_batching(const PbField& db, Options& o, ImportResult& r) {
  const std::string path = "dynamic_batching.";
  auto delay =
      single(db.fields, "max_queue_delay_microseconds", path + "max_queue_delay_microseconds");
  if (!delay) return delay.error();
  o.max_wait_us = 0;  // Triton's default
  if (*delay) {
    auto v = whole_number(**delay, path + "max_queue_delay_microseconds", 0, 10'000'000,
                          "Batchscope allows 0 to 10000000 (10 s)");
    if (!v) return v.error();
    o.max_wait_us = *v;
  }

  std::set<uint32_t> sizes;
  for (const PbField* f : repeated(db.fields, "preferred_batch_size")) {
    auto v = whole_number(*f, path + "preferred_batch_size", 1, o.max_batch_size,
                          "allowed 1 to max_batch_size = " + std::to_string(o.max_batch_size));
    if (!v) return v.error();
    sizes.insert(static_cast<uint32_t>(*v));
  }
  r.batch_sizes.assign(sizes.begin(), sizes.end());
  if (!sizes.empty()) {
    std::string list;
    for (uint32_t b : sizes) list += (list.empty() ? "" : ", ") + std::to_string(b);
    r.notes.push_back("preferred_batch_size [" + list +
                      "] has no Batchscope option: Batchscope "
                      "waits for max_batch_size or max_wait_us.");
  }

  auto levels = single(db.fields, "priority_levels", path + "priority_levels");
  if (!levels) return levels.error();
  if (*levels) {
    auto v = whole_number(**levels, path + "priority_levels", 0, INT64_MAX, "allowed 0 and up");
    if (!v) return v.error();
    if (*v > 0) {
      r.notes.push_back("priority_levels " + std::to_string(*v) +
                        ": Batchscope has one queue; priority_queue_policy is not read.");
    }
  }

  auto policy = block(db.fields, "default_queue_policy", path + "default_queue_policy");
  if (!policy) return policy.error();
  if (*policy) return read_queue_policy(**policy, o, r.notes);
  r.notes.push_back(
      "Triton's queue is unbounded and times out nothing (no default_queue_policy); "
      "queue_capacity stays " +
      std::to_string(o.queue_capacity) + " and request_timeout_ms " +
      std::to_string(o.request_timeout_ms) + ".");
  return Status::Ok();
}

Status read_instances(const std::vector<PbField>& top, Options& o, ImportResult& r) {
  const auto groups = repeated(top, "instance_group");
  if (groups.empty()) {
    r.notes.push_back(
        "no instance_group: Triton places one instance on each GPU, or one on the "
        "CPU; num_lanes stays " +
        std::to_string(o.num_lanes) + ".");
    return Status::Ok();
  }
  int64_t lanes = 0;
  std::set<std::string> devices;
  bool unknown_device = false;
  for (const PbField* g : groups) {
    const std::string path = "instance_group.";
    if (g->kind != PbField::Kind::kMessage) {
      return fail(*g, "instance_group", "must be a list of blocks, got " + shown(*g));
    }
    int64_t count = 1;
    auto c = single(g->fields, "count", path + "count");
    if (!c) return c.error();
    if (*c) {
      auto v = whole_number(**c, path + "count", 0, 64, "Batchscope allows 1 to 64 lanes");
      if (!v) return v.error();
      count = std::max<int64_t>(1, *v);  // 0 reads as unset in proto3: Triton's default, 1
    }
    std::string kind = "KIND_AUTO";
    auto k = single(g->fields, "kind", path + "kind");
    if (!k) return k.error();
    if (*k) {
      const PbField& f = **k;
      if (f.kind != PbField::Kind::kIdentifier ||
          (f.text != "KIND_AUTO" && f.text != "KIND_GPU" && f.text != "KIND_CPU" &&
           f.text != "KIND_MODEL")) {
        return fail(f, path + "kind",
                    "must be KIND_AUTO, KIND_GPU, KIND_CPU or KIND_MODEL, got " + shown(f));
      }
      kind = f.text;
    }
    std::vector<int64_t> gpus;
    for (const PbField* f : repeated(g->fields, "gpus")) {
      auto v = whole_number(*f, path + "gpus", 0, 1023, "allowed 0 to 1023");
      if (!v) return v.error();
      gpus.push_back(*v);
    }
    if (kind == "KIND_CPU") {
      devices.insert("cpu");
      lanes += count;
    } else if (kind == "KIND_GPU" && !gpus.empty()) {
      for (int64_t id : gpus) devices.insert("cuda:" + std::to_string(id));
      lanes += count * static_cast<int64_t>(gpus.size());
    } else {
      unknown_device = true;
      lanes += count;
      r.notes.push_back("instance_group line " + std::to_string(g->line) + ": " + kind +
                        (kind == "KIND_GPU" ? " without gpus puts " + std::to_string(count) +
                                                  " instances on every GPU"
                                            : " leaves the device to Triton") +
                        "; counted as " + std::to_string(count) + " lanes.");
    }
  }
  if (lanes > 64) {
    return fail(*groups.front(), "instance_group",
                "makes " + std::to_string(lanes) +
                    " instances; Batchscope allows 1 to 64 lanes (num_lanes)");
  }
  o.num_lanes = static_cast<uint32_t>(lanes);
  if (!unknown_device && devices.size() == 1) {
    r.device = *devices.begin();
  } else if (devices.size() > 1) {
    r.notes.push_back(
        "the instances span several devices; Batchscope runs every lane on one, so "
        "no device is taken.");
  }
  return Status::Ok();
}

}  // namespace

Expected<ImportResult> import_triton(std::string_view text, const Options& base) {
  auto doc = parse_pbtxt(text);
  if (!doc) return invalid_argument("config.pbtxt " + doc.error().message);
  const std::vector<PbField>& top = *doc;
  ImportResult r;
  r.source = ExportFormat::kTriton;
  Options o = base;
  if (Status s = read_carried(text, o, r.notes); !s) return s.error();

  auto mbs = single(top, "max_batch_size", "max_batch_size");
  if (!mbs) return mbs.error();
  if (!*mbs) {
    return invalid_argument(
        "config.pbtxt: max_batch_size is missing; without it Triton does not "
        "batch (0), and Batchscope needs 1 to 4096");
  }
  auto n = whole_number(**mbs, "max_batch_size", 0, kMaxBatchSize, "allowed 1 to 4096");
  if (!n) return n.error();
  if (*n == 0) {
    return fail(**mbs, "max_batch_size",
                "= 0 turns Triton's batching off; Batchscope needs 1 to 4096");
  }
  o.max_batch_size = static_cast<uint32_t>(*n);

  for (const char* field : {"platform", "backend"}) {
    auto f = single(top, field, field);
    if (!f) return f.error();
    if (*f && (*f)->text != "pytorch_libtorch" && (*f)->text != "pytorch") {
      r.notes.push_back(std::string(field) + " " + shown(**f) +
                        ": the batching options carry over; the model itself does not.");
    }
  }

  auto db = block(top, "dynamic_batching", "dynamic_batching");
  if (!db) return db.error();
  if (*db) {
    if (Status s = read_batching(**db, o, r); !s) return s.error();
  } else {
    o.max_wait_us = 0;
    auto seq = single(top, "sequence_batching", "sequence_batching");
    if (!seq) return seq.error();
    r.notes.push_back(
        std::string(*seq ? "sequence_batching is not read, and there is " : "there is ") +
        "no dynamic_batching block: Triton runs each request as it comes. "
        "max_wait_us is set to 0; queue_capacity and request_timeout_ms stay.");
  }
  if (Status s = read_instances(top, o, r); !s) return s.error();
  if (Status s = o.validate(); !s) return invalid_argument("config.pbtxt: " + s.message());
  r.options = o;
  return r;
}

}  // namespace batchscope::export_detail
