//===- GraphFusionOps.td - Fusion regions of the graph dialect -*- tablegen -*-===//
//
// Part of Kiln. What --graph-fuse builds and --convert-graph-to-kernel
// lowers to one kernel each.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GRAPH_FUSION_OPS_TD
#define KILN_GRAPH_FUSION_OPS_TD


def Graph_FusionOp : Graph_Op<"fusion", [
    RecursiveMemoryEffects,
    SingleBlockImplicitTerminator<"::kiln::graph::YieldOp">]> {
  let summary = "A group of fusible ops computed as one kernel.";
  let description = [{
    The body holds ops with `FusibleOpInterface` (elementwise math and data
    movement); it reads values defined above it and yields the results,
    every one of the same shape: the kernel's iteration space. The lowering
    computes, per element of that space, every yielded value from the
    values read, composing the ops' index maps and scalar formulas, so the
    values inside never reach memory. A value used both inside and after
    the region is yielded (a multi-output fusion).

    A region may also end with one anchor (`FusionAnchorOpInterface`: a
    reduction, a layer norm) whose fused operand the other ops compute: the
    anchor's kernel reads that operand through their formulas. The anchor's
    results are yielded first; the other yielded values have the fused
    operand's shape, which is then the producers' iteration space.
    ```mlir
    %y, %z = graph.fusion -> (tensor<32x64xf32>, tensor<32x64xf32>) {
      %b = graph.broadcast %bias : tensor<64xf32> -> tensor<32x64xf32>
      %s = graph.add %x, %b : tensor<32x64xf32>
      %g = graph.gelu %s : tensor<32x64xf32>
      graph.yield %s, %g : tensor<32x64xf32>, tensor<32x64xf32>
    }
    ```
    ```mlir
    %y, %h = graph.fusion -> (tensor<8x64xf32>, tensor<8x64xf32>) {
      %h = graph.add %x, %r : tensor<8x64xf32>
      %y = graph.layer_norm %h, %g, %b : tensor<8x64xf32>, tensor<64xf32>
      graph.yield %y, %h : tensor<8x64xf32>, tensor<8x64xf32>
    }
    ```
  }];
  let results = (outs Variadic<Graph_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "attr-dict `->` `(` type($results) `)` $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The terminator of the body.
    ::kiln::graph::YieldOp getYield();
    /// The region's anchor (its last op, a FusionAnchorOpInterface), or
    /// null when every op in it is fusible.
    ::kiln::graph::FusionAnchorOpInterface getAnchor();
    /// Replaces this fusion by one without its unused results and without
    /// the ops inside that computed only them (an anchor whose loss nothing
    /// reads, in a region that also yields the logits); returns the fusion
    /// that remains (this one when every result, or none, is used).
    FusionOp dropUnusedResults();
  }];
}

def Graph_YieldOp : Graph_Op<"yield", [Pure, Terminator,
    HasParent<"::kiln::graph::FusionOp">]> {
  let summary = "The results of a `graph.fusion` region.";
  let description = [{
    ```mlir
    graph.yield %s, %g : tensor<32x64xf32>, tensor<32x64xf32>
    ```
  }];
  let arguments = (ins Variadic<Graph_Tensor>:$values);
  let builders = [OpBuilder<(ins), [{ }]>];
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // KILN_GRAPH_FUSION_OPS_TD
