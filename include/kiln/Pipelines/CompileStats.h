//===- CompileStats.h - Memory and cost figures before the run --*- C++ -*-===//
//
// Part of Kiln. The figures `kiln compile --stats` prints, read off the
// compiled module: parameters, FLOPs, kernels per step, the arena against
// its live lower bound, and the bytes resident during a step.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PIPELINES_COMPILESTATS_H
#define KILN_PIPELINES_COMPILESTATS_H

#include "kiln/Pipelines/CompilePipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

namespace kiln {

/// Compiles `module` (a graph module as parsed: `@forward` and the train
/// block) in place with the compile driver -- the training entries when the
/// model returns a loss (whatever `options.train` says), then the kernel
/// passes with `options` -- and returns the figures as
/// one JSON object:
/// - params, param_bytes, optimizer_state_bytes, gradient_bytes (persistent
///   gradient buffers), input_bytes, output_bytes, constant_bytes;
/// - forward_flops (@forward), step_flops (one optimizer step: @train_step,
///   or `accumulate` x @accumulate_step + @apply_step; @forward without a
///   loss), recompute_flops (0 until recomputation exists); all from
///   CostOpInterface;
/// - kernels per step: launches + library calls (GEMMs) + collectives (0
///   until the kernel dialect has them), with kernels_optimizer the share
///   lowered from optimizer ops (update, schedule, norm and clipping), and
///   copies (kernel.copy, kernel.zero) apart;
/// - arena_bytes, live_lower_bound_bytes, naive_arena_bytes (one buffer per
///   transient) of the module;
/// - peak_bytes: everything resident during a step: persistent buffers
///   (params, gradients, optimizer state, inputs, outputs, runtime buffers,
///   constants) plus the arena;
/// - activation_bytes: transients of the step entry saved at the
///   forward/backward boundary (BufferLiveness::getSavedActivationBytes);
/// - entries: per entry, its arena, lower bound, naive arena, peak point
///   and kernels.
/// Fails (after emitting errors) when compilation does.
mlir::FailureOr<llvm::json::Object>
compileWithStats(mlir::ModuleOp module, const CompileOptions &options);

} // namespace kiln

#endif // KILN_PIPELINES_COMPILESTATS_H
