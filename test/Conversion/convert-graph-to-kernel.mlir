// RUN: kiln-opt %s -split-input-file --convert-graph-to-kernel -verify-diagnostics | FileCheck %s

// @forward becomes predict (outputs only) and eval_step (loss too). An
// elementwise op is one kernel over the flattened tensor, a matmul a GEMM, a
// returned value is computed straight into its output buffer.

// CHECK-LABEL: kernel.func @k0
// CHECK-SAME: (%[[A:.*]]: memref<24xf32>, %[[B:.*]]: memref<24xf32>, %[[C:.*]]: memref<24xf32>)
// CHECK-SAME: attributes {grain = 24 : i64, range = 24 : i64}
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel"]
// CHECK-SAME: ins(%[[A]], %[[B]] : memref<24xf32>, memref<24xf32>) outs(%[[C]] : memref<24xf32>)
// CHECK: arith.addf
// CHECK-LABEL: kernel.entry @predict
// CHECK-SAME: %[[X:[^:]*]]: memref<4x6xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"}
// CHECK-SAME: %[[W:[^:]*]]: memref<6x6xf32> {kernel.init = {kind = "zeros"}, kernel.kind = #kernel.kind<param>, kernel.name = "w"}
// CHECK-SAME: %[[Y:[^:]*]]: memref<4x6xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}
// CHECK-NOT: kernel.name = "t"
// CHECK: %[[P:.*]] = kernel.alloc : memref<4x6xf32>
// CHECK: kernel.gemm %[[X]], %[[W]], %[[P]] {k = 6 : i64, kernel.origin = "graph.matmul", m = 4 : i64, n = 6 : i64}
// CHECK: %[[PV:.*]] = kernel.view %[[P]] : memref<4x6xf32> -> memref<24xf32>
// CHECK: %[[XV:.*]] = kernel.view %[[X]] : memref<4x6xf32> -> memref<24xf32>
// CHECK: %[[YV:.*]] = kernel.view %[[Y]] : memref<4x6xf32> -> memref<24xf32>
// CHECK: kernel.launch @k0(%[[PV]], %[[XV]], %[[YV]]) {kernel.origin = "graph.add"}
// CHECK-NEXT: kernel.return
// CHECK-LABEL: kernel.entry @eval_step
// CHECK-SAME: kernel.name = "t"
// CHECK-SAME: kernel.name = "loss"
// CHECK-SAME: kernel.kind = #kernel.kind<status>, kernel.name = "kiln.status"
// CHECK: kernel.launch @{{.*}} {kernel.origin = "graph.cross_entropy"}
// CHECK: kernel.launch @{{.*}} {kernel.origin = "graph.cross_entropy"}
// CHECK-NOT: func.func
func.func @forward(%x: tensor<4x6xf32> {graph.input = "x"},
                   %t: tensor<4xi32> {graph.input = "t"},
                   %w: tensor<6x6xf32> {graph.param = "w", graph.init = {kind = "zeros"}})
    -> (tensor<f32> {graph.loss, graph.output = "loss"}, tensor<4x6xf32> {graph.output = "y"}) {
  %0 = graph.matmul %x, %w : tensor<4x6xf32>, tensor<6x6xf32> -> tensor<4x6xf32>
  %1 = graph.add %0, %x : tensor<4x6xf32>
  %2 = graph.cross_entropy %1, %t : tensor<4x6xf32>, tensor<4xi32> -> tensor<f32>
  return %2, %1 : tensor<f32>, tensor<4x6xf32>
}

// -----

// A reshape is a view; returning a view (or an argument) copies it into the
// output buffer. A batched matmul with a shared rhs stacks into one GEMM.

// CHECK-LABEL: kernel.entry @predict
// CHECK-SAME: %[[X:[^:]*]]: memref<2x3x4xf32>
// CHECK-SAME: %[[W:[^:]*]]: memref<4x5xf32>
// CHECK-SAME: %[[R:[^:]*]]: memref<6x4xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "r"}
// CHECK-SAME: %[[M:[^:]*]]: memref<2x3x5xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "m"}
// CHECK: %[[V:.*]] = kernel.view %[[X]] : memref<2x3x4xf32> -> memref<6x4xf32>
// CHECK: kernel.gemm %[[X]], %[[W]], %[[M]] {k = 4 : i64, kernel.origin = "graph.matmul", m = 6 : i64, n = 5 : i64}
// CHECK: kernel.copy %[[V]], %[[R]] {kernel.origin = "func.return"}
func.func @forward(%x: tensor<2x3x4xf32> {graph.input = "x"},
                   %w: tensor<4x5xf32> {graph.param = "w", graph.init = {kind = "ones"}})
    -> (tensor<6x4xf32> {graph.output = "r"}, tensor<2x3x5xf32> {graph.output = "m"}) {
  %r = graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %m = graph.matmul %x, %w : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
  return %r, %m : tensor<6x4xf32>, tensor<2x3x5xf32>
}

// -----

// Row templates: one parallel iteration per row, the row's reductions in
// scf.for loops with the accumulator carried in registers.

// CHECK-LABEL: kernel.func @k0
// CHECK-SAME: attributes {grain = {{[0-9]+}} : i64, range = 12 : i64}
// CHECK: scf.parallel (%[[ROW:.*]]) = (%{{.*}}) to (%{{.*}}) step
// CHECK: scf.for {{.*}} iter_args
// CHECK: math.sqrt
// CHECK-NOT: memref.alloc
// CHECK: kernel.entry @predict
func.func @forward(%x: tensor<3x4x16xf32> {graph.input = "x"},
                   %g: tensor<16xf32> {graph.param = "g", graph.init = {kind = "ones"}},
                   %b: tensor<16xf32> {graph.param = "b", graph.init = {kind = "zeros"}})
    -> (tensor<3x4x16xf32> {graph.output = "y"}) {
  %y = graph.layer_norm %x, %g, %b {eps = 1.0e-5 : f64} : tensor<3x4x16xf32>, tensor<16xf32>
  return %y : tensor<3x4x16xf32>
}

// -----

// Dropout is the identity outside training entries, and draws Philox words
// from the runtime's rng_state in train_step.

// CHECK-LABEL: kernel.func @k0
// CHECK-SAME: memref<4xi32>
// CHECK-SAME: range = 3 : i64
// CHECK-COUNT-20: arith.mului_extended
// CHECK-LABEL: kernel.entry @train_step
// CHECK-SAME: kernel.kind = #kernel.kind<rng_state>, kernel.name = "kiln.rng_state"
// CHECK-LABEL: kernel.entry @predict
// CHECK-NOT: kernel.launch
// CHECK: kernel.copy
func.func @train_step(%x: tensor<10xf32> {graph.input = "x"}) -> (tensor<10xf32> {graph.output = "y"}) {
  %y = graph.dropout %x {rate = 1.0e-1 : f64, stream = 0 : i64} : tensor<10xf32>
  return %y : tensor<10xf32>
}
func.func @forward(%x: tensor<10xf32> {graph.input = "x"}) -> (tensor<10xf32> {graph.output = "y"}) {
  %y = graph.dropout %x {rate = 1.0e-1 : f64, stream = 0 : i64} : tensor<10xf32>
  return %y : tensor<10xf32>
}

// -----

// expected-error @+1 {{argument 0 of @forward has none of 'graph.param', 'graph.input' and 'graph.state'}}
func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32> {graph.output = "y"}) {
  %y = graph.exp %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Ops of other dialects are not graph ops: an error names them.
func.func @forward(%x: tensor<4xf32> {graph.input = "x"}) -> (tensor<4xf32> {graph.output = "y"}) {
  // expected-error @+1 {{no kernel lowering for 'arith.constant' yet}}
  %c = arith.constant dense<1.0> : tensor<4xf32>
  %y = graph.add %x, %c : tensor<4xf32>
  return %y : tensor<4xf32>
}
