// RUN: kiln-opt %s -canonicalize -split-input-file | FileCheck %s
// Folds of the graph ops: an op that leaves its input unchanged folds away,
// and one that changes it stays.

// CHECK-LABEL: func.func @identity_folds
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
func.func @identity_folds(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NOT: graph.
  // CHECK: return %[[X]]
  %0 = graph.broadcast %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = graph.reshape %0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = graph.transpose %1 {perm = array<i64: 0, 1>} : tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = graph.slice %2 {offsets = array<i64: 0, 0>} : tensor<4x8xf32> -> tensor<4x8xf32>
  %4 = graph.cast %3 : tensor<4x8xf32> -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// A square transpose keeps its type but swaps the values: it must stay.
// CHECK-LABEL: func.func @square_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>)
func.func @square_transpose(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // CHECK: %[[T:.*]] = graph.transpose %[[X]] {perm = array<i64: 1, 0>}
  // CHECK: return %[[T]]
  %0 = graph.transpose %x {perm = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// CHECK-LABEL: func.func @changing_ops_stay
func.func @changing_ops_stay(%x: tensor<4x8xf32>, %b: tensor<8xf32>)
    -> (tensor<2x16xf32>, tensor<4x8xf32>, tensor<4x3xf32>, tensor<4x8xbf16>) {
  // CHECK: graph.reshape
  // CHECK: graph.broadcast
  // CHECK: graph.slice
  // CHECK: graph.cast
  %0 = graph.reshape %x : tensor<4x8xf32> -> tensor<2x16xf32>
  %1 = graph.broadcast %b : tensor<8xf32> -> tensor<4x8xf32>
  %2 = graph.slice %x {offsets = array<i64: 0, 5>} : tensor<4x8xf32> -> tensor<4x3xf32>
  %3 = graph.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
  return %0, %1, %2, %3 : tensor<2x16xf32>, tensor<4x8xf32>, tensor<4x3xf32>, tensor<4x8xbf16>
}

// -----

// Constants fold to their attribute; -canonicalize keeps a used one.
// CHECK-LABEL: func.func @constant
func.func @constant() -> tensor<2xf32> {
  // CHECK: %[[C:.*]] = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  // CHECK: return %[[C]]
  %0 = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %0 : tensor<2xf32>
}
