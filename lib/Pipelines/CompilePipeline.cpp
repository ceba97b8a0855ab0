//===- CompilePipeline.cpp - The one compile driver -----------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Pipelines/CompilePipeline.h"
#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Graph/Transforms/Passes.h"
#include "kiln/Dialect/Graph/Transforms/Recompute.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"
#include "kiln/Dialect/Kernel/Transforms/ResidentBytes.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace kiln;

namespace {
/// Stands for a pipeline whose options were refused: fails with the reason.
struct RefusedOptionsPass
    : PassWrapper<RefusedOptionsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RefusedOptionsPass)

  explicit RefusedOptionsPass(std::string reason) : reason(std::move(reason)) {}
  StringRef getArgument() const final { return "kiln-compile-refused"; }
  void runOnOperation() override {
    getOperation().emitError() << "kiln-compile: " << reason;
    signalPassFailure();
  }

  std::string reason;
};
} // namespace

std::string kiln::checkCompileOptions(const CompileOptions &options) {
  std::string error;
  if (!TargetInfo::create(options.target, options.arch, error))
    return error;
  if (!options.precision.empty() && options.precision != "fp32" &&
      options.precision != "bf16" && options.precision != "fp16")
    return "unknown precision '" + options.precision +
           "' (expected fp32, bf16 or fp16)";
  if (!options.weightCopies && !options.train)
    return "--no-weight-copies applies to the training steps (--train), "
           "which keep the weights' 16-bit copies";
  if (options.bucketBytes < 0)
    return "the gradient buckets' bytes must not be negative, got " +
           std::to_string(options.bucketBytes);
  if (options.memoryBudget < 0)
    return "the memory budget must not be negative, got " +
           std::to_string(options.memoryBudget);
  return "";
}

/// peak_bytes of `module` lowered by the rest of the pipeline, on a clone.
static FailureOr<int64_t> measurePeakBytes(ModuleOp module,
                                           CompileOptions options) {
  options.recompute = false;
  options.memoryBudget = 0;
  OwningOpRef<ModuleOp> clone = module.clone();
  PassManager pm(module.getContext());
  addKernelPasses(pm, options);
  if (failed(pm.run(*clone)))
    return failure();
  return kernel::measureResidentBytes(*clone).peak();
}

void kiln::addTrainingPasses(OpPassManager &pm, const CompileOptions &options) {
  std::string error;
  std::unique_ptr<TargetInfo> target =
      TargetInfo::create(options.target, options.arch, error);
  assert(target && "options are checked by buildCompilePipeline");
  // Before the train step, so that the matmuls' VJPs read the untransposed
  // tensors as well. (Without training, the kernel passes fold them: the
  // graph a compile emits stays the frontend's.)
  if (options.train) {
    pm.addPass(graph::createGraphFoldTransposes());
    // The logits padded before the train step too: autodiff derives the
    // padded backward (and the weight gradient's slice).
    pm.addPass(graph::createGraphPadLogits({target->getLogitsAlignment()}));
    graph::GraphTrainStepOptions trainStep;
    trainStep.precision = options.precision;
    pm.addPass(graph::createGraphTrainStep(trainStep));
  }
  // The precision policy over every entry (forward, backward, optimizer),
  // before the kernel passes fuse its casts. Checked against what the
  // target's kernels do, at the train block's line.
  graph::GraphMixedPrecisionOptions precision;
  precision.policy = options.precision;
  precision.weightCopies = options.weightCopies;
  for (StringRef supported : target->getTrainingPrecisions())
    precision.targetPrecisions.push_back(supported.str());
  pm.addPass(graph::createGraphMixedPrecision(precision));
}

void kiln::addKernelPasses(OpPassManager &pm, const CompileOptions &options) {
  std::string error;
  std::unique_ptr<TargetInfo> target =
      TargetInfo::create(options.target, options.arch, error);
  assert(target && "options are checked by buildCompilePipeline");
  // Recompute first, and before fusion: a recomputed elementwise op should
  // fuse into its consumer. Each plan is measured by lowering a clone through
  // the rest of this pipeline, so the budget holds the exact peak_bytes.
  if (options.recompute && options.memoryBudget > 0)
    pm.addPass(graph::createGraphRecomputePass(
        options.memoryBudget, [options](ModuleOp module) {
          return measurePeakBytes(module, options);
        }));
  // Transposes into the GEMMs' layouts (again after a train step: nothing
  // left to fold then, unless the backward made some).
  pm.addPass(graph::createGraphFoldTransposes());
  // A cross-entropy's classes padded for aligned GEMM rows (already done
  // before the train step when training).
  pm.addPass(graph::createGraphPadLogits({target->getLogitsAlignment()}));
  // Bias adds, GELUs and bias gradients into the GEMMs where the library
  // applies them; then elementwise and data-movement chains become one
  // kernel each.
  if (int64_t alignment = target->getGemmEpilogueAuxAlignment();
      options.fuse && alignment > 0)
    pm.addPass(graph::createGraphFoldGemmEpilogues(
        {alignment, llvm::join(target->getGemmEpilogueElementTypes(), ",")}));
  if (options.fuse)
    pm.addPass(graph::createGraphFuse());
  pm.addPass(createConvertGraphToKernel(
      {target->getName().str(), options.fusedAttention}));
  // Identical views of one buffer fold together before buffers are placed.
  pm.addPass(createCSEPass());
  // Independent neighbours (the optimizer's per-parameter updates first)
  // share one launch, up to the target's size: a merged kernel holds a copy
  // of each body it takes. Bounded merges of repeated layers come out
  // identical, for --kernel-dedup-kernels.
  if (options.fuse)
    pm.addPass(kernel::createKernelMergeLaunches({target->getMaxMergedOps()}));
  // The repeated layers' identical kernels compile once: after the merge,
  // which creates kernels, and before code generation, which is the longest
  // part of a compile.
  pm.addPass(kernel::createKernelDedupKernels());
  // A data-parallel step's gradient sums, placed on the final order of the
  // backward's ops (after the merge, which moves launches), before the
  // memory plan, which sees the buckets live until their waits.
  if (options.train && options.planCollectives)
    pm.addPass(kernel::createKernelInsertCollectives(
        {/*world=*/0, options.bucketBytes, options.overlapCollectives}));
  // GEMM tiles fixed from the shapes where the target runs GEMMs in tiles,
  // so that results do not depend on the thread count (attributes only: the
  // schedule stays).
  if (std::optional<GemmTiling> tiling = target->getGemmTiling())
    pm.addPass(kernel::createKernelTileGemms(
        {tiling->tileWork, tiling->maxTiles, tiling->block, tiling->maxTraffic,
         tiling->trafficMinK}));
  // Placement last: it needs the final schedule, and nothing after it may
  // add, move or reorder the ops that touch transients.
  if (options.naiveArena)
    pm.addPass(kernel::createKernelAssignOffsetsNaive());
  else
    pm.addPass(kernel::createKernelPlanMemory());
  // The planner's last word: whatever recomputation achieved, a plan whose
  // peak bytes exceed the budget is an error.
  if (options.memoryBudget > 0)
    pm.addPass(kernel::createKernelCheckMemoryBudget({options.memoryBudget}));
}

void kiln::buildCompilePipeline(OpPassManager &pm,
                                const CompileOptions &options) {
  std::string refused = checkCompileOptions(options);
  if (!refused.empty()) {
    pm.addPass(std::make_unique<RefusedOptionsPass>(refused));
    return;
  }
  addTrainingPasses(pm, options);
  addKernelPasses(pm, options);
}

namespace {
/// CompileOptions as pipeline options (`--kiln-compile='train=true ...'`).
struct CompilePipelineOptions : PassPipelineOptions<CompilePipelineOptions> {
  Option<std::string> target{*this, "target", llvm::cl::desc("cpu or cuda"),
                             llvm::cl::init("cpu")};
  Option<std::string> arch{
      *this, "arch",
      llvm::cl::desc("x86-64 CPU, or sm_80/sm_90 (default: the target's)"),
      llvm::cl::init("")};
  Option<bool> train{*this, "train",
                     llvm::cl::desc("Build the training entry points first"),
                     llvm::cl::init(false)};
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("Fuse ops and merge launches"),
                    llvm::cl::init(true)};
  Option<bool> fusedAttention{
      *this, "fused-attention",
      llvm::cl::desc("Attention through the target's fused kernels"),
      llvm::cl::init(true)};
  Option<bool> recompute{
      *this, "recompute",
      llvm::cl::desc("Recompute activations to meet memory-budget"),
      llvm::cl::init(true)};
  Option<int64_t> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("Bytes peak_bytes must fit in (0: none)"),
      llvm::cl::init(0)};
  Option<bool> naiveArena{*this, "naive-arena",
                          llvm::cl::desc("Place transients one after another"),
                          llvm::cl::init(false)};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("fp32, bf16 or fp16 (empty: the train block's)"),
      llvm::cl::init("")};
  Option<bool> weightCopies{
      *this, "weight-copies",
      llvm::cl::desc("Keep 16-bit weight copies the optimizer writes"),
      llvm::cl::init(true)};
  Option<bool> planCollectives{
      *this, "plan-collectives",
      llvm::cl::desc("Place a data-parallel step's gradient sums in the plan"),
      llvm::cl::init(true)};
  Option<int64_t> bucketBytes{
      *this, "bucket-bytes",
      llvm::cl::desc("A data-parallel step's gradient buckets close at this "
                     "many bytes"),
      llvm::cl::init(1 << 20)};
  Option<bool> overlapCollectives{
      *this, "overlap-collectives",
      llvm::cl::desc("Start a data-parallel step's gradient sums during the "
                     "backward"),
      llvm::cl::init(true)};
};
} // namespace

void kiln::registerCompilePipeline() {
  PassPipelineRegistration<CompilePipelineOptions>(
      "kiln-compile",
      "The compile driver: a graph module to a planned kernel module, as "
      "`kiln compile` runs it",
      [](OpPassManager &pm, const CompilePipelineOptions &pipelineOptions) {
        CompileOptions options;
        std::optional<TargetKind> target =
            parseTargetName(pipelineOptions.target);
        if (!target) {
          pm.addPass(std::make_unique<RefusedOptionsPass>(
              "unknown target '" + pipelineOptions.target +
              "': expected cpu or cuda"));
          return;
        }
        options.target = *target;
        options.arch = pipelineOptions.arch;
        options.train = pipelineOptions.train;
        options.fuse = pipelineOptions.fuse;
        options.fusedAttention = pipelineOptions.fusedAttention;
        options.recompute = pipelineOptions.recompute;
        options.memoryBudget = pipelineOptions.memoryBudget;
        options.naiveArena = pipelineOptions.naiveArena;
        options.precision = pipelineOptions.precision;
        options.weightCopies = pipelineOptions.weightCopies;
        options.planCollectives = pipelineOptions.planCollectives;
        options.bucketBytes = pipelineOptions.bucketBytes;
        options.overlapCollectives = pipelineOptions.overlapCollectives;
        buildCompilePipeline(pm, options);
      });
}
