// SPDX-License-Identifier: GPL-3.0-or-later
#include "python/worker_protocol.h"

#include <algorithm>
#include <cstring>

namespace batchscope::worker {
namespace {

constexpr size_t kEntryDtype = 0;
constexpr size_t kEntryRank = 4;
constexpr size_t kEntryDims = 8;
constexpr size_t kEntryOffset = kEntryDims + 8 * kMaxDims;
constexpr size_t kEntryBytesField = kEntryOffset + 8;
static_assert(kEntryBytesField + 8 <= kEntryBytes);
static_assert(kTableOffset + 2 * kMaxTensors * kEntryBytes <= kMessageOffset);

size_t entry_at(size_t slot) { return kTableOffset + slot * kEntryBytes; }

}  // namespace

uint32_t get_u32(const std::byte* region, size_t field) {
  uint32_t v;
  std::memcpy(&v, region + field, sizeof v);
  return v;
}
uint64_t get_u64(const std::byte* region, size_t field) {
  uint64_t v;
  std::memcpy(&v, region + field, sizeof v);
  return v;
}
void put_u32(std::byte* region, size_t field, uint32_t value) {
  std::memcpy(region + field, &value, sizeof value);
}
void put_u64(std::byte* region, size_t field, uint64_t value) {
  std::memcpy(region + field, &value, sizeof value);
}

Status init_header(std::byte* region, size_t region_bytes, const std::string& metadata_json) {
  if (metadata_json.size() > kMessageBytes) {
    return invalid_argument("the model's metadata is " + std::to_string(metadata_json.size()) +
                            " bytes of JSON; a worker region holds at most " +
                            std::to_string(kMessageBytes));
  }
  std::memset(region, 0, kHeaderBytes);
  put_u32(region, kFieldMagic, kMagic);
  put_u32(region, kFieldVersion, kProtocol);
  put_u64(region, kFieldRegionBytes, region_bytes);
  std::memcpy(region + kMessageOffset, metadata_json.data(), metadata_json.size());
  put_u32(region, kFieldMessageBytes, static_cast<uint32_t>(metadata_json.size()));
  return {};
}

void write_entry(std::byte* region, size_t slot, const Entry& e) {
  std::byte* p = region + entry_at(slot);
  std::memset(p, 0, kEntryBytes);
  put_u32(p, kEntryDtype, static_cast<uint32_t>(e.dtype));
  put_u32(p, kEntryRank, static_cast<uint32_t>(e.dims.size()));
  for (size_t d = 0; d < e.dims.size() && d < kMaxDims; ++d) {
    put_u64(p, kEntryDims + 8 * d, static_cast<uint64_t>(e.dims[d]));
  }
  put_u64(p, kEntryOffset, e.offset);
  put_u64(p, kEntryBytesField, e.bytes);
}

Expected<Entry> read_entry(const std::byte* region, size_t region_bytes, size_t slot) {
  if (slot >= 2 * kMaxTensors) return invalid_argument("table slot out of range");
  const std::byte* p = region + entry_at(slot);
  Entry e;
  const uint32_t dtype = get_u32(p, kEntryDtype);
  if (dtype > static_cast<uint32_t>(DType::kBool)) {
    return invalid_argument("unknown datatype code " + std::to_string(dtype));
  }
  e.dtype = static_cast<DType>(dtype);
  const uint32_t rank = get_u32(p, kEntryRank);
  if (rank < 1 || rank > kMaxDims) {
    return invalid_argument("rank " + std::to_string(rank) + "; expected 1 to 8");
  }
  uint64_t numel = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    const auto size = static_cast<int64_t>(get_u64(p, kEntryDims + 8 * d));
    if (size < 0) return invalid_argument("a negative size " + std::to_string(size));
    e.dims.push_back(size);
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(size), &numel)) {
      return invalid_argument("sizes whose product overflows");
    }
  }
  uint64_t want = 0;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(dtype_size(e.dtype)), &want)) {
    return invalid_argument("sizes whose product overflows");
  }
  e.offset = get_u64(p, kEntryOffset);
  e.bytes = get_u64(p, kEntryBytesField);
  if (e.bytes != want) {
    return invalid_argument(std::to_string(e.bytes) + " bytes for shape " + shape_string(e.dims) +
                            " of " + dtype_name(e.dtype) + ", which takes " + std::to_string(want));
  }
  if (e.offset < kHeaderBytes || e.offset > region_bytes || e.bytes > region_bytes - e.offset) {
    return invalid_argument("bytes " + std::to_string(e.offset) + ".." +
                            std::to_string(e.offset + e.bytes) + " outside the region's arena " +
                            std::to_string(kHeaderBytes) + ".." + std::to_string(region_bytes));
  }
  return e;
}

Expected<std::vector<Entry>> read_outputs(const std::byte* region, size_t region_bytes,
                                          const ModelMetadata& model, uint32_t batch) {
  const uint32_t count = get_u32(region, kFieldOutputs);
  if (count != model.outputs.size()) {
    return invalid_argument("the worker answered " + std::to_string(count) + " outputs; model '" +
                            model.name + "' has " + std::to_string(model.outputs.size()));
  }
  std::vector<Entry> out;
  for (size_t k = 0; k < count; ++k) {
    const TensorSpec& spec = model.outputs[k];
    auto e = read_entry(region, region_bytes, kMaxTensors + k);
    if (!e) return invalid_argument("output '" + spec.name + "': " + e.error().message);
    if (e->dtype != spec.dtype) {
      return invalid_argument("output '" + spec.name + "' has datatype " + dtype_name(e->dtype) +
                              "; expected " + dtype_name(spec.dtype));
    }
    bool fits = e->dims.size() == spec.shape.size() && e->dims[0] == batch;
    for (size_t d = 1; fits && d < spec.shape.size(); ++d) {
      fits = spec.shape[d] < 0 || e->dims[d] == spec.shape[d];
    }
    if (!fits) {
      Shape expected = spec.shape;
      expected[0] = batch;
      return invalid_argument("output '" + spec.name + "' has shape " + shape_string(e->dims) +
                              " for a batch of " + std::to_string(batch) + "; expected " +
                              shape_string(expected));
    }
    out.push_back(std::move(*e));
  }
  return out;
}

std::string read_message(const std::byte* region) {
  const size_t n = std::min<size_t>(get_u32(region, kFieldMessageBytes), kMessageBytes);
  return std::string(reinterpret_cast<const char*>(region + kMessageOffset), n);
}

// The bytes of a tensor shaped `dims`; kTooLarge when past `limit` (or
// where the product would overflow).
uint64_t checked_bytes(const Shape& dims, size_t elem, uint64_t limit) {
  uint64_t n = elem;
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n) || n > limit) {
      return kTooLarge;
    }
  }
  return n;
}

// A tensor spec's bytes for `batch` requests; a variable dimension counts
// as its largest, or 64 where it has none (a first guess the region grows
// past); at most kTooLarge.
uint64_t guess_bytes(const TensorSpec& spec, uint32_t batch) {
  Shape dims{batch};
  const Shape item = spec.item_shape();
  for (size_t d = 0; d < item.size(); ++d) {
    dims.push_back(item[d] >= 0 ? item[d] : spec.item_max(d) > 0 ? spec.item_max(d) : 64);
  }
  const uint64_t n = checked_bytes(dims, dtype_size(spec.dtype), kTooLarge);
  return n == kTooLarge ? n : align_up(n);
}

}  // namespace batchscope::worker
