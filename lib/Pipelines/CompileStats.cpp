//===- CompileStats.cpp - Memory and cost figures before the run ----------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Pipelines/CompileStats.h"
#include "kiln/Dialect/Graph/Analysis/ModelSummary.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/Transforms/TrainStep.h"
#include "kiln/Dialect/Kernel/Analysis/BufferLiveness.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"
#include "kiln/Dialect/Kernel/Transforms/ResidentBytes.h"
#include "kiln/Pipelines/Roofline.h"
#include "kiln/Target/TargetInfo.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;
using namespace kiln;

/// FLOPs of a graph function, from its ops' CostOpInterface.
static int64_t countFlops(func::FuncOp function) {
  int64_t flops = 0;
  if (!function)
    return 0;
  function.walk([&](graph::CostOpInterface op) { flops += op.getFlops(); });
  return flops;
}

/// Whether a scheduled op implements optimizer ops only: graph ops with
/// the OptimizerOpTrait (a launch merged by --kernel-merge-launches names
/// its ops joined by '+').
static bool isOptimizerOp(Operation *op) {
  auto origin =
      op->getAttrOfType<StringAttr>(kernel::KernelDialect::kOriginAttr);
  if (!origin)
    return false;
  SmallVector<StringRef> names;
  origin.getValue().split(names, '+');
  return llvm::all_of(names, [&](StringRef name) {
    std::optional<RegisteredOperationName> registered =
        RegisteredOperationName::lookup(name, op->getContext());
    return registered && registered->hasTrait<graph::OptimizerOpTrait>();
  });
}

namespace {
/// Calls of one run of an entry.
struct CallCounts {
  int64_t launches = 0, libraryCalls = 0, collectives = 0, copies = 0;
  int64_t optimizer = 0;
  int64_t kernels() const { return launches + libraryCalls + collectives; }
  CallCounts &operator+=(const CallCounts &other) {
    launches += other.launches;
    libraryCalls += other.libraryCalls;
    collectives += other.collectives;
    copies += other.copies;
    optimizer += other.optimizer;
    return *this;
  }
  CallCounts scaled(int64_t times) const {
    return {launches * times, libraryCalls * times, collectives * times,
            copies * times, optimizer * times};
  }
};
} // namespace

static CallCounts countCalls(const kernel::BufferLiveness &liveness) {
  CallCounts counts;
  for (Operation *op : liveness.getSchedule()) {
    if (isa<kernel::CopyOp, kernel::ZeroOp>(op)) {
      ++counts.copies;
      continue;
    }
    // A data-parallel step's gradient sums: one collective a bucket.
    if (isa<kernel::CollectiveStartOp>(op))
      ++counts.collectives;
    if (isa<kernel::CollectiveStartOp, kernel::CollectiveWaitOp>(op))
      continue;
    // Every other scheduled op is a generated kernel or a library call
    // (GEMMs now, attention later).
    if (isa<kernel::LaunchOp>(op))
      ++counts.launches;
    else
      ++counts.libraryCalls;
    if (isOptimizerOp(op))
      ++counts.optimizer;
  }
  return counts;
}

FailureOr<llvm::json::Object>
kiln::compileWithStats(ModuleOp module, const CompileOptions &options) {
  FailureOr<graph::ModelSummary> summary = graph::summarizeModel(module);
  if (failed(summary))
    return failure();
  FailureOr<graph::TrainSettings> settings =
      graph::TrainSettings::fromModule(module);
  if (failed(settings))
    return failure();
  // What MFU counts as the model's work (docs/cuda.md), from the forward
  // graph: 6 x parameters a token, and 12 x Tk x the query's features per
  // token for each attention.
  ModelFlops model;
  for (const graph::NamedTensor &input : summary->inputs)
    if (input.name == "tokens")
      model.tokensPerStep = input.elements;
  if (model.tokensPerStep > 0) {
    model.flopsPerToken = 6.0 * double(summary->paramCount);
    if (func::FuncOp forward = graph::getForwardFunction(module))
      forward.walk([&](graph::AttentionOp attention) {
        auto q = cast<RankedTensorType>(attention.getQuery().getType());
        auto k = cast<RankedTensorType>(attention.getKey().getType());
        int64_t keys = k.getDimSize(k.getRank() - 2);
        model.flopsPerToken += 12.0 * double(keys) *
                               double(q.getNumElements()) /
                               double(model.tokensPerStep);
      });
  }
  // The driver's two stages, with the step's FLOPs counted between them.
  CompileOptions compile = options;
  compile.train = !summary->lossName.empty();
  bool training = compile.train;
  if (std::string refused = checkCompileOptions(compile); !refused.empty())
    return module.emitError() << refused;
  PassManager trainingPasses(module.getContext());
  addTrainingPasses(trainingPasses, compile);
  if (failed(trainingPasses.run(module)))
    return failure();

  int64_t forwardFlops = summary->forwardFlops;
  int64_t stepFlops = forwardFlops;
  if (training) {
    auto lookup = [&](StringRef name) {
      return module.lookupSymbol<func::FuncOp>(name);
    };
    if (func::FuncOp trainStep = lookup("train_step"))
      stepFlops = countFlops(trainStep);
    else
      stepFlops = settings->accumulate * countFlops(lookup("accumulate_step")) +
                  countFlops(lookup("apply_step"));
  }

  PassManager pm(module.getContext());
  addKernelPasses(pm, compile);
  if (failed(pm.run(module)))
    return failure();

  // Persistent buffers and the arena, as the memory budget counts them.
  kernel::ResidentBytes resident = kernel::measureResidentBytes(module);
  int64_t naiveArena = 0, activationBytes = 0;
  CallCounts step;
  llvm::json::Object entries;
  mlir::SymbolTable symbols(module);
  kernel::BufferAccessAnalysis access(&symbols);
  for (auto entry : module.getOps<kernel::EntryOp>()) {
    kernel::BufferLiveness liveness(entry, access);
    CallCounts calls = countCalls(liveness);
    StringRef name = entry.getSymName();
    if (name == "train_step" || (!training && name == "predict"))
      step = calls;
    else if (name == "accumulate_step")
      step += calls.scaled(settings->accumulate);
    else if (name == "apply_step")
      step += calls;
    if (name == "train_step" || name == "accumulate_step")
      activationBytes =
          std::max(activationBytes, liveness.getSavedActivationBytes());
    naiveArena = std::max(naiveArena, liveness.getTotalTransientBytes());
    auto attr = [&](StringRef key) -> int64_t {
      auto value = entry->getAttrOfType<IntegerAttr>(key);
      return value ? value.getInt() : 0;
    };
    // The largest buffer of the entry's plan (a [B, H, T, T] of attention
    // scores, where attention is not fused).
    const kernel::Transient *largest = nullptr;
    for (const kernel::Transient &transient : liveness.getTransients())
      if (!largest || transient.sizeInBytes > largest->sizeInBytes)
        largest = &transient;
    llvm::json::Object largestTransient;
    if (largest) {
      llvm::json::Array shape;
      for (int64_t dim :
           cast<MemRefType>(largest->alloc->getResult(0).getType())
               .getShape())
        shape.push_back(dim);
      largestTransient["bytes"] = largest->sizeInBytes;
      largestTransient["shape"] = std::move(shape);
    }
    entries[name] = llvm::json::Object{
        {"largest_transient", std::move(largestTransient)},
        {"arena_bytes", attr(kernel::kArenaBytesAttr)},
        {"live_lower_bound_bytes", liveness.getLiveLowerBound()},
        {"naive_arena_bytes", liveness.getTotalTransientBytes()},
        {"peak_point", liveness.getPeakPoint()},
        {"schedule_length",
         static_cast<int64_t>(liveness.getSchedule().size())},
        {"in_place_reuses",
         static_cast<int64_t>(liveness.getInPlaceReuses().size())},
        {"kernels", calls.kernels()},
        {"activation_bytes", liveness.getSavedActivationBytes()},
    };
  }
  auto moduleAttr = [&](StringRef key) -> int64_t {
    auto value = module->getAttrOfType<IntegerAttr>(key);
    return value ? value.getInt() : 0;
  };
  llvm::json::Object stats{
      {"model", summary->modelName},
      {"params", summary->paramCount},
      {"param_bytes", resident.params},
      {"optimizer_state_bytes", resident.optimizerState},
      {"gradient_bytes", resident.gradients},
      {"input_bytes", resident.inputs},
      {"output_bytes", resident.outputs},
      {"constant_bytes", resident.constants},
      {"forward_flops", forwardFlops},
      {"step_flops", stepFlops},
      // What --graph-recompute cloned into the backward (one step).
      {"recompute_flops", moduleAttr(graph::GraphDialect::kRecomputeFlopsAttr)},
      {"kernels", step.kernels()},
      {"kernels_optimizer", step.optimizer},
      {"launches", step.launches},
      {"library_calls", step.libraryCalls},
      {"collectives", step.collectives},
      {"copies", step.copies},
      {"arena_bytes", resident.arena},
      {"live_lower_bound_bytes", moduleAttr(kernel::kLiveLowerBoundAttr)},
      {"naive_arena_bytes", naiveArena},
      {"peak_bytes", resident.peak()},
      {"activation_bytes", activationBytes},
      {"entries", std::move(entries)},
  };
  // A target with GPUs to hold its kernels against gets their roofline.
  std::string error;
  std::unique_ptr<TargetInfo> target =
      TargetInfo::create(compile.target, compile.arch, error);
  // Each GPU's step time against its measured ceilings, for the scaling
  // model.
  std::vector<RankStepTime> rankSteps;
  if (target && !target->getGpus().empty())
    stats["roofline"] = estimateRoofline(
        module, *target, training, settings->accumulate, model, &rankSteps);
  // A step of one of `world` data-parallel ranks: the gradient
  // accumulators, of the parameters' types, summed in the buckets the
  // schedule starts during the backward (or after it).
  if (training && settings->world > 1)
    stats["data_parallel"] =
        estimateDataParallel(settings->world, resident.params, rankSteps);
  return stats;
}
