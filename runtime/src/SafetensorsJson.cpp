//===- SafetensorsJson.cpp - The JSON of a safetensors header -------------===//
//
// Part of Kiln's runtime support: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "SafetensorsJson.h"

#include <cstdio>

namespace kiln {
namespace json {

namespace {

constexpr int kMaxDepth = 64;

/// The length of the UTF-8 sequence starting at `text[i]`, or 0 if it is not
/// a valid one (overlong forms, surrogates and values past U+10FFFF
/// included).
size_t utf8SequenceLength(const std::string &text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  if (lead < 0x80)
    return 1;
  size_t length;
  uint32_t codePoint;
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    codePoint = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    codePoint = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    codePoint = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size())
    return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80)
      return 0;
    codePoint = (codePoint << 6) | (byte(i + k) & 0x3F);
  }
  static const uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (codePoint < kSmallest[length] || codePoint > 0x10FFFF ||
      (codePoint >= 0xD800 && codePoint <= 0xDFFF))
    return 0;
  return length;
}

void appendUtf8(std::string &out, uint32_t codePoint) {
  if (codePoint < 0x80) {
    out += static_cast<char>(codePoint);
  } else if (codePoint < 0x800) {
    out += static_cast<char>(0xC0 | (codePoint >> 6));
    out += static_cast<char>(0x80 | (codePoint & 0x3F));
  } else if (codePoint < 0x10000) {
    out += static_cast<char>(0xE0 | (codePoint >> 12));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (codePoint & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (codePoint >> 18));
    out += static_cast<char>(0x80 | ((codePoint >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (codePoint & 0x3F));
  }
}

/// A recursive-descent parser over the whole text; `pos_` is the next byte.
class Parser {
public:
  explicit Parser(const std::string &text) : text_(text) {}

  bool parseDocument(Value &out) {
    for (size_t i = 0; i < text_.size();) {
      size_t length = utf8SequenceLength(text_, i);
      if (length == 0) {
        pos_ = i;
        return fail("invalid UTF-8");
      }
      i += length;
    }
    skipSpace();
    if (!parseValue(out, 0))
      return false;
    skipSpace();
    if (pos_ != text_.size())
      return fail("unexpected text after the value");
    return true;
  }

  const std::string &error() const { return error_; }

private:
  bool fail(const std::string &what) {
    error_ = what + " at byte " + std::to_string(pos_);
    return false;
  }
  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }
  void skipSpace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' ||
                        peek() == '\r'))
      ++pos_;
  }
  bool consumeWord(const char *word) {
    size_t length = std::char_traits<char>::length(word);
    if (text_.compare(pos_, length, word) != 0)
      return false;
    pos_ += length;
    return true;
  }

  bool parseValue(Value &out, int depth) {
    if (depth > kMaxDepth)
      return fail("nesting deeper than " + std::to_string(kMaxDepth));
    if (atEnd())
      return fail("unexpected end of the header");
    char c = peek();
    if (c == '{')
      return parseObject(out, depth);
    if (c == '[')
      return parseArray(out, depth);
    if (c == '"') {
      out.kind = Value::Kind::String;
      return parseString(out.text);
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber(out);
    if (consumeWord("true")) {
      out.kind = Value::Kind::Bool;
      out.boolean = true;
      return true;
    }
    if (consumeWord("false")) {
      out.kind = Value::Kind::Bool;
      out.boolean = false;
      return true;
    }
    if (consumeWord("null")) {
      out.kind = Value::Kind::Null;
      return true;
    }
    return fail("expected a JSON value");
  }

  bool parseObject(Value &out, int depth) {
    out.kind = Value::Kind::Object;
    ++pos_; // '{'
    skipSpace();
    if (peek() == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      skipSpace();
      if (peek() != '"')
        return fail("expected a quoted key");
      std::string key;
      if (!parseString(key))
        return false;
      for (const auto &member : out.members)
        if (member.first == key)
          return fail("duplicate key \"" + key + "\"");
      skipSpace();
      if (peek() != ':')
        return fail("expected ':'");
      ++pos_;
      skipSpace();
      out.members.emplace_back(std::move(key), Value());
      if (!parseValue(out.members.back().second, depth + 1))
        return false;
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  bool parseArray(Value &out, int depth) {
    out.kind = Value::Kind::Array;
    ++pos_; // '['
    skipSpace();
    if (peek() == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      skipSpace();
      out.elements.emplace_back();
      if (!parseValue(out.elements.back(), depth + 1))
        return false;
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }

  bool parseHex4(uint32_t &out) {
    out = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      char c = peek();
      out <<= 4;
      if (c >= '0' && c <= '9')
        out |= c - '0';
      else if (c >= 'a' && c <= 'f')
        out |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        out |= c - 'A' + 10;
      else
        return fail("expected four hex digits after \\u");
    }
    return true;
  }

  bool parseString(std::string &out) {
    ++pos_; // '"'
    out.clear();
    while (true) {
      if (atEnd())
        return fail("unterminated string");
      char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character in a string");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      char escape = peek();
      ++pos_;
      switch (escape) {
      case '"':
      case '\\':
      case '/':
        out += escape;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t codePoint;
        if (!parseHex4(codePoint))
          return false;
        if (codePoint >= 0xDC00 && codePoint <= 0xDFFF)
          return fail("unpaired low surrogate");
        if (codePoint >= 0xD800 && codePoint <= 0xDBFF) {
          uint32_t low;
          if (!consumeWord("\\u") || !parseHex4(low) || low < 0xDC00 ||
              low > 0xDFFF)
            return fail("unpaired high surrogate");
          codePoint = 0x10000 + ((codePoint - 0xD800) << 10) + (low - 0xDC00);
        }
        appendUtf8(out, codePoint);
        break;
      }
      default:
        --pos_;
        return fail("invalid escape in a string");
      }
    }
  }

  /// Checks the RFC 8259 number grammar; keeps the literal text.
  bool parseNumber(Value &out) {
    size_t start = pos_;
    auto digits = [&] {
      size_t first = pos_;
      while (!atEnd() && peek() >= '0' && peek() <= '9')
        ++pos_;
      return pos_ > first;
    };
    if (peek() == '-')
      ++pos_;
    if (peek() == '0')
      ++pos_;
    else if (!digits())
      return fail("malformed number");
    if (peek() == '.') {
      ++pos_;
      if (!digits())
        return fail("malformed number");
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-')
        ++pos_;
      if (!digits())
        return fail("malformed number");
    }
    out.kind = Value::Kind::Number;
    out.text = text_.substr(start, pos_ - start);
    return true;
  }

  const std::string &text_;
  size_t pos_ = 0;
  std::string error_;
};

} // namespace

bool isValidUtf8(const std::string &text) {
  for (size_t i = 0; i < text.size();) {
    size_t length = utf8SequenceLength(text, i);
    if (length == 0)
      return false;
    i += length;
  }
  return true;
}

bool parse(const std::string &text, Value &out, std::string &error) {
  Parser parser(text);
  out = Value();
  if (parser.parseDocument(out))
    return true;
  error = parser.error();
  return false;
}

bool asUInt64(const Value &value, uint64_t &out) {
  if (value.kind != Value::Kind::Number || value.text.empty())
    return false;
  uint64_t result = 0;
  for (char c : value.text) {
    if (c < '0' || c > '9')
      return false;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (result > (UINT64_MAX - digit) / 10)
      return false;
    result = result * 10 + digit;
  }
  out = result;
  return true;
}

void appendQuoted(std::string &out, const std::string &text) {
  out += '"';
  for (char c : text) {
    unsigned char byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (byte < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\u%04x", byte);
      out += escape;
    } else {
      out += c;
    }
  }
  out += '"';
}

const char *describeKind(Value::Kind kind) {
  switch (kind) {
  case Value::Kind::Null:
    return "null";
  case Value::Kind::Bool:
    return "a boolean";
  case Value::Kind::Number:
    return "a number";
  case Value::Kind::String:
    return "a string";
  case Value::Kind::Array:
    return "an array";
  case Value::Kind::Object:
    return "an object";
  }
  return "a value";
}

} // namespace json
} // namespace kiln
