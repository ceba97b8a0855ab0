//===- GraphShapesTest.cpp - Tests of the graph shape rules ---------------===//
//
// Part of Kiln. The shape rules of GraphShapes.h, positive and negative, as
// the verifiers and the front end call them.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphShapes.h"

#include <gtest/gtest.h>

#include <limits>

using namespace kiln::graph;
using llvm::SmallVector;
using Shape = SmallVector<int64_t>;

namespace {

/// Expects `result` to hold `expected`, showing the error otherwise.
template <typename T>
void expectShape(const llvm::FailureOr<T> &result, const Shape &expected,
                 const std::string &error) {
  ASSERT_TRUE(llvm::succeeded(result)) << error;
  EXPECT_EQ(Shape(*result), expected);
}

/// Expects `result` to have failed with exactly `message`.
template <typename T>
void expectError(const T &result, const std::string &error,
                 const std::string &message) {
  EXPECT_TRUE(llvm::failed(result));
  EXPECT_EQ(error, message);
}

TEST(GraphShapes, FormatShape) {
  EXPECT_EQ(formatShape({4, 64}), "4x64");
  EXPECT_EQ(formatShape({7}), "7");
  EXPECT_EQ(formatShape({}), "scalar");
  EXPECT_EQ(formatShape({std::numeric_limits<int64_t>::min(), 3}), "?x3");
  EXPECT_EQ(getNumElements({2, 3, 4}), 24);
  EXPECT_EQ(getNumElements({}), 1);
  EXPECT_EQ(getNumElements({5, 0}), 0);
}

TEST(GraphShapes, NormalizeAxis) {
  std::string error;
  EXPECT_EQ(*normalizeAxis(-1, 3, error), 2);
  EXPECT_EQ(*normalizeAxis(-3, 3, error), 0);
  EXPECT_EQ(*normalizeAxis(2, 3, error), 2);
  expectError(normalizeAxis(3, 3, error), error,
              "axis 3 is out of range for rank 3 (expected -3..2)");
  expectError(normalizeAxis(-4, 3, error), error,
              "axis -4 is out of range for rank 3 (expected -3..2)");
  expectError(normalizeAxis(0, 0, error), error,
              "axis 0 is out of range for a scalar");
}

TEST(GraphShapes, NormalizeAxes) {
  std::string error;
  auto axes = normalizeAxes({-1, 0}, 3, error);
  expectShape(axes, {0, 2}, error);
  expectError(normalizeAxes({1, -1}, 2, error), error,
              "axis 1 is repeated (rank 2)");
  expectError(normalizeAxes({5}, 2, error), error,
              "axis 5 is out of range for rank 2 (expected -2..1)");
  EXPECT_TRUE(llvm::succeeded(normalizeAxes({}, 2, error)));
}

TEST(GraphShapes, CheckNormalizedAxes) {
  std::string error;
  EXPECT_TRUE(llvm::succeeded(checkNormalizedAxes({0, 2}, 3, error)));
  expectError(checkNormalizedAxes({2, 0}, 3, error), error,
              "axes must be sorted and distinct, got [2, 0]");
  expectError(checkNormalizedAxes({1, 1}, 3, error), error,
              "axes must be sorted and distinct, got [1, 1]");
  expectError(checkNormalizedAxes({-1}, 3, error), error,
              "axis -1 is out of range for rank 3 (expected 0..2)");
}

TEST(GraphShapes, BroadcastShape) {
  std::string error;
  expectShape(inferBroadcastShape({4, 1}, {1, 5}, error), {4, 5}, error);
  expectShape(inferBroadcastShape({8}, {2, 3, 8}, error), {2, 3, 8}, error);
  expectShape(inferBroadcastShape({}, {2, 3}, error), {2, 3}, error);
  expectShape(inferBroadcastShape({}, {}, error), {}, error);
  // A 1 broadcasts to 0; a 0 against another size does not.
  expectShape(inferBroadcastShape({1, 3}, {0, 3}, error), {0, 3}, error);
  expectShape(inferBroadcastShape({5, 1, 3}, {4, 1}, error), {5, 4, 3}, error);
  expectError(inferBroadcastShape({4, 3}, {5}, error), error,
              "shapes 4x3 and 5 do not broadcast: 3 vs 5 in dim -1 from the "
              "right");
  expectError(inferBroadcastShape({2, 3}, {4, 3}, error), error,
              "shapes 2x3 and 4x3 do not broadcast: 2 vs 4 in dim -2 from "
              "the right");
  expectError(inferBroadcastShape({0}, {2}, error), error,
              "shapes 0 and 2 do not broadcast: 0 vs 2 in dim -1 from the "
              "right");
}

TEST(GraphShapes, BroadcastTo) {
  std::string error;
  EXPECT_TRUE(llvm::succeeded(checkBroadcastTo({64}, {32, 64}, error)));
  EXPECT_TRUE(llvm::succeeded(checkBroadcastTo({1, 64}, {32, 64}, error)));
  EXPECT_TRUE(llvm::succeeded(checkBroadcastTo({}, {3}, error)));
  EXPECT_TRUE(llvm::succeeded(checkBroadcastTo({2, 3}, {2, 3}, error)));
  // Broadcasting is one-way: 32x64 cannot shrink to 1x64.
  expectError(checkBroadcastTo({32, 64}, {1, 64}, error), error,
              "cannot broadcast 32x64 to 1x64: dim 0 is 32, expected 1");
  expectError(checkBroadcastTo({3}, {4, 5}, error), error,
              "cannot broadcast 3 to 4x5: dim 0 is 3, expected 5 or 1");
  expectError(checkBroadcastTo({2, 3}, {3}, error), error,
              "cannot broadcast 2x3 to 3: rank 2 is larger than rank 1");
}

TEST(GraphShapes, Matmul) {
  std::string error;
  expectShape(inferMatmulShape({4, 64}, {64, 16}, false, false, error), {4, 16},
              error);
  expectShape(inferMatmulShape({32, 64, 128}, {128, 384}, false, false, error),
              {32, 64, 384}, error);
  expectShape(
      inferMatmulShape({2, 4, 64, 32}, {2, 4, 64, 32}, false, true, error),
      {2, 4, 64, 64}, error);
  expectShape(inferMatmulShape({64, 4}, {16, 64}, true, true, error), {4, 16},
              error);
  expectShape(inferMatmulShape({3, 1, 4, 8}, {5, 8, 2}, false, false, error),
              {3, 5, 4, 2}, error);
  expectError(inferMatmulShape({4, 64}, {32, 16}, false, false, error), error,
              "matmul contracting dims differ: 64 vs 32 (lhs 4x64, rhs "
              "32x16)");
  expectError(inferMatmulShape({4, 64}, {16, 32}, false, true, error), error,
              "matmul contracting dims differ: 64 vs 32 (lhs 4x64, rhs "
              "16x32)");
  expectError(inferMatmulShape({64}, {64, 16}, false, false, error), error,
              "matmul operands need rank >= 2, got rank 1 and 2 (lhs 64, rhs "
              "64x16)");
  expectError(inferMatmulShape({3, 4, 8}, {5, 8, 2}, false, false, error),
              error,
              "matmul batch dims do not broadcast: 3 vs 5 (lhs 3x4x8, rhs "
              "5x8x2)");
}

TEST(GraphShapes, Reduce) {
  std::string error;
  expectShape(inferReduceShape({4, 8, 2}, {1}, false, error), {4, 2}, error);
  expectShape(inferReduceShape({4, 8, 2}, {0, 2}, true, error), {1, 8, 1},
              error);
  expectShape(inferReduceShape({4, 8}, {0, 1}, false, error), {}, error);
  expectShape(inferReduceShape({4, 8}, {}, false, error), {4, 8}, error);
  expectError(inferReduceShape({4, 8}, {2}, false, error), error,
              "axis 2 is out of range for rank 2 (expected 0..1) (input 4x8)");
}

TEST(GraphShapes, Reshape) {
  std::string error;
  expectShape(inferReshapeShape({2, 64, 128}, {2, 64, 4, 32}, error),
              {2, 64, 4, 32}, error);
  expectShape(inferReshapeShape({2, 6}, {-1, 4}, error), {3, 4}, error);
  expectShape(inferReshapeShape({}, {1, 1}, error), {1, 1}, error);
  expectError(inferReshapeShape({4, 8}, {3, 8}, error), error,
              "cannot reshape 4x8 (32 elements) to 3x8 (24 elements)");
  expectError(inferReshapeShape({2, 6}, {-1, 5}, error), error,
              "cannot reshape 2x6 (12 elements) to -1x5: no size for the -1 "
              "fits");
  expectError(inferReshapeShape({2, 6}, {-1, -1}, error), error,
              "reshape target -1x-1 has more than one -1");
  expectError(inferReshapeShape({2, 6}, {-2, -6}, error), error,
              "reshape target -2x-6 has a negative dim -2");
}

TEST(GraphShapes, Transpose) {
  std::string error;
  expectShape(inferTransposeShape({2, 64, 4, 32}, {0, 2, 1, 3}, error),
              {2, 4, 64, 32}, error);
  expectShape(inferTransposeShape({}, {}, error), {}, error);
  expectError(inferTransposeShape({4, 8}, {0}, error), error,
              "transpose perm [0] has 1 entries, but the input 4x8 has rank 2");
  expectError(inferTransposeShape({4, 8}, {0, 0}, error), error,
              "transpose perm [0, 0] repeats 0: not a permutation (input 4x8)");
  expectError(inferTransposeShape({4, 8}, {-1, 0}, error), error,
              "transpose perm [-1, 0] has entry -1 out of range 0..1 (input "
              "4x8)");
}

TEST(GraphShapes, Slice) {
  std::string error;
  EXPECT_TRUE(llvm::succeeded(checkSlice({4, 384}, {0, 128}, {4, 128}, error)));
  EXPECT_TRUE(llvm::succeeded(checkSlice({4, 384}, {0, 256}, {4, 128}, error)));
  expectError(checkSlice({4, 384}, {0, 257}, {4, 128}, error), error,
              "slice of dim 1 exceeds it: offset 257 + size 128 > 384 (input "
              "4x384, slice 4x128)");
  expectError(checkSlice({4, 8}, {0}, {4, 3}, error), error,
              "slice needs one offset per dim: 1 offsets for input 4x8");
  expectError(checkSlice({4, 8}, {-1, 0}, {2, 3}, error), error,
              "slice offset -1 of dim 0 is negative");
}

TEST(GraphShapes, Concat) {
  std::string error;
  expectShape(inferConcatShape({Shape{4, 8}, Shape{4, 2}}, 1, error), {4, 10},
              error);
  expectShape(inferConcatShape({Shape{4, 8}}, 0, error), {4, 8}, error);
  expectError(inferConcatShape({Shape{4, 8}, Shape{3, 2}}, 1, error), error,
              "concat inputs differ in dim 0 (axis is 1): input 0 is 4x8, "
              "input 1 is 3x2");
  expectError(inferConcatShape({Shape{4, 8}, Shape{4}}, 0, error), error,
              "concat inputs differ in rank: input 0 is 4x8, input 1 is 4");
  expectError(inferConcatShape({Shape{4, 8}}, -1, error), error,
              "axis -1 is out of range for shape 4x8 (expected 0..1)");
  expectError(inferConcatShape({}, 0, error), error,
              "concat needs at least one input");
}

TEST(GraphShapes, Split) {
  std::string error;
  auto equal = inferEqualSplitShapes({2, 64, 384}, 3, 2, error);
  ASSERT_TRUE(llvm::succeeded(equal)) << error;
  ASSERT_EQ(equal->size(), 3u);
  for (const Shape &piece : *equal)
    EXPECT_EQ(piece, (Shape{2, 64, 128}));
  expectError(inferEqualSplitShapes({4, 10}, 3, 1, error), error,
              "cannot split dim 1 of 4x10 (size 10) into 3 equal parts");
  expectError(inferEqualSplitShapes({4, 10}, 0, 1, error), error,
              "split needs a positive number of parts, got 0");

  auto sized = inferSplitShapes({4, 10}, {3, 7}, 1, error);
  ASSERT_TRUE(llvm::succeeded(sized)) << error;
  EXPECT_EQ((*sized)[0], (Shape{4, 3}));
  EXPECT_EQ((*sized)[1], (Shape{4, 7}));
  expectError(inferSplitShapes({4, 10}, {3, 6}, 1, error), error,
              "split sizes [3, 6] add up to 9, but dim 1 of 4x10 is 10");
  expectError(inferSplitShapes({4, 10}, {0, 10}, 1, error), error,
              "split piece 0 has size 0: sizes must be positive");
  expectError(inferSplitShapes({4, 10}, {}, 1, error), error,
              "split needs at least one result");
}

TEST(GraphShapes, Embedding) {
  std::string error;
  expectShape(inferEmbeddingShape({256, 128}, {32, 64}, error), {32, 64, 128},
              error);
  expectShape(inferEmbeddingShape({256, 128}, {}, error), {128}, error);
  expectError(inferEmbeddingShape({256}, {32}, error), error,
              "embedding table must be [V, D] (rank 2), got 256");
}

TEST(GraphShapes, LayerNorm) {
  std::string error;
  expectShape(inferLayerNormShape({2, 64, 128}, {128}, {128}, error),
              {2, 64, 128}, error);
  expectError(inferLayerNormShape({2, 64}, {64}, {32}, error), error,
              "layer_norm beta must be [64] (the last dim of input 2x64), got "
              "32");
  expectError(inferLayerNormShape({2, 64}, {2, 64}, {64}, error), error,
              "layer_norm gamma must be [64] (the last dim of input 2x64), "
              "got 2x64");
  expectError(inferLayerNormShape({}, {1}, {1}, error), error,
              "layer_norm input must have rank >= 1, got a scalar");
}

TEST(GraphShapes, Softmax) {
  std::string error;
  expectShape(inferSoftmaxShape({4, 10}, 1, error), {4, 10}, error);
  expectError(inferSoftmaxShape({4, 10}, 2, error), error,
              "softmax axis 2 is out of range for shape 4x10 (expected 0..1)");
  expectError(inferSoftmaxShape({}, 0, error), error,
              "softmax axis 0 is out of range for a scalar");
}

TEST(GraphShapes, Attention) {
  std::string error;
  expectShape(inferAttentionShape({2, 4, 64, 32}, {2, 4, 48, 32},
                                  {2, 4, 48, 16}, false, error),
              {2, 4, 64, 16}, error);
  expectShape(inferAttentionShape({64, 32}, {64, 32}, {64, 32}, true, error),
              {64, 32}, error);
  expectError(inferAttentionShape({64, 32}, {48, 32}, {48, 32}, true, error),
              error,
              "causal attention needs as many queries as keys: 64 vs 48 "
              "(query 64x32, key 48x32, value 48x32)");
  expectError(inferAttentionShape({64, 32}, {64, 16}, {64, 32}, false, error),
              error,
              "attention head dims differ: query 32 vs key 16 (query 64x32, "
              "key 64x16, value 64x32)");
  expectError(
      inferAttentionShape({2, 64, 32}, {3, 64, 32}, {3, 64, 32}, false, error),
      error,
      "attention leading dims differ (query 2x64x32, key 3x64x32, "
      "value 3x64x32)");
}

TEST(GraphShapes, CrossEntropy) {
  std::string error;
  expectShape(inferCrossEntropyShape({32, 10}, {32}, error), {}, error);
  expectShape(inferCrossEntropyShape({2, 64, 256}, {2, 64}, error), {}, error);
  expectShape(inferCrossEntropyShape({10}, {}, error), {}, error);
  expectError(inferCrossEntropyShape({32, 10}, {10}, error), error,
              "cross_entropy targets must be 32 (logits 32x10 without the "
              "class dim), got 10");
  expectError(inferCrossEntropyShape({}, {}, error), error,
              "cross_entropy logits must have rank >= 1 ([..., C]), got a "
              "scalar");
}

} // namespace
