//===- Passes.td - Passes over the graph dialect -----------*- tablegen -*-===//
//
// Part of Kiln. The graph-level passes, each with its own flag and lit file
// (test/Transforms/<flag>.mlir).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GRAPH_PASSES_TD
#define KILN_GRAPH_PASSES_TD

include "mlir/Pass/PassBase.td"

def GraphAutodiff : Pass<"graph-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode autodiff: builds @grad_step from @forward.";
  let description = [{
    Adds `func.func @grad_step` next to `@forward`. It takes the same
    arguments and returns the loss, then the forward's other results, then
    one gradient per parameter (`graph.param` argument) in argument order,
    each marked `graph.grad = "<parameter name>"`.

    The forward is cloned; the backward walks its ops in reverse from
    d(loss) = 1, asking each op for its VJP through DifferentiableOpInterface
    and adding up (`graph.add`) the cotangents of values used more than once.
    Integer values (ids, targets) carry no gradient. A parameter with no path
    to the loss gets a zero gradient and a warning. Backward ops whose values
    reach no returned gradient are not kept.
  }];
  let dependentDialects = ["::kiln::graph::GraphDialect",
                           "::mlir::func::FuncDialect"];
}

#endif // KILN_GRAPH_PASSES_TD
