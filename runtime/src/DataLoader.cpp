//===- DataLoader.cpp - Training batches from .npy arrays and token files -===//
//
// Part of Kiln's runtime support: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "kiln/DataLoader.h"

#include "kiln/Files.h"
#include "kiln/Philox.h"

#include <cstring>
#include <numeric>
#include <set>

namespace kiln {
namespace data {

namespace {

uint32_t streamOf(const char *name) {
  return philox::hashName(name, std::strlen(name));
}

const uint32_t kShuffleStream = streamOf("kiln.data.shuffle");
const uint32_t kWindowStream = streamOf("kiln.data.windows");

/// Draw `index` of `epoch` in `stream` (the contract in DataLoader.h).
uint64_t draw(uint64_t seed, uint32_t stream, uint64_t epoch, uint64_t index) {
  philox::Block block = philox::philox4x32_10(
      philox::counterFor(index, stream, static_cast<uint32_t>(epoch)),
      philox::keyFromSeed(seed));
  return (static_cast<uint64_t>(block.word[1]) << 32) | block.word[0];
}

/// The DSL's name of a dtype: "f32", "i32", ...
const char *dtypeLabel(npy::DType dtype) {
  switch (dtype) {
  case npy::DType::Float32:
    return "f32";
  case npy::DType::Float64:
    return "f64";
  case npy::DType::Int32:
    return "i32";
  case npy::DType::Int64:
    return "i64";
  case npy::DType::UInt8:
    return "u8";
  case npy::DType::UInt16:
    return "u16";
  case npy::DType::Bool:
    return "bool";
  }
  return "?";
}

/// "f32[1438, 64]"; `firstDim` replaces the first dim's number when given.
std::string typeString(npy::DType dtype, const std::vector<int64_t> &dims,
                       const char *firstDim = nullptr) {
  std::string text = std::string(dtypeLabel(dtype)) + "[";
  if (firstDim)
    text += firstDim;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0 || firstDim)
      text += ", ";
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

int64_t product(const std::vector<int64_t> &dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t(1),
                         [](int64_t a, int64_t b) { return a * b; });
}

/// Resizes `array` to `dtype` and `shape` unless it already is.
void shapeArray(npy::Array &array, npy::DType dtype,
                const std::vector<int64_t> &shape) {
  array.dtype = dtype;
  array.shape = shape;
  array.data.resize(array.byteSize());
}

uint32_t readLittle32(const uint8_t *bytes) {
  return uint32_t(bytes[0]) | uint32_t(bytes[1]) << 8 |
         uint32_t(bytes[2]) << 16 | uint32_t(bytes[3]) << 24;
}

uint64_t readLittle64(const uint8_t *bytes) {
  return uint64_t(readLittle32(bytes)) | uint64_t(readLittle32(bytes + 4))
                                             << 32;
}

void appendLittle(std::string &out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

} // namespace

//===----------------------------------------------------------------------===//
// DataPosition, Batch, Dataset
//===----------------------------------------------------------------------===//

std::string DataPosition::toString() const {
  return std::to_string(epoch) + ":" + std::to_string(batch);
}

Status DataPosition::parse(const std::string &text, DataPosition &out) {
  auto parseNumber = [](const std::string &digits, uint64_t &value) {
    if (digits.empty() || digits.size() > 19)
      return false;
    value = 0;
    for (char c : digits) {
      if (c < '0' || c > '9')
        return false;
      value = value * 10 + static_cast<uint64_t>(c - '0');
    }
    return true;
  };
  size_t colon = text.find(':');
  DataPosition position;
  if (colon == std::string::npos ||
      !parseNumber(text.substr(0, colon), position.epoch) ||
      !parseNumber(text.substr(colon + 1), position.batch))
    return Status::error("invalid data position '" + text +
                         "': expected EPOCH:BATCH, e.g. 3:17");
  out = position;
  return Status::ok();
}

const npy::Array *Batch::find(const std::string &name) const {
  for (size_t i = 0; i < names.size() && i < arrays.size(); ++i)
    if (names[i] == name)
      return &arrays[i];
  return nullptr;
}

Dataset::~Dataset() = default;

bool Dataset::isValidPosition(const DataPosition &position,
                              std::string &error) const {
  if (position.epoch > UINT32_MAX) {
    error = "data position " + position.toString() +
            ": the epoch does not fit 32 bits";
    return false;
  }
  if (position.batch >= static_cast<uint64_t>(batchesPerEpoch())) {
    error = "data position " + position.toString() + ": batch " +
            std::to_string(position.batch) + " is past the epoch's " +
            std::to_string(batchesPerEpoch()) + " batches";
    return false;
  }
  return true;
}

Status Dataset::seek(const DataPosition &position) {
  std::string error;
  if (!isValidPosition(position, error))
    return Status::error(error);
  position_ = position;
  return Status::ok();
}

Status Dataset::next(Batch &out) {
  Status status = batchAt(position_, out);
  if (!status)
    return status;
  if (++position_.batch == static_cast<uint64_t>(batchesPerEpoch())) {
    ++position_.epoch;
    position_.batch = 0;
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// ArrayDataset
//===----------------------------------------------------------------------===//

Status ArrayDataset::open(const std::vector<ArrayInput> &inputs,
                          const ArrayDatasetOptions &options,
                          std::unique_ptr<ArrayDataset> &out) {
  std::vector<npy::Array> arrays(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    Status status = npy::readNpy(inputs[i].path, arrays[i]);
    if (!status)
      return Status::error("input '" + inputs[i].name +
                           "': " + status.message());
  }
  return fromArrays(inputs, std::move(arrays), options, out);
}

Status ArrayDataset::fromArrays(const std::vector<ArrayInput> &inputs,
                                std::vector<npy::Array> arrays,
                                const ArrayDatasetOptions &options,
                                std::unique_ptr<ArrayDataset> &out) {
  out.reset();
  if (inputs.empty())
    return Status::error("array dataset: no inputs given");
  if (inputs.size() != arrays.size())
    return Status::error("array dataset: " + std::to_string(inputs.size()) +
                         " inputs but " + std::to_string(arrays.size()) +
                         " arrays");
  if (options.batchSize <= 0)
    return Status::error("array dataset: batch size " +
                         std::to_string(options.batchSize) +
                         " is not positive");
  std::set<std::string> seen;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ArrayInput &input = inputs[i];
    const npy::Array &array = arrays[i];
    const std::string where = "input '" + input.name + "' (" + input.path + ")";
    if (!seen.insert(input.name).second)
      return Status::error("input '" + input.name + "' is given twice");
    const std::string expected = typeString(input.dtype, input.rowShape, "N");
    const std::string actual = typeString(array.dtype, array.shape);
    if (array.dtype != input.dtype) {
      std::string hint;
      if (input.dtype == npy::DType::Int32 && array.dtype == npy::DType::Int64)
        hint = "; convert it with numpy: a.astype(np.int32)";
      else if (input.dtype == npy::DType::Float32 &&
               array.dtype == npy::DType::Float64)
        hint = "; convert it with numpy: a.astype(np.float32)";
      return Status::error(where + " holds " + actual +
                           " but the model expects " + expected + hint);
    }
    if (array.data.size() != array.byteSize())
      return Status::error(
          where + ": the array holds " + std::to_string(array.data.size()) +
          " bytes but its shape needs " + std::to_string(array.byteSize()));
    std::vector<int64_t> rowShape;
    if (!array.shape.empty())
      rowShape.assign(array.shape.begin() + 1, array.shape.end());
    if (array.shape.empty() || rowShape != input.rowShape)
      return Status::error(where + " holds " + actual +
                           " but the model expects " + expected +
                           " (N rows along axis 0)");
    if (i > 0 && array.shape[0] != arrays[0].shape[0])
      return Status::error(
          "inputs '" + inputs[0].name + "' (" + inputs[0].path + ", " +
          std::to_string(arrays[0].shape[0]) + " rows) and '" + input.name +
          "' (" + input.path + ", " + std::to_string(array.shape[0]) +
          " rows) differ in length along axis 0");
  }
  const int64_t numRows = arrays[0].shape[0];
  if (numRows == 0 ||
      (options.order == Order::Shuffled && numRows < options.batchSize))
    return Status::error("input '" + inputs[0].name + "' (" + inputs[0].path +
                         ") has " + std::to_string(numRows) +
                         " rows, fewer than one batch of " +
                         std::to_string(options.batchSize));

  std::unique_ptr<ArrayDataset> dataset(new ArrayDataset());
  dataset->inputs_ = inputs;
  for (const ArrayInput &input : inputs)
    dataset->names_.push_back(input.name);
  dataset->arrays_ = std::move(arrays);
  dataset->options_ = options;
  dataset->numRows_ = numRows;
  out = std::move(dataset);
  return Status::ok();
}

int64_t ArrayDataset::batchesPerEpoch() const {
  const int64_t batch = options_.batchSize;
  return options_.order == Order::Shuffled ? numRows_ / batch
                                           : (numRows_ + batch - 1) / batch;
}

std::vector<int64_t> ArrayDataset::epochOrder(uint64_t epoch) const {
  std::vector<int64_t> order(numRows_);
  std::iota(order.begin(), order.end(), int64_t(0));
  if (options_.order == Order::Sequential)
    return order;
  for (int64_t i = numRows_ - 1; i >= 1; --i) {
    uint64_t r = draw(options_.seed, kShuffleStream, epoch, uint64_t(i));
    int64_t j = static_cast<int64_t>(r % uint64_t(i + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

Status ArrayDataset::batchAt(const DataPosition &position, Batch &out) {
  std::string error;
  if (!isValidPosition(position, error))
    return Status::error(error);
  if (cachedOrder_.empty() || cachedEpoch_ != position.epoch) {
    cachedOrder_ = epochOrder(position.epoch);
    cachedEpoch_ = position.epoch;
  }
  const int64_t batch = options_.batchSize;
  const int64_t first = static_cast<int64_t>(position.batch) * batch;
  out.names = names_;
  out.arrays.resize(arrays_.size());
  out.validRows = std::min(batch, numRows_ - first);
  for (size_t i = 0; i < arrays_.size(); ++i) {
    const npy::Array &source = arrays_[i];
    std::vector<int64_t> shape = source.shape;
    shape[0] = batch;
    shapeArray(out.arrays[i], source.dtype, shape);
    const size_t rowBytes =
        product(inputs_[i].rowShape) * npy::dtypeSize(source.dtype);
    for (int64_t row = 0; row < batch; ++row) {
      // Past the last row (sequential order only) the batch wraps around to
      // the first rows: padding, excluded by validRows.
      int64_t row0 = (first + row) % numRows_;
      std::memcpy(out.arrays[i].data.data() + row * rowBytes,
                  source.data.data() + cachedOrder_[row0] * rowBytes, rowBytes);
    }
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Token files
//===----------------------------------------------------------------------===//

Status readTokenFile(const std::string &path, std::vector<uint16_t> &tokens) {
  tokens.clear();
  std::string bytes;
  Status status = readWholeFile(path, bytes);
  if (!status)
    return Status::error("token file: " + status.message());
  const uint8_t *data = reinterpret_cast<const uint8_t *>(bytes.data());
  const size_t magicSize = sizeof(kTokenFileMagic) - 1;
  if (bytes.empty())
    return Status::error(path + ": the token file is empty");
  if (bytes.compare(0, magicSize, kTokenFileMagic) != 0) {
    // Raw bytes: one token per byte.
    tokens.assign(data, data + bytes.size());
    return Status::ok();
  }
  auto fail = [&](const std::string &what) {
    tokens.clear();
    return Status::error(path + ": " + what);
  };
  if (bytes.size() < kTokenFileHeaderSize)
    return fail("truncated KILNTOK1 header: " + std::to_string(bytes.size()) +
                " bytes of " + std::to_string(kTokenFileHeaderSize));
  const uint32_t version = readLittle32(data + 8);
  const uint32_t tokenBytes = readLittle32(data + 12);
  const uint64_t count = readLittle64(data + 16);
  const uint32_t vocabSize = readLittle32(data + 24);
  if (version != kTokenFileVersion)
    return fail("KILNTOK1 version " + std::to_string(version) +
                " is not supported (Kiln reads version 1)");
  if (tokenBytes != 2)
    return fail("KILNTOK1 tokens of " + std::to_string(tokenBytes) +
                " bytes are not supported (Kiln reads 2-byte tokens)");
  if (readLittle32(data + 28) != 0)
    return fail("KILNTOK1 header's reserved field is not 0");
  const uint64_t payload = bytes.size() - kTokenFileHeaderSize;
  if (count > payload / 2)
    return fail("truncated: the header promises " + std::to_string(count) +
                " tokens (" + std::to_string(count * 2) + " bytes) but only " +
                std::to_string(payload) + " bytes follow it");
  if (payload != count * 2)
    return fail(std::to_string(payload - count * 2) + " bytes follow the " +
                std::to_string(count) + " tokens the header promises");
  tokens.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t *token = data + kTokenFileHeaderSize + 2 * i;
    tokens[i] = static_cast<uint16_t>(token[0] | token[1] << 8);
    if (vocabSize != 0 && tokens[i] >= vocabSize)
      return fail("token " + std::to_string(tokens[i]) + " at position " +
                  std::to_string(i) + " is not below the vocabulary size " +
                  std::to_string(vocabSize) + " in the header");
  }
  return Status::ok();
}

Status writeTokenFile(const std::string &path,
                      const std::vector<uint16_t> &tokens, uint32_t vocabSize) {
  std::string bytes(kTokenFileMagic, sizeof(kTokenFileMagic) - 1);
  appendLittle(bytes, kTokenFileVersion, 4);
  appendLittle(bytes, 2, 4);
  appendLittle(bytes, tokens.size(), 8);
  appendLittle(bytes, vocabSize, 4);
  appendLittle(bytes, 0, 4);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (vocabSize != 0 && tokens[i] >= vocabSize)
      return Status::error(path + ": token " + std::to_string(tokens[i]) +
                           " at position " + std::to_string(i) +
                           " is not below the vocabulary size " +
                           std::to_string(vocabSize));
    appendLittle(bytes, tokens[i], 2);
  }
  return writeFileAtomically(path, bytes.data(), bytes.size());
}

//===----------------------------------------------------------------------===//
// TokenDataset
//===----------------------------------------------------------------------===//

Status TokenDataset::open(const std::string &path,
                          const TokenDatasetOptions &options,
                          std::unique_ptr<TokenDataset> &out) {
  out.reset();
  std::vector<uint16_t> tokens;
  Status status = readTokenFile(path, tokens);
  if (!status)
    return status;
  return fromTokens(std::move(tokens), path, options, out);
}

Status TokenDataset::fromTokens(std::vector<uint16_t> tokens,
                                const std::string &name,
                                const TokenDatasetOptions &options,
                                std::unique_ptr<TokenDataset> &out) {
  out.reset();
  const int64_t batch = options.batchSize;
  const int64_t context = options.contextLength;
  if (batch <= 0 || context <= 0)
    return Status::error(name + ": batch size " + std::to_string(batch) +
                         " and context length " + std::to_string(context) +
                         " must be positive");
  if (options.tokensName.empty() || options.tokensName == options.targetsName)
    return Status::error(name + ": the tokens and targets inputs need two "
                                "different names");
  const int64_t count = static_cast<int64_t>(tokens.size());
  if (options.vocabSize > 0) {
    for (int64_t i = 0; i < count; ++i)
      if (tokens[i] >= options.vocabSize)
        return Status::error(name + ": token " + std::to_string(tokens[i]) +
                             " at position " + std::to_string(i) +
                             " is not below the model's vocabulary size " +
                             std::to_string(options.vocabSize));
  }
  int64_t batches;
  if (options.order == Order::Shuffled) {
    if (count < context + 1)
      return Status::error(name + ": " + std::to_string(count) +
                           " tokens are too few for one window of T + 1 = " +
                           std::to_string(context + 1));
    batches = std::max<int64_t>(1, (count - 1) / (batch * context));
  } else {
    // Window w covers tokens [w * T, w * T + T], so W windows need W * T + 1.
    const int64_t available = (count - 1) / context / batch;
    if (available == 0)
      return Status::error(
          name + ": " + std::to_string(count) +
          " tokens are too few for one batch of " + std::to_string(batch) +
          " non-overlapping windows of T + 1 = " + std::to_string(context + 1) +
          " (needs " + std::to_string(batch * context + 1) + ")");
    if (options.sequentialBatches < 0 || options.sequentialBatches > available)
      return Status::error(
          name + ": " + std::to_string(options.sequentialBatches) +
          " evaluation batches asked for, but the " + std::to_string(count) +
          " tokens hold only " + std::to_string(available) + " batches of " +
          std::to_string(batch) + " windows of " + std::to_string(context) +
          " tokens");
    batches = options.sequentialBatches ? options.sequentialBatches : available;
  }
  std::unique_ptr<TokenDataset> dataset(new TokenDataset());
  dataset->name_ = name;
  dataset->names_ = {options.tokensName, options.targetsName};
  dataset->tokens_ = std::move(tokens);
  dataset->options_ = options;
  dataset->batchesPerEpoch_ = batches;
  out = std::move(dataset);
  return Status::ok();
}

int64_t TokenDataset::windowStart(const DataPosition &position,
                                  int64_t row) const {
  const int64_t context = options_.contextLength;
  const uint64_t window =
      position.batch * uint64_t(options_.batchSize) + uint64_t(row);
  if (options_.order == Order::Sequential)
    return static_cast<int64_t>(window) * context;
  const uint64_t starts = uint64_t(numTokens() - context);
  return static_cast<int64_t>(
      draw(options_.seed, kWindowStream, position.epoch, window) % starts);
}

Status TokenDataset::batchAt(const DataPosition &position, Batch &out) {
  std::string error;
  if (!isValidPosition(position, error))
    return Status::error(name_ + ": " + error);
  const int64_t batch = options_.batchSize;
  const int64_t context = options_.contextLength;
  out.names = names_;
  out.arrays.resize(2);
  out.validRows = batch;
  npy::Array &inputs = out.arrays[0];
  npy::Array &targets = out.arrays[1];
  shapeArray(inputs, npy::DType::Int32, {batch, context});
  shapeArray(targets, npy::DType::Int32, {batch, context});
  int32_t *inputData = inputs.as<int32_t>();
  int32_t *targetData = targets.as<int32_t>();
  for (int64_t row = 0; row < batch; ++row) {
    const uint16_t *window = tokens_.data() + windowStart(position, row);
    for (int64_t t = 0; t < context; ++t) {
      inputData[row * context + t] = window[t];
      targetData[row * context + t] = window[t + 1];
    }
  }
  return Status::ok();
}

} // namespace data
} // namespace kiln
