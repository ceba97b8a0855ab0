// Npy.cpp - Reading and writing NumPy .npy arrays.
//
// Part of Kiln's runtime support: plain C++17, no LLVM/MLIR.
//
// The format (NumPy's NEP 1): the magic "\x93NUMPY", a major and a minor
// version byte, the header length (2 bytes little-endian in version 1, 4 in
// versions 2 and 3), then the header: a Python dict literal with the keys
// 'descr', 'fortran_order' and 'shape', padded with spaces and ended by '\n'.
// The data follows, in C order.
//
//===----------------------------------------------------------------------===//

#include "kiln/Npy.h"
#include "kiln/Files.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <limits>
#include <sstream>

namespace kiln {
namespace npy {

namespace {

const char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

bool hostIsLittleEndian() {
  const uint16_t probe = 1;
  uint8_t first;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

/// The dtype of a NumPy descr string, if Kiln supports it.
bool dtypeFromDescr(const std::string &descr, DType &out) {
  static const struct {
    const char *descr;
    DType dtype;
  } kKnown[] = {
      {"<f4", DType::Float32}, {"<f8", DType::Float64}, {"<i4", DType::Int32},
      {"<i8", DType::Int64},   {"|u1", DType::UInt8},   {"<u1", DType::UInt8},
      {"<u2", DType::UInt16},  {"|b1", DType::Bool},    {"<b1", DType::Bool}};
  for (const auto &known : kKnown) {
    if (descr == known.descr) {
      out = known.dtype;
      return true;
    }
  }
  return false;
}

/// A value of the header dict: a string, a bool, or a tuple of integers.
struct HeaderValue {
  enum Kind { String, Bool, Tuple } kind = String;
  std::string text;
  bool flag = false;
  std::vector<int64_t> integers;
};

/// A recursive-descent parser for the small Python dict literal of a header.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : text_(text) {}

  /// Parses `{key: value, ...}`; calls `onEntry(key, value)` for each entry.
  /// Returns false with error() set on malformed input.
  template <typename Callback> bool parseDict(Callback onEntry) {
    skipSpace();
    if (!consume('{'))
      return fail("expected '{'");
    skipSpace();
    while (!consume('}')) {
      std::string key;
      if (!parseString(key))
        return fail("expected a quoted key");
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after key '" + key + "'");
      skipSpace();
      HeaderValue value;
      if (!parseValue(value))
        return false;
      if (!onEntry(key, value))
        return false;
      skipSpace();
      if (consume(','))
        skipSpace();
      else if (peek() != '}')
        return fail("expected ',' or '}'");
    }
    skipSpace();
    if (pos_ != text_.size())
      return fail("unexpected text after the dict");
    return true;
  }

  bool fail(const std::string &message) {
    if (error_.empty())
      error_ = message + " at offset " + std::to_string(pos_);
    return false;
  }
  const std::string &error() const { return error_; }

private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    if (peek() != c)
      return false;
    ++pos_;
    return true;
  }
  void skipSpace() {
    while (pos_ < text_.size() &&
           std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool consumeWord(const char *word) {
    size_t length = std::strlen(word);
    if (text_.compare(pos_, length, word) != 0)
      return false;
    pos_ += length;
    return true;
  }

  bool parseString(std::string &out) {
    char quote = peek();
    if (quote != '\'' && quote != '"')
      return false;
    ++pos_;
    size_t end = text_.find(quote, pos_);
    if (end == std::string::npos)
      return fail("unterminated string");
    out = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return true;
  }

  bool parseInteger(int64_t &out) {
    size_t start = pos_;
    while (std::isdigit(static_cast<unsigned char>(peek())))
      ++pos_;
    if (start == pos_)
      return fail("expected a non-negative integer");
    out = 0;
    for (size_t i = start; i < pos_; ++i) {
      int digit = text_[i] - '0';
      if (out > (std::numeric_limits<int64_t>::max() - digit) / 10)
        return fail("dimension too large");
      out = out * 10 + digit;
    }
    consume('L'); // Python 2 long literals, as old NumPy wrote them.
    return true;
  }

  bool parseValue(HeaderValue &value) {
    if (peek() == '\'' || peek() == '"') {
      value.kind = HeaderValue::String;
      return parseString(value.text);
    }
    if (consumeWord("True")) {
      value.kind = HeaderValue::Bool;
      value.flag = true;
      return true;
    }
    if (consumeWord("False")) {
      value.kind = HeaderValue::Bool;
      value.flag = false;
      return true;
    }
    if (consume('(')) {
      value.kind = HeaderValue::Tuple;
      skipSpace();
      while (!consume(')')) {
        int64_t dim;
        if (!parseInteger(dim))
          return false;
        value.integers.push_back(dim);
        skipSpace();
        if (consume(','))
          skipSpace();
        else if (peek() != ')')
          return fail("expected ',' or ')' in the shape");
      }
      return true;
    }
    return fail("expected a string, True, False or a tuple");
  }

  const std::string &text_;
  size_t pos_ = 0;
  std::string error_;
};

uint32_t readLittleEndian(const uint8_t *bytes, size_t count) {
  uint32_t value = 0;
  for (size_t i = 0; i < count; ++i)
    value |= static_cast<uint32_t>(bytes[i]) << (8 * i);
  return value;
}

/// The element count of `shape`, or false if it overflows.
bool checkedElementCount(const std::vector<int64_t> &shape, int64_t &count) {
  count = 1;
  for (int64_t dim : shape) {
    if (dim < 0)
      return false;
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / dim)
      return false;
    count *= dim;
  }
  return true;
}

} // namespace

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::Float32:
  case DType::Int32:
    return 4;
  case DType::Float64:
  case DType::Int64:
    return 8;
  case DType::UInt16:
    return 2;
  case DType::UInt8:
  case DType::Bool:
    return 1;
  }
  return 0;
}

const char *dtypeDescr(DType dtype) {
  switch (dtype) {
  case DType::Float32:
    return "<f4";
  case DType::Float64:
    return "<f8";
  case DType::Int32:
    return "<i4";
  case DType::Int64:
    return "<i8";
  case DType::UInt8:
    return "|u1";
  case DType::UInt16:
    return "<u2";
  case DType::Bool:
    return "|b1";
  }
  return "?";
}

int64_t Array::numElements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

Status makeArray(DType dtype, std::vector<int64_t> shape, const void *values,
                 size_t count, Array &out) {
  int64_t expected;
  if (!checkedElementCount(shape, expected))
    return Status::error("npy: invalid shape (negative or overflowing dims)");
  if (static_cast<size_t>(expected) != count)
    return Status::error("npy: " + std::to_string(count) +
                         " values given for a shape of " +
                         std::to_string(expected) + " elements");
  out.dtype = dtype;
  out.shape = std::move(shape);
  const uint8_t *begin = static_cast<const uint8_t *>(values);
  out.data.assign(begin, begin + count * dtypeSize(dtype));
  return Status::ok();
}

Status parseNpy(const uint8_t *bytes, size_t size, const std::string &name,
                Array &out) {
  auto error = [&](const std::string &what) {
    return Status::error(name + ": " + what);
  };
  if (!hostIsLittleEndian())
    return error("reading .npy needs a little-endian host");
  if (size < kMagicSize + 2 || std::memcmp(bytes, kMagic, kMagicSize) != 0)
    return error("not a .npy file (bad magic)");
  unsigned major = bytes[kMagicSize];
  if (major < 1 || major > 3)
    return error("unsupported .npy format version " + std::to_string(major) +
                 "." + std::to_string(bytes[kMagicSize + 1]));
  size_t lengthBytes = major == 1 ? 2 : 4;
  size_t prefix = kMagicSize + 2 + lengthBytes;
  if (size < prefix)
    return error("truncated header");
  size_t headerLength = readLittleEndian(bytes + kMagicSize + 2, lengthBytes);
  if (headerLength > size - prefix)
    return error("truncated header: " + std::to_string(headerLength) +
                 " bytes announced, " + std::to_string(size - prefix) +
                 " present");
  std::string header(reinterpret_cast<const char *>(bytes + prefix),
                     headerLength);

  bool sawDescr = false, sawOrder = false, sawShape = false;
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
  HeaderParser parser(header);
  bool parsed =
      parser.parseDict([&](const std::string &key, const HeaderValue &value) {
        if (key == "descr" && value.kind == HeaderValue::String) {
          sawDescr = true;
          descr = value.text;
        } else if (key == "fortran_order" && value.kind == HeaderValue::Bool) {
          sawOrder = true;
          fortranOrder = value.flag;
        } else if (key == "shape" && value.kind == HeaderValue::Tuple) {
          sawShape = true;
          shape = value.integers;
        } else {
          return parser.fail("unexpected header entry '" + key + "'");
        }
        return true;
      });
  if (!parsed)
    return error("malformed header: " + parser.error());
  if (!sawDescr || !sawOrder || !sawShape)
    return error("header lacks 'descr', 'fortran_order' or 'shape'");
  if (fortranOrder)
    return error("fortran_order arrays are not supported (save the array in "
                 "C order, e.g. with numpy.ascontiguousarray)");
  DType dtype;
  if (!dtypeFromDescr(descr, dtype))
    return error("unsupported dtype '" + descr +
                 "' (expected <f4, <f8, <i4, <i8, |u1, <u2 or |b1)");
  int64_t count;
  if (!checkedElementCount(shape, count) ||
      static_cast<uint64_t>(count) >
          std::numeric_limits<size_t>::max() / dtypeSize(dtype))
    return error("shape is too large");
  size_t dataBytes = static_cast<size_t>(count) * dtypeSize(dtype);
  size_t present = size - prefix - headerLength;
  if (present < dataBytes)
    return error("truncated data: " + std::to_string(dataBytes) +
                 " bytes expected, " + std::to_string(present) + " present");
  if (present > dataBytes)
    return error(std::to_string(present - dataBytes) +
                 " unexpected bytes after the data");
  out.dtype = dtype;
  out.shape = std::move(shape);
  const uint8_t *data = bytes + prefix + headerLength;
  out.data.assign(data, data + dataBytes);
  return Status::ok();
}

Status readNpy(const std::string &path, Array &out) {
  std::string bytes;
  if (Status status = readWholeFile(path, bytes); !status.isOk())
    return status;
  return parseNpy(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(),
                  path, out);
}

Status serializeNpy(const Array &array, std::vector<uint8_t> &out) {
  if (!hostIsLittleEndian())
    return Status::error("writing .npy needs a little-endian host");
  int64_t count;
  if (!checkedElementCount(array.shape, count))
    return Status::error("npy: invalid shape (negative or overflowing dims)");
  if (array.data.size() != static_cast<size_t>(count) * dtypeSize(array.dtype))
    return Status::error("npy: the data holds " +
                         std::to_string(array.data.size()) +
                         " bytes but the shape and dtype need " +
                         std::to_string(count * dtypeSize(array.dtype)));
  std::ostringstream dict;
  dict << "{'descr': '" << dtypeDescr(array.dtype)
       << "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < array.shape.size(); ++i)
    dict << (i ? ", " : "") << array.shape[i];
  if (array.shape.size() == 1)
    dict << ",";
  dict << "), }";
  std::string header = dict.str();

  // Pad so that the data starts on a 64-byte boundary; '\n' ends the header.
  // Version 1.0 stores the header length in 2 bytes; longer headers need 2.0.
  auto paddedLength = [&](size_t prefix) {
    size_t total = prefix + header.size() + 1;
    return header.size() + 1 + (64 - total % 64) % 64;
  };
  unsigned major = paddedLength(kMagicSize + 4) <= 65535 ? 1 : 2;
  size_t prefix = kMagicSize + 2 + (major == 1 ? 2 : 4);
  header.append(paddedLength(prefix) - header.size() - 1, ' ');
  header.push_back('\n');

  out.clear();
  out.reserve(prefix + header.size() + array.data.size());
  out.insert(out.end(), kMagic, kMagic + kMagicSize);
  out.push_back(static_cast<uint8_t>(major));
  out.push_back(0);
  size_t length = header.size();
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i)
    out.push_back(static_cast<uint8_t>(length >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), array.data.begin(), array.data.end());
  return Status::ok();
}

Status writeNpy(const std::string &path, const Array &array) {
  std::vector<uint8_t> bytes;
  Status status = serializeNpy(array, bytes);
  if (!status)
    return Status::error(path + ": " + status.message());
  return writeFileAtomically(path, bytes.data(), bytes.size());
}

} // namespace npy
} // namespace kiln
