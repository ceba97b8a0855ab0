//===- SafetensorsJson.h - The JSON of a safetensors header ---*- C++ -*-===//
//
// Part of Kiln's runtime support: plain C++17, no LLVM/MLIR (so llvm::json
// is not available here). A small, strict JSON reader and the string quoting
// the writer needs: just enough for a safetensors header, which is one
// object of objects, arrays of integers and strings. Internal to
// Safetensors.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SRC_SAFETENSORSJSON_H
#define KILN_SRC_SAFETENSORSJSON_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace json {

/// A parsed JSON value. Numbers keep their source text, since the header's
/// numbers are 64-bit integers that a double cannot hold exactly.
struct Value {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  /// A string's contents (UTF-8), or a number's literal text.
  std::string text;
  std::vector<Value> elements;
  /// An object's members in source order; keys are unique.
  std::vector<std::pair<std::string, Value>> members;
};

/// Parses `text` as exactly one JSON value (RFC 8259), allowing whitespace
/// around it. The text must be valid UTF-8; objects must not repeat a key;
/// nesting deeper than 64 levels is refused. On failure returns false and
/// sets `error` to the problem and its byte offset.
bool parse(const std::string &text, Value &out, std::string &error);

/// Whether `text` is well-formed UTF-8 (no overlong forms or surrogates).
bool isValidUtf8(const std::string &text);

/// The value of an integer literal without sign, fraction or exponent that
/// fits 64 bits.
bool asUInt64(const Value &value, uint64_t &out);

/// Appends `text` as a JSON string literal, escaping '"', '\\' and control
/// characters; other bytes (UTF-8) are copied.
void appendQuoted(std::string &out, const std::string &text);

/// A short name of a value's kind, for error messages ("an array").
const char *describeKind(Value::Kind kind);

} // namespace json
} // namespace kiln

#endif // KILN_SRC_SAFETENSORSJSON_H
