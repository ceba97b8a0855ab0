//===- Safetensors.cpp - Reading and writing .safetensors files -----------===//
//
// Part of Kiln's runtime support: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "kiln/Safetensors.h"

#include "SafetensorsJson.h"
#include "kiln/Files.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace kiln {
namespace safetensors {

namespace {

constexpr const char *kMetadataKey = "__metadata__";

const struct {
  DType dtype;
  const char *name;
  size_t size;
} kDTypes[] = {
    {DType::F32, "F32", 4},   {DType::F64, "F64", 8}, {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2}, {DType::I32, "I32", 4}, {DType::I64, "I64", 8},
    {DType::U8, "U8", 1},     {DType::U16, "U16", 2}, {DType::Bool, "BOOL", 1}};

bool hostIsLittleEndian() {
  const uint16_t probe = 1;
  uint8_t first;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

std::string shapeToString(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// The byte count of `shape` in `dtype`, or false if a dim is negative or
/// the count does not fit 64 bits.
bool checkedByteCount(const std::vector<int64_t> &shape, DType dtype,
                      uint64_t &out) {
  uint64_t count = dtypeSize(dtype);
  for (int64_t dim : shape) {
    if (dim < 0)
      return false;
    uint64_t udim = static_cast<uint64_t>(dim);
    if (udim != 0 && count > UINT64_MAX / udim)
      return false;
    count *= udim;
  }
  out = count;
  return true;
}

/// The value of `key` in object `object`, or null.
const json::Value *member(const json::Value &object, const char *key) {
  for (const auto &entry : object.members)
    if (entry.first == key)
      return &entry.second;
  return nullptr;
}

/// A tensor's header entry, checked against the data buffer's size.
struct TensorEntry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

/// Reads one tensor's header entry; `error` says what is wrong with it.
bool parseTensorEntry(const std::string &name, const json::Value &value,
                      uint64_t dataSize, TensorEntry &out, std::string &error) {
  const std::string where = "tensor '" + name + "': ";
  if (value.kind != json::Value::Kind::Object) {
    error =
        where + "expected an object, found " + json::describeKind(value.kind);
    return false;
  }
  out.name = name;
  const json::Value *dtype = member(value, "dtype");
  const json::Value *shape = member(value, "shape");
  const json::Value *offsets = member(value, "data_offsets");
  const char *missing = !dtype     ? "dtype"
                        : !shape   ? "shape"
                        : !offsets ? "data_offsets"
                                   : nullptr;
  if (missing) {
    error = where + "missing \"" + missing + "\"";
    return false;
  }
  if (dtype->kind != json::Value::Kind::String) {
    error = where + "\"dtype\" is not a string";
    return false;
  }
  if (!dtypeFromName(dtype->text, out.dtype)) {
    error = where + "unsupported dtype \"" + dtype->text +
            "\" (Kiln reads F32, F64, F16, BF16, I32, I64, U8, U16, BOOL)";
    return false;
  }
  if (shape->kind != json::Value::Kind::Array) {
    error = where + "\"shape\" is not an array";
    return false;
  }
  out.shape.clear();
  for (const json::Value &dim : shape->elements) {
    uint64_t size;
    if (!json::asUInt64(dim, size) || size > uint64_t(INT64_MAX)) {
      error = where + "\"shape\" holds \"" + dim.text +
              "\", not a non-negative integer";
      return false;
    }
    out.shape.push_back(static_cast<int64_t>(size));
  }
  if (offsets->kind != json::Value::Kind::Array ||
      offsets->elements.size() != 2 ||
      !json::asUInt64(offsets->elements[0], out.begin) ||
      !json::asUInt64(offsets->elements[1], out.end)) {
    error = where + "\"data_offsets\" is not a pair of non-negative integers";
    return false;
  }
  if (out.begin > out.end) {
    error = where + "data_offsets [" + std::to_string(out.begin) + ", " +
            std::to_string(out.end) + "] end before they begin";
    return false;
  }
  if (out.end > dataSize) {
    error = where + "data_offsets [" + std::to_string(out.begin) + ", " +
            std::to_string(out.end) + "] run past the data buffer of " +
            std::to_string(dataSize) + " bytes (the file is truncated?)";
    return false;
  }
  uint64_t expected;
  if (!checkedByteCount(out.shape, out.dtype, expected)) {
    error = where + "shape " + shapeToString(out.shape) + " is too large";
    return false;
  }
  if (expected != out.end - out.begin) {
    error = where + dtypeName(out.dtype) + " " + shapeToString(out.shape) +
            " needs " + std::to_string(expected) +
            " bytes but data_offsets give " +
            std::to_string(out.end - out.begin);
    return false;
  }
  return true;
}

/// Checks that the entries cover [0, dataSize) exactly, without overlaps or
/// gaps, and sorts them into data order.
bool checkCoverage(std::vector<TensorEntry> &entries, uint64_t dataSize,
                   std::string &error) {
  std::stable_sort(entries.begin(), entries.end(),
                   [](const TensorEntry &a, const TensorEntry &b) {
                     return a.begin != b.begin ? a.begin < b.begin
                                               : a.end < b.end;
                   });
  uint64_t covered = 0;
  const TensorEntry *previous = nullptr;
  for (const TensorEntry &entry : entries) {
    if (entry.begin < covered) {
      error = "tensors '" + previous->name + "' and '" + entry.name +
              "' overlap (bytes " + std::to_string(entry.begin) + " to " +
              std::to_string(std::min(covered, entry.end)) + ")";
      return false;
    }
    if (entry.begin > covered) {
      error = "no tensor covers bytes " + std::to_string(covered) + " to " +
              std::to_string(entry.begin) + " of the data buffer";
      return false;
    }
    covered = entry.end;
    if (entry.end > entry.begin)
      previous = &entry;
  }
  if (covered != dataSize) {
    error = "the data buffer has " + std::to_string(dataSize) +
            " bytes but the tensors cover only " + std::to_string(covered);
    return false;
  }
  return true;
}

} // namespace

size_t dtypeSize(DType dtype) {
  for (const auto &known : kDTypes)
    if (known.dtype == dtype)
      return known.size;
  return 0;
}

const char *dtypeName(DType dtype) {
  for (const auto &known : kDTypes)
    if (known.dtype == dtype)
      return known.name;
  return "?";
}

bool dtypeFromName(const std::string &name, DType &out) {
  for (const auto &known : kDTypes) {
    if (name == known.name) {
      out = known.dtype;
      return true;
    }
  }
  return false;
}

bool toNpyDType(DType dtype, npy::DType &out) {
  switch (dtype) {
  case DType::F32:
    out = npy::DType::Float32;
    return true;
  case DType::F64:
    out = npy::DType::Float64;
    return true;
  case DType::I32:
    out = npy::DType::Int32;
    return true;
  case DType::I64:
    out = npy::DType::Int64;
    return true;
  case DType::U8:
    out = npy::DType::UInt8;
    return true;
  case DType::U16:
    out = npy::DType::UInt16;
    return true;
  case DType::Bool:
    out = npy::DType::Bool;
    return true;
  case DType::F16:
  case DType::BF16:
    return false;
  }
  return false;
}

DType fromNpyDType(npy::DType dtype) {
  switch (dtype) {
  case npy::DType::Float32:
    return DType::F32;
  case npy::DType::Float64:
    return DType::F64;
  case npy::DType::Int32:
    return DType::I32;
  case npy::DType::Int64:
    return DType::I64;
  case npy::DType::UInt8:
    return DType::U8;
  case npy::DType::UInt16:
    return DType::U16;
  case npy::DType::Bool:
    return DType::Bool;
  }
  return DType::U8;
}

int64_t Tensor::numElements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

const Tensor *TensorFile::find(const std::string &name) const {
  for (const Tensor &tensor : tensors)
    if (tensor.name == name)
      return &tensor;
  return nullptr;
}

Tensor *TensorFile::find(const std::string &name) {
  for (Tensor &tensor : tensors)
    if (tensor.name == name)
      return &tensor;
  return nullptr;
}

Status TensorFile::add(const std::string &name, DType dtype,
                       const std::vector<int64_t> &shape, const void *data,
                       size_t byteCount) {
  if (name.empty() || name == kMetadataKey)
    return Status::error("safetensors: invalid tensor name '" + name + "'");
  if (find(name))
    return Status::error("safetensors: a tensor named '" + name +
                         "' is already in the file");
  uint64_t expected;
  if (!checkedByteCount(shape, dtype, expected))
    return Status::error("safetensors: tensor '" + name +
                         "' has invalid shape " + shapeToString(shape));
  if (expected != byteCount)
    return Status::error("safetensors: tensor '" + name + "' is " +
                         dtypeName(dtype) + " " + shapeToString(shape) + ", " +
                         std::to_string(expected) + " bytes, but " +
                         std::to_string(byteCount) + " bytes were given");
  Tensor tensor;
  tensor.name = name;
  tensor.dtype = dtype;
  tensor.shape = shape;
  const uint8_t *bytes = static_cast<const uint8_t *>(data);
  tensor.data.assign(bytes, bytes + byteCount);
  tensors.push_back(std::move(tensor));
  return Status::ok();
}

Status TensorFile::addArray(const std::string &name, const npy::Array &array) {
  if (array.data.size() != array.byteSize())
    return Status::error("safetensors: array '" + name +
                         "' holds fewer bytes than its shape needs");
  return add(name, fromNpyDType(array.dtype), array.shape, array.data.data(),
             array.data.size());
}

Status parseSafetensors(const uint8_t *bytes, size_t size,
                        const std::string &name, TensorFile &out) {
  out = TensorFile();
  auto fail = [&](const std::string &what) {
    out = TensorFile();
    return Status::error(name + ": " + what);
  };
  if (!hostIsLittleEndian())
    return fail("reading .safetensors needs a little-endian host");
  if (size < 8)
    return fail("file is " + std::to_string(size) +
                " bytes, too short for the 8-byte header length "
                "(not a .safetensors file, or truncated)");
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = (headerSize << 8) | bytes[i];
  if (headerSize > kMaxHeaderSize)
    return fail("header length " + std::to_string(headerSize) +
                " exceeds the limit of " + std::to_string(kMaxHeaderSize) +
                " bytes (not a .safetensors file?)");
  if (headerSize > size - 8)
    return fail("header length " + std::to_string(headerSize) +
                " runs past the end of the file, which has " +
                std::to_string(size - 8) +
                " bytes after the length (truncated?)");
  std::string header(reinterpret_cast<const char *>(bytes + 8), headerSize);
  if (header.empty() || header[0] != '{')
    return fail("header does not start with '{' (not a .safetensors file?)");
  json::Value root;
  std::string error;
  if (!json::parse(header, root, error))
    return fail("malformed JSON header: " + error);
  if (root.kind != json::Value::Kind::Object)
    return fail("header is not a JSON object");

  const uint64_t dataSize = size - 8 - headerSize;
  std::vector<TensorEntry> entries;
  for (const auto &entry : root.members) {
    if (entry.first == kMetadataKey) {
      if (entry.second.kind != json::Value::Kind::Object)
        return fail("\"__metadata__\" is not an object");
      for (const auto &item : entry.second.members) {
        if (item.second.kind != json::Value::Kind::String)
          return fail("\"__metadata__\" value of \"" + item.first + "\" is " +
                      json::describeKind(item.second.kind) + ", not a string");
        out.metadata[item.first] = item.second.text;
      }
      continue;
    }
    TensorEntry tensor;
    if (!parseTensorEntry(entry.first, entry.second, dataSize, tensor, error))
      return fail(error);
    entries.push_back(std::move(tensor));
  }
  if (!checkCoverage(entries, dataSize, error))
    return fail(error);

  const uint8_t *data = bytes + 8 + headerSize;
  out.tensors.reserve(entries.size());
  for (TensorEntry &entry : entries) {
    Tensor tensor;
    tensor.name = std::move(entry.name);
    tensor.dtype = entry.dtype;
    tensor.shape = std::move(entry.shape);
    tensor.data.assign(data + entry.begin, data + entry.end);
    out.tensors.push_back(std::move(tensor));
  }
  return Status::ok();
}

Status readSafetensors(const std::string &path, TensorFile &out) {
  out = TensorFile();
  std::string bytes;
  Status status = readWholeFile(path, bytes);
  if (!status)
    return status;
  return parseSafetensors(reinterpret_cast<const uint8_t *>(bytes.data()),
                          bytes.size(), path, out);
}

Status serializeSafetensors(const TensorFile &file, std::vector<uint8_t> &out) {
  out.clear();
  if (!hostIsLittleEndian())
    return Status::error("writing .safetensors needs a little-endian host");
  std::string header = "{";
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const Tensor &tensor : file.tensors) {
    if (tensor.name.empty() || tensor.name == kMetadataKey ||
        !json::isValidUtf8(tensor.name))
      return Status::error("safetensors: invalid tensor name '" + tensor.name +
                           "'");
    if (!names.insert(tensor.name).second)
      return Status::error("safetensors: two tensors are named '" +
                           tensor.name + "'");
    uint64_t expected;
    if (!checkedByteCount(tensor.shape, tensor.dtype, expected) ||
        expected != tensor.data.size())
      return Status::error("safetensors: tensor '" + tensor.name + "' holds " +
                           std::to_string(tensor.data.size()) + " bytes, but " +
                           dtypeName(tensor.dtype) + " " +
                           shapeToString(tensor.shape) + " needs " +
                           std::to_string(expected));
    if (header.size() > 1)
      header += ',';
    json::appendQuoted(header, tensor.name);
    header += ":{\"dtype\":\"";
    header += dtypeName(tensor.dtype);
    header += "\",\"shape\":[";
    for (size_t i = 0; i < tensor.shape.size(); ++i)
      header += (i ? "," : "") + std::to_string(tensor.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + expected) + "]}";
    offset += expected;
  }
  if (!file.metadata.empty()) {
    if (header.size() > 1)
      header += ',';
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto &item : file.metadata) {
      if (!json::isValidUtf8(item.first) || !json::isValidUtf8(item.second))
        return Status::error("safetensors: metadata entry '" + item.first +
                             "' is not valid UTF-8");
      if (!first)
        header += ',';
      first = false;
      json::appendQuoted(header, item.first);
      header += ':';
      json::appendQuoted(header, item.second);
    }
    header += '}';
  }
  header += '}';
  // Pad to a multiple of 8 so that the data buffer starts 8-byte aligned.
  while (header.size() % 8 != 0)
    header += ' ';
  if (header.size() > kMaxHeaderSize)
    return Status::error("safetensors: the header would be " +
                         std::to_string(header.size()) +
                         " bytes, more than readers accept");

  out.resize(8 + header.size() + offset);
  uint64_t headerSize = header.size();
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<uint8_t>(headerSize >> (8 * i));
  std::memcpy(out.data() + 8, header.data(), header.size());
  uint8_t *data = out.data() + 8 + header.size();
  for (const Tensor &tensor : file.tensors) {
    if (!tensor.data.empty())
      std::memcpy(data, tensor.data.data(), tensor.data.size());
    data += tensor.data.size();
  }
  return Status::ok();
}

Status writeSafetensors(const std::string &path, const TensorFile &file) {
  std::vector<uint8_t> bytes;
  Status status = serializeSafetensors(file, bytes);
  if (!status)
    return Status::error(path + ": " + status.message());
  return writeFileAtomically(path, bytes.data(), bytes.size());
}

} // namespace safetensors
} // namespace kiln
