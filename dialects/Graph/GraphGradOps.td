//===- GraphGradOps.td - Gradient ops of the graph dialect -*- tablegen -*-===//
//
// Part of Kiln. Ops that reverse-mode autodiff builds where a composition of
// forward ops would be wasteful or numerically poor, plus `graph.pad`, the
// placement of a tensor into zeros that the VJP of `graph.slice` needs.
//
// The gradient ops are not differentiable themselves (Kiln has no
// second-order autodiff): they do not implement DifferentiableOpInterface,
// and `--graph-autodiff` rejects a forward function that uses them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GRAPH_GRAD_OPS_TD
#define KILN_GRAPH_GRAD_OPS_TD

//===----------------------------------------------------------------------===//
// Placement
//===----------------------------------------------------------------------===//

def Graph_PadOp : Graph_Op<"pad", [Pure,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "Places a tensor at `offsets` inside zeros of the result's shape.";
  let description = [{
    The inverse of `graph.slice`: result element `offsets + i` is input
    element `i`; every other element is zero. `offset + input dim <= result
    dim` in each dim. It is the VJP of `graph.slice`, and its own VJP is that
    slice, so it is differentiable.
    ```mlir
    %p = graph.pad %x {offsets = array<i64: 0, 128>} : tensor<4x128xf32> -> tensor<4x384xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$offsets);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradients of elementwise activations
//===----------------------------------------------------------------------===//

class Graph_ActivationGradOp<string mnemonic, string doc>
    : Graph_Op<mnemonic, [Pure, SameOperandsAndResultType,
          DeclareOpInterfaceMethods<Graph_CostOpInterface>,
          DeclareOpInterfaceMethods<Graph_FusibleOpInterface,
                                    ["getFlopsPerElement"]>]> {
  let summary = doc;
  let arguments = (ins Graph_FloatTensor:$result_grad, Graph_FloatTensor:$input);
  let results = (outs Graph_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $result_grad `,` $input attr-dict `:` type($input_grad)
  }];
}

def Graph_ReluGradOp : Graph_ActivationGradOp<"relu_grad",
    "VJP of `graph.relu`: `dy` where `x > 0`, else 0."> {
  let description = [{
    `dx = x > 0 ? dy : 0`; at `x == 0` the gradient is 0 (the subgradient
    PyTorch and JAX pick). Not differentiable (no second-order autodiff).
    ```mlir
    %dx = graph.relu_grad %dy, %x : tensor<4x8xf32>
    ```
  }];
}

def Graph_GeluGradOp : Graph_ActivationGradOp<"gelu_grad",
    "VJP of `graph.gelu` (tanh approximation)."> {
  let description = [{
    With `u = sqrt(2/pi) (x + 0.044715 x^3)`, `t = tanh(u)`:
    `dx = dy (0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2))`.
    Not differentiable (no second-order autodiff).
    ```mlir
    %dx = graph.gelu_grad %dy, %x : tensor<4x8xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Gradients of normalizations and reductions
//===----------------------------------------------------------------------===//

def Graph_SoftmaxGradOp : Graph_Op<"softmax_grad", [Graph_FullPrecisionCompute, Pure,
    SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>]> {
  let summary = "VJP of `graph.softmax`, from its output.";
  let description = [{
    `dx = y * (dy - sum(dy * y, axis))`, with `y` the softmax's result: no
    exponential is recomputed. Not differentiable (no second-order autodiff).
    ```mlir
    %dx = graph.softmax_grad %dy, %y {axis = 1 : i64} : tensor<4x10xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$result_grad, Graph_FloatTensor:$result,
                       I64Attr:$axis);
  let results = (outs Graph_FloatTensor:$input_grad);
  let assemblyFormat = "$result_grad `,` $result attr-dict `:` type($input_grad)";
  let hasVerifier = 1;
}

def Graph_LayerNormGradOp : Graph_Op<"layer_norm_grad", [Graph_FullPrecisionCompute, Pure,
    AllTypesMatch<["result_grad", "input", "input_grad"]>,
    AllTypesMatch<["gamma", "gamma_grad", "beta_grad"]>,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>]> {
  let summary = "VJP of `graph.layer_norm`: dx, dgamma and dbeta.";
  let description = [{
    Recomputes the row statistics from `x` (mean and `rstd = rsqrt(var +
    eps)`, biased variance), with `xhat = (x - mean) rstd` and
    `g = dy * gamma`:
    `dx = rstd (g - mean(g) - xhat mean(g xhat))` over the last dim,
    `dgamma = sum(dy xhat)` and `dbeta = sum(dy)` over every other dim.
    Not differentiable (no second-order autodiff).
    ```mlir
    %dx, %dg, %db = graph.layer_norm_grad %dy, %x, %g {eps = 1.0e-5 : f64} : tensor<2x64x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$result_grad, Graph_FloatTensor:$input,
                       Graph_FloatTensor:$gamma,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$eps);
  let results = (outs Graph_FloatTensor:$input_grad,
                      Graph_FloatTensor:$gamma_grad,
                      Graph_FloatTensor:$beta_grad);
  let assemblyFormat = [{
    $result_grad `,` $input `,` $gamma attr-dict `:` type($input) `,`
    type($gamma)
  }];
  let hasVerifier = 1;
}

def Graph_ReduceMaxGradOp : Graph_Op<"reduce_max_grad", [Pure,
    AllTypesMatch<["input", "input_grad"]>,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>]> {
  let summary = "VJP of `graph.reduce max`: routes each dy to one argmax.";
  let description = [{
    For each reduced group of `x` (the elements that `graph.reduce max` with
    the same `axes` combines into one result), `dx` is `dy` at the group's
    first maximal element in row-major order and 0 elsewhere. Tie rule: when
    several elements equal the maximum, only the first (lowest row-major
    index) receives the gradient, so the gradient's sum equals `sum(dy)`
    whatever the ties. `dy` has the reduce's result shape (with or without
    `keepdims`). Not differentiable (no second-order autodiff).
    ```mlir
    %dx = graph.reduce_max_grad %dy, %x {axes = array<i64: 1>} : tensor<4xf32>, tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$result_grad, Graph_FloatTensor:$input,
                       DenseI64ArrayAttr:$axes, UnitAttr:$keepdims);
  let results = (outs Graph_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $result_grad `,` $input attr-dict `:` type($result_grad) `,` type($input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradients of the neural-network ops
//===----------------------------------------------------------------------===//

def Graph_AttentionGradOp : Graph_Op<"attention_grad", [Graph_LowPrecisionCompute, Pure,
    AllTypesMatch<["result_grad", "out"]>,
    AllTypesMatch<["query", "query_grad"]>, AllTypesMatch<["key", "key_grad"]>,
    AllTypesMatch<["value", "value_grad"]>,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>]> {
  let summary = "VJP of `graph.attention`: dq, dk and dv.";
  let description = [{
    Recomputes the probabilities `p = softmax(q k^T * scale [+ mask]
    [causal])` from `q` and `k`, then `dv = p^T dout`, `ds = p * (dout v^T -
    rowsum(dout * out))`, `dq = ds k * scale`, `dk = ds^T q * scale`. `out`
    is the forward op's result (`rowsum(dout * out)` equals `rowsum(dout v^T
    * p)`, over the value dim instead of the keys); a target whose fused
    forward saved per-row statistics of `out` (the log-sum-exp) finds them
    through it. `causal`, `scale` and `mask` are those of the forward op
    (`scale` defaults to `1/sqrt(Dk)`); the mask gets no gradient here (the
    forward's VJP composes one where the mask depends on a parameter). Not
    differentiable (no second-order autodiff).
    ```mlir
    %dq, %dk, %dv = graph.attention_grad %dout, %q, %k, %v, %out {causal} : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$result_grad, Graph_FloatTensor:$query,
                       Graph_FloatTensor:$key, Graph_FloatTensor:$value,
                       Graph_FloatTensor:$out,
                       Optional<Graph_FloatTensor>:$mask,
                       UnitAttr:$causal, OptionalAttr<F64Attr>:$scale);
  let results = (outs Graph_FloatTensor:$query_grad, Graph_FloatTensor:$key_grad,
                      Graph_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $result_grad `,` $query `,` $key `,` $value `,` $out
    (`mask` `(` $mask^ `:` type($mask) `)`)? attr-dict `:`
    type($result_grad) `,` type($query) `,` type($key) `,` type($value)
  }];
  let extraClassDeclaration = [{
    /// The scale applied to q k^T: the attribute, or 1/sqrt(Dk).
    double getEffectiveScale();
  }];
  let hasVerifier = 1;
}

def Graph_CrossEntropyGradOp : Graph_Op<"cross_entropy_grad", [Graph_FullPrecisionCompute, Pure,
    AllTypesMatch<["logits", "logits_grad"]>,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_FusionAnchorOpInterface>]> {
  let summary = "VJP of `graph.cross_entropy`: dlogits from the scalar dloss.";
  let description = [{
    With `N` rows and `C` classes, `q = (1 - s) onehot(target) + s / C` the
    smoothed target distribution (`s` = `label_smoothing`):
    `dlogits = dloss * (softmax(logits) - q) / N`, row by row.
    Not differentiable (no second-order autodiff).
    ```mlir
    %dl = graph.cross_entropy_grad %dloss, %logits, %y {label_smoothing = 1.0e-1 : f64} : tensor<f32>, tensor<32x10xf32>, tensor<32xi32>
    ```
  }];
  let arguments = (ins Graph_ScalarFloatTensor:$result_grad,
                       Graph_FloatTensor:$logits, Graph_IndexTensor:$targets,
                       DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing);
  let results = (outs Graph_FloatTensor:$logits_grad);
  let assemblyFormat = [{
    $result_grad `,` $logits `,` $targets attr-dict `:` type($result_grad) `,`
    type($logits) `,` type($targets)
  }];
  let hasVerifier = 1;
}

def Graph_EmbeddingGradOp : Graph_Op<"embedding_grad", [Graph_FullPrecisionCompute, Pure,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>]> {
  let summary = "VJP of `graph.embedding`: scatter-adds dy rows into a [V, D] table.";
  let description = [{
    Starts from a `[V, D]` table of zeros (V from the result type) and adds
    row `dy[i]` into row `ids[i]` for every id, in row-major order of `ids`,
    so repeated ids accumulate. Ids outside `[0, V)` are a runtime error.
    Not differentiable (no second-order autodiff).
    ```mlir
    %dw = graph.embedding_grad %dy, %tokens : tensor<32x64x128xf32>, tensor<32x64xi32> -> tensor<256x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$result_grad, Graph_IndexTensor:$ids);
  let results = (outs Graph_FloatTensor:$table_grad);
  let assemblyFormat = [{
    $result_grad `,` $ids attr-dict `:` type($result_grad) `,` type($ids) `->`
    type($table_grad)
  }];
  let hasVerifier = 1;
}

#endif // KILN_GRAPH_GRAD_OPS_TD
