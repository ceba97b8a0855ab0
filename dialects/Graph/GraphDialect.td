//===- GraphDialect.td - The graph dialect's definition ----*- tablegen -*-===//
//
// Part of Kiln. The graph dialect: tensor-level ops with value semantics and
// static shapes, the input of autodiff and of every graph optimization.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GRAPH_DIALECT_TD
#define KILN_GRAPH_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/EnumAttr.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let cppNamespace = "::kiln::graph";
  let summary = "Tensor-level graph of a neural network, with static shapes.";
  let description = [{
    The graph dialect holds a model as one `func.func @forward` whose
    arguments are the model's parameters and inputs and whose results are the
    loss and the named outputs. Ops have value semantics over statically
    shaped `tensor` types; broadcasting is explicit (`graph.broadcast`), so
    every elementwise op takes operands of one type.

    Function-level structure is carried by discardable attributes that the
    dialect verifies:
    - on an argument, `graph.param = "block.0.w_qkv"` with
      `graph.init = {kind = "normal", std = 0.02 : f64}`, or
      `graph.input = "tokens"`;
    - on a result, `graph.output = "logits"`; the loss is the result that also
      carries `graph.loss`; a gradient that `--graph-autodiff` returns
      carries `graph.grad = "<parameter name>"`;
    - on the module, `graph.model = "gpt"`, `graph.dims = {B = 32 : i64, ...}`,
      `graph.batch_dim = "B"` and `graph.train = {...}` (the train block).
  }];
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    // Names of the discardable attributes that carry the model's structure.
    static constexpr ::llvm::StringLiteral kParamAttr = "graph.param";
    static constexpr ::llvm::StringLiteral kInitAttr = "graph.init";
    static constexpr ::llvm::StringLiteral kInputAttr = "graph.input";
    static constexpr ::llvm::StringLiteral kOutputAttr = "graph.output";
    static constexpr ::llvm::StringLiteral kLossAttr = "graph.loss";
    /// On a result of `@grad_step`: the name of the parameter whose gradient
    /// it is.
    static constexpr ::llvm::StringLiteral kGradAttr = "graph.grad";
    /// On an argument of a training entry: optimizer state or a gradient
    /// accumulator (`wte.adam_m`, `optimizer.step`), zero-initialized.
    static constexpr ::llvm::StringLiteral kStateAttr = "graph.state";
    /// On a state argument that holds one rank's part of a larger tensor
    /// (ZeRO-1's optimizer state): `{offset = N, shape = array<i64: ...>}`,
    /// the part being the 1-D run [offset, offset + its size) of that
    /// shape's row-major elements. Checkpoints hold the whole tensor.
    static constexpr ::llvm::StringLiteral kShardAttr = "graph.shard";
    /// On a result of a training entry: the new value of the parameter or
    /// state of that name.
    static constexpr ::llvm::StringLiteral kUpdateAttr = "graph.update";
    static constexpr ::llvm::StringLiteral kModelAttr = "graph.model";
    static constexpr ::llvm::StringLiteral kDimsAttr = "graph.dims";
    static constexpr ::llvm::StringLiteral kBatchDimAttr = "graph.batch_dim";
    static constexpr ::llvm::StringLiteral kTrainAttr = "graph.train";
    /// On an op --graph-recompute cloned into the backward.
    static constexpr ::llvm::StringLiteral kRecomputedAttr = "graph.recomputed";
    /// On the module: the FLOPs --graph-recompute cloned (one step).
    static constexpr ::llvm::StringLiteral kRecomputeFlopsAttr =
        "graph.recompute_flops";
  }];
}

/// The reductions `graph.reduce` computes.
def Graph_ReduceKind : I32EnumAttr<"ReduceKind", "reduction kind", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Max", 1, "max">,
    I32EnumAttrCase<"Mean", 2, "mean">]> {
  let cppNamespace = "::kiln::graph";
}

/// The comparisons `graph.compare` makes: IEEE ordered, so a NaN compares
/// false, except `ne`, which is true for it (NumPy's and JAX's rule).
def Graph_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "elementwise comparison", [
    I32EnumAttrCase<"Lt", 0, "lt">,
    I32EnumAttrCase<"Le", 1, "le">,
    I32EnumAttrCase<"Gt", 2, "gt">,
    I32EnumAttrCase<"Ge", 3, "ge">,
    I32EnumAttrCase<"Eq", 4, "eq">,
    I32EnumAttrCase<"Ne", 5, "ne">]> {
  let cppNamespace = "::kiln::graph";
}

/// What `graph.matmul_epilogue` applies to its product (the epilogues a
/// GPU GEMM library runs as it stores it).
def Graph_GemmEpilogue : I32EnumAttr<"GemmEpilogue", "GEMM epilogue", [
    I32EnumAttrCase<"Bias", 0, "bias">,
    I32EnumAttrCase<"BiasGelu", 1, "bias_gelu">,
    I32EnumAttrCase<"DGelu", 2, "dgelu">,
    I32EnumAttrCase<"BiasGrad", 3, "bias_grad">]> {
  let cppNamespace = "::kiln::graph";
}

/// The learning-rate schedules `graph.lr_schedule` computes (and the train
/// block's `schedule` names).
def Graph_LrScheduleKind : I32EnumAttr<"LrScheduleKind", "learning-rate schedule", [
    I32EnumAttrCase<"Constant", 0, "constant">,
    I32EnumAttrCase<"Linear", 1, "linear">,
    I32EnumAttrCase<"Cosine", 2, "cosine">]> {
  let cppNamespace = "::kiln::graph";
}

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, traits>;

// Graph values are statically shaped: the shape rules and the cost model
// need every dim, so a `?` is rejected by the op's type constraints.
def Graph_Tensor : RankedTensorOf<[AnyType], [HasStaticShapePred],
    "statically shaped tensor">;
def Graph_FloatTensor : RankedTensorOf<[AnyFloat], [HasStaticShapePred],
    "statically shaped tensor">;
def Graph_IndexTensor : RankedTensorOf<[I32, I64], [HasStaticShapePred],
    "statically shaped tensor">;
def Graph_ScalarFloatTensor : 0DTensorOf<[AnyFloat]>;

#endif // KILN_GRAPH_DIALECT_TD
