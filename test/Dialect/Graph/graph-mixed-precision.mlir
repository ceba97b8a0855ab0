// RUN: kiln-opt %s -graph-mixed-precision=policy=bf16 -split-input-file | FileCheck %s
// RUN: kiln-opt %s -graph-mixed-precision=policy=fp16 -split-input-file | FileCheck %s --check-prefix=F16
// RUN: kiln-opt %s -graph-mixed-precision=policy=fp32 -split-input-file | FileCheck %s --check-prefix=OFF

// A dense layer: the GEMM's operands cast down once each (the weight where
// it is read), the bias cast before its broadcast, the activation in bf16,
// the cross-entropy in f32; each reader of an f32 copy (the loss, the
// output) widens right where it reads, so the value kept is the bf16 one.
// OFF-LABEL: func.func @dense
// OFF-NOT: graph.cast
// F16-LABEL: func.func @dense
// F16: graph.matmul {{.*}} : tensor<8x16xf16>, tensor<16x4xf16> -> tensor<8x4xf16>
// CHECK-LABEL: func.func @dense
// CHECK-SAME: (%[[X:[^:]*]]: tensor<8x16xf32>, %[[W:[^:]*]]: tensor<16x4xf32>, %[[B:[^:]*]]: tensor<4xf32>, %[[Y:[^:]*]]: tensor<8xi32>) -> (tensor<f32>, tensor<8x4xf32>)
func.func @dense(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<4xf32>, %y: tensor<8xi32>) -> (tensor<f32>, tensor<8x4xf32>) {
  // CHECK-DAG: %[[BL:.*]] = graph.cast %[[B]] : tensor<4xf32> -> tensor<4xbf16>
  // CHECK-DAG: %[[WL:.*]] = graph.cast %[[W]] : tensor<16x4xf32> -> tensor<16x4xbf16>
  // CHECK-DAG: %[[XL:.*]] = graph.cast %[[X]] : tensor<8x16xf32> -> tensor<8x16xbf16>
  // CHECK: %[[P:.*]] = graph.matmul %[[XL]], %[[WL]] : tensor<8x16xbf16>, tensor<16x4xbf16> -> tensor<8x4xbf16>
  // CHECK-NEXT: %[[BB:.*]] = graph.broadcast %[[BL]] : tensor<4xbf16> -> tensor<8x4xbf16>
  // CHECK-NEXT: %[[H:.*]] = graph.add %[[P]], %[[BB]] : tensor<8x4xbf16>
  // CHECK-NEXT: %[[C:.*]] = graph.constant dense<5.000000e-01> : tensor<bf16>
  // CHECK-NEXT: %[[CB:.*]] = graph.broadcast %[[C]] : tensor<bf16> -> tensor<8x4xbf16>
  // CHECK-NEXT: %[[G:.*]] = graph.mul %[[H]], %[[CB]] : tensor<8x4xbf16>
  // CHECK-NEXT: %[[GF:.*]] = graph.cast %[[G]] : tensor<8x4xbf16> -> tensor<8x4xf32>
  // CHECK-NEXT: %[[L:.*]] = graph.cross_entropy %[[GF]], %[[Y]] : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
  // CHECK-NEXT: %[[OUT:.*]] = graph.cast %[[G]] : tensor<8x4xbf16> -> tensor<8x4xf32>
  // CHECK-NEXT: return %[[L]], %[[OUT]]
  %p = graph.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  %bb = graph.broadcast %b : tensor<4xf32> -> tensor<8x4xf32>
  %h = graph.add %p, %bb : tensor<8x4xf32>
  %c = graph.constant dense<5.000000e-01> : tensor<f32>
  %cb = graph.broadcast %c : tensor<f32> -> tensor<8x4xf32>
  %g = graph.mul %h, %cb : tensor<8x4xf32>
  %loss = graph.cross_entropy %g, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
  return %loss, %g : tensor<f32>, tensor<8x4xf32>
}

// -----

// A residual block: layer_norm in f32 (its bf16 input cast up), the
// residual add of the f32 stream and a bf16 branch in bf16, a weight read
// by two GEMMs cast once, a value widened and narrowed back read as it was.
// CHECK-LABEL: func.func @residual
func.func @residual(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[WL:.*]] = graph.cast %{{.*}} : tensor<8x8xf32> -> tensor<8x8xbf16>
  // CHECK-NOT: graph.cast %{{.*}} : tensor<8x8xf32> -> tensor<8x8xbf16>
  // CHECK: %[[N:.*]] = graph.layer_norm %{{.*}} : tensor<4x8xf32>, tensor<8xf32>
  // CHECK: %[[NL:.*]] = graph.cast %[[N]] : tensor<4x8xf32> -> tensor<4x8xbf16>
  // CHECK: %[[A:.*]] = graph.matmul %[[NL]], %[[WL]] : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
  // CHECK: %[[AF:.*]] = graph.cast %[[A]] : tensor<4x8xbf16> -> tensor<4x8xf32>
  // CHECK: %[[N2:.*]] = graph.layer_norm %[[AF]], {{.*}} : tensor<4x8xf32>, tensor<8xf32>
  // CHECK: %[[N2L:.*]] = graph.cast %[[N2]] : tensor<4x8xf32> -> tensor<4x8xbf16>
  // CHECK: %[[R:.*]] = graph.add %[[A]], %[[N2L]] : tensor<4x8xbf16>
  // CHECK: %[[M:.*]] = graph.matmul %[[R]], %[[WL]] : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
  // An add reading an argument (x) stays f32.
  // CHECK: %[[MF:.*]] = graph.cast %[[M]] : tensor<4x8xbf16> -> tensor<4x8xf32>
  // CHECK: %[[S:.*]] = graph.add %{{.*}}, %[[MF]] : tensor<4x8xf32>
  // CHECK: return %[[S]]
  %n = graph.layer_norm %x, %g, %b {eps = 1.000000e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>
  %a = graph.matmul %n, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %n2 = graph.layer_norm %a, %g, %b {eps = 1.000000e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>
  %r = graph.add %a, %n2 : tensor<4x8xf32>
  %m = graph.matmul %r, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %s = graph.add %x, %m : tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// The optimizer and everything it reads stay f32: a bf16 weight gradient is
// cast up for the update; a gradient accumulator (an argument) keeps the
// sum in f32.
// CHECK-LABEL: func.func @update
func.func @update(%w: tensor<8x8xf32>, %x: tensor<4x8xf32>, %dy: tensor<4x8xf32>, %acc: tensor<8x8xf32>, %lr: tensor<f32>, %step: tensor<f32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  // CHECK: %[[DW:.*]] = graph.matmul {{.*}} -> tensor<8x8xbf16>
  // CHECK: %[[DWF:.*]] = graph.cast %[[DW]] : tensor<8x8xbf16> -> tensor<8x8xf32>
  // CHECK: graph.add %{{.*}}, %[[DWF]] : tensor<8x8xf32>
  // CHECK: %[[DWF2:.*]] = graph.cast %[[DW]] : tensor<8x8xbf16> -> tensor<8x8xf32>
  // CHECK: graph.sgd_update %{{.*}}, %[[DWF2]], %{{.*}} : tensor<8x8xf32>
  %dw = graph.matmul %x, %dy {transpose_lhs} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %sum = graph.add %acc, %dw : tensor<8x8xf32>
  %new = graph.sgd_update %w, %dw, %lr, %step {weight_decay = 0.000000e+00 : f64} : tensor<8x8xf32>, tensor<f32>
  return %new, %sum : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// A GEMM of the backward reading a reshaped or transposed forward value
// (the weight gradient's input) narrows it through the cast the forward
// made, reshaped again: the f32 layer_norm output then dies in the forward.
// An embedding's rows are activations: stored low, its table cast down
// once with the tied head's.
// CHECK-LABEL: func.func @reused_narrow_casts
func.func @reused_narrow_casts(%ids: tensor<4xi32>, %table: tensor<16x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %w: tensor<8x8xf32>, %dy: tensor<2x8xf32>) -> (tensor<16x4xf32>, tensor<16x8xf32>) {
  // CHECK: %[[TL:.*]] = graph.cast %{{.*}} : tensor<16x8xf32> -> tensor<16x8xbf16>
  // CHECK: %[[E:.*]] = graph.embedding %[[TL]], %{{.*}} : tensor<16x8xbf16>, tensor<4xi32> -> tensor<4x8xbf16>
  // CHECK: %[[EF:.*]] = graph.cast %[[E]] : tensor<4x8xbf16> -> tensor<4x8xf32>
  // CHECK: %[[N:.*]] = graph.layer_norm %[[EF]]
  // CHECK: %[[NL:.*]] = graph.cast %[[N]] : tensor<4x8xf32> -> tensor<4x8xbf16>
  // CHECK: graph.matmul %[[NL]]
  // CHECK: %[[TT:.*]] = graph.transpose %[[TL]] {perm = array<i64: 1, 0>} : tensor<16x8xbf16> -> tensor<8x16xbf16>
  // CHECK: graph.matmul %[[NL]], %[[TT]]
  // CHECK: %[[NR:.*]] = graph.reshape %[[NL]] : tensor<4x8xbf16> -> tensor<2x16xbf16>
  // CHECK: graph.matmul %[[NR]], %{{.*}} {transpose_lhs}
  // CHECK-NOT: tensor<2x16xf32> -> tensor<2x16xbf16>
  // CHECK-NOT: graph.reshape %[[N]]
  %e = graph.embedding %table, %ids : tensor<16x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
  %n = graph.layer_norm %e, %g, %b {eps = 1.000000e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>
  %h = graph.matmul %n, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %t = graph.transpose %table {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %logits = graph.matmul %n, %t : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %lt = graph.transpose %logits {perm = array<i64: 1, 0>} : tensor<4x16xf32> -> tensor<16x4xf32>
  %nr = graph.reshape %n : tensor<4x8xf32> -> tensor<2x16xf32>
  %dw = graph.matmul %nr, %dy {transpose_lhs} : tensor<2x16xf32>, tensor<2x8xf32> -> tensor<16x8xf32>
  return %lt, %dw : tensor<16x4xf32>, tensor<16x8xf32>
}
