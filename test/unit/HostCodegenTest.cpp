//===- HostCodegenTest.cpp - Compiled cpu kernels vs the interpreter -------===//
//
// Part of Kiln. Every graph op the cpu backend lowers is compiled on its own
// to an artifact (plan.kpl + kernels.so), run by a test-side executor, and
// compared with the reference interpreter: per tensor ‖Δ‖/‖ref‖ ≤ 1e-5 in
// f32 and ≤ 1e-12 in f64. Each run is repeated with other chunkings of the
// kernels' ranges, which must not change a single bit.
//
//===----------------------------------------------------------------------===//

#include "HostCodegenTestUtil.h"

#include "kiln/InitKiln.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace kiln;
using namespace kiln::test;

namespace {

/// One op case: a function body template over the element type `T`.
struct OpCase {
  const char *name;
  /// The module, with `T` standing for the float element type.
  const char *source;
  std::map<std::string, InputRange> ranges = {};
  const char *function = "forward";
  const char *entry = "eval_step";
  interp::RunOptions options = {};
};

class HostCodegenTest : public ::testing::TestWithParam<std::tuple<OpCase, const char *>> {
protected:
  HostCodegenTest() {
    DialectRegistry registry;
    registerKilnDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }
  MLIRContext context;
};

} // namespace

TEST_P(HostCodegenTest, MatchesInterpreter) {
  const OpCase &op = std::get<0>(GetParam());
  llvm::StringRef type = std::get<1>(GetParam());
  std::string source = instantiate(op.source, type);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module) << source;
  Comparison result =
      compileAndCompare(*module, op.function, op.entry, op.ranges, op.options);
  double tolerance = type == "f64" ? 1e-12 : 1e-5;
  EXPECT_LE(result.worstRelativeError, tolerance) << op.name << " " << type.str();
  EXPECT_TRUE(result.chunkingIndependent)
      << op.name << ": results depend on the chunking";
  std::printf("[ host ] %-22s %s  max |d|/|ref| = %.3g\n", op.name,
              type.str().c_str(), result.worstRelativeError);
}

#define ARG(NAME, TYPE) "%" NAME ": " TYPE " {graph.input = \"" NAME "\"}"

static const OpCase kOpCases[] = {
#define UNARY(OP, LOW)                                                         \
  OpCase{OP,                                                                   \
         "func.func @forward(" ARG("x", "tensor<3x5x7x$T>") ") -> "           \
         "(tensor<3x5x7x$T> {graph.output = \"y\"}) {\n"                       \
         "  %y = graph." OP " %x : tensor<3x5x7x$T>\n"                         \
         "  return %y : tensor<3x5x7x$T>\n}",                                  \
         {{"x", {LOW, 3.0}}}}
    UNARY("neg", -3.0), UNARY("exp", -3.0), UNARY("log", 0.05),
    UNARY("tanh", -3.0), UNARY("sqrt", 0.0), UNARY("rsqrt", 0.05),
    UNARY("relu", -3.0), UNARY("gelu", -3.0), UNARY("sigmoid", -3.0),
    UNARY("silu", -3.0), UNARY("abs", -3.0), UNARY("sin", -3.0),
    UNARY("cos", -3.0), UNARY("erf", -3.0),
#undef UNARY
#define BINARY(OP, LOW)                                                        \
  OpCase{OP,                                                                   \
         "func.func @forward(" ARG("a", "tensor<4x33x$T>") ", " ARG(           \
             "b", "tensor<4x33x$T>") ") -> "                                   \
         "(tensor<4x33x$T> {graph.output = \"y\"}) {\n"                        \
         "  %y = graph." OP " %a, %b : tensor<4x33x$T>\n"                      \
         "  return %y : tensor<4x33x$T>\n}",                                   \
         {{"a", {LOW, 3.0}}, {"b", {0.5, 2.0}}}}
    BINARY("add", -3.0), BINARY("sub", -3.0), BINARY("mul", -3.0),
    BINARY("div", -3.0), BINARY("pow", 0.1), BINARY("maximum", -3.0),
    BINARY("minimum", -3.0),
#undef BINARY
    // Comparisons (NaN: ordered false, ne true) and select (a NaN
    // condition is nonzero); log(a) is NaN where a < 0.
    {"compare_select",
     "func.func @forward(" ARG("a", "tensor<4x33x$T>") ", " ARG("b", "tensor<4x33x$T>") ") -> "
     "(tensor<4x33x$T> {graph.output = \"lt\"}, tensor<4x33x$T> {graph.output = \"ne\"}, "
     "tensor<4x33x$T> {graph.output = \"eq\"}, tensor<4x33x$T> {graph.output = \"ge\"}, "
     "tensor<4x33x$T> {graph.output = \"s\"}, tensor<4x33x$T> {graph.output = \"t\"}) {\n"
     "  %l = graph.log %a : tensor<4x33x$T>\n"
     "  %lt = graph.compare lt %l, %b : tensor<4x33x$T>\n"
     "  %ne = graph.compare ne %l, %l : tensor<4x33x$T>\n"
     "  %eq = graph.compare eq %a, %a : tensor<4x33x$T>\n"
     "  %ge = graph.compare ge %a, %b : tensor<4x33x$T>\n"
     "  %s = graph.select %lt, %a, %b : tensor<4x33x$T>\n"
     "  %t = graph.select %l, %b, %a : tensor<4x33x$T>\n"
     "  return %lt, %ne, %eq, %ge, %s, %t : tensor<4x33x$T>, tensor<4x33x$T>, "
     "tensor<4x33x$T>, tensor<4x33x$T>, tensor<4x33x$T>, tensor<4x33x$T>\n}",
     {{"a", {-3.0, 3.0}}, {"b", {0.5, 2.0}}}},
    {"broadcast",
     "func.func @forward(" ARG("a", "tensor<7x$T>") ", " ARG("b", "tensor<5x1x$T>") ") -> "
     "(tensor<3x5x7x$T> {graph.output = \"y\"}, tensor<2x5x6x$T> {graph.output = \"z\"}) {\n"
     "  %y = graph.broadcast %a : tensor<7x$T> -> tensor<3x5x7x$T>\n"
     "  %z = graph.broadcast %b : tensor<5x1x$T> -> tensor<2x5x6x$T>\n"
     "  return %y, %z : tensor<3x5x7x$T>, tensor<2x5x6x$T>\n}"},
    {"reduce",
     "func.func @forward(" ARG("x", "tensor<4x6x5x$T>") ") -> "
     "(tensor<4x5x$T> {graph.output = \"s\"}, tensor<1x6x1x$T> {graph.output = \"m\"}, tensor<$T> {graph.output = \"a\"}) {\n"
     "  %s = graph.reduce sum %x {axes = array<i64: 1>} : tensor<4x6x5x$T> -> tensor<4x5x$T>\n"
     "  %m = graph.reduce max %x {axes = array<i64: 0, 2>, keepdims} : tensor<4x6x5x$T> -> tensor<1x6x1x$T>\n"
     "  %a = graph.reduce mean %x {axes = array<i64: 0, 1, 2>} : tensor<4x6x5x$T> -> tensor<$T>\n"
     "  return %s, %m, %a : tensor<4x5x$T>, tensor<1x6x1x$T>, tensor<$T>\n}"},
    // Leading axes reduced (bias gradients): the column template, with a
    // partial block of columns (70 = 64 + 6).
    {"reduce_leading",
     "func.func @forward(" ARG("x", "tensor<4x6x70x$T>") ") -> "
     "(tensor<70x$T> {graph.output = \"s\"}, tensor<1x6x70x$T> {graph.output = \"m\"}, tensor<6x70x$T> {graph.output = \"a\"}) {\n"
     "  %s = graph.reduce sum %x {axes = array<i64: 0, 1>} : tensor<4x6x70x$T> -> tensor<70x$T>\n"
     "  %m = graph.reduce max %x {axes = array<i64: 0>, keepdims} : tensor<4x6x70x$T> -> tensor<1x6x70x$T>\n"
     "  %a = graph.reduce mean %x {axes = array<i64: 0>} : tensor<4x6x70x$T> -> tensor<6x70x$T>\n"
     "  return %s, %m, %a : tensor<70x$T>, tensor<1x6x70x$T>, tensor<6x70x$T>\n}"},
    {"reshape_transpose",
     "func.func @forward(" ARG("x", "tensor<4x6x5x$T>") ") -> "
     "(tensor<24x5x$T> {graph.output = \"r\"}, tensor<5x4x6x$T> {graph.output = \"t\"}) {\n"
     "  %r = graph.reshape %x : tensor<4x6x5x$T> -> tensor<24x5x$T>\n"
     "  %t = graph.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<4x6x5x$T> -> tensor<5x4x6x$T>\n"
     "  return %r, %t : tensor<24x5x$T>, tensor<5x4x6x$T>\n}"},
    {"slice_concat_split",
     "func.func @forward(" ARG("x", "tensor<5x9x$T>") ", " ARG("w", "tensor<2x9x$T>") ") -> "
     "(tensor<3x4x$T> {graph.output = \"s\"}, tensor<7x9x$T> {graph.output = \"c0\"}, "
     "tensor<5x18x$T> {graph.output = \"c1\"}, tensor<5x3x$T> {graph.output = \"p\"}, tensor<5x2x$T> {graph.output = \"q\"}) {\n"
     "  %s = graph.slice %x {offsets = array<i64: 1, 2>} : tensor<5x9x$T> -> tensor<3x4x$T>\n"
     "  %c0 = graph.concat %x, %w {axis = 0 : i64} : (tensor<5x9x$T>, tensor<2x9x$T>) -> tensor<7x9x$T>\n"
     "  %c1 = graph.concat %x, %x {axis = 1 : i64} : (tensor<5x9x$T>, tensor<5x9x$T>) -> tensor<5x18x$T>\n"
     "  %p, %q, %r = graph.split %x {axis = 1 : i64} : tensor<5x9x$T> -> (tensor<5x3x$T>, tensor<5x2x$T>, tensor<5x4x$T>)\n"
     "  return %s, %c0, %c1, %p, %q : tensor<3x4x$T>, tensor<7x9x$T>, tensor<5x18x$T>, tensor<5x3x$T>, tensor<5x2x$T>\n}"},
    {"cast",
     "func.func @forward(" ARG("x", "tensor<4x5x$T>") ", " ARG("i", "tensor<4x5xi32>") ") -> "
     "(tensor<4x5xf64> {graph.output = \"wide\"}, tensor<4x5xf32> {graph.output = \"narrow\"}, "
     "tensor<4x5x$T> {graph.output = \"from_int\"}, tensor<4x5xi64> {graph.output = \"to_int\"}) {\n"
     "  %w = graph.cast %x : tensor<4x5x$T> -> tensor<4x5xf64>\n"
     "  %n = graph.cast %w : tensor<4x5xf64> -> tensor<4x5xf32>\n"
     "  %f = graph.cast %i : tensor<4x5xi32> -> tensor<4x5x$T>\n"
     "  %t = graph.cast %x : tensor<4x5x$T> -> tensor<4x5xi64>\n"
     "  return %w, %n, %f, %t : tensor<4x5xf64>, tensor<4x5xf32>, tensor<4x5x$T>, tensor<4x5xi64>\n}",
     {{"x", {-50.0, 50.0}}, {"i", {-1000, 1000}}}},
    {"matmul",
     "func.func @forward(" ARG("a", "tensor<3x6x5x$T>") ", " ARG("b", "tensor<5x4x$T>") ", "
     ARG("c", "tensor<3x5x4x$T>") ", " ARG("d", "tensor<2x1x6x5x$T>") ", " ARG("e", "tensor<1x3x4x5x$T>") ") -> "
     "(tensor<3x6x4x$T> {graph.output = \"shared\"}, tensor<3x6x4x$T> {graph.output = \"batched\"}, "
     "tensor<3x5x5x$T> {graph.output = \"transposed\"}, tensor<2x3x6x4x$T> {graph.output = \"broadcast\"}) {\n"
     "  %0 = graph.matmul %a, %b : tensor<3x6x5x$T>, tensor<5x4x$T> -> tensor<3x6x4x$T>\n"
     "  %1 = graph.matmul %a, %c : tensor<3x6x5x$T>, tensor<3x5x4x$T> -> tensor<3x6x4x$T>\n"
     "  %2 = graph.matmul %a, %a {transpose_lhs} : tensor<3x6x5x$T>, tensor<3x6x5x$T> -> tensor<3x5x5x$T>\n"
     "  %3 = graph.matmul %d, %e {transpose_rhs} : tensor<2x1x6x5x$T>, tensor<1x3x4x5x$T> -> tensor<2x3x6x4x$T>\n"
     "  return %0, %1, %2, %3 : tensor<3x6x4x$T>, tensor<3x6x4x$T>, tensor<3x5x5x$T>, tensor<2x3x6x4x$T>\n}"},
    {"embedding",
     "func.func @forward(" ARG("t", "tensor<11x6x$T>") ", " ARG("i", "tensor<3x4xi32>") ", " ARG("j", "tensor<5xi64>") ") -> "
     "(tensor<3x4x6x$T> {graph.output = \"e\"}, tensor<5x6x$T> {graph.output = \"f\"}) {\n"
     "  %e = graph.embedding %t, %i : tensor<11x6x$T>, tensor<3x4xi32> -> tensor<3x4x6x$T>\n"
     "  %f = graph.embedding %t, %j : tensor<11x6x$T>, tensor<5xi64> -> tensor<5x6x$T>\n"
     "  return %e, %f : tensor<3x4x6x$T>, tensor<5x6x$T>\n}",
     {{"i", {0, 11}}, {"j", {0, 11}}}},
    // Ties (rows of relu's zeros: the first index) and NaNs (log of a
    // negative: the first NaN) along the last axis and a middle one.
    {"argmax",
     "func.func @forward(" ARG("x", "tensor<3x4x9x$T>") ") -> "
     "(tensor<3x4xi32> {graph.output = \"last\"}, tensor<3x9xi64> {graph.output = \"middle\"}, "
     "tensor<3x4xi32> {graph.output = \"ties\"}, tensor<3x4xi32> {graph.output = \"nans\"}) {\n"
     "  %0 = graph.argmax %x {axis = 2 : i64} : tensor<3x4x9x$T> -> tensor<3x4xi32>\n"
     "  %1 = graph.argmax %x {axis = 1 : i64} : tensor<3x4x9x$T> -> tensor<3x9xi64>\n"
     "  %r = graph.relu %x : tensor<3x4x9x$T>\n"
     "  %2 = graph.argmax %r {axis = 2 : i64} : tensor<3x4x9x$T> -> tensor<3x4xi32>\n"
     "  %l = graph.log %x : tensor<3x4x9x$T>\n"
     "  %3 = graph.argmax %l {axis = 2 : i64} : tensor<3x4x9x$T> -> tensor<3x4xi32>\n"
     "  return %0, %1, %2, %3 : tensor<3x4xi32>, tensor<3x9xi64>, tensor<3x4xi32>, tensor<3x4xi32>\n}",
     {{"x", {-8.0, 1.0}}}},
    // Ids past both ends of the classes: rows of zeros.
    {"one_hot",
     "func.func @forward(" ARG("i", "tensor<3x4xi32>") ", " ARG("j", "tensor<5xi64>") ") -> "
     "(tensor<3x4x7x$T> {graph.output = \"h\"}, tensor<5x3x$T> {graph.output = \"g\"}) {\n"
     "  %h = graph.one_hot %i : tensor<3x4xi32> -> tensor<3x4x7x$T>\n"
     "  %g = graph.one_hot %j : tensor<5xi64> -> tensor<5x3x$T>\n"
     "  return %h, %g : tensor<3x4x7x$T>, tensor<5x3x$T>\n}",
     {{"i", {-2, 9}}, {"j", {0, 3}}}},
    {"layer_norm",
     "func.func @forward(" ARG("x", "tensor<4x3x16x$T>") ", " ARG("g", "tensor<16x$T>") ", " ARG("b", "tensor<16x$T>") ") -> "
     "(tensor<4x3x16x$T> {graph.output = \"y\"}) {\n"
     "  %y = graph.layer_norm %x, %g, %b {eps = 1.0e-5 : f64} : tensor<4x3x16x$T>, tensor<16x$T>\n"
     "  return %y : tensor<4x3x16x$T>\n}"},
    {"softmax",
     "func.func @forward(" ARG("x", "tensor<3x4x9x$T>") ") -> "
     "(tensor<3x4x9x$T> {graph.output = \"last\"}, tensor<3x4x9x$T> {graph.output = \"middle\"}) {\n"
     "  %0 = graph.softmax %x {axis = 2 : i64} : tensor<3x4x9x$T>\n"
     "  %1 = graph.softmax %x {axis = 1 : i64} : tensor<3x4x9x$T>\n"
     "  return %0, %1 : tensor<3x4x9x$T>, tensor<3x4x9x$T>\n}",
     {{"x", {-8.0, 8.0}}}},
    {"cross_entropy",
     "func.func @forward(" ARG("x", "tensor<3x4x7x$T>") ", " ARG("t", "tensor<3x4xi32>") ") -> "
     "(tensor<$T> {graph.loss, graph.output = \"loss\"}, tensor<$T> {graph.output = \"plain\"}) {\n"
     "  %0 = graph.cross_entropy %x, %t {label_smoothing = 1.0e-1 : f64} : tensor<3x4x7x$T>, tensor<3x4xi32> -> tensor<$T>\n"
     "  %1 = graph.cross_entropy %x, %t : tensor<3x4x7x$T>, tensor<3x4xi32> -> tensor<$T>\n"
     "  return %0, %1 : tensor<$T>, tensor<$T>\n}",
     {{"x", {-4.0, 4.0}}, {"t", {0, 7}}}},
    {"attention",
     "func.func @forward(" ARG("q", "tensor<2x3x8x4x$T>") ", " ARG("k", "tensor<2x3x8x4x$T>") ", "
     ARG("v", "tensor<2x3x8x4x$T>") ", " ARG("kk", "tensor<2x5x4x$T>") ", " ARG("vv", "tensor<2x5x6x$T>") ", "
     ARG("qq", "tensor<2x7x4x$T>") ") -> "
     "(tensor<2x3x8x4x$T> {graph.output = \"causal\"}, tensor<2x7x6x$T> {graph.output = \"cross\"}) {\n"
     "  %0 = graph.attention %q, %k, %v {causal} : tensor<2x3x8x4x$T>, tensor<2x3x8x4x$T>, tensor<2x3x8x4x$T> -> tensor<2x3x8x4x$T>\n"
     "  %1 = graph.attention %qq, %kk, %vv {scale = 0.3 : f64} : tensor<2x7x4x$T>, tensor<2x5x4x$T>, tensor<2x5x6x$T> -> tensor<2x7x6x$T>\n"
     "  return %0, %1 : tensor<2x3x8x4x$T>, tensor<2x7x6x$T>\n}"},
    // Additive masks read in place: per batch over the heads, per key
    // under the causal mask (a row kernel adds them to the GEMM's scores).
    {"attention_masked",
     "func.func @forward(" ARG("q", "tensor<2x3x8x4x$T>") ", " ARG("k", "tensor<2x3x8x4x$T>") ", "
     ARG("v", "tensor<2x3x8x5x$T>") ", " ARG("m", "tensor<2x1x8x8x$T>") ", " ARG("p", "tensor<8x$T>") ") -> "
     "(tensor<2x3x8x5x$T> {graph.output = \"per_batch\"}, tensor<2x3x8x5x$T> {graph.output = \"keys_causal\"}) {\n"
     "  %0 = graph.attention %q, %k, %v mask(%m : tensor<2x1x8x8x$T>) : tensor<2x3x8x4x$T>, tensor<2x3x8x4x$T>, tensor<2x3x8x5x$T> -> tensor<2x3x8x5x$T>\n"
     "  %1 = graph.attention %q, %k, %v mask(%p : tensor<8x$T>) {causal} : tensor<2x3x8x4x$T>, tensor<2x3x8x4x$T>, tensor<2x3x8x5x$T> -> tensor<2x3x8x5x$T>\n"
     "  return %0, %1 : tensor<2x3x8x5x$T>, tensor<2x3x8x5x$T>\n}",
     {{"m", {-4.0, 4.0}}, {"p", {-4.0, 4.0}}}},
    {"dropout",
     "func.func @train_step(" ARG("x", "tensor<3x10x7x$T>") ") -> "
     "(tensor<3x10x7x$T> {graph.output = \"y\"}, tensor<3x10x7x$T> {graph.output = \"z\"}) {\n"
     "  %y = graph.dropout %x {rate = 2.5e-1 : f64, stream = 3 : i64} : tensor<3x10x7x$T>\n"
     "  %z = graph.dropout %x {rate = 5.0e-1 : f64, stream = 4 : i64} : tensor<3x10x7x$T>\n"
     "  return %y, %z : tensor<3x10x7x$T>, tensor<3x10x7x$T>\n}",
     {}, "train_step", "train_step",
     interp::RunOptions{0x1234567890ABCDEFull, 7, /*training=*/true}},
    // Micro-batch 3 of an accumulated step: elements 3 * 210 + e of the
    // whole batch's mask (210 % 4 != 0: each lane finds its own block), and
    // 3 * 240 + e of a 240-element tensor's (whole blocks).
    {"dropout_micro_batch",
     "func.func @accumulate_step(" ARG("x", "tensor<3x10x7x$T>") ", " ARG("w", "tensor<3x10x8x$T>") ") -> "
     "(tensor<3x10x7x$T> {graph.output = \"y\"}, tensor<3x10x8x$T> {graph.output = \"z\"}) {\n"
     "  %y = graph.dropout %x {rate = 2.5e-1 : f64, stream = 3 : i64} : tensor<3x10x7x$T>\n"
     "  %z = graph.dropout %w {rate = 5.0e-1 : f64, stream = 4 : i64} : tensor<3x10x8x$T>\n"
     "  return %y, %z : tensor<3x10x7x$T>, tensor<3x10x8x$T>\n}",
     {}, "accumulate_step", "accumulate_step",
     interp::RunOptions{0x1234567890ABCDEFull, 7, /*training=*/true,
                        /*microBatch=*/3}},
};

static std::string caseName(
    const ::testing::TestParamInfo<std::tuple<OpCase, const char *>> &info) {
  return std::string(std::get<0>(info.param).name) + "_" +
         std::get<1>(info.param);
}

INSTANTIATE_TEST_SUITE_P(Ops, HostCodegenTest,
                         ::testing::Combine(::testing::ValuesIn(kOpCases),
                                            ::testing::Values("f32", "f64")),
                         caseName);
