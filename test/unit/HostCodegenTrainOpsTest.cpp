//===- HostCodegenTrainOpsTest.cpp - Gradient and optimizer kernels --------===//
//
// Part of Kiln. Every gradient op (graph.pad and the *_grad ops) and every
// optimizer op compiled on its own for the cpu, run, and compared with the
// reference interpreter, as HostCodegenTest does for the forward ops: per
// tensor ‖Δ‖/‖ref‖ ≤ 1e-5 in f32 and ≤ 1e-12 in f64, and the same bytes
// whatever the chunking of the kernels' ranges (whole, chunks of 1 and of 3
// in reverse order). The cases pick sizes that leave partial blocks (column
// blocks of 16, update blocks of 1024, norm blocks of 4096), repeated
// embedding ids, and ties for reduce_max_grad; the update cases also run as
// training entries whose updates are written in place into the parameter
// and state buffers.
//
//===----------------------------------------------------------------------===//

#include "HostCodegenTestUtil.h"

#include "kiln/InitKiln.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace kiln;
using namespace kiln::test;

namespace {

/// One case: a module over the float element type `$T`.
struct TrainOpCase {
  const char *name;
  const char *source;
  std::map<std::string, InputRange> ranges = {};
  const char *function = "forward";
  const char *entry = "eval_step";
};

class HostCodegenTrainOpsTest
    : public ::testing::TestWithParam<std::tuple<TrainOpCase, const char *>> {
protected:
  HostCodegenTrainOpsTest() {
    DialectRegistry registry;
    registerKilnDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }
  MLIRContext context;
};

void PrintTo(const TrainOpCase &c, std::ostream *os) { *os << c.name; }

} // namespace

TEST_P(HostCodegenTrainOpsTest, MatchesInterpreter) {
  const TrainOpCase &op = std::get<0>(GetParam());
  llvm::StringRef type = std::get<1>(GetParam());
  std::string source = instantiate(op.source, type);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module) << source;
  Comparison result =
      compileAndCompare(*module, op.function, op.entry, op.ranges);
  double tolerance = type == "f64" ? 1e-12 : 1e-5;
  EXPECT_LE(result.worstRelativeError, tolerance) << op.name << " " << type.str();
  EXPECT_TRUE(result.chunkingIndependent)
      << op.name << ": results depend on the chunking";
  std::printf("[ host ] %-24s %s  max |d|/|ref| = %.3g\n", op.name,
              type.str().c_str(), result.worstRelativeError);
}

#define ARG(NAME, TYPE) "%" NAME ": " TYPE " {graph.input = \"" NAME "\"}"
#define PARAM(NAME, TYPE) "%" NAME ": " TYPE " {graph.param = \"" NAME "\"}"
#define STATE(NAME, TYPE) "%" NAME ": " TYPE " {graph.state = \"" NAME "\"}"

/// fp16's training step around the updates: the gradients of a scaled loss
/// (times 1 / `bad`), their norm deciding the skip, unscaled by the updates'
/// grad_scale, written in place.
static const char kLossScaledEntry[] = R"(
func.func @train_step(%w: tensor<3x700x$T> {graph.param = "w"}, %c: tensor<9x$T> {graph.param = "c"},
                      %gw: tensor<3x700x$T> {graph.input = "gw"}, %gc: tensor<9x$T> {graph.input = "gc"},
                      %bad: tensor<$T> {graph.input = "bad"},
                      %w.adam_m: tensor<3x700x$T> {graph.state = "w.adam_m"},
                      %w.adam_v: tensor<3x700x$T> {graph.state = "w.adam_v"},
                      %c.momentum: tensor<9x$T> {graph.state = "c.momentum"},
                      %scale: tensor<$T> {graph.state = "loss_scale.scale"},
                      %good: tensor<$T> {graph.state = "loss_scale.good_steps"},
                      %optimizer.step: tensor<$T> {graph.state = "optimizer.step"})
    -> (tensor<$T> {graph.output = "skipped"}, tensor<$T> {graph.output = "loss_scale"},
        tensor<3x700x$T> {graph.update = "w"}, tensor<9x$T> {graph.update = "c"},
        tensor<3x700x$T> {graph.update = "w.adam_m"}, tensor<3x700x$T> {graph.update = "w.adam_v"},
        tensor<9x$T> {graph.update = "c.momentum"}, tensor<$T> {graph.update = "loss_scale.scale"},
        tensor<$T> {graph.update = "loss_scale.good_steps"}, tensor<$T> {graph.update = "optimizer.step"}) {
  %one = graph.constant dense<1.0> : tensor<$T>
  %factor = graph.div %one, %bad : tensor<$T>
  %fw = graph.broadcast %factor : tensor<$T> -> tensor<3x700x$T>
  %gw2 = graph.mul %gw, %fw : tensor<3x700x$T>
  %t = graph.add %optimizer.step, %one : tensor<$T>
  %lr = graph.lr_schedule constant %t {lr = 1.0e-2 : f64, warmup = 0 : i64, total = 20 : i64, final = 0.0 : f64} : tensor<$T>
  %n = graph.global_norm %gw2, %gc : (tensor<3x700x$T>, tensor<9x$T>) -> tensor<$T>
  %unscale = graph.div %one, %scale : tensor<$T>
  %ls:3 = graph.loss_scale_update %n, %scale, %good {growth = 2.0 : f64, backoff = 0.5 : f64, interval = 4 : i64} : tensor<$T>
  %u:3 = graph.adamw_update %w, %gw2, %w.adam_m, %w.adam_v, %lr, %t, %unscale skip %ls#2 {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64} : tensor<3x700x$T>, tensor<$T>, tensor<$T>
  %k:2 = graph.momentum_update %c, %gc, %c.momentum, %lr, %unscale skip %ls#2 {momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<9x$T>, tensor<$T>, tensor<$T>
  %t2 = graph.sub %t, %ls#2 : tensor<$T>
  return %ls#2, %ls#0, %u#0, %k#0, %u#1, %u#2, %k#1, %ls#0, %ls#1, %t2
      : tensor<$T>, tensor<$T>, tensor<3x700x$T>, tensor<9x$T>, tensor<3x700x$T>, tensor<3x700x$T>,
        tensor<9x$T>, tensor<$T>, tensor<$T>, tensor<$T>
})";

static const TrainOpCase
    kTrainOpCases[] =
        {
            {"pad",
             "func.func @forward(" ARG("x", "tensor<3x4x$T>") ", " ARG(
                 "y",
                 "tensor<2x3x5x$T>") ") -> "
                                     "(tensor<5x7x$T> {graph.output = \"p\"}, "
                                     "tensor<4x3x9x$T> {graph.output = \"q\"}) "
                                     "{\n"
                                     "  %p = graph.pad %x {offsets = "
                                     "array<i64: 1, 2>} : tensor<3x4x$T> -> "
                                     "tensor<5x7x$T>\n"
                                     "  %q = graph.pad %y {offsets = "
                                     "array<i64: 2, 0, 4>} : tensor<2x3x5x$T> "
                                     "-> tensor<4x3x9x$T>\n"
                                     "  return %p, %q : tensor<5x7x$T>, "
                                     "tensor<4x3x9x$T>\n}"},
            {"relu_gelu_grad",
             "func.func @forward(" ARG("dy", "tensor<3x5x7x$T>") ", " ARG(
                 "x", "tensor<3x5x7x$T>") ") -> "
                                          "(tensor<3x5x7x$T> {graph.output = "
                                          "\"relu\"}, tensor<3x5x7x$T> "
                                          "{graph.output = \"gelu\"}) {\n"
                                          "  %0 = graph.relu_grad %dy, %x : "
                                          "tensor<3x5x7x$T>\n"
                                          "  %1 = graph.gelu_grad %dy, %x : "
                                          "tensor<3x5x7x$T>\n"
                                          "  return %0, %1 : tensor<3x5x7x$T>, "
                                          "tensor<3x5x7x$T>\n}",
             {{"x", {-4.0, 4.0}}}},
            {"softmax_grad",
             "func.func @forward(" ARG("dy", "tensor<3x4x9x$T>") ", " ARG(
                 "y",
                 "tensor<3x4x9x$T>") ") -> "
                                     "(tensor<3x4x9x$T> {graph.output = "
                                     "\"last\"}, tensor<3x4x9x$T> "
                                     "{graph.output = \"middle\"}) {\n"
                                     "  %0 = graph.softmax_grad %dy, %y {axis "
                                     "= 2 : i64} : tensor<3x4x9x$T>\n"
                                     "  %1 = graph.softmax_grad %dy, %y {axis "
                                     "= 1 : i64} : tensor<3x4x9x$T>\n"
                                     "  return %0, %1 : tensor<3x4x9x$T>, "
                                     "tensor<3x4x9x$T>\n}",
             {{"y", {0.0, 1.0}}}},
            // Small integers cast to floats: many ties, which go to the first
            // maximum in row-major order.
            {"reduce_max_grad",
             "func.func @forward(" ARG("i", "tensor<4x6x5xi32>") ", " ARG("da", "tensor<4x5x$T>") ", " ARG(
                 "db",
                 "tensor<1x6x1x$T>") ", " ARG("dc",
                                              "tensor<$T>") ") -> "
                                                            "(tensor<4x6x5x$T> "
                                                            "{graph.output = "
                                                            "\"a\"}, "
                                                            "tensor<4x6x5x$T> "
                                                            "{graph.output = "
                                                            "\"b\"}, "
                                                            "tensor<4x6x5x$T> "
                                                            "{graph.output = "
                                                            "\"c\"}) {\n"
                                                            "  %x = graph.cast "
                                                            "%i : "
                                                            "tensor<4x6x5xi32> "
                                                            "-> "
                                                            "tensor<4x6x5x$T>\n"
                                                            "  %a = "
                                                            "graph.reduce_max_"
                                                            "grad %da, %x "
                                                            "{axes = "
                                                            "array<i64: 1>} : "
                                                            "tensor<4x5x$T>, "
                                                            "tensor<4x6x5x$T>\n"
                                                            "  %b = "
                                                            "graph.reduce_max_"
                                                            "grad %db, %x "
                                                            "{axes = "
                                                            "array<i64: 0, 2>, "
                                                            "keepdims} : "
                                                            "tensor<1x6x1x$T>, "
                                                            "tensor<4x6x5x$T>\n"
                                                            "  %c = "
                                                            "graph.reduce_max_"
                                                            "grad %dc, %x "
                                                            "{axes = "
                                                            "array<i64: 0, 1, "
                                                            "2>} : tensor<$T>, "
                                                            "tensor<4x6x5x$T>\n"
                                                            "  return %a, %b, "
                                                            "%c : "
                                                            "tensor<4x6x5x$T>, "
                                                            "tensor<4x6x5x$T>, "
                                                            "tensor<4x6x5x$T>"
                                                            "\n}",
             {{"i", {-3, 3}},
              {"da", {0.5, 2.0}},
              {"db", {0.5, 2.0}},
              {"dc", {0.5, 2.0}}}},
            {"layer_norm_grad",
             "func.func @forward(" ARG("dy", "tensor<4x3x16x$T>") ", " ARG("x", "tensor<4x3x16x$T>") ", " ARG("g", "tensor<16x$T>") ", " ARG("dz", "tensor<5x40x$T>") ", " ARG(
                 "z",
                 "tensor<5x40x$T>") ", " ARG("h",
                                             "tensor<40x$T>") ") -> "
                                                              "(tensor<4x3x16x$"
                                                              "T> "
                                                              "{graph.output = "
                                                              "\"dx\"}, "
                                                              "tensor<16x$T> "
                                                              "{graph.output = "
                                                              "\"dg\"}, "
                                                              "tensor<16x$T> "
                                                              "{graph.output = "
                                                              "\"db\"}, "
                                                              "tensor<5x40x$T> "
                                                              "{graph.output = "
                                                              "\"dx2\"}, "
                                                              "tensor<40x$T> "
                                                              "{graph.output = "
                                                              "\"dh\"}, "
                                                              "tensor<40x$T> "
                                                              "{graph.output = "
                                                              "\"dc\"}) {\n"
                                                              "  %dx, %dg, %db "
                                                              "= "
                                                              "graph.layer_"
                                                              "norm_grad %dy, "
                                                              "%x, %g {eps = "
                                                              "1.0e-5 : f64} : "
                                                              "tensor<4x3x16x$"
                                                              "T>, "
                                                              "tensor<16x$T>\n"
                                                              "  %dz2, %dh, "
                                                              "%dc = "
                                                              "graph.layer_"
                                                              "norm_grad %dz, "
                                                              "%z, %h {eps = "
                                                              "1.0e-3 : f64} : "
                                                              "tensor<5x40x$T>,"
                                                              " tensor<40x$T>\n"
                                                              "  return %dx, "
                                                              "%dg, %db, %dz2, "
                                                              "%dh, %dc : "
                                                              "tensor<4x3x16x$"
                                                              "T>, "
                                                              "tensor<16x$T>, "
                                                              "tensor<16x$T>, "
                                                              "tensor<5x40x$T>,"
                                                              " tensor<40x$T>, "
                                                              "tensor<40x$T>"
                                                              "\n}"},
            // The gradient with masks: recomputed probabilities add them.
            {"attention_grad_masked",
             "func.func @forward(" ARG("do", "tensor<2x3x8x5x$T>") ", "
             ARG("q", "tensor<2x3x8x4x$T>") ", " ARG("k", "tensor<2x3x8x4x$T>") ", "
             ARG("v", "tensor<2x3x8x5x$T>") ", " ARG("m", "tensor<2x1x8x8x$T>") ") -> "
             "(tensor<2x3x8x4x$T> {graph.output = \"dq\"}, tensor<2x3x8x4x$T> {graph.output = \"dk\"}, "
             "tensor<2x3x8x5x$T> {graph.output = \"dv\"}) {\n"
             "  %o = graph.attention %q, %k, %v mask(%m : tensor<2x1x8x8x$T>) {causal} : tensor<2x3x8x4x$T>, tensor<2x3x8x4x$T>, tensor<2x3x8x5x$T> -> tensor<2x3x8x5x$T>\n"
             "  %dq, %dk, %dv = graph.attention_grad %do, %q, %k, %v, %o mask(%m : tensor<2x1x8x8x$T>) {causal} : tensor<2x3x8x5x$T>, tensor<2x3x8x4x$T>, tensor<2x3x8x4x$T>, tensor<2x3x8x5x$T>\n"
             "  return %dq, %dk, %dv : tensor<2x3x8x4x$T>, tensor<2x3x8x4x$T>, tensor<2x3x8x5x$T>\n}"},
            {"attention_grad",
             "func.func @forward(" ARG("do", "tensor<2x3x8x4x$T>") ", " ARG("q", "tensor<2x3x8x4x$T>") ", " ARG("k", "tensor<2x3x8x4x$T>") ", " ARG(
                 "v",
                 "tensor<2x3x8x4x$T>") ", " ARG("dd", "tensor<2x7x6x$T>") ","
                                                                          " " ARG("qq",
                                                                                  "tensor<2x7x4x$T>") ", " ARG("kk", "tensor<2x5x4x$T>") ", " ARG("vv", "tensor<2x5x6x$T>") ") -> "
                                                                                                                                                                            "(tensor<2x3x8x4x$T> {graph.output = \"dq\"}, tensor<2x3x8x4x$T> {graph.output = \"dk\"}, "
                                                                                                                                                                            "tensor<2x3x8x4x$T> {graph.output = \"dv\"}, tensor<2x7x4x$T> {graph.output = \"dqq\"}, "
                                                                                                                                                                            "tensor<2x5x4x$T> {graph.output = \"dkk\"}, tensor<2x5x6x$T> {graph.output = \"dvv\"}) {\n"
                                                                                                                                                                            "  %o = graph.attention %q, %k, %v {causal} : tensor<2x3x8x4x$T>, tensor<2x3x8x4x$T>, tensor<2x3x8x4x$T> -> tensor<2x3x8x4x$T>\n"
                                                                                                                                                                            "  %dq, %dk, %dv = graph.attention_grad %do, %q, %k, %v, %o {causal} : tensor<2x3x8x4x$T>, tensor<2x3x8x4x$T>, tensor<2x3x8x4x$T>, tensor<2x3x8x4x$T>\n"
                                                                                                                                                                            "  %oo = graph.attention %qq, %kk, %vv {scale = 0.3 : f64} : tensor<2x7x4x$T>, tensor<2x5x4x$T>, tensor<2x5x6x$T> -> tensor<2x7x6x$T>\n"
                                                                                                                                                                            "  %dqq, %dkk, %dvv = graph.attention_grad %dd, %qq, %kk, %vv, %oo {scale = 0.3 : f64} : tensor<2x7x6x$T>, tensor<2x7x4x$T>, tensor<2x5x4x$T>, tensor<2x5x6x$T>\n"
                                                                                                                                                                            "  return %dq, %dk, %dv, %dqq, %dkk, %dvv : tensor<2x3x8x4x$T>, tensor<2x3x8x4x$T>, tensor<2x3x8x4x$T>, "
                                                                                                                                                                            "tensor<2x7x4x$T>, tensor<2x5x4x$T>, tensor<2x5x6x$T>\n}"},
            {"cross_entropy_grad",
             "func.func @forward(" ARG("dl", "tensor<$T>") ", " ARG(
                 "x", "tensor<3x4x7x$T>") ", " ARG("t",
                                                   "tensor<3x4xi32>") ") -> "
                                                                      "(tensor<"
                                                                      "3x4x7x$"
                                                                      "T> "
                                                                      "{graph."
                                                                      "output "
                                                                      "= "
                                                                      "\"smooth"
                                                                      "ed\"}, "
                                                                      "tensor<"
                                                                      "3x4x7x$"
                                                                      "T> "
                                                                      "{graph."
                                                                      "output "
                                                                      "= "
                                                                      "\"plain"
                                                                      "\"}) {\n"
                                                                      "  %0 = "
                                                                      "graph."
                                                                      "cross_"
                                                                      "entropy_"
                                                                      "grad "
                                                                      "%dl, "
                                                                      "%x, %t "
                                                                      "{label_"
                                                                      "smoothin"
                                                                      "g = "
                                                                      "1.0e-1 "
                                                                      ": f64} "
                                                                      ": "
                                                                      "tensor<$"
                                                                      "T>, "
                                                                      "tensor<"
                                                                      "3x4x7x$"
                                                                      "T>, "
                                                                      "tensor<"
                                                                      "3x4xi32>"
                                                                      "\n"
                                                                      "  %1 = "
                                                                      "graph."
                                                                      "cross_"
                                                                      "entropy_"
                                                                      "grad "
                                                                      "%dl, "
                                                                      "%x, %t "
                                                                      ": "
                                                                      "tensor<$"
                                                                      "T>, "
                                                                      "tensor<"
                                                                      "3x4x7x$"
                                                                      "T>, "
                                                                      "tensor<"
                                                                      "3x4xi32>"
                                                                      "\n"
                                                                      "  "
                                                                      "return "
                                                                      "%0, %1 "
                                                                      ": "
                                                                      "tensor<"
                                                                      "3x4x7x$"
                                                                      "T>, "
                                                                      "tensor<"
                                                                      "3x4x7x$"
                                                                      "T>\n}",
             {{"x", {-4.0, 4.0}}, {"t", {0, 7}}, {"dl", {0.5, 2.0}}}},
            // Ids from a small range repeat; a width of 40 leaves a partial
            // column block.
            {
                "embedding_grad",
                "func.func @forward(" ARG("dy", "tensor<3x4x6x$T>") ", " ARG("i", "tensor<3x4xi32>") ", " ARG(
                    "dz",
                    "tensor<9x40x$T>") ", " ARG("j", "tensor<9xi64>") ") -> "
                                                                      "(tensor<"
                                                                      "11x6x$T>"
                                                                      " {graph."
                                                                      "output "
                                                                      "= "
                                                                      "\"e\"}, "
                                                                      "tensor<"
                                                                      "5x40x$T>"
                                                                      " {graph."
                                                                      "output "
                                                                      "= "
                                                                      "\"f\"}) "
                                                                      "{\n"
                                                                      "  %e = "
                                                                      "graph."
                                                                      "embeddin"
                                                                      "g_grad "
                                                                      "%dy, %i "
                                                                      ": "
                                                                      "tensor<"
                                                                      "3x4x6x$"
                                                                      "T>, "
                                                                      "tensor<"
                                                                      "3x4xi32>"
                                                                      " -> "
                                                                      "tensor<"
                                                                      "11x6x$T>"
                                                                      "\n"
                                                                      "  %f = "
                                                                      "graph."
                                                                      "embeddin"
                                                                      "g_grad "
                                                                      "%dz, %j "
                                                                      ": "
                                                                      "tensor<"
                                                                      "9x40x$T>"
                                                                      ", "
                                                                      "tensor<"
                                                                      "9xi64> "
                                                                      "-> "
                                                                      "tensor<"
                                                                      "5x40x$T>"
                                                                      "\n"
                                                                      "  "
                                                                      "return "
                                                                      "%e, %f "
                                                                      ": "
                                                                      "tensor<"
                                                                      "11x6x$T>"
                                                                      ", "
                                                                      "tensor<"
                                                                      "5x40x$T>"
                                                                      "\n}",
                {{"i", {0, 11}}, {"j", {0, 3}}}},
            {"lr_schedule",
             "func.func @forward(" ARG(
                 "t",
                 "tensor<$T>") ") -> "
                               "(tensor<$T> {graph.output = \"constant\"}, "
                               "tensor<$T> {graph.output = \"linear\"}, "
                               "tensor<$T> {graph.output = \"cosine\"}) {\n"
                               "  %0 = graph.lr_schedule constant %t {lr = "
                               "3.0e-4 : f64, warmup = 0 : i64, total = 20 : "
                               "i64, final = 0.0 : f64} : tensor<$T>\n"
                               "  %1 = graph.lr_schedule linear %t {lr = "
                               "1.0e-3 : f64, warmup = 5 : i64, total = 20 : "
                               "i64, final = 0.2 : f64} : tensor<$T>\n"
                               "  %2 = graph.lr_schedule cosine %t {lr = "
                               "1.0e-3 : f64, warmup = 2 : i64, total = 20 : "
                               "i64, final = 0.1 : f64} : tensor<$T>\n"
                               "  return %0, %1, %2 : tensor<$T>, tensor<$T>, "
                               "tensor<$T>\n}",
             {{"t", {1.0, 25.0}}}},
            {"lr_schedule_warmup",
             "func.func @forward(" ARG(
                 "t",
                 "tensor<$T>") ") -> (tensor<$T> {graph.output = \"cosine\"}) "
                               "{\n"
                               "  %0 = graph.lr_schedule cosine %t {lr = "
                               "1.0e-3 : f64, warmup = 100 : i64, total = 2000 "
                               ": i64, final = 0.0 : f64} : tensor<$T>\n"
                               "  return %0 : tensor<$T>\n}",
             {{"t", {1.0, 99.0}}}},
            // 14000 elements: three full norm blocks and a partial one.
            {"global_norm_clip_scale",
             "func.func @forward(" ARG("a", "tensor<70x200x$T>") ", " ARG("b", "tensor<7x$T>") ", " ARG(
                 "c", "tensor<3x5x$T>") ") -> "
                                        "(tensor<$T> {graph.output = "
                                        "\"norm\"}, tensor<$T> {graph.output = "
                                        "\"small\"}, "
                                        "tensor<$T> {graph.output = \"clip\"}, "
                                        "tensor<$T> {graph.output = \"keep\"}) "
                                        "{\n"
                                        "  %n = graph.global_norm %a, %b, %c : "
                                        "(tensor<70x200x$T>, tensor<7x$T>, "
                                        "tensor<3x5x$T>) -> tensor<$T>\n"
                                        "  %m = graph.global_norm %c, %b : "
                                        "(tensor<3x5x$T>, tensor<7x$T>) -> "
                                        "tensor<$T>\n"
                                        "  %s = graph.clip_scale %n {max_norm "
                                        "= 1.0 : f64} : tensor<$T>\n"
                                        "  %k = graph.clip_scale %m {max_norm "
                                        "= 1.0e3 : f64} : tensor<$T>\n"
                                        "  return %n, %m, %s, %k : tensor<$T>, "
                                        "tensor<$T>, tensor<$T>, "
                                        "tensor<$T>\n}"},
            // 3000 elements: two full update blocks and a partial one.
            {
                "sgd_momentum_update",
                "func.func @forward(" ARG("p", "tensor<3x1000x$T>") ", " ARG("g", "tensor<3x1000x$T>") ", " ARG("b", "tensor<3x1000x$T>") ", " ARG(
                    "lr",
                    "tensor<$T>") ", " ARG("s", "tensor<$T>") ") -> "
                                                              "(tensor<3x1000x$"
                                                              "T> "
                                                              "{graph.output = "
                                                              "\"sgd\"}, "
                                                              "tensor<3x1000x$"
                                                              "T> "
                                                              "{graph.output = "
                                                              "\"p1\"}, "
                                                              "tensor<3x1000x$"
                                                              "T> "
                                                              "{graph.output = "
                                                              "\"b1\"}, "
                                                              "tensor<3x1000x$"
                                                              "T> "
                                                              "{graph.output = "
                                                              "\"p2\"}, "
                                                              "tensor<3x1000x$"
                                                              "T> "
                                                              "{graph.output = "
                                                              "\"b2\"}) {\n"
                                                              "  %0 = "
                                                              "graph.sgd_"
                                                              "update %p, %g, "
                                                              "%lr, %s "
                                                              "{weight_decay = "
                                                              "1.0e-2 : f64} : "
                                                              "tensor<3x1000x$"
                                                              "T>, tensor<$T>\n"
                                                              "  %1:2 = "
                                                              "graph.momentum_"
                                                              "update %p, %g, "
                                                              "%b, %lr, %s "
                                                              "{momentum = 0.9 "
                                                              ": f64, "
                                                              "weight_decay = "
                                                              "1.0e-2 : f64} : "
                                                              "tensor<3x1000x$"
                                                              "T>, tensor<$T>\n"
                                                              "  %2:2 = "
                                                              "graph.momentum_"
                                                              "update %p, %g, "
                                                              "%b, %lr, %s "
                                                              "{momentum = 0.8 "
                                                              ": f64, "
                                                              "weight_decay = "
                                                              "0.0 : f64, "
                                                              "nesterov} : "
                                                              "tensor<3x1000x$"
                                                              "T>, tensor<$T>\n"
                                                              "  return %0, "
                                                              "%1#0, %1#1, "
                                                              "%2#0, %2#1 : "
                                                              "tensor<3x1000x$"
                                                              "T>, "
                                                              "tensor<3x1000x$"
                                                              "T>, "
                                                              "tensor<3x1000x$"
                                                              "T>, "
                                                              "tensor<3x1000x$"
                                                              "T>, "
                                                              "tensor<3x1000x$"
                                                              "T>\n}",
                {{"lr", {0.01, 0.1}}, {"s", {0.5, 1.0}}}},
            {"adamw_update",
             "func.func @forward(" ARG("p", "tensor<3x1000x$T>") ", " ARG("g", "tensor<3x1000x$T>") ", " ARG("m", "tensor<3x1000x$T>") ", " ARG("v", "tensor<3x1000x$T>") ", " ARG(
                 "lr",
                 "tensor<$T>") ", " ARG("t",
                                        "tensor<$T>") ", " ARG("s",
                                                               "tensor<$T>") ")"
                                                                             " "
                                                                             "-"
                                                                             ">"
                                                                             " "
                                                                             "("
                                                                             "t"
                                                                             "e"
                                                                             "n"
                                                                             "s"
                                                                             "o"
                                                                             "r"
                                                                             "<"
                                                                             "3"
                                                                             "x"
                                                                             "1"
                                                                             "0"
                                                                             "0"
                                                                             "0"
                                                                             "x"
                                                                             "$"
                                                                             "T"
                                                                             ">"
                                                                             " "
                                                                             "{"
                                                                             "g"
                                                                             "r"
                                                                             "a"
                                                                             "p"
                                                                             "h"
                                                                             "."
                                                                             "o"
                                                                             "u"
                                                                             "t"
                                                                             "p"
                                                                             "u"
                                                                             "t"
                                                                             " "
                                                                             "="
                                                                             " "
                                                                             "\"p1\"}, tensor<3x1000x$T> {graph.output = \"m1\"}, "
                                                                             "t"
                                                                             "e"
                                                                             "n"
                                                                             "s"
                                                                             "o"
                                                                             "r"
                                                                             "<"
                                                                             "3"
                                                                             "x"
                                                                             "1"
                                                                             "0"
                                                                             "0"
                                                                             "0"
                                                                             "x"
                                                                             "$"
                                                                             "T"
                                                                             ">"
                                                                             " "
                                                                             "{"
                                                                             "g"
                                                                             "r"
                                                                             "a"
                                                                             "p"
                                                                             "h"
                                                                             "."
                                                                             "o"
                                                                             "u"
                                                                             "t"
                                                                             "p"
                                                                             "u"
                                                                             "t"
                                                                             " "
                                                                             "="
                                                                             " "
                                                                             "\"v1\"}) {\n"
                                                                             " "
                                                                             " "
                                                                             "%"
                                                                             "u"
                                                                             ":"
                                                                             "3"
                                                                             " "
                                                                             "="
                                                                             " "
                                                                             "g"
                                                                             "r"
                                                                             "a"
                                                                             "p"
                                                                             "h"
                                                                             "."
                                                                             "a"
                                                                             "d"
                                                                             "a"
                                                                             "m"
                                                                             "w"
                                                                             "_"
                                                                             "u"
                                                                             "p"
                                                                             "d"
                                                                             "a"
                                                                             "t"
                                                                             "e"
                                                                             " "
                                                                             "%"
                                                                             "p"
                                                                             ","
                                                                             " "
                                                                             "%"
                                                                             "g"
                                                                             ","
                                                                             " "
                                                                             "%"
                                                                             "m"
                                                                             ","
                                                                             " "
                                                                             "%"
                                                                             "v"
                                                                             ","
                                                                             " "
                                                                             "%"
                                                                             "l"
                                                                             "r"
                                                                             ","
                                                                             " "
                                                                             "%"
                                                                             "t"
                                                                             ","
                                                                             " "
                                                                             "%"
                                                                             "s"
                                                                             " "
                                                                             "{"
                                                                             "b"
                                                                             "e"
                                                                             "t"
                                                                             "a"
                                                                             "1"
                                                                             " "
                                                                             "="
                                                                             " "
                                                                             "0"
                                                                             "."
                                                                             "9"
                                                                             " "
                                                                             ":"
                                                                             " "
                                                                             "f"
                                                                             "6"
                                                                             "4"
                                                                             ","
                                                                             " "
                                                                             "b"
                                                                             "e"
                                                                             "t"
                                                                             "a"
                                                                             "2"
                                                                             " "
                                                                             "="
                                                                             " "
                                                                             "0"
                                                                             "."
                                                                             "9"
                                                                             "5"
                                                                             " "
                                                                             ":"
                                                                             " "
                                                                             "f"
                                                                             "6"
                                                                             "4"
                                                                             ","
                                                                             " "
                                                                             "e"
                                                                             "p"
                                                                             "s"
                                                                             " "
                                                                             "="
                                                                             " "
                                                                             "1"
                                                                             "."
                                                                             "0"
                                                                             "e"
                                                                             "-"
                                                                             "8"
                                                                             " "
                                                                             ":"
                                                                             " "
                                                                             "f"
                                                                             "6"
                                                                             "4"
                                                                             ","
                                                                             " "
                                                                             "w"
                                                                             "e"
                                                                             "i"
                                                                             "g"
                                                                             "h"
                                                                             "t"
                                                                             "_"
                                                                             "d"
                                                                             "e"
                                                                             "c"
                                                                             "a"
                                                                             "y"
                                                                             " "
                                                                             "="
                                                                             " "
                                                                             "0"
                                                                             "."
                                                                             "1"
                                                                             " "
                                                                             ":"
                                                                             " "
                                                                             "f"
                                                                             "6"
                                                                             "4"
                                                                             "}"
                                                                             " "
                                                                             ":"
                                                                             " "
                                                                             "t"
                                                                             "e"
                                                                             "n"
                                                                             "s"
                                                                             "o"
                                                                             "r"
                                                                             "<"
                                                                             "3"
                                                                             "x"
                                                                             "1"
                                                                             "0"
                                                                             "0"
                                                                             "0"
                                                                             "x"
                                                                             "$"
                                                                             "T"
                                                                             ">"
                                                                             ","
                                                                             " "
                                                                             "t"
                                                                             "e"
                                                                             "n"
                                                                             "s"
                                                                             "o"
                                                                             "r"
                                                                             "<"
                                                                             "$"
                                                                             "T"
                                                                             ">"
                                                                             "\n"
                                                                             " "
                                                                             " "
                                                                             "r"
                                                                             "e"
                                                                             "t"
                                                                             "u"
                                                                             "r"
                                                                             "n"
                                                                             " "
                                                                             "%"
                                                                             "u"
                                                                             "#"
                                                                             "0"
                                                                             ","
                                                                             " "
                                                                             "%"
                                                                             "u"
                                                                             "#"
                                                                             "1"
                                                                             ","
                                                                             " "
                                                                             "%"
                                                                             "u"
                                                                             "#"
                                                                             "2"
                                                                             " "
                                                                             ":"
                                                                             " "
                                                                             "t"
                                                                             "e"
                                                                             "n"
                                                                             "s"
                                                                             "o"
                                                                             "r"
                                                                             "<"
                                                                             "3"
                                                                             "x"
                                                                             "1"
                                                                             "0"
                                                                             "0"
                                                                             "0"
                                                                             "x"
                                                                             "$"
                                                                             "T"
                                                                             ">"
                                                                             ","
                                                                             " "
                                                                             "t"
                                                                             "e"
                                                                             "n"
                                                                             "s"
                                                                             "o"
                                                                             "r"
                                                                             "<"
                                                                             "3"
                                                                             "x"
                                                                             "1"
                                                                             "0"
                                                                             "0"
                                                                             "0"
                                                                             "x"
                                                                             "$"
                                                                             "T"
                                                                             ">"
                                                                             ","
                                                                             " "
                                                                             "t"
                                                                             "e"
                                                                             "n"
                                                                             "s"
                                                                             "o"
                                                                             "r"
                                                                             "<"
                                                                             "3"
                                                                             "x"
                                                                             "1"
                                                                             "0"
                                                                             "0"
                                                                             "0"
                                                                             "x"
                                                                             "$"
                                                                             "T"
                                                                             ">"
                                                                             "\n}",
             {{"lr", {1e-3, 1e-2}},
              {"t", {1.0, 20.0}},
              {"s", {0.5, 1.0}},
              {"v", {0.0, 1.0}}}},
            // A training entry: the step count, the schedule, clipping and the
            // updates write the parameters and state in place (the parameter is
            // read by nothing after its update).
            {"train_entry_in_place",
             "func.func @train_step(" PARAM("w", "tensor<3x700x$T>") ", " PARAM("c", "tensor<9x$T>") ", " ARG("gw", "tensor<3x700x$T>") ", " ARG(
                 "gc",
                 "tensor<9x$T>") ", " STATE("w.adam_m", "tensor<3x700x$T>") ","
                                                                            " " STATE("w.adam_v",
                                                                                      "tensor<3x700x$T>") ", " STATE("c.momentum", "tensor<9x$T>") ", " STATE("optimizer.step",
                                                                                                                                                              "tensor<$T>") ") -> "
                                                                                                                                                                            "(tensor<$T> {graph.output = \"lr\"}, tensor<$T> {graph.output = \"grad_norm\"}, "
                                                                                                                                                                            "tensor<3x700x$T> {graph.update = \"w\"}, tensor<9x$T> {graph.update = \"c\"}, "
                                                                                                                                                                            "tensor<3x700x$T> {graph.update = \"w.adam_m\"}, tensor<3x700x$T> {graph.update = \"w.adam_v\"}, "
                                                                                                                                                                            "tensor<9x$T> {graph.update = \"c.momentum\"}, tensor<$T> {graph.update = \"optimizer.step\"}) {\n"
                                                                                                                                                                            "  %one = graph.constant dense<1.0> : tensor<$T>\n"
                                                                                                                                                                            "  %t = graph.add %optimizer.step, %one : tensor<$T>\n"
                                                                                                                                                                            "  %lr = graph.lr_schedule cosine %t {lr = 1.0e-2 : f64, warmup = 2 : i64, total = 20 : i64, final = 0.1 : f64} : tensor<$T>\n"
                                                                                                                                                                            "  %n = graph.global_norm %gw, %gc : (tensor<3x700x$T>, tensor<9x$T>) -> tensor<$T>\n"
                                                                                                                                                                            "  %s = graph.clip_scale %n {max_norm = 1.0 : f64} : tensor<$T>\n"
                                                                                                                                                                            "  %u:3 = graph.adamw_update %w, %gw, %w.adam_m, %w.adam_v, %lr, %t, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64} : tensor<3x700x$T>, tensor<$T>\n"
                                                                                                                                                                            "  %k:2 = graph.momentum_update %c, %gc, %c.momentum, %lr, %s {momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<9x$T>, tensor<$T>\n"
                                                                                                                                                                            "  return %lr, %n, %u#0, %k#0, %u#1, %u#2, %k#1, %t : tensor<$T>, tensor<$T>, tensor<3x700x$T>, tensor<9x$T>, "
                                                                                                                                                                            "tensor<3x700x$T>, tensor<3x700x$T>, tensor<9x$T>, tensor<$T>\n}",
             {{"optimizer.step", {0.0, 5.0}}, {"w.adam_v", {0.0, 1.0}}},
             "train_step",
             "train_step"},
            // Dynamic loss scaling's three outcomes: a clean step (the count
            // grows), an overflow (inf norm: back off, skip) and a clean step
            // at the interval (the scale grows, the count restarts).
            {"loss_scale_update", R"(
func.func @forward(%n: tensor<$T> {graph.input = "n"}, %s: tensor<$T> {graph.input = "s"},
                   %c: tensor<$T> {graph.input = "c"})
    -> (tensor<$T> {graph.output = "a0"}, tensor<$T> {graph.output = "a1"}, tensor<$T> {graph.output = "a2"},
        tensor<$T> {graph.output = "b0"}, tensor<$T> {graph.output = "b1"}, tensor<$T> {graph.output = "b2"},
        tensor<$T> {graph.output = "d0"}, tensor<$T> {graph.output = "d1"}, tensor<$T> {graph.output = "d2"}) {
  %zero = graph.constant dense<0.0> : tensor<$T>
  %one = graph.constant dense<1.0> : tensor<$T>
  %two = graph.constant dense<2.0> : tensor<$T>
  %inf = graph.div %one, %zero : tensor<$T>
  %a:3 = graph.loss_scale_update %n, %s, %c {growth = 2.0 : f64, backoff = 0.5 : f64, interval = 1000 : i64} : tensor<$T>
  %b:3 = graph.loss_scale_update %inf, %s, %c {growth = 2.0 : f64, backoff = 0.25 : f64, interval = 1000 : i64} : tensor<$T>
  %d:3 = graph.loss_scale_update %n, %s, %two {growth = 4.0 : f64, backoff = 0.5 : f64, interval = 3 : i64} : tensor<$T>
  return %a#0, %a#1, %a#2, %b#0, %b#1, %b#2, %d#0, %d#1, %d#2
      : tensor<$T>, tensor<$T>, tensor<$T>, tensor<$T>, tensor<$T>, tensor<$T>, tensor<$T>, tensor<$T>, tensor<$T>
})",
             {{"n", {0.1, 10.0}}, {"s", {1.0, 65536.0}}, {"c", {0.0, 900.0}}}},
            // fp16's training entry, in place, clean (bad = 1) and overflowing
            // (bad = 0: the gradients times inf): the overflowing one skips,
            // and every parameter and state must come back as it was.
            {"train_entry_loss_scaled", kLossScaledEntry,
             {{"optimizer.step", {0.0, 5.0}}, {"w.adam_v", {0.0, 1.0}},
              {"scale", {1.0, 1024.0}}, {"good", {0.0, 3.0}}, {"bad", {1.0, 1.0}}},
             "train_step",
             "train_step"},
            {"train_entry_loss_scaled_skip", kLossScaledEntry,
             {{"optimizer.step", {0.0, 5.0}}, {"w.adam_v", {0.0, 1.0}},
              {"scale", {1.0, 1024.0}}, {"good", {0.0, 3.0}}, {"bad", {0.0, 0.0}}},
             "train_step",
             "train_step"},
            // An update whose parameter is read after it: the new value goes to
            // a transient and is copied into the parameter at the end.
            {
                "train_entry_copied_update",
                "func.func @train_step(" PARAM("w", "tensor<5x7x$T>") ", " ARG(
                    "g",
                    "tensor<5x7x$T>") ", " ARG("lr",
                                               "tensor<$T>") ", " ARG("s",
                                                                      "tensor<$"
                                                                      "T>") ") "
                                                                            "->"
                                                                            " "
                                                                            "(t"
                                                                            "en"
                                                                            "so"
                                                                            "r<"
                                                                            "5x"
                                                                            "7x"
                                                                            "$T"
                                                                            "> "
                                                                            "{g"
                                                                            "ra"
                                                                            "ph"
                                                                            ".u"
                                                                            "pd"
                                                                            "at"
                                                                            "e "
                                                                            "= "
                                                                            "\""
                                                                            "w"
                                                                            "\""
                                                                            "},"
                                                                            " t"
                                                                            "en"
                                                                            "so"
                                                                            "r<"
                                                                            "5x"
                                                                            "7x"
                                                                            "$T"
                                                                            "> "
                                                                            "{g"
                                                                            "ra"
                                                                            "ph"
                                                                            ".o"
                                                                            "ut"
                                                                            "pu"
                                                                            "t "
                                                                            "= "
                                                                            "\""
                                                                            "la"
                                                                            "te"
                                                                            "\""
                                                                            "})"
                                                                            " {"
                                                                            "\n"
                                                                            "  "
                                                                            "%p"
                                                                            " ="
                                                                            " g"
                                                                            "ra"
                                                                            "ph"
                                                                            ".s"
                                                                            "gd"
                                                                            "_u"
                                                                            "pd"
                                                                            "at"
                                                                            "e "
                                                                            "%w"
                                                                            ", "
                                                                            "%g"
                                                                            ", "
                                                                            "%l"
                                                                            "r,"
                                                                            " %"
                                                                            "s "
                                                                            "{w"
                                                                            "ei"
                                                                            "gh"
                                                                            "t_"
                                                                            "de"
                                                                            "ca"
                                                                            "y "
                                                                            "= "
                                                                            "0."
                                                                            "0 "
                                                                            ": "
                                                                            "f6"
                                                                            "4}"
                                                                            " :"
                                                                            " t"
                                                                            "en"
                                                                            "so"
                                                                            "r<"
                                                                            "5x"
                                                                            "7x"
                                                                            "$T"
                                                                            ">,"
                                                                            " t"
                                                                            "en"
                                                                            "so"
                                                                            "r<"
                                                                            "$T"
                                                                            ">"
                                                                            "\n"
                                                                            "  "
                                                                            "%l"
                                                                            "at"
                                                                            "e "
                                                                            "= "
                                                                            "gr"
                                                                            "ap"
                                                                            "h."
                                                                            "mu"
                                                                            "l "
                                                                            "%w"
                                                                            ", "
                                                                            "%p"
                                                                            " :"
                                                                            " t"
                                                                            "en"
                                                                            "so"
                                                                            "r<"
                                                                            "5x"
                                                                            "7x"
                                                                            "$T"
                                                                            ">"
                                                                            "\n"
                                                                            "  "
                                                                            "re"
                                                                            "tu"
                                                                            "rn"
                                                                            " %"
                                                                            "p,"
                                                                            " %"
                                                                            "la"
                                                                            "te"
                                                                            " :"
                                                                            " t"
                                                                            "en"
                                                                            "so"
                                                                            "r<"
                                                                            "5x"
                                                                            "7x"
                                                                            "$T"
                                                                            ">,"
                                                                            " t"
                                                                            "en"
                                                                            "so"
                                                                            "r<"
                                                                            "5x"
                                                                            "7x"
                                                                            "$T"
                                                                            ">"
                                                                            "\n"
                                                                            "}",
                {},
                "train_step",
                "train_step"},
};

static std::string caseName(
    const ::testing::TestParamInfo<std::tuple<TrainOpCase, const char *>>
        &info) {
  return std::string(std::get<0>(info.param).name) + "_" +
         std::get<1>(info.param);
}

INSTANTIATE_TEST_SUITE_P(TrainOps, HostCodegenTrainOpsTest,
                         ::testing::Combine(::testing::ValuesIn(kTrainOpCases),
                                            ::testing::Values("f32", "f64")),
                         caseName);
