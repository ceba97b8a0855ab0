//===- TrainStep.h - Training entry points from a forward -------*- C++ -*-===//
//
// Part of Kiln. Builds the functions a training run calls: `@train_step`
// (forward, backward and optimizer update in one), or, when the train block
// accumulates gradients over micro-batches, `@accumulate_step` and
// `@apply_step`.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_GRAPH_TRANSFORMS_TRAINSTEP_H
#define KILN_DIALECT_GRAPH_TRANSFORMS_TRAINSTEP_H

#include "kiln/Dialect/Graph/IR/GraphDialect.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace kiln::graph {

/// The train block's settings (`graph.train`), with every default filled in.
struct TrainSettings {
  /// sgd, momentum or adamw.
  std::string optimizer = "adamw";
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double momentum = 0.9;
  bool nesterov = false;
  double weightDecay = 0.0;
  /// Decay every parameter, not only matrices and embeddings (rank >= 2).
  bool decayAll = false;
  /// Global-norm clipping threshold; 0 turns clipping off.
  double clip = 0.0;
  LrScheduleKind schedule = LrScheduleKind::Constant;
  int64_t warmup = 0;
  /// The fraction of `lr` the schedule ends at.
  double finalFraction = 0.0;
  /// Optimizer steps of a run: the length of the schedule.
  int64_t steps = 1000;
  /// Micro-batches per optimizer step.
  int64_t accumulate = 1;
  /// Data-parallel ranks (`kiln train` under mpirun sets it): each rank
  /// runs @accumulate_step on its slice of every batch, the runtime sums
  /// the accumulators over the ranks, and @apply_step takes their mean over
  /// accumulate x world micro-batches.
  int64_t world = 1;
  /// ZeRO stage (`kiln train --zero 1`): 1 shards the optimizer state over
  /// the `world` ranks, this artifact being rank `rank`'s. Its @apply_step
  /// updates only the rank's part of each parameter (ZeroShard) from the
  /// summed gradient there, keeps only that part's state (graph.shard),
  /// and takes the global gradient norm as the input `zero.grad_norm`
  /// (the ranks' `zero.shard_norm`s of @shard_norm_step combined) where
  /// clipping or loss scaling needs it. The runtime reduce-scatters the
  /// accumulators before it and all-gathers the parameters after it.
  int64_t zero = 0;
  int64_t rank = 0;
  /// The train block's `memory`: the bytes a step's peak_bytes must fit in
  /// (0: no budget). `--memory-budget` overrides it.
  int64_t memory = 0;
  /// The train block's `precision`: fp32, bf16 or fp16
  /// (--graph-mixed-precision's policy), and where it was set.
  std::string precision = "fp32";
  std::optional<mlir::Location> precisionLoc;
  /// fp16's dynamic loss scaling (the train block's `loss_scale =
  /// dynamic(init=..., interval=...)`; PyTorch GradScaler's defaults): the
  /// initial scale and the clean steps after which it doubles (an overflow
  /// halves it). `lossScaleLoc` is set where the train block gave them.
  double lossScale = 65536.0;
  int64_t lossScaleInterval = 2000;
  std::optional<mlir::Location> lossScaleLoc;

  /// Reads `graph.train` from `module` (defaults where absent).
  static mlir::FailureOr<TrainSettings> fromModule(mlir::ModuleOp module);
  /// Whether the step scales the loss (fp16 trains with dynamic loss
  /// scaling; fp32 and bf16 need none).
  bool scalesLoss() const { return precision == "fp16"; }
  /// Whether a parameter of `rank` gets weight decay.
  bool decays(int64_t rank) const { return decayAll || rank >= 2; }
};

/// ZeRO-1's part of a parameter of `elements` elements that rank `rank` of
/// `world` updates: the run [begin, end) of its row-major elements, the
/// ranks' runs tiling it in rank order, sizes differing by at most one. A
/// parameter of fewer elements than ranks is not split (`whole`): every
/// rank keeps its state and updates it from the all-reduced gradient.
struct ZeroShard {
  int64_t begin, end;
  bool whole;
  static ZeroShard of(int64_t elements, int64_t world, int64_t rank) {
    if (elements < world)
      return {0, elements, true};
    return {rank * elements / world, (rank + 1) * elements / world, false};
  }
};
/// The names by which the runtime and @apply_step meet under ZeRO-1.
inline constexpr llvm::StringLiteral kZeroNormEntry = "shard_norm_step";
inline constexpr llvm::StringLiteral kZeroShardNormOutput = "zero.shard_norm";
inline constexpr llvm::StringLiteral kZeroGradNormInput = "zero.grad_norm";

/// Adds the training entry points for `@forward` to `module`:
/// - accumulate == 1 and world == 1: `@train_step(params, inputs, state) ->
///   (loss, outputs, lr, [grad_norm], new params, new state)`;
/// - otherwise: `@accumulate_step(params, inputs, accumulators) ->
///   (loss, outputs, new accumulators)` and `@apply_step(params, state,
///   accumulators) -> (lr, [grad_norm], new params, new state, zeroed
///   accumulators)`, the gradient being the accumulators' mean over
///   accumulate x world micro-batches.
/// State arguments carry `graph.state = "<name>"` (zero-initialized:
/// `<param>.adam_m`, `<param>.adam_v`, `<param>.momentum`,
/// `<param>.grad_acc`, `optimizer.step`); each new value carries
/// `graph.update = "<name>"`. With fp16 (TrainSettings::scalesLoss) the
/// backward is seeded with the state `loss_scale.scale` (initialized to the
/// initial scale) and the update skips steps whose scaled gradients are not
/// finite (graph.loss_scale_update), with `loss_scale.good_steps` and
/// `loss_scale.skipped_steps` as state and `loss_scale` and `skipped` as
/// outputs.
mlir::LogicalResult buildTrainFunctions(mlir::ModuleOp module,
                                        const TrainSettings &settings);

} // namespace kiln::graph

#endif // KILN_DIALECT_GRAPH_TRANSFORMS_TRAINSTEP_H
