//===- GraphRecompute.cpp - The --graph-recompute pass ---------------------===//
//
// Part of Kiln. Fits a training step into a memory budget by recomputing
// forward activations in the backward (Recompute.h). With a measure of the
// exact peak (the kernel pipeline gives one), the graph-level estimate is
// calibrated against it, every plan is checked with it, and the search is
// tightened until the measured peak fits.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/Transforms/Passes.h"
#include "kiln/Dialect/Graph/Transforms/Recompute.h"
#include "kiln/Dialect/Graph/IR/GraphDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHRECOMPUTE
#include "kiln/Dialect/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;
using namespace kiln::graph;

namespace {
struct GraphRecomputePass
    : kiln::graph::impl::GraphRecomputeBase<GraphRecomputePass> {
  using GraphRecomputeBase::GraphRecomputeBase;

  GraphRecomputePass(int64_t budget, PeakBytesMeasure measure)
      : measure(std::move(measure)) {
    this->budget = budget;
  }

  void runOnOperation() override;

private:
  std::optional<RecomputePlan> solve(const RecomputeProblem &problem,
                                     int64_t target);
  /// The measured peak of the module with `plan` applied (to a clone).
  FailureOr<int64_t> measurePlan(StringRef entryName,
                                 const RecomputePlan &plan);
  void record(func::FuncOp entry, const RecomputePlan &plan);
  /// A plan that fits with bytes to spare may recompute less: tries a
  /// looser target by the slack a few times, keeping what still fits.
  RecomputePlan loosen(const RecomputeProblem &problem, StringRef entryName,
                       RecomputePlan plan, int64_t exact, int64_t target);

  PeakBytesMeasure measure;
};
} // namespace

/// The training entry: @train_step, or @accumulate_step with accumulation.
static func::FuncOp findTrainingEntry(ModuleOp module) {
  for (StringRef name : {"train_step", "accumulate_step"})
    if (auto entry = module.lookupSymbol<func::FuncOp>(name))
      return entry;
  return {};
}

std::optional<RecomputePlan>
GraphRecomputePass::solve(const RecomputeProblem &problem, int64_t target) {
  if (solver == "greedy")
    return problem.solveGreedy(target);
  if (solver == "exact")
    return problem.solveExact(target, std::numeric_limits<unsigned>::max());
  if (std::optional<RecomputePlan> plan =
          problem.solveExact(target, exactLimit))
    return plan;
  return problem.solveGreedy(target);
}

FailureOr<int64_t> GraphRecomputePass::measurePlan(StringRef entryName,
                                                   const RecomputePlan &plan) {
  OwningOpRef<ModuleOp> clone = getOperation().clone();
  std::optional<RecomputeProblem> problem = RecomputeProblem::build(
      clone->lookupSymbol<func::FuncOp>(entryName));
  if (!problem)
    return failure();
  problem->apply(plan);
  return measure(*clone);
}

RecomputePlan GraphRecomputePass::loosen(const RecomputeProblem &problem,
                                         StringRef entryName,
                                         RecomputePlan plan, int64_t exact,
                                         int64_t target) {
  for (int attempt = 0; attempt < 3 && exact < budget; ++attempt) {
    target += budget - exact;
    std::optional<RecomputePlan> looser = solve(problem, target);
    if (!looser || looser->recomputeFlops >= plan.recomputeFlops)
      break;
    FailureOr<int64_t> measured = measurePlan(entryName, *looser);
    if (failed(measured) || *measured > budget)
      break;
    plan = std::move(*looser);
    exact = *measured;
  }
  return plan;
}

void GraphRecomputePass::record(func::FuncOp entry,
                                const RecomputePlan &plan) {
  std::optional<RecomputeProblem> problem = RecomputeProblem::build(entry);
  int64_t flops = problem->apply(plan);
  ModuleOp module = getOperation();
  module->setAttr(GraphDialect::kRecomputeFlopsAttr,
                  Builder(module.getContext()).getI64IntegerAttr(flops));
}

void GraphRecomputePass::runOnOperation() {
  if (budget <= 0)
    return;
  if (solver != "auto" && solver != "exact" && solver != "greedy") {
    getOperation().emitError("--graph-recompute: unknown solver '")
        << solver << "' (auto, exact or greedy)";
    return signalPassFailure();
  }
  func::FuncOp entry = findTrainingEntry(getOperation());
  if (!entry)
    return;
  std::optional<RecomputeProblem> problem = RecomputeProblem::build(entry);
  if (!problem)
    return;
  StringRef name = entry.getSymName();

  // Calibrate the estimate against the exact figure when there is one.
  RecomputePlan none = problem->keepAll();
  int64_t peak = none.estimatedPeakBytes;
  if (measure) {
    FailureOr<int64_t> exact = measure(getOperation());
    if (failed(exact))
      return signalPassFailure();
    peak = *exact;
  }
  if (peak <= budget)
    return;
  int64_t offset = peak - none.estimatedPeakBytes;

  // Search, check, tighten.
  int64_t target = budget - offset;
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::optional<RecomputePlan> plan = solve(*problem, target);
    if (!plan)
      break;
    if (!measure)
      return record(entry, *plan);
    FailureOr<int64_t> exact = measurePlan(name, *plan);
    if (failed(exact))
      return signalPassFailure();
    if (*exact <= budget)
      return record(entry, loosen(*problem, name, *plan, *exact, target));
    target -= *exact - budget;
  }

  // The plan of least memory: taken if it fits, else its peak is the
  // smallest budget this pass can meet.
  RecomputePlan least = problem->leastMemory();
  int64_t smallest = least.estimatedPeakBytes;
  if (measure) {
    FailureOr<int64_t> exact = measurePlan(name, least);
    if (failed(exact))
      return signalPassFailure();
    smallest = *exact;
  }
  if (smallest <= budget)
    return record(entry, least);
  entry.emitError() << "memory budget of " << int64_t(budget)
                    << " bytes cannot be met: the step needs " << peak
                    << " bytes without recomputation, and the smallest budget "
                       "recomputation can meet is "
                    << smallest << " bytes";
  signalPassFailure();
}

std::unique_ptr<Pass>
kiln::graph::createGraphRecomputePass(int64_t budget,
                                      PeakBytesMeasure measure) {
  return std::make_unique<GraphRecomputePass>(budget, std::move(measure));
}
