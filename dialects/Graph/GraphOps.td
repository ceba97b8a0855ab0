//===- GraphOps.td - Ops of the graph dialect --------------*- tablegen -*-===//
//
// Part of Kiln. Every op: a summary, an example, a verifier that checks the
// result type against the shape rules in GraphShapes.h, and a cost.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GRAPH_OPS_TD
#define KILN_GRAPH_OPS_TD

include "GraphDialect.td"
include "mlir/IR/BuiltinTypes.td"
include "GraphInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Graph_ConstantOp : Graph_Op<"constant", [Pure, ConstantLike,
    AllTypesMatch<["value", "result"]>,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_FusibleOpInterface>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "A tensor constant.";
  let description = [{
    ```mlir
    %c = graph.constant dense<5.000000e-01> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise ops: operands and result share one type.
//===----------------------------------------------------------------------===//

class Graph_UnaryOp<string mnemonic, string doc, list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType,
          DeclareOpInterfaceMethods<Graph_CostOpInterface>,
          DeclareOpInterfaceMethods<Graph_FusibleOpInterface,
                                    ["getFlopsPerElement"]>,
          DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>])> {
  let summary = doc;
  let description = "```mlir\n%y = graph." # mnemonic #
      " %x : tensor<4x8xf32>\n```";
  let arguments = (ins Graph_FloatTensor:$input);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Graph_NegOp : Graph_UnaryOp<"neg", "Elementwise negation.">;
def Graph_ExpOp : Graph_UnaryOp<"exp", "Elementwise natural exponential.">;
def Graph_LogOp : Graph_UnaryOp<"log", "Elementwise natural logarithm.">;
def Graph_TanhOp : Graph_UnaryOp<"tanh", "Elementwise hyperbolic tangent.">;
def Graph_AbsOp : Graph_UnaryOp<"abs", "Elementwise absolute value.">;
def Graph_SinOp : Graph_UnaryOp<"sin", "Elementwise sine (radians).">;
def Graph_CosOp : Graph_UnaryOp<"cos", "Elementwise cosine (radians).">;
def Graph_ErfOp : Graph_UnaryOp<"erf",
    "Elementwise error function: 2 / sqrt(pi) * integral of exp(-t^2) from 0 to x.">;
def Graph_SigmoidOp : Graph_UnaryOp<"sigmoid",
    "Elementwise logistic function: 1 / (1 + exp(-x)).">;
def Graph_SiluOp : Graph_UnaryOp<"silu",
    "SiLU (swish): x * sigmoid(x), the gate of a SwiGLU MLP.">;
def Graph_SqrtOp : Graph_UnaryOp<"sqrt", "Elementwise square root.">;
def Graph_RsqrtOp : Graph_UnaryOp<"rsqrt", "Elementwise reciprocal square root.">;
def Graph_ReluOp : Graph_UnaryOp<"relu", "Elementwise max(x, 0).">;
def Graph_GeluOp : Graph_UnaryOp<"gelu",
    "GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).">;

class Graph_BinaryOp<string mnemonic, string doc, list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType,
          DeclareOpInterfaceMethods<Graph_CostOpInterface>,
          DeclareOpInterfaceMethods<Graph_FusibleOpInterface,
                                    ["getFlopsPerElement"]>,
          DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>])> {
  let summary = doc;
  let description = "Operands have one type; the front end inserts "
      "`graph.broadcast` for NumPy broadcasting.\n```mlir\n%z = graph." #
      mnemonic # " %x, %y : tensor<4x8xf32>\n```";
  let arguments = (ins Graph_FloatTensor:$lhs, Graph_FloatTensor:$rhs);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Graph_AddOp : Graph_BinaryOp<"add", "Elementwise addition.", [Commutative]>;
def Graph_SubOp : Graph_BinaryOp<"sub", "Elementwise subtraction.">;
def Graph_MulOp : Graph_BinaryOp<"mul", "Elementwise multiplication.", [Commutative]>;
def Graph_DivOp : Graph_BinaryOp<"div", "Elementwise division.">;
def Graph_PowOp : Graph_BinaryOp<"pow", "Elementwise power lhs^rhs.">;
def Graph_MaximumOp : Graph_BinaryOp<"maximum",
    "Elementwise maximum: NaN where either is NaN, +0 over -0; a tie splits "
    "the gradient in halves (as JAX and PyTorch).", [Commutative]>;
def Graph_MinimumOp : Graph_BinaryOp<"minimum",
    "Elementwise minimum: NaN where either is NaN, -0 under +0; a tie splits "
    "the gradient in halves (as JAX and PyTorch).", [Commutative]>;

def Graph_IfTrainingOp : Graph_Op<"if_training", [Pure,
    AllTypesMatch<["training", "inference", "result"]>]> {
  let summary = "One value while training, another in inference.";
  let description = [{
    `training` in the entries that train (`train_step`, `accumulate_step`,
    `grad_step`), `inference` in `eval_step` and `predict` (batch_norm's
    batch statistics against its running ones). The passes that build those
    entries resolve it (`graph::resolveTrainingPhase`) before autodiff,
    fusion and lowering; the interpreter, which runs `@forward` as is, takes
    `inference`.
    ```mlir
    %y = graph.if_training %batch_normed, %running_normed : tensor<8x4xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$training, Graph_FloatTensor:$inference);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$training `,` $inference attr-dict `:` type($result)";
}

def Graph_CompareOp : Graph_Op<"compare", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_FusibleOpInterface, ["getFlopsPerElement"]>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "Elementwise comparison as a 1/0 mask of the operands' type.";
  let description = [{
    1 where `lhs <predicate> rhs` holds, else 0, in the operands' float type
    (a mask to multiply by or to give `graph.select`). Ordered comparisons
    are false where either side is NaN; `ne` is true there. Carries no
    gradient (its result is piecewise constant).
    ```mlir
    %m = graph.compare gt %x, %y : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Graph_ComparePredicate:$predicate,
                       Graph_FloatTensor:$lhs, Graph_FloatTensor:$rhs);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$predicate $lhs `,` $rhs attr-dict `:` type($result)";
}

def Graph_SelectOp : Graph_Op<"select", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_FusibleOpInterface, ["getFlopsPerElement"]>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "Elementwise choice: on_true where the condition is nonzero.";
  let description = [{
    `condition != 0 ? on_true : on_false` per element (a NaN condition is
    nonzero). The gradient goes to the side chosen, none to the condition.
    ```mlir
    %y = graph.select %m, %x, %z : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$condition, Graph_FloatTensor:$on_true,
                       Graph_FloatTensor:$on_false);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat =
      "$condition `,` $on_true `,` $on_false attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Graph_MatmulOp : Graph_Op<"matmul", [Graph_LowPrecisionCompute, Pure,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "Batched matrix product, with optional transposes.";
  let description = [{
    `lhs` is `[..., M, K]` (`[..., K, M]` with `transpose_lhs`), `rhs` is
    `[..., K, N]` (`[..., N, K]` with `transpose_rhs`); the leading batch dims
    broadcast as in NumPy (a rank-2 `rhs` is shared by every batch).
    ```mlir
    %y = graph.matmul %x, %w : tensor<32x64x128xf32>, tensor<128x384xf32> -> tensor<32x64x384xf32>
    %s = graph.matmul %q, %k {transpose_rhs} : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$lhs, Graph_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_MatmulEpilogueOp : Graph_Op<"matmul_epilogue", [Graph_LowPrecisionCompute, Pure,
    AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>]> {
  let summary = "A matmul and what the GEMM library applies as it stores it.";
  let description = [{
    Made by `--graph-fold-gemm-epilogues` on a target whose GEMM library
    runs epilogues (cuda: cuBLASLt), after the training step is built; it is
    not differentiable. `lhs` and `rhs` are as in `graph.matmul`; with P
    their product, `[..., M, N]`:
    - `bias`: `result = P + bias` (`bias` is `[N]`, over the last dim).
    - `bias_gelu`: `pre = P + bias`, `result = gelu(pre)` (the tanh form,
      as `graph.gelu`); `pre` is the second result, for the backward.
    - `dgelu`: `result = gelu_grad(P, aux)` (`aux` of the result's type:
      the forward's pre-activation).
    - `bias_grad`: `result = P`, and the second result is the sum of
      `rhs`'s rows, `[N]`: the bias gradient beside a weight gradient
      `lhs^T rhs` (`rhs` is `[K, N]`, not transposed).
    ```mlir
    %y = graph.matmul_epilogue bias %x, %w bias %b : tensor<32x64xf32>, tensor<64x128xf32> bias tensor<128xf32> -> tensor<32x128xf32>
    %h, %pre = graph.matmul_epilogue bias_gelu %x, %w bias %b : tensor<32x64xf32>, tensor<64x128xf32> bias tensor<128xf32> -> tensor<32x128xf32>, tensor<32x128xf32>
    %dw, %db = graph.matmul_epilogue bias_grad %x, %dy {transpose_lhs} : tensor<32x64xf32>, tensor<32x128xf32> -> tensor<64x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins Graph_GemmEpilogue:$epilogue,
                       Graph_FloatTensor:$lhs, Graph_FloatTensor:$rhs,
                       Optional<Graph_FloatTensor>:$bias,
                       Optional<Graph_FloatTensor>:$aux,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Graph_FloatTensor:$result,
                      Optional<Graph_FloatTensor>:$second);
  let assemblyFormat = [{
    $epilogue $lhs `,` $rhs (`bias` $bias^)? (`aux` $aux^)? attr-dict `:`
    type($lhs) `,` type($rhs) (`bias` type($bias)^)? (`aux` type($aux)^)?
    `->` type($result) (`,` type($second)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def Graph_BroadcastOp : Graph_Op<"broadcast", [Pure,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_FusibleOpInterface>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "NumPy broadcasting to a larger shape.";
  let description = [{
    Dims align from the right; each input dim equals the result dim or is 1.
    ```mlir
    %b = graph.broadcast %bias : tensor<64xf32> -> tensor<32x64xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_ReduceOp : Graph_Op<"reduce", [Graph_FullPrecisionCompute, Pure,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_FusionAnchorOpInterface,
                              ["walksColumns"]>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "Sum, max or mean over a set of axes.";
  let description = [{
    `axes` are distinct, sorted and non-negative; with `keepdims` the reduced
    axes stay as size 1.
    ```mlir
    %s = graph.reduce sum %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
    %m = graph.reduce max %x {axes = array<i64: 1>, keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins Graph_ReduceKind:$kind, Graph_FloatTensor:$input,
                       DenseI64ArrayAttr:$axes, UnitAttr:$keepdims);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $kind $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_ReshapeOp : Graph_Op<"reshape", [Pure,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_FusibleOpInterface>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "Reinterprets a tensor with a new shape of equal size.";
  let description = [{
    ```mlir
    %r = graph.reshape %x : tensor<2x64x128xf32> -> tensor<2x64x4x32xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_TransposeOp : Graph_Op<"transpose", [Pure,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_FusibleOpInterface>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "Permutes the dims: result dim i is input dim perm[i].";
  let description = [{
    ```mlir
    %t = graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : tensor<2x64x4x32xf32> -> tensor<2x4x64x32xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_SliceOp : Graph_Op<"slice", [Pure,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_FusibleOpInterface>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "A contiguous box of a tensor, at `offsets`, of the result's shape.";
  let description = [{
    ```mlir
    %s = graph.slice %x {offsets = array<i64: 0, 128>} : tensor<4x384xf32> -> tensor<4x128xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$offsets);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_ConcatOp : Graph_Op<"concat", [Pure,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "Joins tensors along one axis.";
  let description = [{
    `axis` is non-negative; the inputs agree in every other dim.
    ```mlir
    %c = graph.concat %a, %b {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x10xf32>
    ```
  }];
  let arguments = (ins Variadic<Graph_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $result)";
  let hasVerifier = 1;
}

def Graph_SplitOp : Graph_Op<"split", [Pure,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_FusibleOpInterface>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "Cuts a tensor along one axis into pieces of the results' sizes.";
  let description = [{
    `axis` is non-negative; every piece has a positive size along it.
    ```mlir
    %q, %k, %v = graph.split %x {axis = 2 : i64} : tensor<2x64x384xf32> -> (tensor<2x64x128xf32>, tensor<2x64x128xf32>, tensor<2x64x128xf32>)
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, I64Attr:$axis);
  let results = (outs Variadic<Graph_Tensor>:$results);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` `(` type($results) `)`
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Neural-network ops
//===----------------------------------------------------------------------===//

def Graph_EmbeddingOp : Graph_Op<"embedding", [Pure, Graph_LowPrecisionCompute,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "Gathers rows of a `[V, D]` table: result is `ids.shape + [D]`.";
  let description = [{
    Ids outside `[0, V)` are a runtime error.
    ```mlir
    %e = graph.embedding %wte, %tokens : tensor<256x128xf32>, tensor<32x64xi32> -> tensor<32x64x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$table, Graph_IndexTensor:$ids);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $ids attr-dict `:` type($table) `,` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_ArgmaxOp : Graph_Op<"argmax", [Pure,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>]> {
  let summary = "The index of the largest element along one axis.";
  let description = [{
    The result drops `axis`. Ties go to the first index, and a NaN counts
    as the largest (the first NaN wins): NumPy's and JAX's rule. The result
    is an integer, so nothing differentiates through it.
    ```mlir
    %i = graph.argmax %x {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4xi32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Graph_IndexTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_OneHotOp : Graph_Op<"one_hot", [Pure,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>]> {
  let summary = "Rows of the identity picked by integer ids: `ids.shape + [classes]`.";
  let description = [{
    `result[..., c]` is 1 where `ids[...] == c`, else 0; `classes` is the
    result's last dim. An id outside `[0, classes)` gives a row of zeros
    (JAX's `one_hot`). Not differentiable in its ids (integers).
    ```mlir
    %h = graph.one_hot %y : tensor<32xi32> -> tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Graph_IndexTensor:$ids);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$ids attr-dict `:` type($ids) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_LayerNormOp : Graph_Op<"layer_norm", [Graph_FullPrecisionCompute, Pure,
    AllTypesMatch<["input", "result"]>, AllTypesMatch<["gamma", "beta"]>,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_FusionAnchorOpInterface>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "Layer normalization over the last dim, with gain and bias.";
  let description = [{
    `y = (x - mean) * rsqrt(var + eps) * gamma + beta`, with the biased
    variance over the last dim; `gamma` and `beta` have the last dim's shape.
    ```mlir
    %y = graph.layer_norm %x, %g, %b {eps = 1.0e-5 : f64} : tensor<2x64x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$gamma,
                       Graph_FloatTensor:$beta,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$eps);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta attr-dict `:` type($input) `,` type($gamma)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$gamma,
                   "::mlir::Value":$beta, "double":$eps), [{
      build($_builder, $_state, input.getType(), input, gamma, beta,
            $_builder.getF64FloatAttr(eps));
    }]>];
  let hasVerifier = 1;
}

def Graph_SoftmaxOp : Graph_Op<"softmax", [Graph_FullPrecisionCompute, Pure,
    AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "Softmax along one axis (non-negative).";
  let description = [{
    ```mlir
    %p = graph.softmax %x {axis = 1 : i64} : tensor<4x10xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "int64_t":$axis), [{
      build($_builder, $_state, input.getType(), input,
            $_builder.getI64IntegerAttr(axis));
    }]>];
  let hasVerifier = 1;
}

def Graph_AttentionOp : Graph_Op<"attention", [Graph_LowPrecisionCompute, Pure,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "Scaled dot-product attention, optionally causal or masked.";
  let description = [{
    `softmax(q k^T * scale [+ mask] [causal]) v` over the last two dims:
    `q` is `[..., Tq, Dk]`, `k` is `[..., Tk, Dk]`, `v` is `[..., Tk, Dv]`, the
    result `[..., Tq, Dv]`; leading dims are equal. `scale` defaults to
    `1/sqrt(Dk)`. With `causal`, query i attends to keys j <= i (Tq == Tk).
    The optional `mask` is added to the scaled scores `[..., Tq, Tk]` (a
    masked pair is `-inf`; a query that sees no key gets NaN, as in
    PyTorch): it has q's element type and broadcasts to the scores, its
    last two dims 1 or Tq and 1 or Tk, and its leading dims (counted from
    the right) equal to the scores' over one contiguous run and 1 elsewhere
    (`[B, 1, Tq, Tk]` or `[Tq, Tk]` or `[B, 1, 1, Tk]` for scores
    `[B, H, Tq, Tk]`), so that kernels read it in place
    (graph::getAttentionMaskLayout). Fused kernels never store the scores.
    ```mlir
    %a = graph.attention %q, %k, %v {causal} : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x32xf32>
    %b = graph.attention %q, %k, %v mask(%m : tensor<2x1x1x64xf32>) : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x32xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$query, Graph_FloatTensor:$key,
                       Graph_FloatTensor:$value,
                       Optional<Graph_FloatTensor>:$mask, UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$scale);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` `(` $mask^ `:` type($mask) `)`)?
    attr-dict `:` type($query) `,` type($key) `,` type($value) `->`
    type($result)
  }];
  let extraClassDeclaration = [{
    /// The scale applied to q k^T: the attribute, or 1/sqrt(Dk).
    double getEffectiveScale();
  }];
  let hasVerifier = 1;
}

def Graph_CrossEntropyOp : Graph_Op<"cross_entropy", [Graph_FullPrecisionCompute, Pure,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_FusionAnchorOpInterface>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "Mean softmax cross-entropy of logits against integer targets.";
  let description = [{
    `logits` is `[..., C]`, `targets` is `[...]` with values in `[0, C)`; the
    result is the scalar mean over all rows. With `label_smoothing` s the
    target distribution is `(1 - s) onehot + s / C`.
    ```mlir
    %l = graph.cross_entropy %logits, %y {label_smoothing = 1.0e-1 : f64} : tensor<32x10xf32>, tensor<32xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$logits, Graph_IndexTensor:$targets,
                       DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing);
  let results = (outs Graph_ScalarFloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $targets attr-dict `:` type($logits) `,` type($targets) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Graph_DropoutOp : Graph_Op<"dropout", [Pure,
    AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "Inverted dropout with a counter-based (Philox) mask.";
  let description = [{
    Keeps each element with probability `1 - rate`, scaled by `1/(1 - rate)`.
    The mask is drawn from Philox 4x32-10 keyed by (run seed, step, `stream`,
    element index), so it is reproducible and the same on every backend.
    `stream` is unique per dropout op in a model. In `eval_step` and `predict`
    dropout is the identity.
    ```mlir
    %d = graph.dropout %x {rate = 1.0e-1 : f64, stream = 0 : i64} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, F64Attr:$rate, I64Attr:$stream);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Graph_CastOp : Graph_Op<"cast", [Pure,
    DeclareOpInterfaceMethods<Graph_CostOpInterface>,
    DeclareOpInterfaceMethods<Graph_FusibleOpInterface>,
    DeclareOpInterfaceMethods<Graph_DifferentiableOpInterface>]> {
  let summary = "Converts the element type; the shape is unchanged.";
  let description = [{
    Float to float rounds to nearest even; float to integer truncates toward
    zero; integer to float converts exactly where representable.
    ```mlir
    %h = graph.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

include "GraphGradOps.td"
include "GraphOptimizerOps.td"
include "GraphFusionOps.td"

#endif // KILN_GRAPH_OPS_TD
