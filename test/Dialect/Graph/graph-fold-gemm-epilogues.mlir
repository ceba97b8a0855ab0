// RUN: kiln-opt %s -graph-fold-gemm-epilogues -split-input-file | FileCheck %s
// RUN: kiln-opt %s -graph-fold-gemm-epilogues=element-types=f32,bf16 -split-input-file | FileCheck %s --check-prefix=BF16

// A bias add over the product's last dim: the bias epilogue; the broadcast
// goes with it.
// CHECK-LABEL: func.func @bias
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x8x16xf32>, %[[W:[^:]*]]: tensor<16x10xf32>, %[[B:[^:]*]]: tensor<10xf32>)
func.func @bias(%x: tensor<4x8x16xf32>, %w: tensor<16x10xf32>, %b: tensor<10xf32>) -> tensor<4x8x10xf32> {
  // CHECK-NEXT: %[[Y:.*]] = graph.matmul_epilogue bias %[[X]], %[[W]] bias %[[B]] : tensor<4x8x16xf32>, tensor<16x10xf32> bias tensor<10xf32> -> tensor<4x8x10xf32>
  // CHECK-NEXT: return %[[Y]]
  %p = graph.matmul %x, %w : tensor<4x8x16xf32>, tensor<16x10xf32> -> tensor<4x8x10xf32>
  %bb = graph.broadcast %b : tensor<10xf32> -> tensor<4x8x10xf32>
  %y = graph.add %bb, %p : tensor<4x8x10xf32>
  return %y : tensor<4x8x10xf32>
}

// -----

// GELU of a bias add, the pre-activation also read by the backward: one
// bias_gelu whose second result is the pre-activation.
// CHECK-LABEL: func.func @bias_gelu
func.func @bias_gelu(%x: tensor<32x16xf32>, %w: tensor<16x64xf32>, %b: tensor<64xf32>, %dy: tensor<32x64xf32>) -> (tensor<32x64xf32>, tensor<32x64xf32>) {
  // CHECK-NEXT: %[[H:.*]], %[[PRE:.*]] = graph.matmul_epilogue bias_gelu %{{.*}}, %{{.*}} bias %{{.*}} : tensor<32x16xf32>, tensor<16x64xf32> bias tensor<64xf32> -> tensor<32x64xf32>, tensor<32x64xf32>
  // CHECK-NEXT: %[[G:.*]] = graph.gelu_grad %{{.*}}, %[[PRE]]
  // CHECK-NEXT: return %[[H]], %[[G]]
  %p = graph.matmul %x, %w : tensor<32x16xf32>, tensor<16x64xf32> -> tensor<32x64xf32>
  %bb = graph.broadcast %b : tensor<64xf32> -> tensor<32x64xf32>
  %pre = graph.add %p, %bb : tensor<32x64xf32>
  %h = graph.gelu %pre : tensor<32x64xf32>
  %g = graph.gelu_grad %dy, %pre : tensor<32x64xf32>
  return %h, %g : tensor<32x64xf32>, tensor<32x64xf32>
}

// -----

// A width that is not a multiple of 8: cuBLASLt could not keep the
// pre-activation with C's leading dimension, so the GELU stays a kernel of
// its own and only the bias folds.
// CHECK-LABEL: func.func @gelu_ragged_width
func.func @gelu_ragged_width(%x: tensor<32x16xf32>, %w: tensor<16x60xf32>, %b: tensor<60xf32>) -> tensor<32x60xf32> {
  // CHECK-NEXT: %[[Y:.*]] = graph.matmul_epilogue bias
  // CHECK-NEXT: graph.gelu %[[Y]]
  %p = graph.matmul %x, %w : tensor<32x16xf32>, tensor<16x60xf32> -> tensor<32x60xf32>
  %bb = graph.broadcast %b : tensor<60xf32> -> tensor<32x60xf32>
  %pre = graph.add %p, %bb : tensor<32x60xf32>
  %h = graph.gelu %pre : tensor<32x60xf32>
  return %h : tensor<32x60xf32>
}

// -----

// GELU's gradient of a product: dgelu, the pre-activation as aux.
// CHECK-LABEL: func.func @dgelu
// CHECK-SAME: (%[[DY:[^:]*]]: tensor<32x16xf32>, %[[W:[^:]*]]: tensor<64x16xf32>, %[[PRE:[^:]*]]: tensor<32x64xf32>)
func.func @dgelu(%dy: tensor<32x16xf32>, %w: tensor<64x16xf32>, %pre: tensor<32x64xf32>) -> tensor<32x64xf32> {
  // CHECK-NEXT: %[[D:.*]] = graph.matmul_epilogue dgelu %[[DY]], %[[W]] aux %[[PRE]] {transpose_rhs} : tensor<32x16xf32>, tensor<64x16xf32> aux tensor<32x64xf32> -> tensor<32x64xf32>
  // CHECK-NEXT: return %[[D]]
  %p = graph.matmul %dy, %w {transpose_rhs} : tensor<32x16xf32>, tensor<64x16xf32> -> tensor<32x64xf32>
  %d = graph.gelu_grad %p, %pre : tensor<32x64xf32>
  return %d : tensor<32x64xf32>
}

// -----

// The bias gradient (a sum over every dim but the last) beside the weight
// gradient that reads the same rows as its rhs, through a reshape: one
// GEMM with bias_grad. The input gradient (dz as the lhs) is untouched.
// CHECK-LABEL: func.func @bias_grad
// CHECK-SAME: (%[[X:[^:]*]]: tensor<64x16xf32>, %[[DZ:[^:]*]]: tensor<4x16x32xf32>, %[[W:[^:]*]]: tensor<16x32xf32>)
func.func @bias_grad(%x: tensor<64x16xf32>, %dz: tensor<4x16x32xf32>, %w: tensor<16x32xf32>) -> (tensor<32xf32>, tensor<4x16x16xf32>, tensor<16x32xf32>) {
  // CHECK: graph.matmul %[[DZ]], %[[W]] {transpose_rhs}
  // CHECK: %[[ROWS:.*]] = graph.reshape %[[DZ]] : tensor<4x16x32xf32> -> tensor<64x32xf32>
  // CHECK: %[[DW:.*]], %[[DB:.*]] = graph.matmul_epilogue bias_grad %[[X]], %[[ROWS]] {transpose_lhs} : tensor<64x16xf32>, tensor<64x32xf32> -> tensor<16x32xf32>, tensor<32xf32>
  // CHECK-NOT: graph.reduce
  // CHECK: return %[[DB]], %{{.*}}, %[[DW]]
  %db = graph.reduce sum %dz {axes = array<i64: 0, 1>} : tensor<4x16x32xf32> -> tensor<32xf32>
  %dx = graph.matmul %dz, %w {transpose_rhs} : tensor<4x16x32xf32>, tensor<16x32xf32> -> tensor<4x16x16xf32>
  %rows = graph.reshape %dz : tensor<4x16x32xf32> -> tensor<64x32xf32>
  %dw = graph.matmul %x, %rows {transpose_lhs} : tensor<64x16xf32>, tensor<64x32xf32> -> tensor<16x32xf32>
  return %db, %dx, %dw : tensor<32xf32>, tensor<4x16x16xf32>, tensor<16x32xf32>
}

// -----

// What stays out: a product read by something else besides the bias add
// (the plain product would still be needed); a bias that is not a vector
// over the last dim (a position table); a sum over only some of the rows;
// a bias gradient read before its weight gradient is computed; a GELU of a
// scalar.
// CHECK-LABEL: func.func @unfolded
func.func @unfolded(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>, %pos: tensor<8x32xf32>, %dz: tensor<2x4x32xf32>, %y: tensor<8x16xf32>, %s: tensor<f32>) -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<4x32xf32>, tensor<32xf32>, tensor<16x32xf32>, tensor<f32>) {
  // CHECK-NOT: graph.matmul_epilogue
  %p = graph.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %bb = graph.broadcast %b : tensor<32xf32> -> tensor<8x32xf32>
  %a = graph.add %p, %bb : tensor<8x32xf32>
  %q = graph.matmul %y, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %c = graph.add %q, %pos : tensor<8x32xf32>
  %part = graph.reduce sum %dz {axes = array<i64: 0>} : tensor<2x4x32xf32> -> tensor<4x32xf32>
  %db = graph.reduce sum %dz {axes = array<i64: 0, 1>} : tensor<2x4x32xf32> -> tensor<32xf32>
  %early = graph.exp %db : tensor<32xf32>
  %rows = graph.reshape %dz : tensor<2x4x32xf32> -> tensor<8x32xf32>
  %dw = graph.matmul %y, %rows {transpose_lhs} : tensor<8x16xf32>, tensor<8x32xf32> -> tensor<16x32xf32>
  %sum = graph.add %s, %s : tensor<f32>
  %g = graph.gelu %sum : tensor<f32>
  return %a, %p, %c, %part, %early, %dw, %g : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<4x32xf32>, tensor<32xf32>, tensor<16x32xf32>, tensor<f32>
}

// -----

// Only products of the element types the target's executor applies
// epilogues to (the option; f32 by default) are folded.
// CHECK-LABEL: func.func @bf16_bias
// CHECK: graph.matmul
// CHECK-NOT: graph.matmul_epilogue
// BF16-LABEL: func.func @bf16_bias
// BF16: graph.matmul_epilogue bias
func.func @bf16_bias(%x: tensor<8x16xbf16>, %w: tensor<16x32xbf16>, %b: tensor<32xbf16>) -> tensor<8x32xbf16> {
  %p = graph.matmul %x, %w : tensor<8x16xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
  %bb = graph.broadcast %b : tensor<32xbf16> -> tensor<8x32xbf16>
  %y = graph.add %p, %bb : tensor<8x32xbf16>
  return %y : tensor<8x32xbf16>
}
