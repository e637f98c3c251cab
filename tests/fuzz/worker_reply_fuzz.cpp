// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: what Batchscope reads from a Python worker, which runs
// someone else's code: the handler's description (parse_handler_json, what
// `describe` prints) and a worker's answer in its shared-memory region (the
// header, the output table and the message). The input up to its first
// 0x00 byte is the description; the rest is laid over a region's header
// and table. Every output it accepts lies inside the region's arena and
// has exactly the bytes its shape and datatype take; the message is never
// longer than its area.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "python/python_handler.h"
#include "python/worker_protocol.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  using namespace batchscope;
  using namespace batchscope::worker;
  const std::string_view in(reinterpret_cast<const char*>(bytes), size);
  const size_t cut = std::min(in.find('\0'), in.size());
  auto h = parse_handler_json(std::string(in.substr(0, cut)), "/nonexistent/fuzz.py");
  if (h) {
    FUZZ_CHECK(h->metadata.validate().ok());
    FUZZ_CHECK(h->metadata.platform == "python");
  } else {
    FUZZ_CHECK(h.error().message.rfind("/nonexistent/fuzz.py", 0) == 0);
  }

  std::vector<std::byte> region(kHeaderBytes + 4096);
  const std::string_view rest = cut < in.size() ? in.substr(cut + 1) : std::string_view();
  if (!rest.empty()) std::memcpy(region.data(), rest.data(), std::min(rest.size(), region.size()));
  const std::string message = read_message(region.data());
  FUZZ_CHECK(message.size() <= kMessageBytes);

  ModelMetadata model;
  model.name = "m";
  model.max_batch_size = 8;
  model.inputs = {{.name = "x", .dtype = DType::kFloat32, .shape = {-1, 4}}};
  model.outputs = {{.name = "y", .dtype = DType::kFloat32, .shape = {-1, -1}},
                   {.name = "z", .dtype = DType::kInt64, .shape = {-1, 2}}};
  const uint32_t batch = 1 + get_u32(region.data(), kFieldBatch) % 8;
  auto outs = read_outputs(region.data(), region.size(), model, batch);
  if (!outs) return 0;
  FUZZ_CHECK(outs->size() == model.outputs.size());
  for (size_t k = 0; k < outs->size(); ++k) {
    const Entry& e = (*outs)[k];
    FUZZ_CHECK(e.offset >= kHeaderBytes && e.offset + e.bytes <= region.size());
    FUZZ_CHECK(e.dims.size() == model.outputs[k].shape.size());
    FUZZ_CHECK(e.dims[0] == static_cast<int64_t>(batch));
    uint64_t n = dtype_size(e.dtype);
    for (int64_t d : e.dims) n *= static_cast<uint64_t>(d);
    FUZZ_CHECK(n == e.bytes);
  }
  return 0;
}
