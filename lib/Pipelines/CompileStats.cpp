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

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace kiln;

static constexpr llvm::StringLiteral kOriginAttr = "kernel.origin";

/// FLOPs of a graph function, from its ops' CostOpInterface.
static int64_t countFlops(func::FuncOp function) {
  int64_t flops = 0;
  if (!function)
    return 0;
  function.walk([&](graph::CostOpInterface op) { flops += op.getFlops(); });
  return flops;
}

/// Whether a scheduled op implements optimizer ops only: the update, the
/// learning-rate schedule, the global norm and the clipping scale (a launch
/// merged by --kernel-merge-launches names its ops joined by '+').
static bool isOptimizerOp(Operation *op) {
  auto origin = op->getAttrOfType<StringAttr>(kOriginAttr);
  if (!origin)
    return false;
  SmallVector<StringRef> names;
  origin.getValue().split(names, '+');
  return llvm::all_of(names, [](StringRef name) {
    return llvm::is_contained(
        {graph::SgdUpdateOp::getOperationName(),
         graph::MomentumUpdateOp::getOperationName(),
         graph::AdamWUpdateOp::getOperationName(),
         graph::LrScheduleOp::getOperationName(),
         graph::GlobalNormOp::getOperationName(),
         graph::ClipScaleOp::getOperationName()},
        name);
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
    // Every other scheduled op is a generated kernel or a library call
    // (GEMMs now, attention later); collectives will be counted here once
    // the kernel dialect has them.
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
kiln::compileWithStats(ModuleOp module, const KernelPipelineOptions &options) {
  FailureOr<graph::ModelSummary> summary = graph::summarizeModel(module);
  if (failed(summary))
    return failure();
  FailureOr<graph::TrainSettings> settings =
      graph::TrainSettings::fromModule(module);
  if (failed(settings))
    return failure();
  bool training = !summary->lossName.empty();
  if (training && failed(graph::buildTrainFunctions(module, *settings)))
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
  buildKernelPipeline(pm, options);
  if (failed(pm.run(module)))
    return failure();

  // Persistent buffers: one per name across entries, as in the plan.
  llvm::StringSet<> seen;
  int64_t paramBytes = 0, stateBytes = 0, gradientBytes = 0, inputBytes = 0,
          outputBytes = 0, runtimeBytes = 0, constantBytes = 0;
  int64_t naiveArena = 0, activationBytes = 0;
  CallCounts step;
  llvm::json::Object entries;
  kernel::BufferAccessAnalysis access;
  for (auto entry : module.getOps<kernel::EntryOp>()) {
    for (unsigned i = 0, e = entry.getNumArguments(); i < e; ++i) {
      if (!seen.insert(entry.getBufferName(i)).second)
        continue;
      int64_t bytes = kernel::getBufferSizeInBytes(
          cast<MemRefType>(entry.getArgument(i).getType()));
      switch (entry.getBufferKind(i)) {
      case kernel::BufferKind::Param:
        paramBytes += bytes;
        break;
      case kernel::BufferKind::OptimizerState:
        stateBytes += bytes;
        break;
      case kernel::BufferKind::Gradient:
        gradientBytes += bytes;
        break;
      case kernel::BufferKind::Input:
        inputBytes += bytes;
        break;
      case kernel::BufferKind::Output:
        outputBytes += bytes;
        break;
      case kernel::BufferKind::RngState:
      case kernel::BufferKind::Status:
        runtimeBytes += bytes;
        break;
      }
    }
    entry.walk([&](kernel::ConstantOp constant) {
      constantBytes += kernel::getBufferSizeInBytes(constant.getType());
    });

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
    entries[name] = llvm::json::Object{
        {"arena_bytes", attr(kernel::kArenaBytesAttr)},
        {"live_lower_bound_bytes", liveness.getLiveLowerBound()},
        {"naive_arena_bytes", liveness.getTotalTransientBytes()},
        {"peak_point", liveness.getPeakPoint()},
        {"schedule_length", static_cast<int64_t>(liveness.getSchedule().size())},
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
  int64_t arenaBytes = moduleAttr(kernel::kArenaBytesAttr);
  int64_t peakBytes = paramBytes + gradientBytes + stateBytes + inputBytes +
                      outputBytes + runtimeBytes + constantBytes + arenaBytes;
  return llvm::json::Object{
      {"model", summary->modelName},
      {"params", summary->paramCount},
      {"param_bytes", paramBytes},
      {"optimizer_state_bytes", stateBytes},
      {"gradient_bytes", gradientBytes},
      {"input_bytes", inputBytes},
      {"output_bytes", outputBytes},
      {"constant_bytes", constantBytes},
      {"forward_flops", forwardFlops},
      {"step_flops", stepFlops},
      {"recompute_flops", 0},
      {"kernels", step.kernels()},
      {"kernels_optimizer", step.optimizer},
      {"launches", step.launches},
      {"library_calls", step.libraryCalls},
      {"collectives", step.collectives},
      {"copies", step.copies},
      {"arena_bytes", arenaBytes},
      {"live_lower_bound_bytes", moduleAttr(kernel::kLiveLowerBoundAttr)},
      {"naive_arena_bytes", naiveArena},
      {"peak_bytes", peakBytes},
      {"activation_bytes", activationBytes},
      {"entries", std::move(entries)},
  };
}
