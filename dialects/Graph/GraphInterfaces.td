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

#endif // KILN_GRAPH_INTERFACES_TD
