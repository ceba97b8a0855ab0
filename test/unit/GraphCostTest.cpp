//===- GraphCostTest.cpp - Tests of the graph ops' cost model -------------===//
//
// Part of Kiln. FLOPs and bytes that CostOpInterface reports for parsed graph
// ops, against counts worked out by hand from the convention at the top of
// GraphCost.cpp.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/InitKiln.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;
using namespace kiln::graph;

namespace {

class GraphCostTest : public ::testing::Test {
protected:
  GraphCostTest() {
    DialectRegistry registry;
    kiln::registerKilnDialects(registry);
    registry.insert<func::FuncDialect>();
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Parses `body` as the body of a function with arguments `args` and
  /// returns its first op's cost interface.
  CostOpInterface parseFirstOp(StringRef args, StringRef body) {
    std::string source =
        ("func.func @f(" + args + ") {\n" + body + "\n  return\n}").str();
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << source;
    if (!module)
      return {};
    auto fn = cast<func::FuncOp>(module->getBody()->front());
    auto cost = dyn_cast<CostOpInterface>(fn.getBody().front().front());
    EXPECT_TRUE(cost) << "first op has no cost interface";
    return cost;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(GraphCostTest, MatmulCountsTwoFlopsPerMultiplyAdd) {
  // batch 2x4, M 64, N 64, K 32.
  CostOpInterface op = parseFirstOp(
      "%q: tensor<2x4x64x32xf32>, %k: tensor<2x4x64x32xf32>",
      "%0 = graph.matmul %q, %k {transpose_rhs} : tensor<2x4x64x32xf32>, "
      "tensor<2x4x64x32xf32> -> tensor<2x4x64x64xf32>");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getFlops(), 2 * 8 * 64 * 64 * 32);
  EXPECT_EQ(op.getBytesAccessed(), 4 * (2 * 8 * 64 * 32 + 8 * 64 * 64));
}

TEST_F(GraphCostTest, MatmulTransposedLhsContractsItsFirstDim) {
  // lhs [K=64, M=4] transposed; rhs [64, 16]: 2*4*16*64.
  CostOpInterface op = parseFirstOp(
      "%a: tensor<64x4xbf16>, %b: tensor<64x16xbf16>",
      "%0 = graph.matmul %a, %b {transpose_lhs} : tensor<64x4xbf16>, "
      "tensor<64x16xbf16> -> tensor<4x16xbf16>");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getFlops(), 2 * 4 * 16 * 64);
  // bf16 is 2 bytes.
  EXPECT_EQ(op.getBytesAccessed(), 2 * (64 * 4 + 64 * 16 + 4 * 16));
}

TEST_F(GraphCostTest, Elementwise) {
  CostOpInterface add = parseFirstOp("%a: tensor<4x8xf32>",
                                     "%0 = graph.add %a, %a : tensor<4x8xf32>");
  ASSERT_TRUE(add);
  EXPECT_EQ(add.getFlops(), 32);
  EXPECT_EQ(add.getBytesAccessed(), 3 * 32 * 4);
  CostOpInterface gelu = parseFirstOp("%a: tensor<4x8xf32>",
                                      "%0 = graph.gelu %a : tensor<4x8xf32>");
  ASSERT_TRUE(gelu);
  EXPECT_EQ(gelu.getFlops(), 9 * 32);
}

TEST_F(GraphCostTest, ShapeOpsCostNoFlops) {
  CostOpInterface reshape =
      parseFirstOp("%x: tensor<4x8xf32>",
                   "%0 = graph.reshape %x : tensor<4x8xf32> -> tensor<32xf32>");
  ASSERT_TRUE(reshape);
  EXPECT_EQ(reshape.getFlops(), 0);
  EXPECT_EQ(reshape.getBytesAccessed(), 2 * 32 * 4);
}

TEST_F(GraphCostTest, Reduce) {
  CostOpInterface sum = parseFirstOp(
      "%x: tensor<4x8xf32>", "%0 = graph.reduce sum %x {axes = array<i64: 1>} "
                             ": tensor<4x8xf32> -> tensor<4xf32>");
  ASSERT_TRUE(sum);
  EXPECT_EQ(sum.getFlops(), 32);
  CostOpInterface mean = parseFirstOp(
      "%x: tensor<4x8xf32>", "%0 = graph.reduce mean %x {axes = array<i64: 1>} "
                             ": tensor<4x8xf32> -> tensor<4xf32>");
  ASSERT_TRUE(mean);
  EXPECT_EQ(mean.getFlops(), 32 + 4);
}

TEST_F(GraphCostTest, AttentionCountsBothMatmulsAndSoftmax) {
  // batch 2, Tq 64, Tk 48, Dk 32, Dv 16.
  CostOpInterface op = parseFirstOp(
      "%q: tensor<2x64x32xf32>, %k: tensor<2x48x32xf32>, "
      "%v: tensor<2x48x16xf32>",
      "%0 = graph.attention %q, %k, %v : tensor<2x64x32xf32>, "
      "tensor<2x48x32xf32>, tensor<2x48x16xf32> -> tensor<2x64x16xf32>");
  ASSERT_TRUE(op);
  int64_t scores = 2 * 64 * 48;
  EXPECT_EQ(op.getFlops(), 2 * scores * 32 + 2 * scores * 16 + 6 * scores);
  auto attention = cast<AttentionOp>(op.getOperation());
  EXPECT_DOUBLE_EQ(attention.getEffectiveScale(), 1.0 / std::sqrt(32.0));
}

TEST_F(GraphCostTest, AttentionScaleAttributeWins) {
  CostOpInterface op =
      parseFirstOp("%q: tensor<64x32xf32>",
                   "%0 = graph.attention %q, %q, %q {scale = 0.5 : f64} : "
                   "tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32> -> "
                   "tensor<64x32xf32>");
  ASSERT_TRUE(op);
  EXPECT_DOUBLE_EQ(cast<AttentionOp>(op.getOperation()).getEffectiveScale(),
                   0.5);
}

TEST_F(GraphCostTest, NormalizationsAndLoss) {
  CostOpInterface softmax =
      parseFirstOp("%x: tensor<4x10xf32>",
                   "%0 = graph.softmax %x {axis = 1 : i64} : tensor<4x10xf32>");
  ASSERT_TRUE(softmax);
  EXPECT_EQ(softmax.getFlops(), 5 * 40);
  CostOpInterface layerNorm = parseFirstOp(
      "%x: tensor<4x10xf32>, %g: tensor<10xf32>",
      "%0 = graph.layer_norm %x, %g, %g : tensor<4x10xf32>, tensor<10xf32>");
  ASSERT_TRUE(layerNorm);
  EXPECT_EQ(layerNorm.getFlops(), 8 * 40);
  CostOpInterface loss = parseFirstOp(
      "%x: tensor<4x10xf32>, %t: tensor<4xi64>",
      "%0 = graph.cross_entropy %x, %t : tensor<4x10xf32>, tensor<4xi64> -> "
      "tensor<f32>");
  ASSERT_TRUE(loss);
  EXPECT_EQ(loss.getFlops(), 5 * 40);
  // logits 160 bytes + i64 targets 32 bytes + the f32 scalar 4 bytes.
  EXPECT_EQ(loss.getBytesAccessed(), 160 + 32 + 4);
}

TEST_F(GraphCostTest, SubByteElementsRoundUpToBytes) {
  CostOpInterface cast =
      parseFirstOp("%x: tensor<8xf32>",
                   "%0 = graph.cast %x : tensor<8xf32> -> tensor<8xi1>");
  ASSERT_TRUE(cast);
  EXPECT_EQ(cast.getFlops(), 0);
  EXPECT_EQ(cast.getBytesAccessed(), 8 * 4 + 8 * 1);
}

} // namespace
