// RUN: kiln-opt %s -graph-fold-transposes -split-input-file | FileCheck %s

// The tied embedding's logits: the transposed weight is read in place.
// CHECK-LABEL: func.func @operand
// CHECK-SAME: (%[[X:[^:]*]]: tensor<64x128xf32>, %[[W:[^:]*]]: tensor<256x128xf32>)
func.func @operand(%x: tensor<64x128xf32>, %w: tensor<256x128xf32>) -> tensor<64x256xf32> {
  // CHECK-NOT: graph.transpose
  // CHECK: %[[Y:.*]] = graph.matmul %[[X]], %[[W]] {transpose_rhs} : tensor<64x128xf32>, tensor<256x128xf32> -> tensor<64x256xf32>
  // CHECK: return %[[Y]]
  %t = graph.transpose %w {perm = array<i64: 1, 0>} : tensor<256x128xf32> -> tensor<128x256xf32>
  %y = graph.matmul %x, %t : tensor<64x128xf32>, tensor<128x256xf32> -> tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}

// -----

// Both operands of a batched product, one already transposed: its flag
// toggles back off. The transpose another op still reads stays for it.
// CHECK-LABEL: func.func @batched
// CHECK-SAME: (%[[A:[^:]*]]: tensor<2x8x4xf32>, %[[B:[^:]*]]: tensor<2x8x4xf32>)
func.func @batched(%a: tensor<2x8x4xf32>, %b: tensor<2x8x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x8xf32>) {
  // CHECK: %[[T:.*]] = graph.transpose %[[A]]
  // CHECK: %[[Y:.*]] = graph.matmul %[[A]], %[[B]] {transpose_lhs} : tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x4x4xf32>
  // CHECK: return %[[Y]], %[[T]]
  %ta = graph.transpose %a {perm = array<i64: 0, 2, 1>} : tensor<2x8x4xf32> -> tensor<2x4x8xf32>
  %tb = graph.transpose %b {perm = array<i64: 0, 2, 1>} : tensor<2x8x4xf32> -> tensor<2x4x8xf32>
  %y = graph.matmul %ta, %tb {transpose_rhs} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x4xf32>
  return %y, %ta : tensor<2x4x4xf32>, tensor<2x4x8xf32>
}

// -----

// A transposed product is the product of the swapped operands.
// CHECK-LABEL: func.func @result
// CHECK-SAME: (%[[A:[^:]*]]: tensor<6x4xf32>, %[[B:[^:]*]]: tensor<4x5xf32>)
func.func @result(%a: tensor<6x4xf32>, %b: tensor<4x5xf32>) -> tensor<5x6xf32> {
  // CHECK-NOT: graph.transpose
  // CHECK: %[[Y:.*]] = graph.matmul %[[B]], %[[A]] {transpose_lhs, transpose_rhs} : tensor<4x5xf32>, tensor<6x4xf32> -> tensor<5x6xf32>
  // CHECK: return %[[Y]]
  %p = graph.matmul %a, %b : tensor<6x4xf32>, tensor<4x5xf32> -> tensor<6x5xf32>
  %t = graph.transpose %p {perm = array<i64: 1, 0>} : tensor<6x5xf32> -> tensor<5x6xf32>
  return %t : tensor<5x6xf32>
}

// -----

// What stays: a permutation that moves a batch dim, and a product that
// another op also reads (folding would compute it twice).
// CHECK-LABEL: func.func @kept
func.func @kept(%a: tensor<2x3x4xf32>, %b: tensor<4x2x5xf32>, %c: tensor<6x4xf32>, %d: tensor<4x5xf32>) -> (tensor<2x3x5xf32>, tensor<5x6xf32>, tensor<6x5xf32>) {
  // CHECK: graph.transpose %{{.*}} {perm = array<i64: 1, 0, 2>}
  // CHECK: graph.matmul %{{.*}}, %{{.*}} : tensor<2x3x4xf32>, tensor<2x4x5xf32>
  // CHECK: %[[P:.*]] = graph.matmul
  // CHECK: graph.transpose %[[P]] {perm = array<i64: 1, 0>}
  %tb = graph.transpose %b {perm = array<i64: 1, 0, 2>} : tensor<4x2x5xf32> -> tensor<2x4x5xf32>
  %y = graph.matmul %a, %tb : tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>
  %p = graph.matmul %c, %d : tensor<6x4xf32>, tensor<4x5xf32> -> tensor<6x5xf32>
  %t = graph.transpose %p {perm = array<i64: 1, 0>} : tensor<6x5xf32> -> tensor<5x6xf32>
  return %y, %t, %p : tensor<2x3x5xf32>, tensor<5x6xf32>, tensor<6x5xf32>
}
