// RUN: kiln-opt %s -graph-pad-logits=alignment=128 -split-input-file | FileCheck %s
// RUN: kiln-opt %s -graph-pad-logits -split-input-file | FileCheck %s --check-prefix=OFF

// A tied output layer over 2050 classes: the weight padded with zero rows
// to 2176, the product masked by a constant bias (0, then -1e30), the
// cross-entropy over the padded logits.
// OFF-LABEL: func.func @tied
// OFF-NOT: graph.pad
// CHECK-LABEL: func.func @tied
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x16xf32>, %[[W:[^:]*]]: tensor<2050x16xf32>, %[[Y:[^:]*]]: tensor<4xi32>)
func.func @tied(%x: tensor<4x16xf32>, %wte: tensor<2050x16xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  // CHECK-NEXT: %[[WP:.*]] = graph.pad %[[W]] {offsets = array<i64: 0, 0>} : tensor<2050x16xf32> -> tensor<2176x16xf32>
  // CHECK-NEXT: %[[P:.*]] = graph.matmul %[[X]], %[[WP]] {transpose_rhs} : tensor<4x16xf32>, tensor<2176x16xf32> -> tensor<4x2176xf32>
  // CHECK-NEXT: %[[M:.*]] = graph.constant dense<{{.*}}> : tensor<2176xf32>
  // CHECK-NEXT: %[[MB:.*]] = graph.broadcast %[[M]] : tensor<2176xf32> -> tensor<4x2176xf32>
  // CHECK-NEXT: %[[L:.*]] = graph.add %[[P]], %[[MB]] : tensor<4x2176xf32>
  // CHECK-NEXT: %[[LOSS:.*]] = graph.cross_entropy %[[L]], %[[Y]] : tensor<4x2176xf32>, tensor<4xi32> -> tensor<f32>
  // CHECK-NEXT: return %[[LOSS]]
  %l = graph.matmul %x, %wte {transpose_rhs} : tensor<4x16xf32>, tensor<2050x16xf32> -> tensor<4x2050xf32>
  %loss = graph.cross_entropy %l, %y : tensor<4x2050xf32>, tensor<4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// An untied [D, V] weight: padded columns.
// CHECK-LABEL: func.func @untied
func.func @untied(%x: tensor<2x4x16xf32>, %w: tensor<16x2050xf32>, %y: tensor<2x4xi32>) -> tensor<f32> {
  // CHECK: graph.pad %{{.*}} {offsets = array<i64: 0, 0>} : tensor<16x2050xf32> -> tensor<16x2176xf32>
  // CHECK: graph.matmul %{{.*}}, %{{.*}} : tensor<2x4x16xf32>, tensor<16x2176xf32> -> tensor<2x4x2176xf32>
  // CHECK-NOT: graph.slice
  // CHECK: graph.cross_entropy %{{.*}}, %{{.*}} : tensor<2x4x2176xf32>
  %l = graph.matmul %x, %w : tensor<2x4x16xf32>, tensor<16x2050xf32> -> tensor<2x4x2050xf32>
  %loss = graph.cross_entropy %l, %y : tensor<2x4x2050xf32>, tensor<2x4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Left alone: label smoothing (it would put probability on the padding);
// classes already aligned; a class count that padding would grow by more
// than a sixteenth (a 10-way classifier); logits that feed no
// cross-entropy; logits an output reads too.
// CHECK-LABEL: func.func @unpadded
// CHECK-NOT: graph.pad
func.func @unpadded(%x: tensor<4x16xf32>, %w: tensor<16x2050xf32>, %w2: tensor<16x2048xf32>, %w3: tensor<16x10xf32>, %y: tensor<4xi32>) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<4x2050xf32>, tensor<f32>, tensor<4x2050xf32>) {
  %a = graph.matmul %x, %w : tensor<4x16xf32>, tensor<16x2050xf32> -> tensor<4x2050xf32>
  %la = graph.cross_entropy %a, %y {label_smoothing = 1.000000e-01 : f64} : tensor<4x2050xf32>, tensor<4xi32> -> tensor<f32>
  %b = graph.matmul %x, %w2 : tensor<4x16xf32>, tensor<16x2048xf32> -> tensor<4x2048xf32>
  %lb = graph.cross_entropy %b, %y : tensor<4x2048xf32>, tensor<4xi32> -> tensor<f32>
  %c = graph.matmul %x, %w3 : tensor<4x16xf32>, tensor<16x10xf32> -> tensor<4x10xf32>
  %lc = graph.cross_entropy %c, %y : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
  %d = graph.matmul %x, %w : tensor<4x16xf32>, tensor<16x2050xf32> -> tensor<4x2050xf32>
  %e = graph.matmul %x, %w : tensor<4x16xf32>, tensor<16x2050xf32> -> tensor<4x2050xf32>
  %le = graph.cross_entropy %e, %y : tensor<4x2050xf32>, tensor<4xi32> -> tensor<f32>
  return %la, %lb, %lc, %d, %le, %e : tensor<f32>, tensor<f32>, tensor<f32>, tensor<4x2050xf32>, tensor<f32>, tensor<4x2050xf32>
}
