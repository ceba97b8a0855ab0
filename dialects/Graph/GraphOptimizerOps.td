//===- GraphOptimizerOps.td - Optimizer ops of the graph dialect -*- tablegen -*-===//
//
// Part of Kiln. The optimizer update of a training step, as graph ops: the
// learning-rate schedule, global-norm clipping and the per-parameter updates
// of SGD, momentum and AdamW. They follow PyTorch's formulas (documented on
// each op) so that a model trains the same in Kiln as in the framework its
// user knows. They are not differentiable: no gradient flows through an
// update.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GRAPH_OPTIMIZER_OPS_TD
#define KILN_GRAPH_OPTIMIZER_OPS_TD

/// Marks the ops of the optimizer step (schedule, norm, clip, updates), so
/// that figures can count the optimizer's kernels by their origin op.
def Graph_OptimizerOpTrait : NativeOpTrait<"OptimizerOpTrait",
    [Graph_FullPrecisionCompute]> {
  let cppNamespace = "::kiln::graph";
}

def Graph_LrScheduleOp : Graph_Op<"lr_schedule", [Pure,
    Graph_FullPrecisionCompute, Graph_OptimizerOpTrait,
    AllTypesMatch<["step", "result"]>,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>]> {
  let summary = "The learning rate of step t (1-based) under a schedule.";
  let description = [{
    With `warmup` W > 0 and t <= W, the rate rises linearly: `lr * t / W`.
    After it, with progress `p = (t - W) / (total - W)` clamped to [0, 1],
    `kind` is `constant` (`lr`), `linear` (`lr * (1 - (1 - final) * p)`) or
    `cosine` (`lr * (final + (1 - final) * (1 + cos(pi p)) / 2)`), where
    `final` is the fraction of `lr` reached at the last step.
    ```mlir
    %lr = graph.lr_schedule cosine %t {lr = 1.0e-3 : f64, warmup = 100 : i64, total = 2000 : i64, final = 0.0 : f64} : tensor<f32>
    ```
  }];
  let arguments = (ins Graph_ScalarFloatTensor:$step, Graph_LrScheduleKind:$kind,
                       F64Attr:$lr, I64Attr:$warmup, I64Attr:$total,
                       F64Attr:$final);
  let results = (outs Graph_ScalarFloatTensor:$result);
  let assemblyFormat = "$kind $step attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_GlobalNormOp : Graph_Op<"global_norm", [Pure,
    Graph_FullPrecisionCompute, Graph_OptimizerOpTrait,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>]> {
  let summary = "The L2 norm of all its operands taken together.";
  let description = [{
    `sqrt(sum over every operand and element of x^2)`, accumulated in the
    result's element type.
    ```mlir
    %n = graph.global_norm %g0, %g1 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Graph_FloatTensor>:$inputs);
  let results = (outs Graph_ScalarFloatTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $result)";
  let hasVerifier = 1;
}

def Graph_ClipScaleOp : Graph_Op<"clip_scale", [Pure,
    Graph_FullPrecisionCompute, Graph_OptimizerOpTrait,
    AllTypesMatch<["norm", "result"]>,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>]> {
  let summary = "The factor that clips a gradient norm: min(1, max_norm / (norm + 1e-6)).";
  let description = [{
    Multiplying every gradient by it bounds their global norm by `max_norm`,
    as PyTorch's `clip_grad_norm_` does.
    ```mlir
    %s = graph.clip_scale %norm {max_norm = 1.0 : f64} : tensor<f32>
    ```
  }];
  let arguments = (ins Graph_ScalarFloatTensor:$norm, F64Attr:$max_norm);
  let results = (outs Graph_ScalarFloatTensor:$result);
  let assemblyFormat = "$norm attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_LossScaleUpdateOp : Graph_Op<"loss_scale_update", [Pure,
    Graph_FullPrecisionCompute, Graph_OptimizerOpTrait,
    AllTypesMatch<["norm", "scale", "good_steps", "new_scale",
                   "new_good_steps", "skip"]>,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>]> {
  let summary = "Dynamic loss scaling: skip on overflow, back off, grow.";
  let description = [{
    `norm` is the global norm of the gradients of the scaled loss. If it is
    not finite (an inf or NaN gradient element, or squares beyond the
    type's range), the step is skipped: `skip` = 1, `new_scale = scale *
    backoff`, `new_good_steps = 0`. Otherwise `skip` = 0 and the count of
    clean steps grows by one; when it reaches `interval` the scale grows,
    `new_scale = scale * growth` (kept as it was if that is not finite), and
    the count restarts at 0. PyTorch's GradScaler does the same with its
    defaults growth 2, backoff 0.5, interval 2000. The update ops take
    `skip` and then leave parameters and state as they were.
    ```mlir
    %s1, %n1, %skip = graph.loss_scale_update %norm, %s, %n {growth = 2.0 : f64, backoff = 0.5 : f64, interval = 2000 : i64} : tensor<f32>
    ```
  }];
  let arguments = (ins Graph_ScalarFloatTensor:$norm,
                       Graph_ScalarFloatTensor:$scale,
                       Graph_ScalarFloatTensor:$good_steps,
                       F64Attr:$growth, F64Attr:$backoff, I64Attr:$interval);
  let results = (outs Graph_ScalarFloatTensor:$new_scale,
                      Graph_ScalarFloatTensor:$new_good_steps,
                      Graph_ScalarFloatTensor:$skip);
  let assemblyFormat = [{
    $norm `,` $scale `,` $good_steps attr-dict `:` type($norm)
  }];
  let hasVerifier = 1;
}

class Graph_UpdateOp<string mnemonic, list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits, [Pure,
    Graph_FullPrecisionCompute, Graph_OptimizerOpTrait,
          DeclareOpInterfaceMethods<Graph_CostOpInterface>])> {
  let extraClassDeclaration = [{
    /// The operands the results are the new values of, in result order
    /// (the parameter, then its state): what a skipped update returns.
    ::llvm::SmallVector<unsigned, 3> getUpdatedOperandIndices();
  }];
}

def Graph_SgdUpdateOp : Graph_UpdateOp<"sgd_update",
    [AllTypesMatch<["param", "grad", "new_param"]>,
     AllTypesMatch<["lr", "grad_scale"]>]> {
  let summary = "SGD: p' = p - lr (g s + wd p).";
  let description = [{
    `g` is the gradient and `s` the `grad_scale` scalar (the clipping factor,
    or 1); `lr` is a scalar. Weight decay is L2, as in PyTorch's SGD. Every
    update op takes an optional `skip` scalar (of `lr`'s type): when it is
    not 0, the results are the parameter and state as they were (a step
    that dynamic loss scaling skips).
    ```mlir
    %p1 = graph.sgd_update %p, %g, %lr, %s {weight_decay = 0.0 : f64} : tensor<4x8xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$param, Graph_FloatTensor:$grad,
                       Graph_ScalarFloatTensor:$lr,
                       Graph_ScalarFloatTensor:$grad_scale,
                       F64Attr:$weight_decay,
                       Optional<Graph_ScalarFloatTensor>:$skip);
  let results = (outs Graph_FloatTensor:$new_param);
  let assemblyFormat = [{
    $param `,` $grad `,` $lr `,` $grad_scale (`skip` $skip^)? attr-dict `:`
    type($param) `,` type($lr) (`,` type($skip)^)?
  }];
  let hasVerifier = 1;
}

def Graph_MomentumUpdateOp : Graph_UpdateOp<"momentum_update",
    [AllTypesMatch<["param", "grad", "buffer", "new_param", "new_buffer"]>,
     AllTypesMatch<["lr", "grad_scale"]>]> {
  let summary = "SGD with momentum (PyTorch's formula, dampening 0).";
  let description = [{
    `d = g s + wd p`; `b' = mu b + d`; `p' = p - lr (nesterov ? d + mu b' : b')`,
    with the momentum buffer `b` starting at zero.
    ```mlir
    %p1, %b1 = graph.momentum_update %p, %g, %b, %lr, %s {momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<4x8xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$param, Graph_FloatTensor:$grad,
                       Graph_FloatTensor:$buffer,
                       Graph_ScalarFloatTensor:$lr,
                       Graph_ScalarFloatTensor:$grad_scale,
                       F64Attr:$momentum, F64Attr:$weight_decay,
                       UnitAttr:$nesterov,
                       Optional<Graph_ScalarFloatTensor>:$skip);
  let results = (outs Graph_FloatTensor:$new_param,
                      Graph_FloatTensor:$new_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $buffer `,` $lr `,` $grad_scale (`skip` $skip^)?
    attr-dict `:` type($param) `,` type($lr) (`,` type($skip)^)?
  }];
  let hasVerifier = 1;
}

def Graph_AdamWUpdateOp : Graph_UpdateOp<"adamw_update",
    [AllTypesMatch<["param", "grad", "m", "v", "new_param", "new_m", "new_v"]>,
     AllTypesMatch<["lr", "step", "grad_scale"]>]> {
  let summary = "AdamW with bias correction and decoupled weight decay.";
  let description = [{
    PyTorch's formula, at step t (1-based): `g = grad * s`,
    `m' = b1 m + (1 - b1) g`, `v' = b2 v + (1 - b2) g^2`,
    `p' = p (1 - lr wd) - (lr / (1 - b1^t)) m' / (sqrt(v') / sqrt(1 - b2^t) + eps)`.
    ```mlir
    %p1, %m1, %v1 = graph.adamw_update %p, %g, %m, %v, %lr, %t, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64} : tensor<4x8xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$param, Graph_FloatTensor:$grad,
                       Graph_FloatTensor:$m, Graph_FloatTensor:$v,
                       Graph_ScalarFloatTensor:$lr,
                       Graph_ScalarFloatTensor:$step,
                       Graph_ScalarFloatTensor:$grad_scale,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                       F64Attr:$weight_decay,
                       Optional<Graph_ScalarFloatTensor>:$skip);
  let results = (outs Graph_FloatTensor:$new_param, Graph_FloatTensor:$new_m,
                      Graph_FloatTensor:$new_v);
  let assemblyFormat = [{
    $param `,` $grad `,` $m `,` $v `,` $lr `,` $step `,` $grad_scale
    (`skip` $skip^)? attr-dict `:` type($param) `,` type($lr)
    (`,` type($skip)^)?
  }];
  let hasVerifier = 1;
}

#endif // KILN_GRAPH_OPTIMIZER_OPS_TD
