// SPDX-License-Identifier: GPL-3.0-or-later
#include "export/pbtxt.h"

#include <cctype>
#include <cstdint>

namespace batchscope {

const char* pb_kind_name(PbField::Kind kind) {
  switch (kind) {
    case PbField::Kind::kNumber: return "a number";
    case PbField::Kind::kString: return "a string";
    case PbField::Kind::kIdentifier: return "an identifier";
    case PbField::Kind::kMessage: return "a block";
  }
  return "?";
}

namespace {

enum class Tok : uint8_t { kEnd, kIdentifier, kNumber, kString, kSymbol };

struct Token {
  Tok type = Tok::kEnd;
  std::string text;  // identifier, number as written, decoded string, or the symbol
  int line = 1;
};

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Decimal, octal or hex integers, and floats with an optional exponent and
// an f suffix, after an optional minus sign: what protobuf's tokenizer takes.
bool is_number(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  if (i >= s.size()) return false;
  if (s.size() - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
    for (size_t k = i + 2; k < s.size(); ++k) {
      if (!std::isxdigit(static_cast<unsigned char>(s[k]))) return false;
    }
    return true;
  }
  size_t digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp = 0;
    while (i < s.size() && is_digit(s[i])) ++i, ++exp;
    if (exp == 0) return false;
  }
  if (i < s.size() && (s[i] == 'f' || s[i] == 'F')) ++i;
  return i == s.size();
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : s_(text) {}

  // The next token, or an error naming the line.
  Expected<Token> next() {
    skip_space();
    Token t;
    t.line = line_;
    if (i_ >= s_.size()) return t;
    const char c = s_[i_];
    if (c == '"' || c == '\'') return string_token();
    if (is_ident_start(c)) {
      t.type = Tok::kIdentifier;
      while (i_ < s_.size() && is_ident_char(s_[i_])) t.text += s_[i_++];
      return t;
    }
    if (is_digit(c) || c == '-' || c == '.') {
      // A run of the characters numbers are made of, checked as a whole.
      size_t j = i_ + 1;
      while (j < s_.size()) {
        const char d = s_[j];
        const bool sign_after_exp = (d == '+' || d == '-') &&
                                    (s_[j - 1] == 'e' || s_[j - 1] == 'E') &&
                                    !(s_.substr(i_, 2) == "0x" || s_.substr(i_, 2) == "0X");
        if (is_ident_char(d) || d == '.' || sign_after_exp)
          ++j;
        else
          break;
      }
      std::string word(s_.substr(i_, j - i_));
      i_ = j;
      if (word.size() > 1 && word[0] == '-' && is_ident_start(word[1])) {
        t.type = Tok::kIdentifier;  // -inf, -nan
        t.text = word;
        return t;
      }
      if (!is_number(word)) return fail(t.line, "'" + word + "' is not a number");
      t.type = Tok::kNumber;
      t.text = word;
      return t;
    }
    if (std::string_view("{}[]<>:,;").find(c) != std::string_view::npos) {
      t.type = Tok::kSymbol;
      t.text = std::string(1, c);
      ++i_;
      return t;
    }
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) {
      return fail(t.line, "unexpected byte 0x" + hex2(u));
    }
    return fail(t.line, "unexpected character '" + std::string(1, c) + "'");
  }

 private:
  static std::string hex2(unsigned v) {
    static constexpr char kHex[] = "0123456789abcdef";
    return {kHex[(v >> 4) & 15], kHex[v & 15]};
  }

  static Error fail(int line, const std::string& message) {
    return invalid_argument("line " + std::to_string(line) + ": " + message);
  }

  void skip_space() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\n') {
        ++line_;
        ++i_;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++i_;
      } else if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else {
        break;
      }
    }
  }

  // One or more adjacent string literals, joined.
  Expected<Token> string_token() {
    Token t;
    t.type = Tok::kString;
    t.line = line_;
    for (;;) {
      const char quote = s_[i_++];
      for (;;) {
        if (i_ >= s_.size() || s_[i_] == '\n') return fail(line_, "unterminated string");
        const char c = s_[i_++];
        if (c == quote) break;
        if (c != '\\') {
          t.text += c;
          continue;
        }
        if (i_ >= s_.size()) return fail(line_, "unterminated string");
        const char e = s_[i_++];
        switch (e) {
          case 'n': t.text += '\n'; break;
          case 't': t.text += '\t'; break;
          case 'r': t.text += '\r'; break;
          case 'a': t.text += '\a'; break;
          case 'b': t.text += '\b'; break;
          case 'f': t.text += '\f'; break;
          case 'v': t.text += '\v'; break;
          case '\\':
          case '\'':
          case '"':
          case '?': t.text += e; break;
          case 'x':
          case 'u':
          case 'U': {
            const size_t max = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t v = 0;
            size_t n = 0;
            while (n < max && i_ < s_.size() && std::isxdigit(static_cast<unsigned char>(s_[i_]))) {
              const char h = s_[i_++];
              v = v * 16 + static_cast<uint32_t>(is_digit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
              ++n;
            }
            if (n == 0 || (e != 'x' && n != max) || v > 0x10FFFF) {
              return fail(line_, std::string("bad \\") + e + " escape in a string");
            }
            if (e == 'x')
              t.text += static_cast<char>(v);
            else
              append_utf8(t.text, v);
            break;
          }
          default:
            if (e >= '0' && e <= '7') {
              unsigned v = static_cast<unsigned>(e - '0');
              for (int n = 1; n < 3 && i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '7'; ++n) {
                v = v * 8 + static_cast<unsigned>(s_[i_++] - '0');
              }
              if (v > 0xFF) return fail(line_, "octal escape above \\377 in a string");
              t.text += static_cast<char>(v);
            } else {
              return fail(line_, std::string("unknown escape \\") + e + " in a string");
            }
        }
      }
      skip_space();
      if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) return t;
    }
  }

  std::string_view s_;
  size_t i_ = 0;
  int line_ = 1;
};

constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : lex_(text) {}

  Expected<std::vector<PbField>> document() {
    if (Status s = advance(); !s) return s.error();
    std::vector<PbField> fields;
    if (Status s = message_body(fields, "", 0, 0); !s) return s.error();
    return fields;
  }

 private:
  Status advance() {
    auto t = lex_.next();
    if (!t) return t.error();
    tok_ = std::move(*t);
    return Status::Ok();
  }

  bool at(const char* symbol) const { return tok_.type == Tok::kSymbol && tok_.text == symbol; }

  static Error fail(int line, const std::string& message) {
    return invalid_argument("line " + std::to_string(line) + ": " + message);
  }

  std::string found() const {
    switch (tok_.type) {
      case Tok::kEnd: return "the end of the file";
      case Tok::kString: return "a string";
      default: return "'" + tok_.text + "'";
    }
  }

  // Fields until `close` ("}" or ">"), or the end of input at the top level.
  Status message_body(std::vector<PbField>& out, const std::string& close, int opened_line,
                      int depth) {
    for (;;) {
      if (tok_.type == Tok::kEnd) {
        if (close.empty()) return Status::Ok();
        return fail(tok_.line, "the block opened on line " + std::to_string(opened_line) +
                                   " is not closed with '" + close + "'");
      }
      if (!close.empty() && at(close.c_str())) return advance();
      if (at("[")) return fail(tok_.line, "extensions and Any ('[...]' names) are not supported");
      if (tok_.type != Tok::kIdentifier) {
        if (tok_.type == Tok::kSymbol && (tok_.text == "}" || tok_.text == ">")) {
          if (close.empty()) {
            return fail(tok_.line, "unexpected '" + tok_.text + "' with no block open");
          }
          return fail(tok_.line, "expected '" + close + "' to close the block opened on line " +
                                     std::to_string(opened_line) + ", found '" + tok_.text + "'");
        }
        return fail(tok_.line, "expected a field name, found " + found());
      }
      if (Status s = field(out, depth); !s) return s;
      if (at(",") || at(";")) {
        if (Status s = advance(); !s) return s;
      }
    }
  }

  Status field(std::vector<PbField>& out, int depth) {
    const std::string name = tok_.text;
    const int name_line = tok_.line;
    if (Status s = advance(); !s) return s;
    bool colon = false;
    if (at(":")) {
      colon = true;
      if (Status s = advance(); !s) return s;
    }
    if (at("{") || at("<")) return message_value(out, name, depth);
    if (at("[")) return list(out, name, colon, depth);
    if (!colon) {
      return fail(name_line, "expected ':' or '{' after '" + name + "', found " + found());
    }
    return scalar(out, name);
  }

  Status scalar(std::vector<PbField>& out, const std::string& name) {
    PbField f;
    f.name = name;
    f.line = tok_.line;
    switch (tok_.type) {
      case Tok::kNumber: f.kind = PbField::Kind::kNumber; break;
      case Tok::kString: f.kind = PbField::Kind::kString; break;
      case Tok::kIdentifier: f.kind = PbField::Kind::kIdentifier; break;
      default: return fail(tok_.line, "'" + name + "' has no value: found " + found());
    }
    f.text = tok_.text;
    out.push_back(std::move(f));
    return advance();
  }

  Status message_value(std::vector<PbField>& out, const std::string& name, int depth) {
    if (depth + 1 > kMaxDepth) return fail(tok_.line, "blocks nest more than 64 deep");
    PbField f;
    f.name = name;
    f.line = tok_.line;
    f.kind = PbField::Kind::kMessage;
    const std::string close = at("{") ? "}" : ">";
    const int opened = tok_.line;
    if (Status s = advance(); !s) return s;
    if (Status s = message_body(f.fields, close, opened, depth + 1); !s) return s;
    out.push_back(std::move(f));
    return Status::Ok();
  }

  Status list(std::vector<PbField>& out, const std::string& name, bool colon, int depth) {
    const int opened = tok_.line;
    if (Status s = advance(); !s) return s;
    if (at("]")) return advance();
    for (;;) {
      if (tok_.type == Tok::kEnd) {
        return fail(tok_.line, "the list '" + name + "' opened on line " + std::to_string(opened) +
                                   " is not closed with ']'");
      }
      if (at("{") || at("<")) {
        if (Status s = message_value(out, name, depth); !s) return s;
      } else if (!colon) {
        return fail(tok_.line, "expected '{' in the list '" + name + "', found " + found());
      } else {
        if (Status s = scalar(out, name); !s) return s;
      }
      if (at("]")) return advance();
      if (tok_.type == Tok::kEnd) continue;  // reported as not closed above
      if (!at(",")) {
        return fail(tok_.line, "expected ',' or ']' in the list '" + name + "', found " + found());
      }
      if (Status s = advance(); !s) return s;
    }
  }

  Lexer lex_;
  Token tok_;
};

}  // namespace

Expected<std::vector<PbField>> parse_pbtxt(std::string_view text) {
  return Parser(text).document();
}

}  // namespace batchscope
