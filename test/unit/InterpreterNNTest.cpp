//===- InterpreterNNTest.cpp - Interpreter tests of the NN ops ------------===//
//
// Part of Kiln. embedding, layer_norm, softmax, attention, cross_entropy and
// dropout against closed forms and naive computations written here.
//
//===----------------------------------------------------------------------===//

#include "InterpreterTestUtil.h"

#include "kiln/Philox.h"

using namespace kiln::interp;
using namespace kiln::interp::test;

namespace {

using InterpreterNNTest = InterpreterFixture;

TEST_F(InterpreterNNTest, EmbeddingGathersRows) {
  const char *ir = R"mlir(
    func.func @forward(%t: tensor<3x2xf32>, %ids: tensor<2x2xi32>)
        -> tensor<2x2x2xf32> {
      %0 = graph.embedding %t, %ids : tensor<3x2xf32>, tensor<2x2xi32> -> tensor<2x2x2xf32>
      return %0 : tensor<2x2x2xf32>
    }
  )mlir";
  std::vector<Tensor> r = run(
      ir, {f32({3, 2}, {10, 11, 20, 21, 30, 31}), i32({2, 2}, {2, 0, 1, 2})});
  ASSERT_EQ(r.size(), 1u);
  expectTensorNear(r[0], {2, 2, 2}, {30, 31, 10, 11, 20, 21, 30, 31}, 0);
}

TEST_F(InterpreterNNTest, EmbeddingIdOutOfRangeIsALocatedError) {
  const char *ir = R"mlir(
    func.func @forward(%t: tensor<3x2xf32>, %ids: tensor<2xi64>)
        -> tensor<2x2xf32> {
      %0 = graph.embedding %t, %ids : tensor<3x2xf32>, tensor<2xi64> -> tensor<2x2xf32> loc("gpt.kiln":12:7)
      return %0 : tensor<2x2xf32>
    }
  )mlir";
  Tensor table = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  expectError(ir, {table, i64({2}, {0, 3})},
              {"gpt.kiln:12:7", "'graph.embedding'",
               "id 3 at index 1 is outside [0, 3)"});
  expectError(ir, {table, i64({2}, {-1, 0})}, {"id -1 at index 0"});
}

TEST_F(InterpreterNNTest, LayerNormHandWorkedF64) {
  const char *ir = R"mlir(
    func.func @forward(%x: tensor<2x4xf64>, %g: tensor<4xf64>, %b: tensor<4xf64>)
        -> tensor<2x4xf64> {
      %0 = graph.layer_norm %x, %g, %b {eps = 2.5e-01 : f64} : tensor<2x4xf64>, tensor<4xf64>
      return %0 : tensor<2x4xf64>
    }
  )mlir";
  // Row 0: mean 2.5, biased variance 1.25, so 1/sqrt(1.25 + 0.25).
  // Row 1 is constant: it normalizes to 0 and leaves beta.
  std::vector<Tensor> r =
      run(ir, {f64({2, 4}, {1, 2, 3, 4, 2, 2, 2, 2}), f64({4}, {1, 2, 1, 2}),
               f64({4}, {0, 0, 1, 1})});
  ASSERT_EQ(r.size(), 1u);
  double s = 1 / std::sqrt(1.5);
  expectTensorNear(
      r[0], {2, 4},
      {-1.5 * s, -0.5 * 2 * s, 0.5 * s + 1, 1.5 * 2 * s + 1, 0, 0, 1, 1},
      1e-15);
}

TEST_F(InterpreterNNTest, LayerNormUsesTheDefaultEps) {
  const char *ir = R"mlir(
    func.func @forward(%x: tensor<1x2xf32>, %g: tensor<2xf32>, %b: tensor<2xf32>)
        -> tensor<1x2xf32> {
      %0 = graph.layer_norm %x, %g, %b : tensor<1x2xf32>, tensor<2xf32>
      return %0 : tensor<1x2xf32>
    }
  )mlir";
  // x = [-0.01, 0.01]: variance 1e-4, so y = +-0.01 / sqrt(1e-4 + 1e-5).
  std::vector<Tensor> r =
      run(ir, {f32({1, 2}, {-0.01, 0.01}), f32({2}, {1, 1}), f32({2}, {0, 0})});
  ASSERT_EQ(r.size(), 1u);
  double y = 0.01 / std::sqrt(1.1e-4);
  expectTensorNear(r[0], {1, 2}, {-y, y}, 1e-6);
}

TEST_F(InterpreterNNTest, SoftmaxClosedForms) {
  const char *ir = R"mlir(
    func.func @forward(%x: tensor<2x3xf32>, %y: tensor<3x2xf64>)
        -> (tensor<2x3xf32>, tensor<3x2xf64>) {
      %0 = graph.softmax %x {axis = 1 : i64} : tensor<2x3xf32>
      %1 = graph.softmax %y {axis = 0 : i64} : tensor<3x2xf64>
      return %0, %1 : tensor<2x3xf32>, tensor<3x2xf64>
    }
  )mlir";
  // softmax(c + [0, ln 2, ln 3]) = [1/6, 2/6, 3/6] for any c; c = 1000
  // overflows exp() unless the max is subtracted.
  const double l2 = std::log(2.0), l3 = std::log(3.0);
  std::vector<Tensor> r =
      run(ir, {f32({2, 3}, {0, l2, l3, 1000, 1000 + l2, 1000 + l3}),
               f64({3, 2}, {0, 5, l2, 5, l3, 5})});
  ASSERT_EQ(r.size(), 2u);
  expectTensorNear(r[0], {2, 3},
                   {1 / 6.0, 2 / 6.0, 3 / 6.0, 1 / 6.0, 2 / 6.0, 3 / 6.0},
                   1e-4); // 1000 + ln 2 is only representable to ~6e-5 in f32
  expectTensorNear(r[1], {3, 2},
                   {1 / 6.0, 1 / 3.0, 2 / 6.0, 1 / 3.0, 3 / 6.0, 1 / 3.0},
                   1e-15);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

TEST_F(InterpreterNNTest, AttentionWithEqualScoresAveragesValues) {
  // q = 0 makes every score 0: non-causal outputs are the mean of all value
  // rows, causal output i the mean of rows 0..i.
  const char *ir = R"mlir(
    func.func @forward(%q: tensor<1x3x2xf64>, %k: tensor<1x3x2xf64>, %v: tensor<1x3x2xf64>)
        -> (tensor<1x3x2xf64>, tensor<1x3x2xf64>) {
      %0 = graph.attention %q, %k, %v : tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x3x2xf64> -> tensor<1x3x2xf64>
      %1 = graph.attention %q, %k, %v {causal} : tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x3x2xf64> -> tensor<1x3x2xf64>
      return %0, %1 : tensor<1x3x2xf64>, tensor<1x3x2xf64>
    }
  )mlir";
  std::vector<Tensor> r = run(ir, {f64({1, 3, 2}, {0, 0, 0, 0, 0, 0}),
                                   pattern(ElementType::F64, {1, 3, 2}, 0.5),
                                   f64({1, 3, 2}, {1, 10, 2, 20, 6, 60})});
  ASSERT_EQ(r.size(), 2u);
  expectTensorNear(r[0], {1, 3, 2}, {3, 30, 3, 30, 3, 30}, 1e-15);
  expectTensorNear(r[1], {1, 3, 2}, {1, 10, 1.5, 15, 3, 30}, 1e-15);
}

/// softmax(q k^T * scale, causal) v per batch, in double, written from the
/// definition: masked scores are excluded from the softmax.
std::vector<double> naiveAttention(const Tensor &q, const Tensor &k,
                                   const Tensor &v, int64_t batches, int64_t t,
                                   int64_t dk, int64_t dv, double scale,
                                   bool causal) {
  std::vector<double> out;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < t; ++i) {
      std::vector<double> p(t, 0.0);
      double maxScore = -INFINITY, total = 0;
      for (int64_t j = 0; j < t; ++j) {
        if (causal && j > i)
          continue;
        double dot = 0;
        for (int64_t d = 0; d < dk; ++d)
          dot += q.getDouble((b * t + i) * dk + d) *
                 k.getDouble((b * t + j) * dk + d);
        p[j] = dot * scale;
        maxScore = std::max(maxScore, p[j]);
      }
      for (int64_t j = 0; j < t; ++j) {
        p[j] = causal && j > i ? 0.0 : std::exp(p[j] - maxScore);
        total += p[j];
      }
      for (int64_t d = 0; d < dv; ++d) {
        double sum = 0;
        for (int64_t j = 0; j < t; ++j)
          sum += p[j] / total * v.getDouble((b * t + j) * dv + d);
        out.push_back(sum);
      }
    }
  return out;
}

TEST_F(InterpreterNNTest, AttentionMatchesANaiveComputation) {
  const char *ir = R"mlir(
    func.func @forward(%q: tensor<2x2x4x3xELT>, %k: tensor<2x2x4x3xELT>, %v: tensor<2x2x4x5xELT>)
        -> (tensor<2x2x4x5xELT>, tensor<2x2x4x5xELT>) {
      %0 = graph.attention %q, %k, %v : tensor<2x2x4x3xELT>, tensor<2x2x4x3xELT>, tensor<2x2x4x5xELT> -> tensor<2x2x4x5xELT>
      %1 = graph.attention %q, %k, %v {causal, scale = 1.5 : f64} : tensor<2x2x4x3xELT>, tensor<2x2x4x3xELT>, tensor<2x2x4x5xELT> -> tensor<2x2x4x5xELT>
      return %0, %1 : tensor<2x2x4x5xELT>, tensor<2x2x4x5xELT>
    }
  )mlir";
  for (ElementType type : {ElementType::F32, ElementType::F64}) {
    std::string source = ir;
    std::string name = getElementTypeName(type).str();
    for (size_t at; (at = source.find("ELT")) != std::string::npos;)
      source.replace(at, 3, name);
    Tensor q = pattern(type, {2, 2, 4, 3}, 0.1, 2.0);
    Tensor k = pattern(type, {2, 2, 4, 3}, 0.9, 2.0);
    Tensor v = pattern(type, {2, 2, 4, 5}, 2.3);
    std::vector<Tensor> r = run(source, {q, k, v});
    ASSERT_EQ(r.size(), 2u) << name;
    double tolerance = type == ElementType::F32 ? 2e-6 : 1e-14;
    expectTensorNear(
        r[0], {2, 2, 4, 5},
        naiveAttention(q, k, v, 4, 4, 3, 5, 1 / std::sqrt(3.0), false),
        tolerance);
    expectTensorNear(r[1], {2, 2, 4, 5},
                     naiveAttention(q, k, v, 4, 4, 3, 5, 1.5, true), tolerance);
  }
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

TEST_F(InterpreterNNTest, CrossEntropyClosedForms) {
  const char *ir = R"mlir(
    func.func @forward(%x: tensor<3x2xf64>, %t: tensor<3xi32>)
        -> (tensor<f64>, tensor<f64>) {
      %0 = graph.cross_entropy %x, %t : tensor<3x2xf64>, tensor<3xi32> -> tensor<f64>
      %1 = graph.cross_entropy %x, %t {label_smoothing = 2.0e-01 : f64} : tensor<3x2xf64>, tensor<3xi32> -> tensor<f64>
      return %0, %1 : tensor<f64>, tensor<f64>
    }
  )mlir";
  // Rows [0, ln 3] have probabilities [1/4, 3/4]; row [5, 5] has [1/2, 1/2].
  const double l3 = std::log(3.0);
  std::vector<Tensor> r =
      run(ir, {f64({3, 2}, {0, l3, 0, l3, 5, 5}), i32({3}, {1, 0, 0})});
  ASSERT_EQ(r.size(), 2u);
  const double logQuarter = std::log(0.25), logThreeQuarters = std::log(0.75);
  double plain = (-logThreeQuarters - logQuarter + std::log(2.0)) / 3;
  // Smoothing 0.2 over 2 classes: target weight 0.9, other 0.1.
  double smoothed =
      (-(0.1 * logQuarter + 0.9 * logThreeQuarters) -
       (0.9 * logQuarter + 0.1 * logThreeQuarters) + std::log(2.0)) /
      3;
  expectTensorNear(r[0], {}, {plain}, 1e-15);
  expectTensorNear(r[1], {}, {smoothed}, 1e-15);
}

TEST_F(InterpreterNNTest, CrossEntropyOverLeadingDimsF32) {
  const char *ir = R"mlir(
    func.func @forward(%x: tensor<2x3x5xf32>, %t: tensor<2x3xi64>) -> tensor<f32> {
      %0 = graph.cross_entropy %x, %t {label_smoothing = 1.0e-01 : f64} : tensor<2x3x5xf32>, tensor<2x3xi64> -> tensor<f32>
      return %0 : tensor<f32>
    }
  )mlir";
  Tensor logits = pattern(ElementType::F32, {2, 3, 5}, 0.4, 3.0);
  std::vector<int64_t> targets = {0, 4, 2, 3, 1, 4};
  std::vector<Tensor> r = run(ir, {logits, i64({2, 3}, targets)});
  ASSERT_EQ(r.size(), 1u);
  // -sum_j q_j log softmax(x)_j with q = 0.9 onehot + 0.1 / 5, in double.
  double total = 0;
  for (int row = 0; row < 6; ++row) {
    double z = 0;
    for (int c = 0; c < 5; ++c)
      z += std::exp(logits.getDouble(row * 5 + c));
    for (int c = 0; c < 5; ++c) {
      double q = 0.02 + (c == targets[row] ? 0.9 : 0.0);
      total -= q * std::log(std::exp(logits.getDouble(row * 5 + c)) / z);
    }
  }
  expectTensorNear(r[0], {}, {total / 6}, 1e-6);
}

TEST_F(InterpreterNNTest, CrossEntropyTargetOutOfRangeIsALocatedError) {
  const char *ir = R"mlir(
    func.func @forward(%x: tensor<2x3xf32>, %t: tensor<2xi32>) -> tensor<f32> {
      %0 = graph.cross_entropy %x, %t : tensor<2x3xf32>, tensor<2xi32> -> tensor<f32> loc("mlp.kiln":20:10)
      return %0 : tensor<f32>
    }
  )mlir";
  expectError(ir, {f32({2, 3}, {0, 0, 0, 0, 0, 0}), i32({2}, {2, 3})},
              {"mlp.kiln:20:10", "'graph.cross_entropy'",
               "target 3 of row 1 is outside [0, 3)"});
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

const char *kDropoutIR = R"mlir(
  func.func @forward(%x: tensor<10x100xf32>) -> (tensor<10x100xf32>, tensor<10x100xf32>) {
    %0 = graph.dropout %x {rate = 2.5e-01 : f64, stream = 3 : i64} : tensor<10x100xf32>
    %1 = graph.dropout %x {rate = 2.5e-01 : f64, stream = 4 : i64} : tensor<10x100xf32>
    return %0, %1 : tensor<10x100xf32>, tensor<10x100xf32>
  }
)mlir";

TEST_F(InterpreterNNTest, DropoutIsTheIdentityOutsideTraining) {
  Tensor x = pattern(ElementType::F32, {10, 100}, 0.2);
  std::vector<Tensor> r = run(kDropoutIR, {x}, RunOptions{7, 5, false});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(values(r[0]), values(x));
  EXPECT_EQ(values(r[1]), values(x));
}

TEST_F(InterpreterNNTest, DropoutMaskFollowsThePhiloxKeyingScheme) {
  Tensor x = pattern(ElementType::F32, {10, 100}, 0.2);
  RunOptions options{/*seed=*/77, /*step=*/5, /*training=*/true};
  std::vector<Tensor> r = run(kDropoutIR, {x}, options);
  ASSERT_EQ(r.size(), 2u);
  // Kept iff the element's word, keyed (seed, step, stream, element), has
  // top 24 bits >= 0.25 * 2^24; kept values are x * (1 / 0.75) in f32.
  const float scale = static_cast<float>(1 / 0.75);
  int kept = 0, agreeing = 0;
  for (int64_t e = 0; e < x.getNumElements(); ++e) {
    uint32_t word = kiln::philox::wordFor(77, 5, 3, e);
    bool keep = (word >> 8) >= (1u << 22);
    float expected = keep ? static_cast<float>(x.getDouble(e)) * scale : 0.0f;
    EXPECT_EQ(r[0].getDouble(e), expected) << "element " << e;
    kept += keep;
    agreeing += (r[0].getDouble(e) == 0) == (r[1].getDouble(e) == 0);
  }
  // About 750 of 1000 kept (5 sigma ~ 68); the other stream's mask differs.
  EXPECT_NEAR(kept, 750, 70);
  EXPECT_LT(agreeing, 900);

  // Another step draws another mask.
  std::vector<Tensor> next = run(kDropoutIR, {x}, RunOptions{77, 6, true});
  ASSERT_EQ(next.size(), 2u);
  EXPECT_NE(values(next[0]), values(r[0]));
}

// The verifier rejects these; the interpreter checks them again rather than
// trusting its input, so they are parsed without verification.
TEST_F(InterpreterNNTest, UnverifiedBadAttributesAreErrorsNotCrashes) {
  const char *ir = R"mlir(
    func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
      %0 = graph.dropout %x {rate = 1.0 : f64, stream = 0 : i64} : tensor<4xf32> loc("d.kiln":1:1)
      return %0 : tensor<4xf32>
    }
  )mlir";
  expectError(ir, {f32({4}, {1, 2, 3, 4})}, {"d.kiln:1:1", "is outside [0, 1)"},
              RunOptions{0, 0, true}, /*verify=*/false);

  const char *matmul = R"mlir(
    func.func @forward(%a: tensor<2x3xf32>, %b: tensor<4x2xf32>) -> tensor<2x2xf32> {
      %0 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<4x2xf32> -> tensor<2x2xf32> loc("m.kiln":2:2)
      return %0 : tensor<2x2xf32>
    }
  )mlir";
  expectError(
      matmul,
      {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})},
      {"m.kiln:2:2", "contracting dims differ: 3 vs 4"}, {},
      /*verify=*/false);

  const char *slice = R"mlir(
    func.func @forward(%x: tensor<4xf32>) -> tensor<2xf32> {
      %0 = graph.slice %x {offsets = array<i64: 3>} : tensor<4xf32> -> tensor<2xf32>
      return %0 : tensor<2xf32>
    }
  )mlir";
  expectError(slice, {f32({4}, {1, 2, 3, 4})}, {"is not inside [4]"}, {},
              /*verify=*/false);
}

//===----------------------------------------------------------------------===//
// A small model end to end
//===----------------------------------------------------------------------===//

TEST_F(InterpreterNNTest, TinyLanguageModelLossMatchesAHandComputation) {
  // Embed two tokens, project with w, take the cross-entropy. With the
  // table rows e0 = [1, 0], e1 = [0, 1] and w = [[0, ln 3], [0, 0]], the
  // logits are [0, ln 3] for token 0 and [0, 0] for token 1.
  const char *ir = R"mlir(
    func.func @forward(%wte: tensor<2x2xf64>, %w: tensor<2x2xf64>,
                       %tokens: tensor<2xi32>, %targets: tensor<2xi32>) -> tensor<f64> {
      %e = graph.embedding %wte, %tokens : tensor<2x2xf64>, tensor<2xi32> -> tensor<2x2xf64>
      %logits = graph.matmul %e, %w : tensor<2x2xf64>, tensor<2x2xf64> -> tensor<2x2xf64>
      %loss = graph.cross_entropy %logits, %targets : tensor<2x2xf64>, tensor<2xi32> -> tensor<f64>
      return %loss : tensor<f64>
    }
  )mlir";
  std::vector<Tensor> r =
      run(ir, {f64({2, 2}, {1, 0, 0, 1}), f64({2, 2}, {0, std::log(3.0), 0, 0}),
               i32({2}, {0, 1}), i32({2}, {1, 1})});
  ASSERT_EQ(r.size(), 1u);
  expectTensorNear(r[0], {}, {(std::log(4.0 / 3.0) + std::log(2.0)) / 2},
                   1e-15);
}

} // namespace
