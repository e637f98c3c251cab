// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A small reader for protobuf text format, enough for Triton's config.pbtxt:
// fields (`name: value`), nested messages (`name { ... }`, `name: { ... }`,
// `name < ... >`), lists (`dims: [ 1, 2 ]`, `input [ { ... }, { ... } ]`),
// strings with C escapes (adjacent literals joined), numbers, identifiers
// (enum values, true, false), `#` comments, and `,` or `;` after a field.
// It knows no schema: it gives the tree of fields, each with its line, and
// the caller checks names and types. A list becomes one field per element,
// as protobuf reads it. Malformed text is refused with its line named.
// Extensions and Any (`[type.googleapis.com/...]`) are refused.
// Thread-safety: plain values and free functions.

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace batchscope {

struct PbField {
  enum class Kind : uint8_t { kNumber, kString, kIdentifier, kMessage };
  std::string name;
  int line = 0;  // where the value starts, from 1
  Kind kind = Kind::kNumber;
  std::string text;             // a number or identifier as written; a string decoded
  std::vector<PbField> fields;  // kMessage: the message's fields, in order
};

// "line 7: ..." on malformed input. Messages nest at most 64 deep.
Expected<std::vector<PbField>> parse_pbtxt(std::string_view text);

// "a number", "a string", "an identifier", "a block": for messages.
const char* pb_kind_name(PbField::Kind kind);

}  // namespace batchscope
