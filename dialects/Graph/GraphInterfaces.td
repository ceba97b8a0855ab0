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

#endif // KILN_GRAPH_INTERFACES_TD
