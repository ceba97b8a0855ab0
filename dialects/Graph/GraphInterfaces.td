//===- GraphInterfaces.td - Interfaces of graph ops --------*- tablegen -*-===//
//
// Part of Kiln. Behaviour that passes ask of ops lives here, on the ops,
// rather than in switches inside the passes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GRAPH_INTERFACES_TD
#define KILN_GRAPH_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Graph_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::kiln::graph";
  let description = [{
    The cost model of an op: floating-point operations and bytes moved, as
    `kiln check` reports them and as fusion and recomputation weigh them.
    A multiply-add counts as two FLOPs; transcendental functions count as one.
  }];
  let methods = [
    InterfaceMethod<"Floating-point operations of one evaluation.",
      "int64_t", "getFlops">,
    InterfaceMethod<"Bytes read from operands plus bytes written to results.",
      "int64_t", "getBytesAccessed", (ins), [{}], [{
        return ::kiln::graph::defaultBytesAccessed($_op);
      }]>,
  ];
}

def Graph_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::kiln::graph";
  let description = [{
    The vector-Jacobian product (VJP) of an op, as reverse-mode autodiff
    (`--graph-autodiff`) asks for it: given the cotangents of the op's
    results, the op builds the cotangents of its operands out of graph ops.

    The builder is positioned in the backward, after every forward value the
    VJP may read (operands and results of the op). `resultCotangents` has one
    entry per result, each of the result's type, or a null Value where the
    result has no gradient (at least one is non-null). The method fills
    `operandCotangents` with one entry per operand: a value of the operand's
    type, or null where the operand is not differentiable (integer ids and
    targets) or does not influence the results. It returns failure, after
    emitting an error at the op, when the op cannot build its VJP.

    Gradient ops built here (`graph.relu_grad`, ...) are not differentiable
    themselves: Kiln has no second-order autodiff.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the cotangents of the operands from those of the results.
      }],
      "::llvm::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultCotangents,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandCotangents)>,
  ];
}

def Graph_FusibleOpInterface : OpInterface<"FusibleOpInterface"> {
  let cppNamespace = "::kiln::graph";
  let description = [{
    An op whose every result element is a function of one element of each
    operand, read at an affine index map of the result's index: elementwise
    math (identity maps) and data movement (broadcast, transpose, reshape,
    slice, split: maps only). `--graph-fuse` groups such ops into
    `graph.fusion` regions, and the lowering computes a whole region per
    element of its outputs by composing the maps and the scalar formulas,
    so that intermediate values never reach memory.
  }];
  let methods = [
    InterfaceMethod<[{
        The map from the index space of result `result` to the index space
        of operand `operand`: element `i` of the result reads element
        `map(i)` of the operand.
      }],
      "::mlir::AffineMap", "getOperandIndexMap",
      (ins "unsigned":$result, "unsigned":$operand)>,
    InterfaceMethod<[{
        Builds, with scalar arith/math ops, the element of result `result`
        from the operand elements `operands` (one per operand, each read at
        its index map). The formula is the reference interpreter's, operation
        for operation.
      }],
      "::mlir::Value", "buildScalar",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "unsigned":$result, "::mlir::ValueRange":$operands)>,
    InterfaceMethod<[{
        Floating-point operations per result element: what recomputing one
        element costs when a fusion reads it more than once.
      }],
      "int64_t", "getFlopsPerElement", (ins), [{}], [{ return 0; }]>,
  ];
}

def Graph_FusionAnchorOpInterface : OpInterface<"FusionAnchorOpInterface"> {
  let cppNamespace = "::kiln::graph";
  let description = [{
    An op whose kernel reads one operand element by element in passes over
    rows (a reduction, a normalization), so the elementwise producers of
    that operand can be computed inside its kernel instead of in a kernel of
    their own: `--graph-fuse` puts such an op at the end of a `graph.fusion`
    region with the producers of its fused operand, and the op's lowering
    reads the operand through the producers' formulas. Values of the
    producers that are also used later are written by the pass that reads
    every element once.
  }];
  let methods = [
    InterfaceMethod<"The operand the region's producers compute.",
      "unsigned", "getFusedOperandIndex">,
    InterfaceMethod<[{
        How many times the kernel reads each element of the fused operand:
        a producer computed inside it is computed that many times, so
        expensive producers join only anchors that read once.
      }],
      "int64_t", "getReadsPerElement">,
    InterfaceMethod<[{
        Whether the kernel walks the fused operand down its columns (a sum
        over the leading dims: each thread owns a strip of columns and reads
        it row after row). Producers computed there read their inputs in
        strips far apart instead of streaming them, which pays only for
        cheap producers reading at the same index (a residual add), not for
        an activation's gradient or a transpose (measured slower than their
        own kernels on the cpu).
      }],
      "bool", "walksColumns", (ins), [{}], [{ return false; }]>,
  ];
}

//===----------------------------------------------------------------------===//
// Precision policy (`--graph-mixed-precision`)
//===----------------------------------------------------------------------===//

/// An op that takes its float operands in the low precision of a mixed
/// policy and accumulates in f32 inside (a GEMM, attention), or only moves
/// them (an embedding's gather: the rows the model stores are activations):
/// its operands are cast down and its float results stored in the low
/// precision.
def Graph_LowPrecisionCompute : NativeOpTrait<"LowPrecisionCompute"> {
  let cppNamespace = "::kiln::graph";
}

/// An op that computes in f32 under every policy (reductions, softmax,
/// normalizations, losses, scatter-adds, the optimizer): its float operands
/// are cast up to f32. Ops with neither trait compute in the precision of
/// their inputs (the widest of them).
def Graph_FullPrecisionCompute : NativeOpTrait<"FullPrecisionCompute"> {
  let cppNamespace = "::kiln::graph";
}

#endif // KILN_GRAPH_INTERFACES_TD
