//===- DataLoader.h - Training batches from .npy arrays and token files ---===//
//
// Part of Kiln's runtime support: plain C++17, no LLVM/MLIR.
//
// Two datasets feed `kiln train`, both deterministic functions of (seed,
// position), so that a resumed run sees exactly the batches an uninterrupted
// one would have seen:
//
// * ArrayDataset: several .npy arrays with the same number of rows (axis 0),
//   one per model input (e.g. x: f32[N, 64] and y: i32[N]). Shuffled order
//   draws batches of B rows through a permutation of the rows that is new in
//   every epoch; an epoch has floor(N / B) batches and the last N mod B rows
//   of each epoch's permutation are dropped, so every batch is full (they are
//   different rows in every epoch). Sequential order (evaluation) walks the
//   rows in file order in ceil(N / B) batches; the last one is padded by
//   repeating rows from the start and says how many rows are real
//   (Batch::validRows), so a caller can score every row exactly once.
//
// * TokenDataset: a token file (below) cut into windows of T + 1 tokens;
//   tokens = window[0, T) and targets = window[1, T + 1), both i32[B, T].
//   Shuffled order starts each window at a position drawn from the seeded
//   stream; an "epoch" is max(1, floor((n - 1) / (B * T))) batches, about
//   one pass over the n tokens. Sequential order (evaluation) takes
//   non-overlapping windows from the start of the file: window w starts at
//   token w * T, so every token is predicted at most once; its epoch is a
//   fixed number of batches.
//
// Token files. A file that begins with the 8 bytes "KILNTOK1" holds uint16
// tokens after a 32-byte little-endian header:
//
//   offset  0  char[8]  "KILNTOK1"
//   offset  8  uint32   version, 1
//   offset 12  uint32   bytes per token, 2
//   offset 16  uint64   token count n
//   offset 24  uint32   vocabulary size V (every token < V), or 0 if unknown
//   offset 28  uint32   reserved, 0
//   offset 32  uint16   the n tokens; the file is exactly 32 + 2n bytes
//
// Any other file (.txt, .bin, ...) is raw bytes: one uint8 token per byte.
//
// Randomness (the contract; changing it changes every run's data order):
// draw k of epoch e is the Philox 4x32-10 block of counter (k low word,
// k high word, stream, e) under the key of the seed (kiln/Philox.h), read as
// r = word[1] * 2^32 + word[0]; the stream is philox::hashName of
// "kiln.data.shuffle" or "kiln.data.windows".
// - Shuffle: Fisher-Yates from the back. order = [0, 1, ..., N - 1]; for
//   i = N - 1 down to 1: swap order[i] and order[r_i mod (i + 1)] with r_i
//   draw i. Batch b of the epoch holds rows order[b * B .. b * B + B).
// - Windows: row j of batch b of epoch e starts at r mod (n - T) with r draw
//   b * B + j of epoch e.
// The modulo's bias is below (n / 2^64), far below anything measurable.
//
// Every error names the input and the file it came from.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DATALOADER_H
#define KILN_DATALOADER_H

#include "kiln/Npy.h"
#include "kiln/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln {
namespace data {

/// Where a dataset is in its stream of batches: the next batch to return.
/// Saved in checkpoints (as toString()) so that a run resumes exactly.
struct DataPosition {
  uint64_t epoch = 0;
  /// The batch within the epoch, below Dataset::batchesPerEpoch().
  uint64_t batch = 0;

  /// "EPOCH:BATCH", e.g. "3:17".
  std::string toString() const;
  /// Parses toString()'s form; anything else is an error.
  static Status parse(const std::string &text, DataPosition &out);

  bool operator==(const DataPosition &other) const {
    return epoch == other.epoch && batch == other.batch;
  }
  bool operator!=(const DataPosition &other) const { return !(*this == other); }
};

/// How a dataset orders its batches.
enum class Order {
  /// Training: seeded shuffles (arrays) or seeded window positions (tokens).
  Shuffled,
  /// Evaluation: file order, every row or window once per epoch.
  Sequential,
};

/// One batch: an array per input, in the dataset's input order, each with
/// the batch size as its first dim.
struct Batch {
  std::vector<std::string> names;
  std::vector<npy::Array> arrays;
  /// Rows that hold data: the batch size, except in the padded last batch of
  /// a sequential ArrayDataset, whose rows from validRows on repeat earlier
  /// rows and must not be scored.
  int64_t validRows = 0;

  /// The array of input `name`, or null.
  const npy::Array *find(const std::string &name) const;
};

/// A deterministic, resumable stream of batches. Not thread-safe: use one
/// per thread.
class Dataset {
public:
  virtual ~Dataset();

  /// Rows per batch (B).
  virtual int64_t batchSize() const = 0;
  /// Batches in one epoch; position().batch stays below it.
  virtual int64_t batchesPerEpoch() const = 0;
  /// The names of the arrays in every batch, in order.
  virtual const std::vector<std::string> &inputNames() const = 0;
  /// Fills `out` with the batch at `position`: a function of the data, the
  /// options and `position` only. Reuses `out`'s buffers when it can.
  virtual Status batchAt(const DataPosition &position, Batch &out) = 0;

  /// Fills `out` with the batch at position(), then advances the position
  /// (to the next epoch after its last batch).
  Status next(Batch &out);
  /// The position of the batch next() returns.
  DataPosition position() const { return position_; }
  /// Moves to `position` (e.g. one restored from a checkpoint). Fails if its
  /// batch is not below batchesPerEpoch() or its epoch does not fit 32 bits.
  Status seek(const DataPosition &position);

protected:
  /// Whether `position` is one this dataset can produce; `error` says why
  /// not.
  bool isValidPosition(const DataPosition &position, std::string &error) const;

  DataPosition position_;
};

/// What the model expects of one array input.
struct ArrayInput {
  /// The model's input name, e.g. "x".
  std::string name;
  /// The .npy file that feeds it.
  std::string path;
  /// The element type the model expects.
  npy::DType dtype = npy::DType::Float32;
  /// The dims after axis 0 (the row's shape): {64} for x: f32[B, 64], {} for
  /// y: i32[B].
  std::vector<int64_t> rowShape;
};

/// Options of an ArrayDataset.
struct ArrayDatasetOptions {
  int64_t batchSize = 0;
  uint64_t seed = 0;
  Order order = Order::Shuffled;
};

/// Batches of rows from several .npy arrays of equal length (see above).
class ArrayDataset final : public Dataset {
public:
  /// Reads each input's .npy file and checks it against what the model
  /// expects: its dtype, its dims after axis 0, and the same row count for
  /// every input. Errors name the input, the file and both shapes.
  static Status open(const std::vector<ArrayInput> &inputs,
                     const ArrayDatasetOptions &options,
                     std::unique_ptr<ArrayDataset> &out);
  /// As open, over arrays already in memory (arrays[i] feeds inputs[i], whose
  /// path is used only in messages).
  static Status fromArrays(const std::vector<ArrayInput> &inputs,
                           std::vector<npy::Array> arrays,
                           const ArrayDatasetOptions &options,
                           std::unique_ptr<ArrayDataset> &out);

  int64_t batchSize() const override { return options_.batchSize; }
  int64_t batchesPerEpoch() const override;
  const std::vector<std::string> &inputNames() const override { return names_; }
  Status batchAt(const DataPosition &position, Batch &out) override;

  /// Rows in every input (N).
  int64_t numRows() const { return numRows_; }
  /// The row order of `epoch`: a permutation of [0, N) when shuffled, the
  /// identity when sequential.
  std::vector<int64_t> epochOrder(uint64_t epoch) const;

private:
  ArrayDataset() = default;

  std::vector<ArrayInput> inputs_;
  std::vector<std::string> names_;
  std::vector<npy::Array> arrays_;
  ArrayDatasetOptions options_;
  int64_t numRows_ = 0;
  /// The last epoch's order, kept because batches come an epoch at a time.
  uint64_t cachedEpoch_ = 0;
  std::vector<int64_t> cachedOrder_;
};

/// The header of a uint16 token file (see above).
constexpr char kTokenFileMagic[9] = "KILNTOK1";
constexpr size_t kTokenFileHeaderSize = 32;
constexpr uint32_t kTokenFileVersion = 1;

/// Reads a token file: KILNTOK1 uint16 tokens, or raw bytes. Errors (missing,
/// empty, truncated, bad header, a token not below the recorded vocabulary)
/// name the file.
Status readTokenFile(const std::string &path, std::vector<uint16_t> &tokens);
/// Writes `tokens` as a KILNTOK1 file (atomically), recording `vocabSize`
/// (0: unknown); fails if a token is not below a non-zero vocabSize.
Status writeTokenFile(const std::string &path,
                      const std::vector<uint16_t> &tokens, uint32_t vocabSize);

/// Options of a TokenDataset.
struct TokenDatasetOptions {
  int64_t batchSize = 0;
  /// T: tokens per row of `tokens` and of `targets`.
  int64_t contextLength = 0;
  uint64_t seed = 0;
  Order order = Order::Shuffled;
  /// Sequential order only: the batches in an epoch; 0 takes as many as the
  /// file holds. More than the file holds is an error.
  int64_t sequentialBatches = 0;
  /// When positive, every token must be below it (the model's vocabulary).
  int64_t vocabSize = 0;
  /// The names of the two arrays in a batch.
  std::string tokensName = "tokens";
  std::string targetsName = "targets";
};

/// Windows of T + 1 tokens from a token file (see above).
class TokenDataset final : public Dataset {
public:
  /// Reads the token file at `path` (readTokenFile) and checks that it holds
  /// enough tokens for the options and none outside the vocabulary.
  static Status open(const std::string &path,
                     const TokenDatasetOptions &options,
                     std::unique_ptr<TokenDataset> &out);
  /// As open, over tokens in memory; `name` is used in messages.
  static Status fromTokens(std::vector<uint16_t> tokens,
                           const std::string &name,
                           const TokenDatasetOptions &options,
                           std::unique_ptr<TokenDataset> &out);

  int64_t batchSize() const override { return options_.batchSize; }
  int64_t batchesPerEpoch() const override { return batchesPerEpoch_; }
  const std::vector<std::string> &inputNames() const override { return names_; }
  Status batchAt(const DataPosition &position, Batch &out) override;

  /// Tokens in the file (n).
  int64_t numTokens() const { return static_cast<int64_t>(tokens_.size()); }
  /// The first token of row `row`'s window in the batch at `position`.
  int64_t windowStart(const DataPosition &position, int64_t row) const;

private:
  TokenDataset() = default;

  std::string name_;
  std::vector<std::string> names_;
  std::vector<uint16_t> tokens_;
  TokenDatasetOptions options_;
  int64_t batchesPerEpoch_ = 0;
};

} // namespace data
} // namespace kiln

#endif // KILN_DATALOADER_H
