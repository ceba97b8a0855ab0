//===- InterpreterTest.cpp - Tests of the reference interpreter -----------===//
//
// Part of Kiln. Elementwise, linear-algebra and shape ops, casts, errors and
// initializers, against hand-worked values and naive loops written here
// independently of the interpreter's code.
//
//===----------------------------------------------------------------------===//

#include "InterpreterTestUtil.h"

#include "kiln/Philox.h"

using namespace kiln::interp;
using namespace kiln::interp::test;

namespace {

using InterpreterTest = InterpreterFixture;

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, UnaryOpsHandWorked) {
  const char *ir = R"mlir(
    func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>) {
      %0 = graph.neg %x : tensor<4xf32>
      %1 = graph.exp %x : tensor<4xf32>
      %2 = graph.sqrt %x : tensor<4xf32>
      %3 = graph.rsqrt %x : tensor<4xf32>
      %4 = graph.log %x : tensor<4xf32>
      %5 = graph.relu %0 : tensor<4xf32>
      %6 = graph.tanh %x : tensor<4xf32>
      return %0, %1, %2, %3, %4, %5, %6 : tensor<4xf32>, tensor<4xf32>,
          tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
          tensor<4xf32>
    }
  )mlir";
  std::vector<Tensor> r = run(ir, {f32({4}, {1, 4, 0.25, 16})});
  ASSERT_EQ(r.size(), 7u);
  expectTensorNear(r[0], {4}, {-1, -4, -0.25, -16}, 0);
  expectTensorNear(
      r[1], {4},
      {M_E, 54.598150033144236, 1.2840254166877414, 8886110.520507872}, 1e-6);
  expectTensorNear(r[2], {4}, {1, 2, 0.5, 4}, 0);
  expectTensorNear(r[3], {4}, {1, 0.5, 2, 0.25}, 0);
  expectTensorNear(r[4], {4}, {0, 2 * M_LN2, -2 * M_LN2, 4 * M_LN2}, 1e-7);
  expectTensorNear(r[5], {4}, {0, 0, 0, 0}, 0);
  expectTensorNear(r[6], {4},
                   {0.7615941559557649, 0.999329299739067, 0.24491866240370913,
                    0.9999999999999747},
                   1e-7);
}

TEST_F(InterpreterTest, ReluKeepsPositivesAndGeluMatchesItsFormula) {
  const char *ir = R"mlir(
    func.func @forward(%x: tensor<5xf64>) -> (tensor<5xf64>, tensor<5xf64>) {
      %0 = graph.relu %x : tensor<5xf64>
      %1 = graph.gelu %x : tensor<5xf64>
      return %0, %1 : tensor<5xf64>, tensor<5xf64>
    }
  )mlir";
  std::vector<Tensor> r = run(ir, {f64({5}, {-2, -0.5, 0, 0.5, 3})});
  ASSERT_EQ(r.size(), 2u);
  expectTensorNear(r[0], {5}, {0, 0, 0, 0.5, 3}, 0);
  // GELU (tanh form) values, from 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715
  // x^3))) evaluated with Python's math module.
  expectTensorNear(r[1], {5},
                   {-0.04540230591222494, -0.15428599017485606, 0.0,
                    0.34571400982514394, 2.996362607918227},
                   1e-14);
}

TEST_F(InterpreterTest, BinaryOpsF64) {
  const char *ir = R"mlir(
    func.func @forward(%a: tensor<2x2xf64>, %b: tensor<2x2xf64>)
        -> (tensor<2x2xf64>, tensor<2x2xf64>, tensor<2x2xf64>,
            tensor<2x2xf64>, tensor<2x2xf64>) {
      %0 = graph.add %a, %b : tensor<2x2xf64>
      %1 = graph.sub %a, %b : tensor<2x2xf64>
      %2 = graph.mul %a, %b : tensor<2x2xf64>
      %3 = graph.div %a, %b : tensor<2x2xf64>
      %4 = graph.pow %a, %b : tensor<2x2xf64>
      return %0, %1, %2, %3, %4 : tensor<2x2xf64>, tensor<2x2xf64>,
          tensor<2x2xf64>, tensor<2x2xf64>, tensor<2x2xf64>
    }
  )mlir";
  std::vector<Tensor> r =
      run(ir, {f64({2, 2}, {2, 9, -3, 0.5}), f64({2, 2}, {10, 0.5, 2, -1})});
  ASSERT_EQ(r.size(), 5u);
  expectTensorNear(r[0], {2, 2}, {12, 9.5, -1, -0.5}, 0);
  expectTensorNear(r[1], {2, 2}, {-8, 8.5, -5, 1.5}, 0);
  expectTensorNear(r[2], {2, 2}, {20, 4.5, -6, -0.5}, 0);
  expectTensorNear(r[3], {2, 2}, {0.2, 18, -1.5, -0.5}, 0);
  expectTensorNear(r[4], {2, 2}, {1024, 3, 9, 2}, 0);
}

TEST_F(InterpreterTest, BF16ResultsAreRoundedToNearestEven) {
  // 1 + 2^-8 is halfway between the bf16 values 1 and 1 + 2^-7: ties go to
  // the even mantissa, 1. 1 + 3 * 2^-8 goes up to 1 + 2^-6.
  const char *ir = R"mlir(
    func.func @forward(%a: tensor<2xbf16>, %b: tensor<2xbf16>)
        -> tensor<2xbf16> {
      %0 = graph.add %a, %b : tensor<2xbf16>
      return %0 : tensor<2xbf16>
    }
  )mlir";
  Tensor a = Tensor::fromDoubles(ElementType::BF16, {2}, {1, 1});
  Tensor b = Tensor::fromDoubles(ElementType::BF16, {2},
                                 {std::ldexp(1, -8), 3 * std::ldexp(1, -8)});
  EXPECT_EQ(b.getDouble(1), 3 * std::ldexp(1, -8)); // exact in bf16
  std::vector<Tensor> r = run(ir, {a, b});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].getDouble(0), 1.0);
  EXPECT_EQ(r[0].getDouble(1), 1.0 + std::ldexp(1, -6));
}

TEST_F(InterpreterTest, CastRoundsAndTruncates) {
  const char *ir = R"mlir(
    func.func @forward(%x: tensor<4xf64>, %i: tensor<3xi64>)
        -> (tensor<4xf32>, tensor<4xi32>, tensor<3xf32>, tensor<3xi32>,
            tensor<4xbf16>) {
      %0 = graph.cast %x : tensor<4xf64> -> tensor<4xf32>
      %1 = graph.cast %x : tensor<4xf64> -> tensor<4xi32>
      %2 = graph.cast %i : tensor<3xi64> -> tensor<3xf32>
      %3 = graph.cast %i : tensor<3xi64> -> tensor<3xi32>
      %4 = graph.cast %x : tensor<4xf64> -> tensor<4xbf16>
      return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xi32>, tensor<3xf32>,
          tensor<3xi32>, tensor<4xbf16>
    }
  )mlir";
  const double third = 1.0 / 3.0;
  const double tie = 1 + std::ldexp(1, -24); // halfway between two f32s
  std::vector<Tensor> r = run(ir, {f64({4}, {2.7, -2.7, third, tie}),
                                   i64({3}, {16777217, -5, (1ll << 32) + 7})});
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0].getDouble(2), static_cast<double>(static_cast<float>(third)));
  EXPECT_EQ(r[0].getDouble(3), 1.0); // the tie goes to the even mantissa
  EXPECT_EQ(values(r[1]), (std::vector<double>{2, -2, 0, 1}));
  // 2^24 + 1 is a tie in f32 and rounds to even, 2^24; near 2^32 the f32
  // spacing is 512, so 2^32 + 7 rounds to 2^32.
  EXPECT_EQ(values(r[2]), (std::vector<double>{16777216, -5, 4294967296.0}));
  // i64 -> i32 keeps the low 32 bits.
  EXPECT_EQ(r[3].getInt(2), 7);
  // bf16 has 8 significant bits: 2.7 -> 2.703125, 1/3 -> 0.333984375.
  EXPECT_EQ(r[4].getDouble(0), 2.703125);
  EXPECT_EQ(r[4].getDouble(2), 0.333984375);
  EXPECT_EQ(r[4].getDouble(3), 1.0);
}

TEST_F(InterpreterTest, F16CastRoundsAndOverflowsToInfinity) {
  const char *ir = R"mlir(
    func.func @forward(%x: tensor<3xf32>) -> tensor<3xf16> {
      %0 = graph.cast %x : tensor<3xf32> -> tensor<3xf16>
      return %0 : tensor<3xf16>
    }
  )mlir";
  // f16 has 11 significant bits: 1/3 -> 1365 / 4096; the largest finite
  // f16 is 65504, and 70000 is past the rounding boundary 65520.
  std::vector<Tensor> r = run(ir, {f32({3}, {1.0 / 3.0, 70000, -0.5})});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].getDouble(0), 1365.0 / 4096.0);
  EXPECT_EQ(r[0].getDouble(1), INFINITY);
  EXPECT_EQ(r[0].getDouble(2), -0.5);
}

TEST_F(InterpreterTest, CastOfNaNToIntegerIsAnError) {
  const char *ir = R"mlir(
    func.func @forward(%x: tensor<2xf32>) -> tensor<2xi32> {
      %0 = graph.cast %x : tensor<2xf32> -> tensor<2xi32> loc("m.kiln":2:5)
      return %0 : tensor<2xi32>
    }
  )mlir";
  expectError(ir, {f32({2}, {1, NAN})},
              {"m.kiln:2:5", "graph.cast", "element 1", "does not fit in i32"});
}

TEST_F(InterpreterTest, ConstantsOfEveryKind) {
  const char *ir = R"mlir(
    func.func @forward() -> (tensor<2xf32>, tensor<f64>, tensor<3xi32>) {
      %0 = graph.constant dense<[1.5, -2.0]> : tensor<2xf32>
      %1 = graph.constant dense<0.25> : tensor<f64>
      %2 = graph.constant dense<[1, -2, 3]> : tensor<3xi32>
      return %0, %1, %2 : tensor<2xf32>, tensor<f64>, tensor<3xi32>
    }
  )mlir";
  std::vector<Tensor> r = run(ir, {});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(values(r[0]), (std::vector<double>{1.5, -2}));
  EXPECT_EQ(r[1].getRank(), 0);
  EXPECT_EQ(values(r[1]), (std::vector<double>{0.25}));
  EXPECT_EQ(values(r[2]), (std::vector<double>{1, -2, 3}));
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

/// C[b, i, j] = sum_p A[b, i, p] B[b, p, j], written independently of the
/// interpreter: operands given as explicit [batch][rows][cols] accessors.
template <typename A, typename B>
std::vector<double> naiveMatmul(int64_t batches, int64_t m, int64_t n,
                                int64_t k, A a, B b) {
  std::vector<double> c;
  for (int64_t batch = 0; batch < batches; ++batch)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += a(batch, i, p) * b(batch, p, j);
        c.push_back(sum);
      }
  return c;
}

TEST_F(InterpreterTest, MatmulHandWorked) {
  const char *ir = R"mlir(
    func.func @forward(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>)
        -> tensor<2x2xf32> {
      %0 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
      return %0 : tensor<2x2xf32>
    }
  )mlir";
  std::vector<Tensor> r = run(ir, {f32({2, 3}, {1, 2, 3, 4, 5, 6}),
                                   f32({3, 2}, {7, 8, 9, 10, 11, 12})});
  ASSERT_EQ(r.size(), 1u);
  expectTensorNear(r[0], {2, 2}, {58, 64, 139, 154}, 0);
}

TEST_F(InterpreterTest, MatmulTransposesAndBroadcastBatchF64) {
  // lhs [2, 1, K=3, M=2] with transpose_lhs, rhs [3, N=4, K=3] with
  // transpose_rhs: batch dims broadcast to [2, 3].
  const char *ir = R"mlir(
    func.func @forward(%a: tensor<2x1x3x2xf64>, %b: tensor<3x4x3xf64>)
        -> tensor<2x3x2x4xf64> {
      %0 = graph.matmul %a, %b {transpose_lhs, transpose_rhs}
          : tensor<2x1x3x2xf64>, tensor<3x4x3xf64> -> tensor<2x3x2x4xf64>
      return %0 : tensor<2x3x2x4xf64>
    }
  )mlir";
  Tensor a = pattern(ElementType::F64, {2, 1, 3, 2}, 0.3);
  Tensor b = pattern(ElementType::F64, {3, 4, 3}, 1.1);
  std::vector<Tensor> r = run(ir, {a, b});
  ASSERT_EQ(r.size(), 1u);
  // Batch (x, y) of the result multiplies a[x, 0]^T by b[y]^T.
  auto lhs = [&](int64_t batch, int64_t i, int64_t p) {
    int64_t x = batch / 3;
    return a.getDouble(x * 6 + p * 2 + i);
  };
  auto rhs = [&](int64_t batch, int64_t p, int64_t j) {
    int64_t y = batch % 3;
    return b.getDouble(y * 12 + j * 3 + p);
  };
  expectTensorNear(r[0], {2, 3, 2, 4}, naiveMatmul(6, 2, 4, 3, lhs, rhs),
                   1e-15);
}

TEST_F(InterpreterTest, MatmulSharesARank2RhsAcrossBatches) {
  const char *ir = R"mlir(
    func.func @forward(%a: tensor<3x2x5xf32>, %b: tensor<5x4xf32>)
        -> tensor<3x2x4xf32> {
      %0 = graph.matmul %a, %b : tensor<3x2x5xf32>, tensor<5x4xf32> -> tensor<3x2x4xf32>
      return %0 : tensor<3x2x4xf32>
    }
  )mlir";
  Tensor a = pattern(ElementType::F32, {3, 2, 5}, 0.7);
  Tensor b = pattern(ElementType::F32, {5, 4}, 2.0);
  std::vector<Tensor> r = run(ir, {a, b});
  ASSERT_EQ(r.size(), 1u);
  auto lhs = [&](int64_t batch, int64_t i, int64_t p) {
    return a.getDouble(batch * 10 + i * 5 + p);
  };
  auto rhs = [&](int64_t, int64_t p, int64_t j) {
    return b.getDouble(p * 4 + j);
  };
  expectTensorNear(r[0], {3, 2, 4}, naiveMatmul(3, 2, 4, 5, lhs, rhs), 1e-6);
}

//===----------------------------------------------------------------------===//
// Shape ops and reductions
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, BroadcastAlignsFromTheRight) {
  const char *ir = R"mlir(
    func.func @forward(%v: tensor<3xf32>, %c: tensor<2x1xf32>)
        -> (tensor<2x3xf32>, tensor<2x3xf32>) {
      %0 = graph.broadcast %v : tensor<3xf32> -> tensor<2x3xf32>
      %1 = graph.broadcast %c : tensor<2x1xf32> -> tensor<2x3xf32>
      return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
    }
  )mlir";
  std::vector<Tensor> r = run(ir, {f32({3}, {1, 2, 3}), f32({2, 1}, {7, 8})});
  ASSERT_EQ(r.size(), 2u);
  expectTensorNear(r[0], {2, 3}, {1, 2, 3, 1, 2, 3}, 0);
  expectTensorNear(r[1], {2, 3}, {7, 7, 7, 8, 8, 8}, 0);
}

TEST_F(InterpreterTest, ReduceSumMaxMean) {
  const char *ir = R"mlir(
    func.func @forward(%x: tensor<2x3x2xf64>)
        -> (tensor<2x2xf64>, tensor<2x1x1xf64>, tensor<3xf64>, tensor<f64>) {
      %0 = graph.reduce sum %x {axes = array<i64: 1>} : tensor<2x3x2xf64> -> tensor<2x2xf64>
      %1 = graph.reduce max %x {axes = array<i64: 1, 2>, keepdims} : tensor<2x3x2xf64> -> tensor<2x1x1xf64>
      %2 = graph.reduce mean %x {axes = array<i64: 0, 2>} : tensor<2x3x2xf64> -> tensor<3xf64>
      %3 = graph.reduce sum %x {axes = array<i64: 0, 1, 2>} : tensor<2x3x2xf64> -> tensor<f64>
      return %0, %1, %2, %3 : tensor<2x2xf64>, tensor<2x1x1xf64>, tensor<3xf64>, tensor<f64>
    }
  )mlir";
  // x[a][b][c] = 6a + 2b + c, except x[1][0][1] = 100.
  std::vector<double> x;
  for (int i = 0; i < 12; ++i)
    x.push_back(i);
  x[7] = 100;
  std::vector<Tensor> r = run(ir, {f64({2, 3, 2}, x)});
  ASSERT_EQ(r.size(), 4u);
  expectTensorNear(r[0], {2, 2},
                   {0 + 2 + 4, 1 + 3 + 5, 6 + 8 + 10, 100 + 9 + 11}, 0);
  expectTensorNear(r[1], {2, 1, 1}, {5, 100}, 0);
  expectTensorNear(
      r[2], {3},
      {(0 + 1 + 6 + 100) / 4.0, (2 + 3 + 8 + 9) / 4.0, (4 + 5 + 10 + 11) / 4.0},
      0);
  expectTensorNear(r[3], {}, {66 - 7 + 100}, 0);
}

TEST_F(InterpreterTest, ReshapeTransposeSlice) {
  const char *ir = R"mlir(
    func.func @forward(%x: tensor<2x3x4xf32>)
        -> (tensor<6x4xf32>, tensor<4x2x3xf32>, tensor<1x2x2xf32>) {
      %0 = graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
      %1 = graph.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
      %2 = graph.slice %x {offsets = array<i64: 1, 1, 2>} : tensor<2x3x4xf32> -> tensor<1x2x2xf32>
      return %0, %1, %2 : tensor<6x4xf32>, tensor<4x2x3xf32>, tensor<1x2x2xf32>
    }
  )mlir";
  std::vector<double> x;
  for (int i = 0; i < 24; ++i)
    x.push_back(i);
  std::vector<Tensor> r = run(ir, {f32({2, 3, 4}, x)});
  ASSERT_EQ(r.size(), 3u);
  expectTensorNear(r[0], {6, 4}, x, 0);
  // result[c][a][b] = x[a][b][c] = 12a + 4b + c.
  std::vector<double> transposed;
  for (int c = 0; c < 4; ++c)
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 3; ++b)
        transposed.push_back(12 * a + 4 * b + c);
  expectTensorNear(r[1], {4, 2, 3}, transposed, 0);
  // x[1][1..2][2..3].
  expectTensorNear(r[2], {1, 2, 2}, {18, 19, 22, 23}, 0);
}

TEST_F(InterpreterTest, ConcatAndSplitAreInverse) {
  const char *ir = R"mlir(
    func.func @forward(%a: tensor<2x1xi64>, %b: tensor<2x2xi64>)
        -> (tensor<2x3xi64>, tensor<2x2xi64>, tensor<2x1xi64>) {
      %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x1xi64>, tensor<2x2xi64>) -> tensor<2x3xi64>
      %1, %2 = graph.split %0 {axis = 1 : i64} : tensor<2x3xi64> -> (tensor<2x2xi64>, tensor<2x1xi64>)
      return %0, %1, %2 : tensor<2x3xi64>, tensor<2x2xi64>, tensor<2x1xi64>
    }
  )mlir";
  // Values past 2^53 check that integer data moves without a float detour.
  const int64_t big = (1ll << 60) + 1;
  std::vector<Tensor> r =
      run(ir, {i64({2, 1}, {1, 4}), i64({2, 2}, {2, 3, 5, big})});
  ASSERT_EQ(r.size(), 3u);
  std::vector<int64_t> joined, left, right;
  for (int64_t i = 0; i < 6; ++i)
    joined.push_back(r[0].getInt(i));
  for (int64_t i = 0; i < 4; ++i)
    left.push_back(r[1].getInt(i));
  for (int64_t i = 0; i < 2; ++i)
    right.push_back(r[2].getInt(i));
  EXPECT_EQ(joined, (std::vector<int64_t>{1, 2, 3, 4, 5, big}));
  EXPECT_EQ(left, (std::vector<int64_t>{1, 2, 4, 5}));
  EXPECT_EQ(right, (std::vector<int64_t>{3, big}));
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, ArgumentsMustMatchTheSignature) {
  const char *ir = R"mlir(
    func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
      return %x : tensor<2xf32>
    }
  )mlir";
  expectError(ir, {f32({3}, {1, 2, 3})},
              {"argument 0", "tensor<2xf32>", "got tensor<3xf32>"});
  expectError(ir, {f64({2}, {1, 2})}, {"got tensor<2xf64>"});
  expectError(ir, {}, {"takes 1 arguments, 0 given"});
}

TEST_F(InterpreterTest, UnsupportedOpsAreReportedAtTheirLocation) {
  const char *ir = R"mlir(
    func.func private @helper(tensor<2xf32>) -> tensor<2xf32>
    func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
      %0 = func.call @helper(%x) : (tensor<2xf32>) -> tensor<2xf32> loc("net.kiln":7:3)
      return %0 : tensor<2xf32>
    }
  )mlir";
  expectError(ir, {f32({2}, {1, 2})},
              {"net.kiln:7:3", "'func.call' is not supported"});
}

TEST_F(InterpreterTest, UseBeforeDefinitionInUnverifiedIRIsAnError) {
  // The verifier's dominance check rejects this; the interpreter must not
  // read an unbound value when given it anyway.
  const char *ir = R"mlir(
    func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
      %0 = graph.neg %1 : tensor<2xf32> loc("u.kiln":1:2)
      %1 = graph.neg %x : tensor<2xf32>
      return %0 : tensor<2xf32>
    }
  )mlir";
  expectError(ir, {f32({2}, {1, 2})},
              {"u.kiln:1:2", "uses a value that is not computed before it"}, {},
              /*verify=*/false);
}

//===----------------------------------------------------------------------===//
// Initializers
//===----------------------------------------------------------------------===//

const char *kParamsIR = R"mlir(
  func.func @forward(
      %w: tensor<64x32xf32> {graph.param = "w", graph.init = {kind = "normal", std = 2.0e-02 : f64}},
      %u: tensor<1000xf64> {graph.param = "u", graph.init = {kind = "uniform", low = -3.0 : f64, high = 5.0 : f64}},
      %g: tensor<4xf32> {graph.param = "g", graph.init = {kind = "ones"}},
      %b: tensor<4xf32> {graph.param = "b", graph.init = {kind = "zeros"}},
      %c: tensor<2xf64> {graph.param = "c", graph.init = {kind = "constant", value = 0.75 : f64}},
      %x: tensor<4xf32> {graph.input = "x"}) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
)mlir";

TEST_F(InterpreterTest, InitializersMaterializeEveryParameter) {
  mlir::func::FuncOp fn = parse(kParamsIR);
  ASSERT_TRUE(fn);
  auto params = initializeParameters(fn, /*seed=*/1234);
  ASSERT_TRUE(static_cast<bool>(params)) << llvm::toString(params.takeError());
  ASSERT_EQ(params->size(), 5u);
  EXPECT_EQ((*params)[0].name, "w");
  EXPECT_EQ((*params)[4].argumentIndex, 4u);
  EXPECT_EQ(values((*params)[2].value), (std::vector<double>(4, 1.0)));
  EXPECT_EQ(values((*params)[3].value), (std::vector<double>(4, 0.0)));
  EXPECT_EQ(values((*params)[4].value), (std::vector<double>(2, 0.75)));

  // normal(std): element e is std * the Philox normal of (seed, init step,
  // hash("w"), e), rounded to f32.
  const Tensor &w = (*params)[0].value;
  uint32_t stream = kiln::philox::hashName("w", 1);
  double sum = 0, squares = 0;
  for (int64_t e = 0; e < w.getNumElements(); ++e) {
    double z = kiln::philox::normalFor(1234, kiln::philox::kInitializerStep,
                                       stream, e);
    EXPECT_EQ(w.getDouble(e),
              static_cast<double>(static_cast<float>(0.02 * z)));
    sum += w.getDouble(e);
    squares += w.getDouble(e) * w.getDouble(e);
  }
  double n = w.getNumElements();
  EXPECT_NEAR(sum / n, 0.0, 5 * 0.02 / std::sqrt(n));
  EXPECT_NEAR(std::sqrt(squares / n), 0.02, 0.02 * 5 * std::sqrt(0.5 / n));

  const Tensor &u = (*params)[1].value;
  double lowest = 1e9, highest = -1e9;
  for (double v : values(u)) {
    lowest = std::min(lowest, v);
    highest = std::max(highest, v);
  }
  EXPECT_GE(lowest, -3.0);
  EXPECT_LT(highest, 5.0);
  EXPECT_LT(lowest, -2.9); // 1000 draws cover the range
  EXPECT_GT(highest, 4.9);
}

TEST_F(InterpreterTest, InitializersDependOnTheNameNotThePosition) {
  // "w" is argument 0 above and argument 1 here, next to a new parameter.
  const char *reordered = R"mlir(
    func.func @forward(
        %v: tensor<64x32xf32> {graph.param = "v", graph.init = {kind = "normal", std = 2.0e-02 : f64}},
        %w: tensor<64x32xf32> {graph.param = "w", graph.init = {kind = "normal", std = 2.0e-02 : f64}})
        -> tensor<64x32xf32> {
      return %w : tensor<64x32xf32>
    }
  )mlir";
  auto first = initializeParameters(parse(kParamsIR), 99);
  auto second = initializeParameters(parse(reordered), 99);
  auto reseeded = initializeParameters(parse(reordered), 100);
  ASSERT_TRUE(first && second && reseeded);
  EXPECT_EQ(values((*first)[0].value), values((*second)[1].value));
  EXPECT_NE(values((*second)[0].value), values((*second)[1].value));
  EXPECT_NE(values((*second)[1].value), values((*reseeded)[1].value));
}

TEST_F(InterpreterTest, ParameterWithoutInitializerIsAnError) {
  const char *ir = R"mlir(
    func.func @forward(%w: tensor<2xf32> {graph.param = "w"} loc("p.kiln":3:9))
        -> tensor<2xf32> {
      return %w : tensor<2xf32>
    }
  )mlir";
  auto params = initializeParameters(parse(ir), 0);
  ASSERT_FALSE(static_cast<bool>(params));
  std::string message = llvm::toString(params.takeError());
  EXPECT_NE(message.find("p.kiln:3:9"), std::string::npos) << message;
  EXPECT_NE(message.find("'w' has no 'graph.init'"), std::string::npos)
      << message;
}

} // namespace
