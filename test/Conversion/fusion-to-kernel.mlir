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

// -----

// An anchored region: the column sum's kernel reads its input through the
// add (loads of both addends, one addf) and, in that one pass over every
// element, stores the sum the region also yields. One launch, named after
// the region's ops.

// CHECK-LABEL: kernel.func @k0
// CHECK-SAME: (%[[OUT:[^:]*]]: memref<8xf32>, %[[X:[^:]*]]: memref<4x8xf32>, %[[R:[^:]*]]: memref<4x8xf32>, %[[H:[^:]*]]: memref<4x8xf32>)
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: scf.for %[[ROW:[^ ]*]] =
// CHECK: scf.for %[[COL:[^ ]*]] =
// CHECK-DAG: %[[XV:.*]] = memref.load %[[X]][%[[ROW]], %[[COL]]]
// CHECK-DAG: %[[RV:.*]] = memref.load %[[R]][%[[ROW]], %[[COL]]]
// CHECK: %[[SUM:.*]] = arith.addf %[[XV]], %[[RV]]
// CHECK: memref.store %[[SUM]], %[[H]][%[[ROW]], %[[COL]]]
// CHECK: %[[ACC:.*]] = memref.load %[[OUT]][%[[COL]]]
// CHECK: arith.addf %[[ACC]], %[[SUM]]
// CHECK-NOT: kernel.func
// CHECK-LABEL: kernel.entry @predict
// CHECK-NEXT: kernel.launch @k0({{.*}}) {kernel.origin = "fusion(add,reduce)"}
// CHECK-NEXT: kernel.return
func.func @forward(%x: tensor<4x8xf32> {graph.input = "x"},
                   %r: tensor<4x8xf32> {graph.input = "r"})
    -> (tensor<8xf32> {graph.output = "s"}, tensor<4x8xf32> {graph.output = "h"}) {
  %f:2 = graph.fusion -> (tensor<8xf32>, tensor<4x8xf32>) {
    %h = graph.add %x, %r : tensor<4x8xf32>
    %s = graph.reduce sum %h {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
    graph.yield %s, %h : tensor<8xf32>, tensor<4x8xf32>
  }
  return %f#0, %f#1 : tensor<8xf32>, tensor<4x8xf32>
}

// -----

// A layer norm anchored on a residual add over a broadcast bias, viewed as
// rows: the first pass (the sum) computes x + bias and stores it into the
// yielded buffer; the variance and the normalization passes load it back.

// CHECK-LABEL: kernel.func @k0
// CHECK-SAME: (%[[G:[^:]*]]: memref<8xf32>, %[[BETA:[^:]*]]: memref<8xf32>, %[[Y:[^:]*]]: memref<6x8xf32>, %[[X:[^:]*]]: memref<2x3x8xf32>, %[[BIAS:[^:]*]]: memref<8xf32>, %[[H:[^:]*]]: memref<2x3x8xf32>)
// CHECK: scf.parallel (%[[ROW:[^)]*]]) =
// CHECK: scf.for %[[D:[^ ]*]] =
// CHECK-DAG: %[[I1:.*]] = arith.remui %[[ROW]], %{{.*}}
// CHECK-DAG: %[[I0:.*]] = arith.divui %[[ROW]], %{{.*}}
// CHECK: %[[XV:.*]] = memref.load %[[X]][%[[I0]], %[[I1]], %[[D]]]
// CHECK: %[[BV:.*]] = memref.load %[[BIAS]][%[[D]]]
// CHECK: %[[HV:.*]] = arith.addf %[[XV]], %[[BV]]
// CHECK: memref.store %[[HV]], %[[H]][%[[I0]], %[[I1]], %[[D]]]
// CHECK: scf.for
// CHECK: memref.load %[[H]]
// CHECK: scf.for
// CHECK: memref.load %[[H]]
// CHECK: memref.store %{{.*}}, %[[Y]]
// CHECK-LABEL: kernel.entry @predict
// CHECK-NEXT: kernel.view
// CHECK-NEXT: kernel.launch @k0({{.*}}) {kernel.origin = "fusion(broadcast,add,layer_norm)"}
// CHECK-NEXT: kernel.return
func.func @forward(%x: tensor<2x3x8xf32> {graph.input = "x"},
                   %bias: tensor<8xf32> {graph.param = "bias", graph.init = {kind = "zeros"}},
                   %g: tensor<8xf32> {graph.param = "g", graph.init = {kind = "ones"}},
                   %beta: tensor<8xf32> {graph.param = "beta", graph.init = {kind = "zeros"}})
    -> (tensor<2x3x8xf32> {graph.output = "y"}, tensor<2x3x8xf32> {graph.output = "h"}) {
  %f:2 = graph.fusion -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>) {
    %bb = graph.broadcast %bias : tensor<8xf32> -> tensor<2x3x8xf32>
    %h = graph.add %x, %bb : tensor<2x3x8xf32>
    %y = graph.layer_norm %h, %g, %beta : tensor<2x3x8xf32>, tensor<8xf32>
    graph.yield %y, %h : tensor<2x3x8xf32>, tensor<2x3x8xf32>
  }
  return %f#0, %f#1 : tensor<2x3x8xf32>, tensor<2x3x8xf32>
}
