//===- DataLoaderTest.cpp - Tests of the array and token datasets ---------===//
//
// Part of Kiln. Both datasets must be deterministic in (seed, position),
// resume to exactly the batches an uninterrupted run sees, really shuffle
// (every permutation about equally often), cut windows whose targets are the
// tokens shifted by one, and reject bad files with errors that name the
// input and the file. The bundled data sets (examples/data) are read too.
//
//===----------------------------------------------------------------------===//

#include "kiln/DataLoader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <unistd.h>

using namespace kiln;
using namespace kiln::data;

namespace {

std::string sourcePath(const std::string &relative) {
  return std::string(KILN_SOURCE_DIR) + "/" + relative;
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream file(path, std::ios::binary);
  file.write(bytes.data(), bytes.size());
}

std::string readBytes(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(file)),
                     std::istreambuf_iterator<char>());
}

template <typename T> std::vector<T> elements(const npy::Array &array) {
  return std::vector<T>(array.as<T>(), array.as<T>() + array.numElements());
}

/// Two in-memory inputs of `rows` rows: x: f32[rows, 3] with x[r] = (r, r +
/// 0.25, r + 0.5) and y: i32[rows] with y[r] = 1000 + r, so that every
/// batch row says which data row it came from.
std::vector<npy::Array> rowTaggedArrays(int64_t rows) {
  std::vector<float> x;
  std::vector<int32_t> y;
  for (int64_t r = 0; r < rows; ++r) {
    x.insert(x.end(), {float(r), r + 0.25f, r + 0.5f});
    y.push_back(int32_t(1000 + r));
  }
  std::vector<npy::Array> arrays(2);
  EXPECT_TRUE(npy::makeArray(npy::DType::Float32, {rows, 3}, x.data(), x.size(),
                             arrays[0]));
  EXPECT_TRUE(
      npy::makeArray(npy::DType::Int32, {rows}, y.data(), y.size(), arrays[1]));
  return arrays;
}

const std::vector<ArrayInput> kTaggedInputs = {
    {"x", "x.npy", npy::DType::Float32, {3}},
    {"y", "y.npy", npy::DType::Int32, {}}};

std::unique_ptr<ArrayDataset> taggedDataset(int64_t rows, int64_t batch,
                                            uint64_t seed,
                                            Order order = Order::Shuffled) {
  std::unique_ptr<ArrayDataset> dataset;
  Status status = ArrayDataset::fromArrays(kTaggedInputs, rowTaggedArrays(rows),
                                           {batch, seed, order}, dataset);
  EXPECT_TRUE(status) << status.message();
  return dataset;
}

/// The data rows of a batch of taggedDataset, checking that x and y agree.
std::vector<int64_t> batchRows(const Batch &batch) {
  std::vector<int64_t> rows;
  const npy::Array *x = batch.find("x");
  const npy::Array *y = batch.find("y");
  EXPECT_TRUE(x && y);
  for (int64_t i = 0; i < y->shape[0]; ++i) {
    int64_t row = y->as<int32_t>()[i] - 1000;
    EXPECT_EQ(x->as<float>()[3 * i], float(row)) << "x and y rows disagree";
    EXPECT_EQ(x->as<float>()[3 * i + 2], row + 0.5f);
    rows.push_back(row);
  }
  return rows;
}

/// `count` batches from next(), as raw bytes of every array.
std::vector<std::string> drawBatches(Dataset &dataset, int count) {
  std::vector<std::string> out;
  Batch batch;
  for (int i = 0; i < count; ++i) {
    Status status = dataset.next(batch);
    EXPECT_TRUE(status) << status.message();
    std::string bytes;
    for (const npy::Array &array : batch.arrays)
      bytes.append(array.data.begin(), array.data.end());
    out.push_back(bytes);
  }
  return out;
}

/// A scratch directory removed at the end of the test.
class DataLoaderFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("kiln-data-test-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string path(const std::string &name) { return (dir / name).string(); }
  /// The error of opening `inputs`; fails the test if it opens.
  std::string arrayError(const std::vector<ArrayInput> &inputs,
                         int64_t batch = 4) {
    std::unique_ptr<ArrayDataset> dataset;
    Status status = ArrayDataset::open(inputs, {batch, 0}, dataset);
    EXPECT_FALSE(status) << "opened a bad data set";
    EXPECT_FALSE(dataset);
    return status.message();
  }
  std::string tokenError(const std::string &file,
                         const TokenDatasetOptions &options) {
    std::unique_ptr<TokenDataset> dataset;
    Status status = TokenDataset::open(file, options, dataset);
    EXPECT_FALSE(status) << "opened a bad token file";
    EXPECT_NE(status.message().find(file), std::string::npos)
        << "error does not name the file: " << status.message();
    return status.message();
  }
  std::filesystem::path dir;
};

#define EXPECT_CONTAINS(text, part)                                            \
  EXPECT_NE(std::string(text).find(part), std::string::npos)                   \
      << "'" << (text) << "' lacks '" << (part) << "'"

//===----------------------------------------------------------------------===//
// ArrayDataset
//===----------------------------------------------------------------------===//

TEST(DataLoaderArrays, ReadsTheBundledDigits) {
  std::vector<ArrayInput> inputs = {
      {"x",
       sourcePath("examples/data/digits/train_x.npy"),
       npy::DType::Float32,
       {64}},
      {"y",
       sourcePath("examples/data/digits/train_y.npy"),
       npy::DType::Int32,
       {}}};
  std::unique_ptr<ArrayDataset> dataset;
  Status status = ArrayDataset::open(inputs, {32, 0}, dataset);
  ASSERT_TRUE(status) << status.message();
  EXPECT_EQ(dataset->numRows(), 1438);
  EXPECT_EQ(dataset->batchesPerEpoch(), 1438 / 32);
  Batch batch;
  ASSERT_TRUE(dataset->next(batch));
  ASSERT_EQ(batch.names, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(batch.arrays[0].shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(batch.arrays[1].shape, (std::vector<int64_t>{32}));
  EXPECT_EQ(batch.validRows, 32);
  for (float pixel : elements<float>(batch.arrays[0]))
    ASSERT_TRUE(pixel >= 0.0f && pixel <= 1.0f);
  for (int32_t label : elements<int32_t>(batch.arrays[1]))
    ASSERT_TRUE(label >= 0 && label <= 9);

  // The test split: 359 rows, evaluated in 12 batches of 32, the last one
  // with 7 real rows.
  inputs[0].path = sourcePath("examples/data/digits/test_x.npy");
  inputs[1].path = sourcePath("examples/data/digits/test_y.npy");
  ASSERT_TRUE(ArrayDataset::open(inputs, {32, 0, Order::Sequential}, dataset));
  EXPECT_EQ(dataset->numRows(), 359);
  EXPECT_EQ(dataset->batchesPerEpoch(), 12);
  ASSERT_TRUE(dataset->batchAt({0, 11}, batch));
  EXPECT_EQ(batch.validRows, 7);
}

TEST(DataLoaderArrays, BatchesPairRowsAndDropThePartialBatch) {
  auto dataset = taggedDataset(10, 3, 7);
  ASSERT_TRUE(dataset);
  EXPECT_EQ(dataset->batchesPerEpoch(), 3); // 10 rows: one row is dropped.
  Batch batch;
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> seen;
    for (int b = 0; b < 3; ++b) {
      ASSERT_EQ(dataset->position(), (DataPosition{epoch, uint64_t(b)}));
      ASSERT_TRUE(dataset->next(batch));
      EXPECT_EQ(batch.validRows, 3);
      std::vector<int64_t> rows = batchRows(batch);
      seen.insert(seen.end(), rows.begin(), rows.end());
    }
    std::vector<int64_t> order = dataset->epochOrder(epoch);
    EXPECT_EQ(seen, std::vector<int64_t>(order.begin(), order.begin() + 9));
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end())
        << "a row came twice in one epoch";
  }
  EXPECT_EQ(dataset->position(), (DataPosition{3, 0}));
}

TEST(DataLoaderArrays, ShuffleIsAPermutationThatChangesEveryEpoch) {
  auto dataset = taggedDataset(1000, 10, 42);
  std::vector<int64_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  std::vector<int64_t> epoch0 = dataset->epochOrder(0);
  std::vector<int64_t> epoch1 = dataset->epochOrder(1);
  EXPECT_NE(epoch0, identity);
  EXPECT_NE(epoch0, epoch1);
  std::vector<int64_t> sorted = epoch0;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, identity);
  // Same seed: same order; another seed: another order.
  EXPECT_EQ(taggedDataset(1000, 10, 42)->epochOrder(1), epoch1);
  EXPECT_NE(taggedDataset(1000, 10, 43)->epochOrder(1), epoch1);
}

TEST(DataLoaderArrays, EveryPermutationIsAboutEquallyLikely) {
  // 4 rows have 24 orders; over 4800 epochs each should come about 200
  // times. A biased shuffle (e.g. swapping with any of the N rows) is far
  // off: its commonest order comes 1.5 times as often as its rarest.
  auto dataset = taggedDataset(4, 1, 5);
  std::map<std::vector<int64_t>, int> counts;
  for (uint64_t epoch = 0; epoch < 4800; ++epoch)
    ++counts[dataset->epochOrder(epoch)];
  ASSERT_EQ(counts.size(), 24u);
  double chiSquare = 0;
  for (const auto &entry : counts)
    chiSquare += (entry.second - 200.0) * (entry.second - 200.0) / 200.0;
  // 23 degrees of freedom: P(chi^2 > 49.7) = 0.001.
  EXPECT_LT(chiSquare, 49.7);
}

TEST(DataLoaderArrays, ResumeSeesTheSameBatches) {
  auto straight = taggedDataset(50, 4, 11); // 12 batches per epoch
  std::vector<std::string> expected = drawBatches(*straight, 40);

  auto first = taggedDataset(50, 4, 11);
  std::vector<std::string> before = drawBatches(*first, 17);
  std::string saved = first->position().toString();
  EXPECT_EQ(saved, "1:5");

  auto resumed = taggedDataset(50, 4, 11);
  DataPosition position;
  ASSERT_TRUE(DataPosition::parse(saved, position));
  ASSERT_TRUE(resumed->seek(position));
  std::vector<std::string> after = drawBatches(*resumed, 23);
  before.insert(before.end(), after.begin(), after.end());
  EXPECT_EQ(before, expected);
  // And batchAt is the same pure function of the position.
  Batch batch;
  ASSERT_TRUE(resumed->batchAt({0, 3}, batch));
  EXPECT_EQ(
      std::string(batch.arrays[0].data.begin(), batch.arrays[0].data.end()),
      expected[3].substr(0, batch.arrays[0].data.size()));
}

TEST(DataLoaderArrays, SequentialOrderPadsTheLastBatch) {
  auto dataset = taggedDataset(10, 4, 0, Order::Sequential);
  EXPECT_EQ(dataset->batchesPerEpoch(), 3);
  Batch batch;
  ASSERT_TRUE(dataset->next(batch));
  EXPECT_EQ(batchRows(batch), (std::vector<int64_t>{0, 1, 2, 3}));
  ASSERT_TRUE(dataset->next(batch));
  EXPECT_EQ(batchRows(batch), (std::vector<int64_t>{4, 5, 6, 7}));
  ASSERT_TRUE(dataset->next(batch));
  EXPECT_EQ(batchRows(batch), (std::vector<int64_t>{8, 9, 0, 1}));
  EXPECT_EQ(batch.validRows, 2);
  EXPECT_EQ(dataset->position(), (DataPosition{1, 0}));
  ASSERT_TRUE(dataset->next(batch)); // The next epoch is the same.
  EXPECT_EQ(batchRows(batch), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(DataLoaderArrays, PositionsAreCheckedAndParsedStrictly) {
  auto dataset = taggedDataset(10, 3, 0);
  EXPECT_FALSE(dataset->seek({0, 3}));
  EXPECT_FALSE(dataset->seek({uint64_t(1) << 32, 0}));
  Batch batch;
  Status status = dataset->batchAt({2, 7}, batch);
  EXPECT_FALSE(status);
  EXPECT_CONTAINS(status.message(), "2:7");
  EXPECT_TRUE(dataset->seek({5, 2}));
  EXPECT_EQ(dataset->position(), (DataPosition{5, 2}));

  DataPosition position;
  ASSERT_TRUE(DataPosition::parse("12:345", position));
  EXPECT_EQ(position, (DataPosition{12, 345}));
  for (const char *bad : {"", "3", "a:b", "1:2:3", "-1:2", ":4", "5:", " 1:2",
                          "99999999999999999999:1"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(DataPosition::parse(bad, position));
  }
  EXPECT_EQ(position, (DataPosition{12, 345})) << "a failed parse wrote";
}

TEST_F(DataLoaderFileTest, ArrayErrorsNameTheInputTheFileAndBothShapes) {
  std::vector<npy::Array> arrays = rowTaggedArrays(10);
  ASSERT_TRUE(npy::writeNpy(path("x.npy"), arrays[0]));
  ASSERT_TRUE(npy::writeNpy(path("y.npy"), arrays[1]));
  const std::vector<ArrayInput> good = {
      {"x", path("x.npy"), npy::DType::Float32, {3}},
      {"y", path("y.npy"), npy::DType::Int32, {}}};
  std::unique_ptr<ArrayDataset> dataset;
  ASSERT_TRUE(ArrayDataset::open(good, {4, 0}, dataset));

  std::vector<ArrayInput> inputs = good;
  inputs[0].rowShape = {4};
  std::string error = arrayError(inputs);
  EXPECT_CONTAINS(error, "input 'x'");
  EXPECT_CONTAINS(error, path("x.npy"));
  EXPECT_CONTAINS(error, "f32[10, 3]");
  EXPECT_CONTAINS(error, "f32[N, 4]");

  inputs = good;
  inputs[1].rowShape = {1};
  error = arrayError(inputs);
  EXPECT_CONTAINS(error, "input 'y'");
  EXPECT_CONTAINS(error, "i32[10]");
  EXPECT_CONTAINS(error, "i32[N, 1]");

  // Labels saved as NumPy's default int64.
  std::vector<int64_t> wide(10, 1);
  npy::Array longLabels;
  ASSERT_TRUE(
      npy::makeArray(npy::DType::Int64, {10}, wide.data(), 10, longLabels));
  ASSERT_TRUE(npy::writeNpy(path("y64.npy"), longLabels));
  inputs = good;
  inputs[1].path = path("y64.npy");
  error = arrayError(inputs);
  EXPECT_CONTAINS(error, "input 'y'");
  EXPECT_CONTAINS(error, path("y64.npy"));
  EXPECT_CONTAINS(error, "i64[10]");
  EXPECT_CONTAINS(error, "i32[N]");
  EXPECT_CONTAINS(error, "astype(np.int32)");

  // Different row counts.
  ASSERT_TRUE(npy::writeNpy(path("y9.npy"), rowTaggedArrays(9)[1]));
  inputs = good;
  inputs[1].path = path("y9.npy");
  error = arrayError(inputs);
  EXPECT_CONTAINS(error, "'x' (" + path("x.npy") + ", 10 rows)");
  EXPECT_CONTAINS(error, "'y' (" + path("y9.npy") + ", 9 rows)");

  // A missing and a truncated file.
  inputs = good;
  inputs[0].path = path("absent.npy");
  error = arrayError(inputs);
  EXPECT_CONTAINS(error, "input 'x'");
  EXPECT_CONTAINS(error, path("absent.npy"));
  std::string bytes = readBytes(path("x.npy"));
  writeBytes(path("cut.npy"), bytes.substr(0, bytes.size() - 5));
  inputs[0].path = path("cut.npy");
  error = arrayError(inputs);
  EXPECT_CONTAINS(error, "input 'x'");
  EXPECT_CONTAINS(error, path("cut.npy"));

  // Too few rows for a batch, a name given twice, a bad batch size.
  error = arrayError(good, 11);
  EXPECT_CONTAINS(error, "10 rows, fewer than one batch of 11");
  inputs = good;
  inputs[1].name = "x";
  inputs[1].dtype = npy::DType::Float32;
  inputs[1].rowShape = {3};
  inputs[1].path = path("x.npy");
  EXPECT_CONTAINS(arrayError(inputs), "given twice");
  EXPECT_CONTAINS(arrayError(good, 0), "batch size 0");
}

//===----------------------------------------------------------------------===//
// TokenDataset
//===----------------------------------------------------------------------===//

/// A token stream whose value at i is i mod `modulus`, so that a window
/// says where it starts.
std::vector<uint16_t> countingTokens(int64_t count, int modulus) {
  std::vector<uint16_t> tokens(count);
  for (int64_t i = 0; i < count; ++i)
    tokens[i] = uint16_t(i % modulus);
  return tokens;
}

TEST(DataLoaderTokens, WindowsAreShiftedByOne) {
  std::vector<uint16_t> tokens = countingTokens(5000, 60000);
  std::unique_ptr<TokenDataset> dataset;
  ASSERT_TRUE(TokenDataset::fromTokens(tokens, "mem", {4, 16, 3}, dataset));
  EXPECT_EQ(dataset->batchesPerEpoch(), 4999 / 64);
  Batch batch;
  for (int step = 0; step < 20; ++step) {
    DataPosition position = dataset->position();
    ASSERT_TRUE(dataset->next(batch));
    ASSERT_EQ(batch.names, (std::vector<std::string>{"tokens", "targets"}));
    const npy::Array &in = batch.arrays[0];
    const npy::Array &out = batch.arrays[1];
    ASSERT_EQ(in.dtype, npy::DType::Int32);
    ASSERT_EQ(in.shape, (std::vector<int64_t>{4, 16}));
    ASSERT_EQ(out.shape, (std::vector<int64_t>{4, 16}));
    for (int64_t row = 0; row < 4; ++row) {
      int64_t start = dataset->windowStart(position, row);
      ASSERT_GE(start, 0);
      ASSERT_LE(start + 16, 4999);
      for (int64_t t = 0; t < 16; ++t) {
        EXPECT_EQ(in.as<int32_t>()[row * 16 + t], start + t);
        EXPECT_EQ(out.as<int32_t>()[row * 16 + t], start + t + 1);
      }
    }
  }
}

TEST(DataLoaderTokens, WindowStartsSpanTheWholeFile) {
  std::unique_ptr<TokenDataset> dataset;
  ASSERT_TRUE(TokenDataset::fromTokens(countingTokens(100, 256), "mem",
                                       {10, 8, 1}, dataset));
  // Starts lie in [0, 100 - 8 - 1]; 2000 draws reach both ends.
  std::vector<int> hits(92, 0);
  for (uint64_t epoch = 0; epoch < 200; ++epoch)
    for (int64_t row = 0; row < 10; ++row) {
      int64_t start = dataset->windowStart({epoch, 0}, row);
      ASSERT_GE(start, 0);
      ASSERT_LT(start, 92);
      ++hits[start];
    }
  EXPECT_GT(hits.front(), 0);
  EXPECT_GT(hits.back(), 0);
  EXPECT_GT(*std::min_element(hits.begin(), hits.end()), 5);
  EXPECT_LT(*std::max_element(hits.begin(), hits.end()), 45);
}

TEST(DataLoaderTokens, DeterministicAndResumable) {
  auto make = [](uint64_t seed) {
    std::unique_ptr<TokenDataset> dataset;
    EXPECT_TRUE(TokenDataset::fromTokens(countingTokens(3000, 251), "mem",
                                         {2, 32, seed}, dataset));
    return dataset;
  };
  auto straight = make(9);
  ASSERT_EQ(straight->batchesPerEpoch(), 46);
  std::vector<std::string> expected = drawBatches(*straight, 60);
  EXPECT_EQ(drawBatches(*make(9), 60), expected);
  EXPECT_NE(drawBatches(*make(10), 60), expected);
  // Epochs differ: batch 0 of epoch 1 is not batch 0 of epoch 0.
  EXPECT_NE(expected[0], expected[46]);

  auto first = make(9);
  std::vector<std::string> before = drawBatches(*first, 50);
  DataPosition saved;
  ASSERT_TRUE(DataPosition::parse(first->position().toString(), saved));
  EXPECT_EQ(saved, (DataPosition{1, 4}));
  auto resumed = make(9);
  ASSERT_TRUE(resumed->seek(saved));
  std::vector<std::string> after = drawBatches(*resumed, 10);
  before.insert(before.end(), after.begin(), after.end());
  EXPECT_EQ(before, expected);
}

TEST(DataLoaderTokens, SequentialWindowsTileTheFile) {
  TokenDatasetOptions options{3, 10, 0, Order::Sequential};
  std::unique_ptr<TokenDataset> dataset;
  // 100 tokens hold 9 windows of 10 + 1: three batches of three.
  ASSERT_TRUE(TokenDataset::fromTokens(countingTokens(100, 256), "mem", options,
                                       dataset));
  EXPECT_EQ(dataset->batchesPerEpoch(), 3);
  Batch batch;
  std::vector<int32_t> targets;
  for (int b = 0; b < 3; ++b) {
    ASSERT_TRUE(dataset->next(batch));
    std::vector<int32_t> in = elements<int32_t>(batch.arrays[0]);
    std::vector<int32_t> out = elements<int32_t>(batch.arrays[1]);
    EXPECT_EQ(in[0], b * 30);
    for (size_t i = 0; i < in.size(); ++i)
      EXPECT_EQ(out[i], in[i] + 1);
    targets.insert(targets.end(), out.begin(), out.end());
  }
  // Every token from 1 to 90 is predicted exactly once.
  std::vector<int32_t> expected(90);
  std::iota(expected.begin(), expected.end(), 1);
  EXPECT_EQ(targets, expected);
  EXPECT_EQ(dataset->position(), (DataPosition{1, 0}));

  options.sequentialBatches = 2;
  ASSERT_TRUE(TokenDataset::fromTokens(countingTokens(100, 256), "mem", options,
                                       dataset));
  EXPECT_EQ(dataset->batchesPerEpoch(), 2);
  options.sequentialBatches = 4;
  Status status = TokenDataset::fromTokens(countingTokens(100, 256), "mem",
                                           options, dataset);
  EXPECT_FALSE(status);
  EXPECT_CONTAINS(status.message(), "hold only 3 batches");
  options.sequentialBatches = 0;
  status = TokenDataset::fromTokens(countingTokens(30, 256), "mem", options,
                                    dataset);
  EXPECT_FALSE(status);
  EXPECT_CONTAINS(status.message(), "needs 31");
}

TEST(DataLoaderTokens, ReadsTheBundledCorpus) {
  std::unique_ptr<TokenDataset> train, valid;
  const std::string trainPath = sourcePath("examples/data/text/train.txt");
  const std::string validPath = sourcePath("examples/data/text/valid.txt");
  TokenDatasetOptions options{32, 64, 0};
  options.vocabSize = 256;
  Status status = TokenDataset::open(trainPath, options, train);
  ASSERT_TRUE(status) << status.message();
  EXPECT_GE(train->numTokens(), 1000000);
  options.order = Order::Sequential;
  ASSERT_TRUE(TokenDataset::open(validPath, options, valid));
  EXPECT_EQ(valid->batchesPerEpoch(), (valid->numTokens() - 1) / 64 / 32);
  Batch batch;
  ASSERT_TRUE(valid->next(batch));
  // The first window is the file's first 65 bytes.
  std::string head = readBytes(validPath).substr(0, 65);
  for (int t = 0; t < 64; ++t) {
    EXPECT_EQ(batch.arrays[0].as<int32_t>()[t], uint8_t(head[t]));
    EXPECT_EQ(batch.arrays[1].as<int32_t>()[t], uint8_t(head[t + 1]));
  }
}

TEST_F(DataLoaderFileTest, Uint16TokenFilesRoundTrip) {
  std::vector<uint16_t> tokens = countingTokens(1000, 50000);
  tokens[7] = 49999;
  ASSERT_TRUE(writeTokenFile(path("t.tok"), tokens, 50000));
  std::string bytes = readBytes(path("t.tok"));
  ASSERT_EQ(bytes.size(), 32u + 2000u);
  EXPECT_EQ(bytes.substr(0, 8), "KILNTOK1");
  EXPECT_EQ(bytes.substr(8, 8), std::string("\1\0\0\0\2\0\0\0", 8));
  EXPECT_EQ(bytes.substr(16, 8), std::string("\xe8\3\0\0\0\0\0\0", 8));
  EXPECT_EQ(bytes.substr(24, 8), std::string("\x50\xc3\0\0\0\0\0\0", 8));
  EXPECT_EQ(bytes.substr(32 + 14, 2), "\x4f\xc3"); // 49999, little-endian

  std::vector<uint16_t> read;
  ASSERT_TRUE(readTokenFile(path("t.tok"), read));
  EXPECT_EQ(read, tokens);
  std::unique_ptr<TokenDataset> dataset;
  TokenDatasetOptions options{2, 5, 0, Order::Sequential};
  ASSERT_TRUE(TokenDataset::open(path("t.tok"), options, dataset));
  Batch batch;
  ASSERT_TRUE(dataset->next(batch));
  EXPECT_EQ(elements<int32_t>(batch.arrays[1]),
            (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 49999, 8, 9, 10}));
  EXPECT_FALSE(writeTokenFile(path("bad.tok"), {1, 2, 300}, 256));
  EXPECT_FALSE(std::filesystem::exists(path("bad.tok")));
}

TEST_F(DataLoaderFileTest, BadTokenFilesNameTheFile) {
  TokenDatasetOptions options{2, 8, 0};
  EXPECT_CONTAINS(tokenError(path("absent.txt"), options), "cannot open");
  writeBytes(path("empty.txt"), "");
  EXPECT_CONTAINS(tokenError(path("empty.txt"), options), "empty");
  writeBytes(path("short.txt"), "12345678");
  EXPECT_CONTAINS(tokenError(path("short.txt"), options),
                  "too few for one window of T + 1 = 9");

  ASSERT_TRUE(writeTokenFile(path("good.tok"), countingTokens(100, 100), 0));
  const std::string good = readBytes(path("good.tok"));
  writeBytes(path("header.tok"), good.substr(0, 20));
  EXPECT_CONTAINS(tokenError(path("header.tok"), options),
                  "truncated KILNTOK1 header");
  writeBytes(path("cut.tok"), good.substr(0, good.size() - 3));
  EXPECT_CONTAINS(tokenError(path("cut.tok"), options),
                  "promises 100 tokens (200 bytes) but only 197");
  writeBytes(path("long.tok"), good + "xy");
  EXPECT_CONTAINS(tokenError(path("long.tok"), options), "2 bytes follow");
  std::string version = good;
  version[8] = 2;
  writeBytes(path("v2.tok"), version);
  EXPECT_CONTAINS(tokenError(path("v2.tok"), options), "version 2");
  std::string vocab = good;
  vocab[24] = 50; // Recorded vocabulary 50, but tokens go up to 99.
  writeBytes(path("vocab.tok"), vocab);
  EXPECT_CONTAINS(tokenError(path("vocab.tok"), options),
                  "token 50 at position 50");

  // A byte outside the model's vocabulary.
  writeBytes(path("bytes.txt"),
             std::string(40, 'a') + "\xc8" + std::string(40, 'b'));
  options.vocabSize = 128;
  EXPECT_CONTAINS(tokenError(path("bytes.txt"), options),
                  "token 200 at position 40 is not below the model's "
                  "vocabulary size 128");
  options.vocabSize = 0;
  options.contextLength = 0;
  EXPECT_CONTAINS(tokenError(path("bytes.txt"), options), "must be positive");
}

} // namespace
