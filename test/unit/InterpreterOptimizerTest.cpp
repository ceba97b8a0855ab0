//===- InterpreterOptimizerTest.cpp - Optimizer ops in the interpreter -----===//
//
// Part of Kiln. The schedule, clipping and update ops against values worked
// out by hand from PyTorch's formulas (the derivations are in the comments),
// in f64 so that the comparisons can be tight.
//
//===----------------------------------------------------------------------===//

#include "InterpreterTestUtil.h"

using namespace kiln::interp;
using namespace kiln::interp::test;

namespace {

class InterpreterOptimizerTest : public InterpreterFixture {
protected:
  /// The rate of step `t` under a schedule, evaluated by the interpreter.
  double rate(const std::string &kind, int64_t warmup, int64_t total,
              double final, double t) {
    std::string source =
        "func.func @forward(%t: tensor<f64>) -> tensor<f64> {\n"
        "  %lr = graph.lr_schedule " +
        kind + " %t {lr = 1.0 : f64, warmup = " + std::to_string(warmup) +
        " : i64, total = " + std::to_string(total) +
        " : i64, final = " + std::to_string(final) +
        " : f64} : tensor<f64>\n"
        "  return %lr : tensor<f64>\n}\n";
    std::vector<Tensor> results = run(source, {f64({}, {t})});
    return results.empty() ? NAN : results[0].getDouble(0);
  }
};

TEST_F(InterpreterOptimizerTest, ScheduleWarmsUpLinearly) {
  // Steps 1..10 of a 10-step warmup reach lr * t / 10.
  EXPECT_DOUBLE_EQ(rate("cosine", 10, 110, 0.0, 5), 0.5);
  EXPECT_DOUBLE_EQ(rate("cosine", 10, 110, 0.0, 10), 1.0);
  EXPECT_DOUBLE_EQ(rate("constant", 4, 110, 0.0, 1), 0.25);
}

TEST_F(InterpreterOptimizerTest, CosineAndLinearDecay) {
  // Half-way through the decay (t = 60 of warmup 10, total 110): cosine gives
  // (1 + cos(pi/2)) / 2 = 0.5, linear 1 - 0.5 = 0.5; with final = 0.1 both
  // become 0.1 + 0.9 * 0.5 = 0.55.
  EXPECT_NEAR(rate("cosine", 10, 110, 0.0, 60), 0.5, 1e-15);
  EXPECT_NEAR(rate("linear", 10, 110, 0.0, 60), 0.5, 1e-15);
  EXPECT_NEAR(rate("cosine", 10, 110, 0.1, 60), 0.55, 1e-15);
  EXPECT_NEAR(rate("linear", 10, 110, 0.1, 60), 0.55, 1e-15);
  // A quarter of the way: cos(pi/4) = 0.70710678...
  EXPECT_NEAR(rate("cosine", 0, 100, 0.0, 25), (1 + std::sqrt(0.5)) / 2,
              1e-15);
  // The end, and past it (clamped).
  EXPECT_NEAR(rate("cosine", 10, 110, 0.0, 110), 0.0, 1e-15);
  EXPECT_NEAR(rate("linear", 10, 110, 0.2, 500), 0.2, 1e-15);
  EXPECT_DOUBLE_EQ(rate("constant", 0, 110, 0.0, 77), 1.0);
}

TEST_F(InterpreterOptimizerTest, GlobalNormAndClipScale) {
  // |(3, 4)| = 5 across two tensors; the clip factor for max 1 is
  // 1 / (5 + 1e-6); a norm under the maximum gives 1.
  const char *source = R"(
func.func @forward(%a: tensor<1xf64>, %b: tensor<1xf64>) -> (tensor<f64>, tensor<f64>) {
  %n = graph.global_norm %a, %b : (tensor<1xf64>, tensor<1xf64>) -> tensor<f64>
  %s = graph.clip_scale %n {max_norm = 1.0 : f64} : tensor<f64>
  return %n, %s : tensor<f64>, tensor<f64>
})";
  std::vector<Tensor> results = run(source, {f64({1}, {3}), f64({1}, {4})});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_DOUBLE_EQ(results[0].getDouble(0), 5.0);
  EXPECT_DOUBLE_EQ(results[1].getDouble(0), 1.0 / (5.0 + 1e-6));
  results = run(source, {f64({1}, {0.3}), f64({1}, {0.4})});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_DOUBLE_EQ(results[1].getDouble(0), 1.0);
}

TEST_F(InterpreterOptimizerTest, SgdAppliesScaleAndDecay) {
  // p = 1, g = 2, scale 0.5, wd 0.1, lr 0.1: d = 2 * 0.5 + 0.1 * 1 = 1.1,
  // p' = 1 - 0.1 * 1.1 = 0.89. Second element: p = -2, g = 0:
  // d = -0.2, p' = -2 + 0.02 = -1.98.
  const char *source = R"(
func.func @forward(%p: tensor<2xf64>, %g: tensor<2xf64>, %lr: tensor<f64>, %s: tensor<f64>) -> tensor<2xf64> {
  %p1 = graph.sgd_update %p, %g, %lr, %s {weight_decay = 0.1 : f64} : tensor<2xf64>, tensor<f64>
  return %p1 : tensor<2xf64>
})";
  std::vector<Tensor> results = run(
      source, {f64({2}, {1, -2}), f64({2}, {2, 0}), f64({}, {0.1}),
               f64({}, {0.5})});
  ASSERT_EQ(results.size(), 1u);
  expectTensorNear(results[0], {2}, {0.89, -1.98}, 1e-15);
}

TEST_F(InterpreterOptimizerTest, MomentumAccumulatesAndNesterovLooksAhead) {
  const char *source = R"(
func.func @forward(%p: tensor<1xf64>, %g: tensor<1xf64>, %b: tensor<1xf64>, %lr: tensor<f64>, %s: tensor<f64>) -> (tensor<1xf64>, tensor<1xf64>, tensor<1xf64>) {
  %p1, %b1 = graph.momentum_update %p, %g, %b, %lr, %s {momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<1xf64>, tensor<f64>
  %p2, %b2 = graph.momentum_update %p1, %g, %b1, %lr, %s {momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<1xf64>, tensor<f64>
  %p3, %b3 = graph.momentum_update %p, %g, %b, %lr, %s {momentum = 0.9 : f64, weight_decay = 0.0 : f64, nesterov} : tensor<1xf64>, tensor<f64>
  return %p2, %b2, %p3 : tensor<1xf64>, tensor<1xf64>, tensor<1xf64>
})";
  // g = 1, lr = 0.1, b = 0. Step 1: b = 1, p = 0.9. Step 2: b = 0.9 + 1 =
  // 1.9, p = 0.9 - 0.19 = 0.71. Nesterov step 1: b = 1, p = 1 - 0.1 (1 +
  // 0.9 * 1) = 0.81.
  std::vector<Tensor> results =
      run(source, {f64({1}, {1}), f64({1}, {1}), f64({1}, {0}),
                   f64({}, {0.1}), f64({}, {1})});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_NEAR(results[0].getDouble(0), 0.71, 1e-15);
  EXPECT_NEAR(results[1].getDouble(0), 1.9, 1e-15);
  EXPECT_NEAR(results[2].getDouble(0), 0.81, 1e-15);
}

TEST_F(InterpreterOptimizerTest, AdamWTwoStepsMatchTheFormula) {
  const char *source = R"(
func.func @forward(%p: tensor<1xf64>, %g1: tensor<1xf64>, %g2: tensor<1xf64>, %z: tensor<1xf64>, %lr: tensor<f64>, %t1: tensor<f64>, %t2: tensor<f64>, %s: tensor<f64>) -> (tensor<1xf64>, tensor<1xf64>, tensor<1xf64>, tensor<1xf64>) {
  %p1, %m1, %v1 = graph.adamw_update %p, %g1, %z, %z, %lr, %t1, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64} : tensor<1xf64>, tensor<f64>
  %p2, %m2, %v2 = graph.adamw_update %p1, %g2, %m1, %v1, %lr, %t2, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64} : tensor<1xf64>, tensor<f64>
  return %p1, %p2, %m2, %v2 : tensor<1xf64>, tensor<1xf64>, tensor<1xf64>, tensor<1xf64>
})";
  // p = 1, lr = 0.01, wd = 0.1. Step 1, g = 0.5: m = 0.05, v = 2.5e-4; the
  // bias-corrected ratio is 0.05 / 0.1 / (sqrt(2.5e-4) / sqrt(1e-3) + 1e-8)
  // = 0.5 / (0.5 + 1e-8); p = 1 * (1 - 1e-3) - 0.01 * 0.99999998 =
  // 0.9890000002. Step 2, g = -0.5: m = 0.045 - 0.05 = -0.005,
  // v = 2.4975e-4 + 2.5e-4 = 4.9975e-4; p = 0.989 * 0.999 - (0.01 / 0.19)
  // * (-0.005) / (sqrt(4.9975e-4) / sqrt(1 - 0.999^2) + 1e-8)
  // = 0.9885373159787474 (worked in Python's float64).
  std::vector<Tensor> results = run(
      source, {f64({1}, {1}), f64({1}, {0.5}), f64({1}, {-0.5}),
               f64({1}, {0}), f64({}, {0.01}), f64({}, {1}), f64({}, {2}),
               f64({}, {1})});
  ASSERT_EQ(results.size(), 4u);
  EXPECT_NEAR(results[0].getDouble(0), 0.9890000002, 1e-15);
  EXPECT_NEAR(results[1].getDouble(0), 0.9885373159787474, 1e-15);
  EXPECT_NEAR(results[2].getDouble(0), -0.005, 1e-15);
  EXPECT_NEAR(results[3].getDouble(0), 4.9975e-4, 1e-17);
}

TEST_F(InterpreterOptimizerTest, AdamWInFloat32StaysCloseToFloat64) {
  // The same first step in f32: within a few ulps of the f64 value.
  const char *source = R"(
func.func @forward(%p: tensor<1xf32>, %g: tensor<1xf32>, %z: tensor<1xf32>, %lr: tensor<f32>, %t: tensor<f32>, %s: tensor<f32>) -> tensor<1xf32> {
  %p1, %m1, %v1 = graph.adamw_update %p, %g, %z, %z, %lr, %t, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64} : tensor<1xf32>, tensor<f32>
  return %p1 : tensor<1xf32>
})";
  std::vector<Tensor> results =
      run(source, {f32({1}, {1}), f32({1}, {0.5}), f32({1}, {0}),
                   f32({}, {0.01}), f32({}, {1}), f32({}, {1})});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_NEAR(results[0].getDouble(0), 0.9890000002, 4e-7);
}

} // namespace

TEST_F(InterpreterOptimizerTest, LossScaleBacksOffGrowsAndCounts) {
  // Scale 8 after 2 clean steps, interval 3: a finite norm is the third clean
  // step, so the scale doubles to 16 and the count restarts; an infinite or
  // NaN norm halves it to 4, resets the count and skips; with 1 clean step
  // the count only grows. A scale whose growth overflows stays.
  const char *source = R"(
func.func @forward(%n: tensor<f64>, %s: tensor<f64>, %c: tensor<f64>) -> (tensor<f64>, tensor<f64>, tensor<f64>) {
  %r:3 = graph.loss_scale_update %n, %s, %c {growth = 2.0 : f64, backoff = 0.5 : f64, interval = 3 : i64} : tensor<f64>
  return %r#0, %r#1, %r#2 : tensor<f64>, tensor<f64>, tensor<f64>
})";
  auto update = [&](double norm, double scale, double count) {
    std::vector<Tensor> results =
        run(source, {f64({}, {norm}), f64({}, {scale}), f64({}, {count})});
    std::vector<double> values;
    for (const Tensor &result : results)
      values.push_back(result.getDouble(0));
    return values;
  };
  double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(update(3.0, 8.0, 2.0), (std::vector<double>{16.0, 0.0, 0.0}));
  EXPECT_EQ(update(inf, 8.0, 2.0), (std::vector<double>{4.0, 0.0, 1.0}));
  EXPECT_EQ(update(std::nan(""), 8.0, 1.0),
            (std::vector<double>{4.0, 0.0, 1.0}));
  EXPECT_EQ(update(3.0, 8.0, 1.0), (std::vector<double>{8.0, 2.0, 0.0}));
  double largest = std::numeric_limits<double>::max();
  EXPECT_EQ(update(3.0, largest, 2.0),
            (std::vector<double>{largest, 0.0, 0.0}));
}

TEST_F(InterpreterOptimizerTest, SkippedUpdatesKeepParameterAndState) {
  // skip = 1: AdamW and momentum return their parameter and state as they
  // were, even with an infinite gradient; skip = 0 updates as usual.
  const char *source = R"(
func.func @forward(%p: tensor<2xf64>, %g: tensor<2xf64>, %m: tensor<2xf64>, %v: tensor<2xf64>, %skip: tensor<f64>)
    -> (tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>) {
  %lr = graph.constant dense<0.1> : tensor<f64>
  %one = graph.constant dense<1.0> : tensor<f64>
  %a:3 = graph.adamw_update %p, %g, %m, %v, %lr, %one, %one skip %skip {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64} : tensor<2xf64>, tensor<f64>, tensor<f64>
  %b:2 = graph.momentum_update %p, %g, %m, %lr, %one skip %skip {momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<2xf64>, tensor<f64>, tensor<f64>
  return %a#0, %a#1, %a#2, %b#0, %b#1 : tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>
})";
  double inf = std::numeric_limits<double>::infinity();
  std::vector<Tensor> skipped =
      run(source, {f64({2}, {1.0, -2.0}), f64({2}, {inf, 0.5}),
                   f64({2}, {0.25, 0.5}), f64({2}, {0.125, 2.0}),
                   f64({}, {1.0})});
  ASSERT_EQ(skipped.size(), 5u);
  const std::vector<double> kept[] = {
      {1.0, -2.0}, {0.25, 0.5}, {0.125, 2.0}, {1.0, -2.0}, {0.25, 0.5}};
  for (size_t i = 0; i < 5; ++i)
    for (int64_t e = 0; e < 2; ++e)
      EXPECT_EQ(skipped[i].getDouble(e), kept[i][e]) << "result " << i;
  std::vector<Tensor> updated =
      run(source, {f64({2}, {1.0, -2.0}), f64({2}, {1.0, 0.5}),
                   f64({2}, {0.25, 0.5}), f64({2}, {0.125, 2.0}),
                   f64({}, {0.0})});
  ASSERT_EQ(updated.size(), 5u);
  // Momentum: b' = 0.9 * 0.25 + 1 = 1.225, p' = 1 - 0.1 * 1.225 = 0.8775.
  EXPECT_DOUBLE_EQ(updated[4].getDouble(0), 1.225);
  EXPECT_DOUBLE_EQ(updated[3].getDouble(0), 0.8775);
  EXPECT_NE(updated[0].getDouble(0), 1.0);
}
