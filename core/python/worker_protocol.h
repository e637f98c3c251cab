// SPDX-License-Identifier: GPL-3.0-or-later
// The shared-memory region a Python worker and Batchscope exchange batches
// through, and the reading and writing of its parts. batchscope_worker.py
// holds the same numbers; both check the magic number and the version.
//
//   0       header: magic, version, region size, sequence, command, status,
//           batch size, tensor counts, message size, space asked for,
//           sequence answered, predict's time, the worker's pid, where the
//           outputs may start (little-endian, fixed offsets below)
//   128     the tensor table: 32 input entries, then 32 output entries of
//           96 bytes (datatype, rank, 8 sizes, offset, bytes)
//   8192    the message: the model's metadata as JSON before start, then
//           a fault's text (UTF-8, at most 8 KiB)
//   16384   the arena: the inputs stacked along the batch, then the outputs,
//           each 64-byte aligned
//
// Everything read back from the region is checked against the region's
// size and the model's metadata before it is used: a worker is another
// process running someone else's code.
// Thread-safety: free functions over a region the caller owns.

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/model_metadata.h"
#include "common/status.h"
#include "common/tensor.h"

namespace batchscope::worker {

inline constexpr uint32_t kMagic = 0x57505342;
inline constexpr uint32_t kProtocol = 1;
inline constexpr size_t kHeaderBytes = 16384;
inline constexpr size_t kTableOffset = 128;
inline constexpr size_t kEntryBytes = 96;
inline constexpr size_t kMaxTensors = 32;
inline constexpr size_t kMaxDims = 8;
inline constexpr size_t kMessageOffset = 8192;
inline constexpr size_t kMessageBytes = kHeaderBytes - kMessageOffset;
inline constexpr size_t kAlign = 64;

// Header fields' offsets.
enum Field : size_t {
  kFieldMagic = 0,          // u32
  kFieldVersion = 4,        // u32
  kFieldRegionBytes = 8,    // u64, written by Batchscope
  kFieldSeq = 16,           // u64, the batch's number
  kFieldCommand = 24,       // u32, Command
  kFieldStatus = 28,        // u32, Reply
  kFieldBatch = 32,         // u32
  kFieldInputs = 36,        // u32
  kFieldOutputs = 40,       // u32
  kFieldMessageBytes = 44,  // u32
  kFieldNeedBytes = 48,     // u64, the region size a reply needs
  kFieldDoneSeq = 56,       // u64, the sequence the worker answered
  kFieldPredictNs = 64,     // u64, predict's own time
  kFieldPid = 72,           // u64, the worker's process id
  kFieldOutputsAt = 80,     // u64, where the outputs may start
  kFieldFlags = 88,         // u32, a command's Flag bits
  kFieldPostNs = 96,        // u64, postprocess's own time (all rows), 0 without
  // u64, a kept request's length (kPreprocess with kKeep): its size along
  // the first -1 dimension of the first non-BYTES input that has one
  // (request_length()), 0 where none varies.
  kFieldLength = 104,
};

// kPreprocess: one request's inputs (table slots from 0, a batch dimension
// of 1; a BYTES input as its bytes) through the class's preprocess, the
// result checked against predict's inputs and kept by the worker (kKeep) or
// written as its outputs.
enum class Command : uint32_t { kPredict = 1, kGrown = 2, kQuit = 3, kDrop = 4, kPreprocess = 5 };

// A command's flags (kFieldFlags).
enum Flag : uint32_t {
  kKeep = 1,      // preprocess: keep the result for a predict kFromKept
  kPass = 2,      // preprocess: the request is already prepared; keep it as it is
  kFromKept = 4,  // predict: the batch is the requests kept, in order
  kPost = 8,      // predict: postprocess each row; answer the served outputs
};
enum class Reply : uint32_t {
  kOk = 0,
  kReady = 1,
  kRaised = 2,       // predict raised; the message has its type and text
  kBadOutput = 3,    // the result does not fit the metadata; the message says how
  kNeedSpace = 4,    // the outputs need a larger region (kFieldNeedBytes)
  kStartFailed = 5,  // import, construction or warm-up failed; the message has the traceback
  kDropped = 6,      // the worker let go of a batch whose outputs the region could not hold
  kPartial = 7,      // postprocess failed on some rows: the message is a JSON list of [row, text]
};

struct Entry {
  DType dtype = DType::kFloat32;
  Shape dims;  // with the batch dimension first
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

constexpr size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

uint32_t get_u32(const std::byte* region, size_t field);
uint64_t get_u64(const std::byte* region, size_t field);
void put_u32(std::byte* region, size_t field, uint32_t value);
void put_u64(std::byte* region, size_t field, uint64_t value);

// A fresh header: magic, version, the region's size, and `metadata_json`
// (the model's inputs and outputs, which the worker reads as it starts)
// in the message area. Refuses a metadata text over the message's size.
Status init_header(std::byte* region, size_t region_bytes, const std::string& metadata_json);

// Slot `slot` of the table (inputs 0..31, outputs 32..63).
void write_entry(std::byte* region, size_t slot, const Entry& e);
// The entry at `slot`, checked: a known datatype, a rank from 1 to 8,
// sizes that are not negative, a byte count that matches them, and bytes
// that lie inside [kHeaderBytes, region_bytes). The error says which.
Expected<Entry> read_entry(const std::byte* region, size_t region_bytes, size_t slot);

// The outputs a worker answered, checked against the model: their count,
// each one's datatype, rank, batch size and fixed sizes. An error names the
// output, what came and what was expected.
Expected<std::vector<Entry>> read_outputs(const std::byte* region, size_t region_bytes,
                                          const ModelMetadata& model, uint32_t batch);

// What a size past any limit reads as.
inline constexpr uint64_t kTooLarge = uint64_t{1} << 62;

// The bytes of a tensor shaped `dims` of `elem`-byte elements; kTooLarge
// when past `limit` (or where the product would overflow).
uint64_t checked_bytes(const Shape& dims, size_t elem, uint64_t limit);

// A tensor spec's bytes for `batch` requests, aligned; a variable dimension
// counts as its largest, or 64 where it has none (a first guess the region
// grows past); at most kTooLarge.
uint64_t guess_bytes(const TensorSpec& spec, uint32_t batch);

// The message, cut to its area, as text.
std::string read_message(const std::byte* region);

}  // namespace batchscope::worker
