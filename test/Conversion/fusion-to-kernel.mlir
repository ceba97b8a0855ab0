// RUN: kiln-opt %s -split-input-file --convert-graph-to-kernel | FileCheck %s

// A fusion region is one kernel: one linalg.generic over the results' shape
// whose inputs are read at the composed index maps (here the bias through
// the broadcast's map), every yielded value an output, the intermediate
// values only scalars of the payload.

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[BIAS:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: kernel.func @k0
// CHECK-SAME: (%[[X:.*]]: memref<4x32xf32>, %[[B:.*]]: memref<32xf32>, %[[G:.*]]: memref<4x32xf32>, %[[S:.*]]: memref<4x32xf32>)
// CHECK-SAME: range = 4
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[BIAS]], #[[ID]], #[[ID]]]
// CHECK-SAME: ins(%[[X]], %[[B]] : memref<4x32xf32>, memref<32xf32>) outs(%[[G]], %[[S]] : memref<4x32xf32>, memref<4x32xf32>)
// CHECK: %[[SUM:.*]] = arith.addf
// CHECK: math.tanh
// CHECK: linalg.yield %{{.*}}, %[[SUM]] : f32, f32
// CHECK-LABEL: kernel.entry @predict
// CHECK: kernel.launch @k0({{.*}}) {kernel.origin = "fusion(broadcast,add,gelu)"}
func.func @forward(%x: tensor<4x32xf32> {graph.input = "x"},
                   %b: tensor<32xf32> {graph.param = "b", graph.init = {kind = "zeros"}})
    -> (tensor<4x32xf32> {graph.output = "g"}, tensor<4x32xf32> {graph.output = "s"}) {
  %r:2 = graph.fusion -> (tensor<4x32xf32>, tensor<4x32xf32>) {
    %bb = graph.broadcast %b : tensor<32xf32> -> tensor<4x32xf32>
    %s = graph.add %x, %bb : tensor<4x32xf32>
    %g = graph.gelu %s : tensor<4x32xf32>
    graph.yield %g, %s : tensor<4x32xf32>, tensor<4x32xf32>
  }
  return %r#0, %r#1 : tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

// Data movement composes into one map: the second of three pieces split
// off the last dim, reshaped into heads and transposed reads element
// (b, t, 16 + 4 h + d) for result (b, h, t, d): the reshape splits one
// dim into two (no division), so the kernel stays contiguous along d.

// CHECK-DAG: #[[HEAD:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1 * 4 + d3 + 16)>
// CHECK-LABEL: kernel.func @k0
// CHECK: linalg.generic {indexing_maps = [#[[HEAD]], #{{.*}}]
func.func @forward(%x: tensor<2x8x48xf32> {graph.input = "x"})
    -> (tensor<2x4x8x4xf32> {graph.output = "k"}) {
  %r = graph.fusion -> (tensor<2x4x8x4xf32>) {
    %q, %k, %v = graph.split %x {axis = 2 : i64} : tensor<2x8x48xf32> -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
    %k4 = graph.reshape %k : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
    %kt = graph.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
    graph.yield %kt : tensor<2x4x8x4xf32>
  }
  return %r : tensor<2x4x8x4xf32>
}

// -----

// Merging heads back ([b, t, h, d] -> [b, t, h * 4 + d]) divides only the
// merged dim.

// CHECK-DAG: #[[MERGE:.*]] = affine_map<(d0, d1, d2) -> (d0, d2 floordiv 4, d1, d2 mod 4)>
// CHECK-LABEL: kernel.func @k0
// CHECK: linalg.generic {indexing_maps = [#[[MERGE]], #{{.*}}]
func.func @forward(%x: tensor<2x4x8x4xf32> {graph.input = "x"})
    -> (tensor<2x8x16xf32> {graph.output = "y"}) {
  %r = graph.fusion -> (tensor<2x8x16xf32>) {
    %t = graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x8x4xf32> -> tensor<2x8x4x4xf32>
    %m = graph.reshape %t : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
    %n = graph.neg %m : tensor<2x8x16xf32>
    graph.yield %n : tensor<2x8x16xf32>
  }
  return %r : tensor<2x8x16xf32>
}
