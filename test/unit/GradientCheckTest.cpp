//===- GradientCheckTest.cpp - VJPs against finite differences ------------===//
//
// Part of Kiln. Checks every VJP that --graph-autodiff builds against central
// finite differences in f64, with the reference interpreter as the evaluator.
//
// Each op case is a tiny function `loss = sum(op(params...) * w)` with w a
// seeded random tensor (an input, so not differentiated): the random weights
// make every element of the op's result matter, with a different weight, so a
// VJP that is wrong in any element, sign, transpose or reduction fails. The
// gradient of every parameter is compared as a tensor, ||ad - fd|| / ||fd||,
// against 1e-6: central differences with h = 1e-6 (relative) in f64 carry
// errors near 1e-9 here (truncation ~h^2, rounding ~1e-16 / h), so the bound
// has a wide margin for a correct VJP and none for a wrong one.
//
// The whole-model cases (examples/mlp.kiln, and a 2-layer GPT with dropout
// and tied embeddings written below) compare a few hundred random entries of
// the gradients the same way.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Dialect/Graph/Transforms/Passes.h"
#include "kiln/Frontend/Frontend.h"
#include "kiln/InitKiln.h"
#include "kiln/Interpreter/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace mlir;
using namespace kiln;
using namespace kiln::interp;

namespace {

/// The largest accepted ||ad - fd|| / ||fd|| of one gradient tensor.
constexpr double kMaxRelativeError = 1e-6;
/// The finite-difference step, relative to max(1, |x|).
constexpr double kRelativeStep = 1e-6;
/// The run seed and step: they key parameter initializers and dropout masks.
constexpr uint64_t kSeed = 1234;
constexpr uint32_t kStep = 7;

/// A parameter of an op case: `graph.param` named `name`, of f64 `shape`
/// (as MLIR spells it, "3x4"), drawn from `init` (a graph.init dictionary).
struct Param {
  std::string name;
  std::string shape;
  std::string init = R"({kind = "normal", std = 1.0 : f64})";
};

/// An integer input with fixed values (ids, targets).
struct IntInput {
  std::string name;
  std::string type;
  std::vector<int64_t> values;
};

/// One op case: `body` computes `%y` of type `tensor<{yShape}xf64>` from
/// `%<param name>` and `%<int input name>`.
struct OpCase {
  std::string name;
  std::vector<Param> params;
  std::vector<IntInput> ints;
  std::string body;
  std::string yShape; // "" for a scalar
};

const char *kPositive =
    R"({kind = "uniform", low = 0.5 : f64, high = 2.0 : f64})";

std::string tensorType(const std::string &shape, const char *element = "f64") {
  return "tensor<" + (shape.empty() ? std::string() : shape + "x") + element +
         ">";
}

/// The dims of "3x4" ([] for "").
std::vector<int64_t> parseShape(const std::string &shape) {
  std::vector<int64_t> dims;
  for (StringRef dim : llvm::split(StringRef(shape), 'x'))
    if (!dim.empty())
      dims.push_back(std::stoll(dim.str()));
  return dims;
}

/// The module of an op case: @forward returning sum(y * w).
std::string buildModule(const OpCase &c) {
  std::string args;
  for (const Param &p : c.params)
    args += "%" + p.name + ": " + tensorType(p.shape) + " {graph.param = \"" +
            p.name + "\", graph.init = " + p.init + "}, ";
  for (const IntInput &i : c.ints)
    args +=
        "%" + i.name + ": " + i.type + " {graph.input = \"" + i.name + "\"}, ";
  std::string yType = tensorType(c.yShape);
  args += "%w: " + yType + " {graph.input = \"w\"}";
  std::string loss;
  if (c.yShape.empty()) {
    loss = "  %loss = graph.mul %y, %w : tensor<f64>\n";
  } else {
    std::vector<std::string> axes;
    for (size_t i = 0; i < parseShape(c.yShape).size(); ++i)
      axes.push_back(std::to_string(i));
    loss = "  %yw = graph.mul %y, %w : " + yType + "\n" +
           "  %loss = graph.reduce sum %yw {axes = array<i64: " +
           llvm::join(axes, ", ") + ">} : " + yType + " -> tensor<f64>\n";
  }
  return "func.func @forward(" + args + ") -> (tensor<f64> {graph.loss}) {\n" +
         c.body + loss + "  return %loss : tensor<f64>\n}\n";
}

/// Names a case in gtest's messages (instead of dumping its bytes).
void PrintTo(const OpCase &c, std::ostream *os) { *os << c.name; }

/// Seeded standard-normal values.
std::vector<double> randomNormal(std::mt19937_64 &rng, int64_t count) {
  std::normal_distribution<double> normal;
  std::vector<double> values(count);
  for (double &v : values)
    v = normal(rng);
  return values;
}

/// The result of comparing one gradient tensor with finite differences.
struct Comparison {
  std::string name;
  double relativeError = 0;
};

class GradientCheck : public ::testing::Test {
protected:
  GradientCheck() {
    DialectRegistry registry;
    registerKilnDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Runs --graph-autodiff on `module`; fails the test on error.
  bool differentiate(ModuleOp module) {
    PassManager pm(&context);
    pm.addPass(graph::createGraphAutodiff());
    if (failed(pm.run(module))) {
      ADD_FAILURE() << "graph-autodiff failed";
      return false;
    }
    return true;
  }

  /// The loss of @forward on `arguments`, with dropout on.
  double evaluateLoss(func::FuncOp forward, ArrayRef<Tensor> arguments) {
    RunOptions options{kSeed, kStep, /*training=*/true};
    auto results = runFunction(forward, arguments, options);
    if (!results) {
      ADD_FAILURE() << llvm::toString(results.takeError());
      return NAN;
    }
    return (*results)[0].getDouble(0);
  }

  /// d(loss)/d(arguments[argument][element]) by central differences.
  double finiteDifference(func::FuncOp forward, SmallVector<Tensor> &arguments,
                          unsigned argument, int64_t element) {
    Tensor &x = arguments[argument];
    double original = x.getDouble(element);
    double h = kRelativeStep * std::max(1.0, std::fabs(original));
    x.setDouble(element, original + h);
    double plus = evaluateLoss(forward, arguments);
    x.setDouble(element, original - h);
    double minus = evaluateLoss(forward, arguments);
    x.setDouble(element, original);
    return (plus - minus) / (2 * h);
  }

  /// The gradients @grad_step returns, keyed by parameter argument index.
  std::vector<std::pair<unsigned, Tensor>>
  autodiffGradients(func::FuncOp forward, func::FuncOp gradStep,
                    ArrayRef<Tensor> arguments) {
    RunOptions options{kSeed, kStep, /*training=*/true};
    auto results = runFunction(gradStep, arguments, options);
    if (!results) {
      ADD_FAILURE() << llvm::toString(results.takeError());
      return {};
    }
    // Gradients follow the forward's results, one per parameter in order.
    std::vector<std::pair<unsigned, Tensor>> gradients;
    unsigned next = forward.getNumResults();
    for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
      auto name = forward.getArgAttrOfType<StringAttr>(
          i, graph::GraphDialect::kParamAttr);
      if (!name)
        continue;
      auto gradName = gradStep.getResultAttrOfType<StringAttr>(
          next, graph::GraphDialect::kGradAttr);
      EXPECT_TRUE(gradName && gradName == name)
          << "result " << next << " is not the gradient of " << name.str();
      gradients.push_back({i, (*results)[next++]});
    }
    EXPECT_EQ(next, gradStep.getNumResults());
    // The loss is the same as the forward's.
    EXPECT_EQ((*results)[0].getDouble(0), evaluateLoss(forward, arguments));
    return gradients;
  }

  /// Arguments for `forward`: initialized parameters, `ints` by name, and
  /// seeded normal values for every other float input.
  SmallVector<Tensor> makeArguments(func::FuncOp forward,
                                    ArrayRef<IntInput> ints,
                                    std::mt19937_64 &rng) {
    SmallVector<Tensor> arguments(forward.getNumArguments());
    auto params = initializeParameters(forward, kSeed);
    if (!params) {
      ADD_FAILURE() << llvm::toString(params.takeError());
      return {};
    }
    for (InitializedParameter &p : *params)
      arguments[p.argumentIndex] = std::move(p.value);
    for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
      auto input = forward.getArgAttrOfType<StringAttr>(
          i, graph::GraphDialect::kInputAttr);
      if (!input)
        continue;
      auto type = cast<RankedTensorType>(forward.getArgumentTypes()[i]);
      std::optional<ElementType> element =
          getElementType(type.getElementType());
      if (isFloat(*element)) {
        arguments[i] =
            Tensor::fromDoubles(*element, type.getShape(),
                                randomNormal(rng, type.getNumElements()));
        continue;
      }
      for (const IntInput &given : ints)
        if (given.name == input.getValue())
          arguments[i] =
              Tensor::fromInts(*element, type.getShape(), given.values);
    }
    return arguments;
  }

  MLIRContext context;
};

//===----------------------------------------------------------------------===//
// One op at a time
//===----------------------------------------------------------------------===//

class OpGradientCheck : public GradientCheck,
                        public ::testing::WithParamInterface<OpCase> {};

TEST_P(OpGradientCheck, MatchesFiniteDifferences) {
  const OpCase &c = GetParam();
  std::string source = buildModule(c);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module) << source;
  ASSERT_TRUE(differentiate(*module));
  auto forward = module->lookupSymbol<func::FuncOp>("forward");
  auto gradStep = module->lookupSymbol<func::FuncOp>("grad_step");
  ASSERT_TRUE(gradStep);

  std::mt19937_64 rng(kSeed);
  SmallVector<Tensor> arguments = makeArguments(forward, c.ints, rng);
  ASSERT_EQ(arguments.size(), forward.getNumArguments());
  auto gradients = autodiffGradients(forward, gradStep, arguments);
  ASSERT_EQ(gradients.size(), c.params.size());

  for (auto &[argument, gradient] : gradients) {
    double diff = 0, reference = 0;
    for (int64_t e = 0; e < gradient.getNumElements(); ++e) {
      double fd = finiteDifference(forward, arguments, argument, e);
      double ad = gradient.getDouble(e);
      diff += (ad - fd) * (ad - fd);
      reference += fd * fd;
    }
    ASSERT_GT(reference, 0) << c.name << ": the finite differences of "
                            << "argument " << argument
                            << " vanish, so the case would check nothing";
    double relative = std::sqrt(diff / reference);
    EXPECT_LE(relative, kMaxRelativeError)
        << c.name << ": gradient of argument " << argument;
    RecordProperty("max_relative_error_arg" + std::to_string(argument),
                   std::to_string(relative));
    std::printf("[ gradient ] %-28s arg %u  ||ad-fd||/||fd|| = %.3g\n",
                c.name.c_str(), argument, relative);
  }
}

std::string caseName(const ::testing::TestParamInfo<OpCase> &info) {
  return info.param.name;
}

OpCase unary(const std::string &op, const std::string &init = "") {
  Param x{"x", "3x4"};
  if (!init.empty())
    x.init = init;
  return {op, {x}, {}, "  %y = graph." + op + " %x : tensor<3x4xf64>\n", "3x4"};
}

OpCase binary(const std::string &op, const std::string &lhsInit = "",
              const std::string &rhsInit = "") {
  Param a{"a", "3x4"}, b{"b", "3x4"};
  if (!lhsInit.empty())
    a.init = lhsInit;
  if (!rhsInit.empty())
    b.init = rhsInit;
  return {op,
          {a, b},
          {},
          "  %y = graph." + op + " %a, %b : tensor<3x4xf64>\n",
          "3x4"};
}

INSTANTIATE_TEST_SUITE_P(
    Elementwise, OpGradientCheck,
    ::testing::Values(
        unary("neg"), unary("exp"), unary("log", kPositive), unary("tanh"),
        unary("sigmoid"), unary("silu"), unary("abs"), unary("sin"),
        unary("cos"), unary("erf"), unary("sqrt", kPositive),
        unary("rsqrt", kPositive), unary("relu"), unary("gelu"), binary("add"),
        binary("sub"), binary("mul"), binary("div", "", kPositive),
        binary("pow", kPositive), binary("maximum"), binary("minimum"),
        // A tie everywhere: each operand gets half, the input all of it.
        OpCase{"maximum_same_value_twice",
               {{"x", "3x4"}},
               {},
               "  %y = graph.maximum %x, %x : tensor<3x4xf64>\n",
               "3x4"},
        OpCase{"minimum_same_value_twice",
               {{"x", "3x4"}},
               {},
               "  %y = graph.minimum %x, %x : tensor<3x4xf64>\n",
               "3x4"},
        // where(a > b, a, b) and where(a <= b, 2a, b^2): the gradient goes
        // to the side chosen; the comparison passes none.
        OpCase{"compare_select",
               {{"a", "3x4"}, {"b", "3x4"}},
               {},
               "  %c = graph.compare gt %a, %b : tensor<3x4xf64>\n"
               "  %m = graph.select %c, %a, %b : tensor<3x4xf64>\n"
               "  %d = graph.compare le %a, %b : tensor<3x4xf64>\n"
               "  %a2 = graph.add %a, %a : tensor<3x4xf64>\n"
               "  %b2 = graph.mul %b, %b : tensor<3x4xf64>\n"
               "  %n = graph.select %d, %a2, %b2 : tensor<3x4xf64>\n"
               "  %y = graph.add %m, %n : tensor<3x4xf64>\n",
               "3x4"},
        OpCase{"mul_same_value_twice",
               {{"x", "3x4"}},
               {},
               "  %y = graph.mul %x, %x : tensor<3x4xf64>\n",
               "3x4"},
        OpCase{"residual",
               {{"x", "3x4"}},
               {},
               "  %t = graph.tanh %x : tensor<3x4xf64>\n"
               "  %y = graph.add %x, %t : tensor<3x4xf64>\n",
               "3x4"},
        OpCase{"dropout",
               {{"x", "4x6"}},
               {},
               "  %y = graph.dropout %x {rate = 3.0e-1 : f64, stream = 2 : "
               "i64} : tensor<4x6xf64>\n",
               "4x6"},
        OpCase{"cast_f64_to_f64",
               {{"x", "3x4"}},
               {},
               "  %t = graph.tanh %x : tensor<3x4xf64>\n"
               "  %y = graph.cast %t : tensor<3x4xf64> -> tensor<3x4xf64>\n",
               "3x4"}),
    caseName);

OpCase matmul(const std::string &name, const std::string &lhs,
              const std::string &rhs, const std::string &attrs,
              const std::string &result) {
  return {name,
          {{"a", lhs}, {"b", rhs}},
          {},
          "  %y = graph.matmul %a, %b " + attrs + ": " + tensorType(lhs) +
              ", " + tensorType(rhs) + " -> " + tensorType(result) + "\n",
          result};
}

INSTANTIATE_TEST_SUITE_P(
    Matmul, OpGradientCheck,
    ::testing::Values(
        matmul("plain", "3x4", "4x5", "", "3x5"),
        matmul("transpose_lhs", "4x3", "4x5", "{transpose_lhs} ", "3x5"),
        matmul("transpose_rhs", "3x4", "5x4", "{transpose_rhs} ", "3x5"),
        matmul("transpose_both", "4x3", "5x4",
               "{transpose_lhs, transpose_rhs} ", "3x5"),
        matmul("rank2_rhs_shared_by_batch", "2x3x4", "4x5", "", "2x3x5"),
        matmul("batch_broadcast_both", "2x1x3x4", "3x4x2", "", "2x3x3x2"),
        matmul("batch_broadcast_transposed", "1x4x3", "2x2x4",
               "{transpose_lhs, transpose_rhs} ", "2x3x2")),
    caseName);

OpCase reduce(const std::string &name, const std::string &kind,
              const std::string &axes, bool keepdims,
              const std::string &result) {
  return {name,
          {{"x", "2x3x4"}},
          {},
          "  %y = graph.reduce " + kind + " %x {axes = array<i64: " + axes +
              ">" + (keepdims ? ", keepdims" : "") +
              "} : tensor<2x3x4xf64> -> " + tensorType(result) + "\n",
          result};
}

INSTANTIATE_TEST_SUITE_P(
    Reduce, OpGradientCheck,
    ::testing::Values(
        reduce("sum_axis1", "sum", "1", false, "2x4"),
        reduce("sum_axes02_keepdims", "sum", "0, 2", true, "1x3x1"),
        reduce("sum_all", "sum", "0, 1, 2", false, ""),
        reduce("max_axis2", "max", "2", false, "2x3"),
        reduce("max_axes01_keepdims", "max", "0, 1", true, "1x1x4"),
        reduce("mean_axis0", "mean", "0", false, "3x4"),
        reduce("mean_axes12_keepdims", "mean", "1, 2", true, "2x1x1")),
    caseName);

INSTANTIATE_TEST_SUITE_P(
    Shape, OpGradientCheck,
    ::testing::Values(
        OpCase{"broadcast_leading",
               {{"x", "4"}},
               {},
               "  %y = graph.broadcast %x : tensor<4xf64> -> tensor<3x4xf64>\n",
               "3x4"},
        OpCase{"broadcast_ones_and_leading",
               {{"x", "3x1"}},
               {},
               "  %y = graph.broadcast %x : tensor<3x1xf64> -> "
               "tensor<2x3x4xf64>\n",
               "2x3x4"},
        OpCase{
            "reshape",
            {{"x", "2x6"}},
            {},
            "  %y = graph.reshape %x : tensor<2x6xf64> -> tensor<3x2x2xf64>\n",
            "3x2x2"},
        OpCase{"transpose_cycle",
               {{"x", "2x3x4"}},
               {},
               "  %y = graph.transpose %x {perm = array<i64: 1, 2, 0>} : "
               "tensor<2x3x4xf64> -> tensor<3x4x2xf64>\n",
               "3x4x2"},
        OpCase{"slice",
               {{"x", "4x5"}},
               {},
               "  %y = graph.slice %x {offsets = array<i64: 1, 2>} : "
               "tensor<4x5xf64> -> tensor<2x3xf64>\n",
               "2x3"},
        OpCase{"pad",
               {{"x", "2x3"}},
               {},
               "  %y = graph.pad %x {offsets = array<i64: 1, 2>} : "
               "tensor<2x3xf64> -> tensor<4x5xf64>\n",
               "4x5"},
        OpCase{"concat",
               {{"a", "2x3"}, {"b", "2x1"}, {"c", "2x2"}},
               {},
               "  %y = graph.concat %a, %b, %c {axis = 1 : i64} : "
               "(tensor<2x3xf64>, tensor<2x1xf64>, tensor<2x2xf64>) -> "
               "tensor<2x6xf64>\n",
               "2x6"},
        OpCase{"split_with_unused_piece",
               {{"x", "2x6x2"}},
               {},
               "  %p:3 = graph.split %x {axis = 1 : i64} : tensor<2x6x2xf64> "
               "-> (tensor<2x1x2xf64>, tensor<2x3x2xf64>, tensor<2x2x2xf64>)\n"
               "  %y = graph.concat %p#2, %p#0 {axis = 1 : i64} : "
               "(tensor<2x2x2xf64>, tensor<2x1x2xf64>) -> tensor<2x3x2xf64>\n",
               "2x3x2"}),
    caseName);

OpCase softmax(int axis) {
  return {"softmax_axis" + std::to_string(axis),
          {{"x", "2x3x4"}},
          {},
          "  %y = graph.softmax %x {axis = " + std::to_string(axis) +
              " : i64} : tensor<2x3x4xf64>\n",
          "2x3x4"};
}

OpCase attention(const std::string &name, const std::string &attrs,
                 const std::string &q, const std::string &k,
                 const std::string &v, const std::string &result) {
  return {name,
          {{"q", q}, {"k", k}, {"v", v}},
          {},
          "  %y = graph.attention %q, %k, %v " + attrs + ": " + tensorType(q) +
              ", " + tensorType(k) + ", " + tensorType(v) + " -> " +
              tensorType(result) + "\n",
          result};
}

/// Attention with an additive mask `%m`, itself a parameter: its gradient
/// is the composed one (softmax_grad of the recomputed scores, summed to
/// the mask's shape), q, k and v's that of graph.attention_grad.
OpCase maskedAttention(const std::string &name, const std::string &attrs,
                       const std::string &q, const std::string &k,
                       const std::string &v, const std::string &mask,
                       const std::string &result) {
  return {name,
          {{"q", q}, {"k", k}, {"v", v}, {"m", mask}},
          {},
          "  %y = graph.attention %q, %k, %v mask(%m : " + tensorType(mask) +
              ") " + attrs + ": " + tensorType(q) + ", " + tensorType(k) +
              ", " + tensorType(v) + " -> " + tensorType(result) + "\n",
          result};
}

OpCase crossEntropy(const std::string &name, const std::string &smoothing) {
  return {
      name,
      {{"logits", "2x3x5"}},
      {{"t", "tensor<2x3xi32>", {4, 0, 2, 2, 1, 3}}},
      "  %y = graph.cross_entropy %logits, %t {label_smoothing = " + smoothing +
          " : f64} : tensor<2x3x5xf64>, tensor<2x3xi32> -> "
          "tensor<f64>\n",
      ""};
}

INSTANTIATE_TEST_SUITE_P(
    NN, OpGradientCheck,
    ::testing::Values(
        softmax(0), softmax(1), softmax(2),
        OpCase{"layer_norm",
               {{"x", "3x5"}, {"g", "5"}, {"b", "5"}},
               {},
               "  %y = graph.layer_norm %x, %g, %b {eps = 1.0e-5 : f64} : "
               "tensor<3x5xf64>, tensor<5xf64>\n",
               "3x5"},
        attention("attention", "", "2x3x4", "2x5x4", "2x5x3", "2x3x3"),
        attention("attention_causal", "{causal} ", "2x4x3", "2x4x3", "2x4x2",
                  "2x4x2"),
        attention("attention_causal_scaled", "{causal, scale = 7.0e-1 : f64} ",
                  "1x2x3x2", "1x2x3x2", "1x2x3x4", "1x2x3x4"),
        // Per batch over the heads ([B, 1, Tq, Tk]), per key under the
        // causal mask ([Tk]), per head ([H, 1, Tk]).
        maskedAttention("attention_mask_per_batch", "", "2x3x3x4", "2x3x5x4",
                        "2x3x5x2", "2x1x3x5", "2x3x3x2"),
        maskedAttention("attention_mask_keys_causal", "{causal} ", "1x2x4x3",
                        "1x2x4x3", "1x2x4x2", "4", "1x2x4x2"),
        maskedAttention("attention_mask_per_head",
                        "{scale = 7.0e-1 : f64} ", "2x3x2x2", "2x3x4x2",
                        "2x3x4x3", "3x1x4", "2x3x2x3"),
        crossEntropy("cross_entropy", "0.0"),
        crossEntropy("cross_entropy_smoothed", "1.0e-1"),
        OpCase{"embedding_repeated_ids",
               {{"table", "5x3"}},
               {{"ids", "tensor<2x3xi32>", {1, 3, 1, 0, 3, 1}}},
               "  %y = graph.embedding %table, %ids : tensor<5x3xf64>, "
               "tensor<2x3xi32> -> tensor<2x3x3xf64>\n",
               "2x3x3"}),
    caseName);

//===----------------------------------------------------------------------===//
// The tie rule of reduce max, which finite differences cannot check
//===----------------------------------------------------------------------===//

TEST_F(GradientCheck, ReduceMaxGradRoutesTiesToTheFirstMaximum) {
  // Rows [3, 1, 3] and [2, 2, 0] reduced over axis 1: each row's dy goes to
  // its first maximal element only, so the gradient still sums to sum(dy).
  const char *source = R"(
    func.func @forward(%dy: tensor<2xf64>, %x: tensor<2x3xf64>) -> tensor<2x3xf64> {
      %0 = graph.reduce_max_grad %dy, %x {axes = array<i64: 1>} : tensor<2xf64>, tensor<2x3xf64>
      return %0 : tensor<2x3xf64>
    })";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module);
  auto forward = module->lookupSymbol<func::FuncOp>("forward");
  Tensor dy = Tensor::fromDoubles(ElementType::F64, {2}, {5, 7});
  Tensor x = Tensor::fromDoubles(ElementType::F64, {2, 3}, {3, 1, 3, 2, 2, 0});
  auto results = runFunction(forward, {dy, x});
  ASSERT_TRUE(static_cast<bool>(results))
      << llvm::toString(results.takeError());
  std::vector<double> expected = {5, 0, 0, 7, 0, 0};
  for (int64_t e = 0; e < 6; ++e)
    EXPECT_EQ((*results)[0].getDouble(e), expected[e]) << "element " << e;
}

//===----------------------------------------------------------------------===//
// Whole models
//===----------------------------------------------------------------------===//

/// A 2-layer GPT in f64 with small dims, written for this test: pre-norm
/// blocks with causal attention, dropout (fixed seed and step), a GELU MLP,
/// and an output layer tied to the embedding, so wte's gradient adds the
/// embedding's scatter and the output matmul's contribution. Weights are
/// drawn larger than a real GPT's so that every gradient is well above the
/// finite differences' rounding noise.
const char *kSmallGpt = R"(
fn block(x: f64[B, T, D]) -> f64[B, T, D] {
  param ln1_g  : f64[D]      = ones
  param ln1_b  : f64[D]      = zeros
  param w_qkv  : f64[D, 3*D] = normal(0.3)
  param b_qkv  : f64[3*D]    = normal(0.1)
  param w_out  : f64[D, D]   = normal(0.3)
  param ln2_g  : f64[D]      = ones
  param ln2_b  : f64[D]      = zeros
  param w_fc   : f64[D, 2*D] = normal(0.3)
  param w_proj : f64[2*D, D] = normal(0.3)

  h = layer_norm(x, ln1_g, ln1_b, eps=1e-5)
  q, k, v = split(h @ w_qkv + b_qkv, 3, axis=-1)
  a = attention(heads(q, H), heads(k, H), heads(v, H), causal=true)
  x = x + dropout(merge_heads(a) @ w_out, rate=0.2)
  h = layer_norm(x, ln2_g, ln2_b, eps=1e-5)
  x = x + gelu(h @ w_fc) @ w_proj
  return x
}

model gpt {
  dim B = 2, T = 4, V = 11, D = 8, H = 2, L = 2
  input tokens  : i32[B, T]
  input targets : i32[B, T]
  param wte   : f64[V, D] = normal(0.5)
  param wpe   : f64[T, D] = normal(0.5)
  param lnf_g : f64[D]    = ones
  param lnf_b : f64[D]    = zeros

  x = embed(wte, tokens) + wpe
  for l in 0..L { x = block(x) }
  logits = layer_norm(x, lnf_g, lnf_b, eps=1e-5) @ transpose(wte)
  output logits = logits
  return cross_entropy(logits, targets, label_smoothing=0.1)
}
)";

/// Reads a file of the source tree; fails the test if it is missing.
std::string readSource(const std::string &relativePath) {
  auto buffer = llvm::MemoryBuffer::getFile(std::string(KILN_SOURCE_DIR) + "/" +
                                            relativePath);
  if (!buffer) {
    ADD_FAILURE() << "cannot read " << relativePath;
    return {};
  }
  return (*buffer)->getBuffer().str();
}

/// Replaces `from` (which must occur) by `to`, everywhere.
std::string replaceAll(std::string text, const std::string &from,
                       const std::string &to) {
  EXPECT_NE(text.find(from), std::string::npos) << "'" << from << "' not found";
  for (size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

class ModelGradientCheck : public GradientCheck {
protected:
  /// Compiles `source` with the front end, differentiates it, and compares
  /// up to `entriesPerParameter` random entries of every parameter's
  /// gradient with finite differences; `drawInt` draws the elements of the
  /// integer inputs (ids, targets).
  void
  check(const std::string &source, int64_t entriesPerParameter,
        const std::function<int64_t(std::mt19937_64 &, StringRef)> &drawInt) {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(source, "model.kiln"),
        llvm::SMLoc());
    std::string errors;
    llvm::raw_string_ostream errs(errors);
    OwningOpRef<ModuleOp> module =
        frontend::loadModel(sourceMgr, context, errs);
    ASSERT_TRUE(module) << errors;
    ASSERT_TRUE(differentiate(*module));
    auto forward = module->lookupSymbol<func::FuncOp>("forward");
    auto gradStep = module->lookupSymbol<func::FuncOp>("grad_step");

    // Integer inputs drawn by `drawInt`, float inputs normal, parameters
    // from their initializers.
    std::mt19937_64 rng(kSeed);
    std::vector<IntInput> ints;
    for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
      auto input = forward.getArgAttrOfType<StringAttr>(
          i, graph::GraphDialect::kInputAttr);
      auto type = cast<RankedTensorType>(forward.getArgumentTypes()[i]);
      if (!input || !isa<IntegerType>(type.getElementType()))
        continue;
      IntInput values{input.str(), "", {}};
      for (int64_t e = 0; e < type.getNumElements(); ++e)
        values.values.push_back(drawInt(rng, input.getValue()));
      ints.push_back(values);
    }
    SmallVector<Tensor> arguments = makeArguments(forward, ints, rng);
    auto gradients = autodiffGradients(forward, gradStep, arguments);
    ASSERT_FALSE(gradients.empty());

    int64_t checked = 0;
    double worst = 0;
    for (auto &[argument, gradient] : gradients) {
      std::string name = forward
                             .getArgAttrOfType<StringAttr>(
                                 argument, graph::GraphDialect::kParamAttr)
                             .str();
      std::vector<int64_t> entries(gradient.getNumElements());
      std::iota(entries.begin(), entries.end(), 0);
      std::shuffle(entries.begin(), entries.end(), rng);
      entries.resize(std::min<int64_t>(entries.size(), entriesPerParameter));
      double diff = 0, reference = 0;
      for (int64_t e : entries) {
        double fd = finiteDifference(forward, arguments, argument, e);
        double ad = gradient.getDouble(e);
        diff += (ad - fd) * (ad - fd);
        reference += fd * fd;
      }
      checked += entries.size();
      ASSERT_GT(reference, 0) << name << ": its sampled gradient vanishes";
      double relative = std::sqrt(diff / reference);
      worst = std::max(worst, relative);
      EXPECT_LE(relative, kMaxRelativeError) << "gradient of " << name;
    }
    std::printf("[ gradient ] %zu parameters, %lld entries, worst "
                "||ad-fd||/||fd|| = %.3g\n",
                gradients.size(), static_cast<long long>(checked), worst);
    EXPECT_GE(checked, 200) << "too few entries to check the model";
  }
};

TEST_F(ModelGradientCheck, MlpExample) {
  // examples/mlp.kiln in f64, with smaller dims so that the check is fast.
  std::string source = readSource("examples/mlp.kiln");
  source = replaceAll(source, "f32", "f64");
  source = replaceAll(source, "dim B = 32, F = 64, N = 128, C = 10",
                      "dim B = 6, F = 10, N = 16, C = 6");
  check(source, /*entriesPerParameter=*/120,
        [](std::mt19937_64 &rng, StringRef) {
          return std::uniform_int_distribution<int64_t>(0, 5)(rng);
        });
}

TEST_F(ModelGradientCheck, TwoLayerGpt) {
  check(kSmallGpt, /*entriesPerParameter=*/16,
        [](std::mt19937_64 &rng, StringRef) {
          return std::uniform_int_distribution<int64_t>(0, 10)(rng);
        });
}

} // namespace
