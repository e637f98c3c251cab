// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Appending numbers and JSON strings to a std::string, fast (std::to_chars,
// no streams): shared by the JSON and CSV run exports, the HTTP payloads and
// the Prometheus text. Numbers are written in the shortest form that reads
// back to the same value. Strings are escaped for JSON, and malformed UTF-8
// is replaced by U+FFFD (one for each malformed sequence: a character cut
// off, a stray byte) so strict parsers never refuse the output.
// Thread-safety: free functions without shared state.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace batchscope {

void append_uint(std::string& out, uint64_t v);
void append_int(std::string& out, int64_t v);
// `non_finite` stands in for NaN and infinities ("null" in JSON, "" in CSV).
void append_number(std::string& out, double v, std::string_view non_finite);
inline void append_json_number(std::string& out, double v) { append_number(out, v, "null"); }
// A JSON string literal, quotes included.
void append_json_string(std::string& out, std::string_view s);
// A number for a message: "2000", "0.5", "1e+300", "nan" (15 significant digits).
std::string message_number(double v);
// Text from outside quoted for a message: in single quotes, at most `max`
// bytes of it (then "..."), control bytes shown as '?', so an error never
// echoes kilobytes or terminal escapes back.
std::string quoted_excerpt(std::string_view s, size_t max = 64);
// Length of the well-formed UTF-8 sequence at s[i] (1 for ASCII), or 0 if it
// is malformed (overlong, surrogate, above U+10FFFF, or truncated).
size_t utf8_sequence_length(std::string_view s, size_t i);
// printf onto the end of `out`, however long the result: the text tables
// the commands print.
void append_format(std::string& out, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace batchscope
