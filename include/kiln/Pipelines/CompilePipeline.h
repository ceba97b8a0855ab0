//===- CompilePipeline.h - The one compile driver ---------------*- C++ -*-===//
//
// Part of Kiln. Builds the passes from a parsed model (graph dialect) to the
// planned kernel module an artifact is written from, from one options
// struct. `kiln compile`, `kiln train`'s cached compile, `--stats` and
// `--fit-batch` call it, and `kiln-opt --kiln-compile='...'` registers it
// with the same options, so that kiln-opt reproduces what the CLI runs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PIPELINES_COMPILEPIPELINE_H
#define KILN_PIPELINES_COMPILEPIPELINE_H

#include "kiln/Target/TargetInfo.h"

#include "mlir/Pass/PassManager.h"

#include <string>

namespace kiln {

/// What a compile is for and how it goes.
struct CompileOptions {
  /// The target the kernels are scheduled for.
  TargetKind target = TargetKind::Cpu;
  /// What code is generated for (TargetInfo::getArch): the x86-64 CPU, or
  /// sm_80/sm_90; empty: the target's default (x86-64-v2, sm_90).
  std::string arch;
  /// Build the training entry points from the train block first
  /// (--graph-train-step: forward, autodiff, optimizer update).
  bool train = false;
  /// Group ops into graph.fusion regions (--graph-fuse) and merge
  /// independent launches (multi-tensor kernels); `--no-fuse` clears it.
  bool fuse = true;
  /// Lower attention to the target's fused kernels where it has them (the
  /// cuda target); `--no-fused-attention` clears it.
  bool fusedAttention = true;
  /// Recompute forward activations in the backward to meet `memoryBudget`
  /// (--graph-recompute); `--no-recompute` clears it.
  bool recompute = true;
  /// The bytes `peak_bytes` must fit in (0: no budget). The planner has the
  /// last word: a final plan over the budget is an error.
  int64_t memoryBudget = 0;
  /// Place transients one after another (--kernel-assign-offsets-naive)
  /// instead of with the memory planner: the baseline the planner is
  /// measured and checked against.
  bool naiveArena = false;
  /// The precision policy (--graph-mixed-precision): fp32, bf16 or fp16;
  /// empty: the train block's `precision`, else fp32.
  std::string precision;
  /// Under a 16-bit precision, keep each trained weight's low-precision
  /// copy as state that the optimizer writes (--graph-mixed-precision's
  /// weight-copies); `--no-weight-copies` casts the weights in each
  /// forward instead.
  bool weightCopies = true;
  /// A data-parallel step (the train block's `world` over 1) holds its
  /// gradient sums as ops (--kernel-insert-collectives), which the
  /// executors run during the backward; without it the caller sums after
  /// the backward (kiln_session_sum_over_ranks on cuda).
  bool planCollectives = true;
  /// The sums start during the backward in buckets of this many bytes...
  int64_t bucketBytes = 1 << 20;
  /// ... or, without `overlapCollectives`, all after the backward.
  bool overlapCollectives = true;
};

/// Why `options` cannot be compiled (an unknown arch or precision, a
/// negative budget or bucket size), or an empty string.
std::string checkCompileOptions(const CompileOptions &options);

/// Training step (when `train`), then fusion, lowering, scheduling and the
/// memory plan. With options that checkCompileOptions refuses, the pipeline
/// is one pass that fails with its message.
void buildCompilePipeline(mlir::OpPassManager &pm,
                          const CompileOptions &options);

/// The passes that build the training entry points (none unless `train`),
/// transposes folded into matmuls before them.
void addTrainingPasses(mlir::OpPassManager &pm, const CompileOptions &options);
/// The passes after them: graph entries to a planned kernel module.
void addKernelPasses(mlir::OpPassManager &pm, const CompileOptions &options);

/// Registers `--kiln-compile` with CompileOptions' fields as its options.
void registerCompilePipeline();

} // namespace kiln

#endif // KILN_PIPELINES_COMPILEPIPELINE_H
