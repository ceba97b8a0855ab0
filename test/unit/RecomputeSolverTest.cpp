//===- RecomputeSolverTest.cpp - Greedy against exact recomputation -------===//
//
// Part of Kiln. On small generated training steps -- GPTs of one and two
// blocks, MLPs, and random chains of matmuls and elementwise ops -- the
// greedy heuristic of --graph-recompute recomputes at most 5% more FLOPs than
// the exact branch and bound, at budgets spread between the least memory
// recomputation reaches and the peak without it. Also: the rewrite clones
// exactly the FLOPs the plan counts, and the result verifies.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Dialect/Graph/Transforms/Recompute.h"
#include "kiln/Dialect/Graph/Transforms/TrainStep.h"
#include "kiln/Frontend/Frontend.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>

using namespace kiln;

namespace {
struct Model {
  std::string name, source;
  std::vector<frontend::DimOverride> dims;
};

class RecomputeSolverTest : public ::testing::Test {
protected:
  RecomputeSolverTest() {
    context.getOrLoadDialect<graph::GraphDialect>();
    context.getOrLoadDialect<mlir::func::FuncDialect>();
  }

  /// The model with its training entry built.
  mlir::OwningOpRef<mlir::ModuleOp> load(const Model &model) {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(model.source, model.name),
        llvm::SMLoc());
    std::string errors;
    llvm::raw_string_ostream os(errors);
    mlir::OwningOpRef<mlir::ModuleOp> module =
        frontend::loadModel(sourceMgr, context, os, model.dims);
    EXPECT_TRUE(module) << model.name << ": " << errors;
    if (!module)
      return nullptr;
    mlir::FailureOr<graph::TrainSettings> settings =
        graph::TrainSettings::fromModule(*module);
    EXPECT_TRUE(mlir::succeeded(settings));
    EXPECT_TRUE(mlir::succeeded(graph::buildTrainFunctions(*module, *settings)));
    return module;
  }

  mlir::MLIRContext context;
};

std::string readGpt() {
  auto buffer = llvm::MemoryBuffer::getFile(
      KILN_SOURCE_DIR "/test/e2e/Inputs/gpt-small.kiln");
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

std::string mlp(int layers, int width, int batch) {
  std::string s = "model mlp {\n  dim B = " + std::to_string(batch) +
                  ", F = 32, N = " + std::to_string(width) + ", C = 10\n";
  s += "  input x : f32[B, F]\n  input y : i32[B]\n";
  s += "  param w0 : f32[F, N] = normal(0.05)\n  param b0 : f32[N] = zeros\n";
  for (int l = 1; l < layers; ++l)
    s += "  param w" + std::to_string(l) + " : f32[N, N] = normal(0.05)\n";
  s += "  param wc : f32[N, C] = normal(0.05)\n";
  s += "  h = relu(x @ w0 + b0)\n";
  for (int l = 1; l < layers; ++l)
    s += "  h = gelu(h @ w" + std::to_string(l) + ")\n";
  s += "  return cross_entropy(h @ wc, y)\n}\n";
  s += "train {\n  optimizer = sgd(lr=0.1)\n  steps = 10\n}\n";
  return s;
}

/// A random chain: matmuls of random widths between elementwise ops, layer
/// norms and residual adds.
std::string randomChain(unsigned seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return int(rng() % n); };
  int widths[] = {16, 32, 64, 128};
  int length = 3 + pick(4);
  std::string params, body;
  int width = 32;
  body += "  h = x\n";
  for (int i = 0; i < length; ++i) {
    int next = widths[pick(4)];
    std::string w = "w" + std::to_string(i);
    params += "  param " + w + " : f32[" + std::to_string(width) + ", " +
              std::to_string(next) + "] = normal(0.05)\n";
    switch (pick(4)) {
    case 0:
      body += "  h = tanh(h @ " + w + ")\n";
      break;
    case 1:
      body += "  h = gelu(h @ " + w + ")\n";
      break;
    case 2: {
      std::string g = "g" + std::to_string(i), b = "b" + std::to_string(i);
      params += "  param " + g + " : f32[" + std::to_string(next) +
                "] = ones\n  param " + b + " : f32[" + std::to_string(next) +
                "] = zeros\n";
      body += "  h = layer_norm(h @ " + w + ", " + g + ", " + b +
              ", eps=1e-5)\n";
      break;
    }
    default:
      body += "  h = relu(h @ " + w + ")\n";
      break;
    }
    width = next;
    if (pick(2) == 0) {
      std::string r = "r" + std::to_string(i);
      params += "  param " + r + " : f32[" + std::to_string(width) + ", " +
                std::to_string(width) + "] = normal(0.05)\n";
      body += "  h = h + tanh(h @ " + r + ")\n";
    }
  }
  params += "  param wc : f32[" + std::to_string(width) +
            ", 10] = normal(0.05)\n";
  return "model chain {\n  dim B = " + std::to_string(16 << pick(3)) +
         "\n  input x : f32[B, 32]\n  input y : i32[B]\n" + params + body +
         "  return cross_entropy(h @ wc, y)\n}\n"
         "train {\n  optimizer = sgd(lr=0.1)\n  steps = 10\n}\n";
}

std::vector<Model> smallModels() {
  std::vector<Model> models;
  std::string gpt = readGpt();
  models.push_back({"gpt-L1", gpt, {{"L", 1}}});
  models.push_back({"gpt-L2", gpt, {{"L", 2}}});
  models.push_back({"gpt-L2-D32", gpt, {{"L", 2}, {"D", 32}, {"T", 16}}});
  models.push_back({"mlp-2", mlp(2, 128, 64), {}});
  models.push_back({"mlp-4", mlp(4, 256, 32), {}});
  models.push_back({"mlp-6", mlp(6, 64, 128), {}});
  for (unsigned seed = 1; seed <= 8; ++seed)
    models.push_back({"chain-" + std::to_string(seed), randomChain(seed), {}});
  return models;
}
} // namespace

TEST_F(RecomputeSolverTest, GreedyWithinFivePercentOfExact) {
  int compared = 0;
  double worst = 0.0;
  for (const Model &model : smallModels()) {
    mlir::OwningOpRef<mlir::ModuleOp> module = load(model);
    ASSERT_TRUE(module);
    auto entry = module->lookupSymbol<mlir::func::FuncOp>("train_step");
    std::optional<graph::RecomputeProblem> problem =
        graph::RecomputeProblem::build(entry);
    ASSERT_TRUE(problem) << model.name;
    int64_t none = problem->keepAll().estimatedPeakBytes;
    int64_t least = problem->leastMemory().estimatedPeakBytes;
    ASSERT_LE(least, none) << model.name;
    for (double fraction : {0.0, 0.25, 0.5, 0.75, 0.95}) {
      int64_t target = least + int64_t(fraction * double(none - least));
      std::optional<graph::RecomputePlan> exact =
          problem->solveExact(target, /*maxCandidates=*/24);
      std::optional<graph::RecomputePlan> greedy =
          problem->solveGreedy(target);
      ASSERT_TRUE(greedy) << model.name << " at " << target;
      EXPECT_LE(greedy->estimatedPeakBytes, target) << model.name;
      if (!exact)
        continue; // too many candidates for the exact search
      ++compared;
      if (exact->recomputeFlops > 0)
        worst = std::max(worst, double(greedy->recomputeFlops) /
                                    double(exact->recomputeFlops));
      EXPECT_LE(exact->estimatedPeakBytes, target) << model.name;
      EXPECT_LE(exact->recomputeFlops, greedy->recomputeFlops) << model.name;
      EXPECT_LE(double(greedy->recomputeFlops),
                1.05 * double(exact->recomputeFlops))
          << model.name << " at " << target << " (" << fraction
          << " of the way from " << least << " to " << none << ")";
    }
  }
  // The comparison must have happened on most of the models.
  EXPECT_GE(compared, 40);
  std::printf("greedy/exact recompute FLOPs: worst %.4f over %d budgets\n",
              worst, compared);
}

TEST_F(RecomputeSolverTest, RewriteClonesWhatThePlanCounts) {
  for (const Model &model : smallModels()) {
    mlir::OwningOpRef<mlir::ModuleOp> module = load(model);
    ASSERT_TRUE(module);
    auto entry = module->lookupSymbol<mlir::func::FuncOp>("train_step");
    std::optional<graph::RecomputeProblem> problem =
        graph::RecomputeProblem::build(entry);
    ASSERT_TRUE(problem);
    graph::RecomputePlan plan = problem->leastMemory();
    int64_t flops = problem->apply(plan);
    EXPECT_EQ(flops, plan.recomputeFlops) << model.name;
    EXPECT_TRUE(mlir::succeeded(mlir::verify(*module))) << model.name;
    // The rewritten entry's estimate with nothing more to drop is the
    // plan's: the clones' live ranges are what the estimate assumed.
    std::optional<graph::RecomputeProblem> after =
        graph::RecomputeProblem::build(entry);
    ASSERT_TRUE(after);
    EXPECT_EQ(after->keepAll().estimatedPeakBytes, plan.estimatedPeakBytes)
        << model.name;
  }
}
