// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// graph.pad and every gradient op, printed and parsed back.

// CHECK-LABEL: func.func @pad
// CHECK: graph.pad %{{.*}} {offsets = array<i64: 0, 128>} : tensor<4x128xf32> -> tensor<4x384xf32>
func.func @pad(%x: tensor<4x128xf32>) -> tensor<4x384xf32> {
  %0 = graph.pad %x {offsets = array<i64: 0, 128>} : tensor<4x128xf32> -> tensor<4x384xf32>
  return %0 : tensor<4x384xf32>
}

// CHECK-LABEL: func.func @activations
// CHECK: graph.relu_grad %{{.*}}, %{{.*}} : tensor<4x8xf32>
// CHECK: graph.gelu_grad %{{.*}}, %{{.*}} : tensor<4x8xf32>
func.func @activations(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = graph.relu_grad %dy, %x : tensor<4x8xf32>
  %1 = graph.gelu_grad %dy, %x : tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @softmax_grad
// CHECK: graph.softmax_grad %{{.*}}, %{{.*}} {axis = 1 : i64} : tensor<4x10xf32>
func.func @softmax_grad(%dy: tensor<4x10xf32>, %y: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %0 = graph.softmax_grad %dy, %y {axis = 1 : i64} : tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// CHECK-LABEL: func.func @layer_norm_grad
// CHECK: %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = graph.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8x16xf32>, tensor<16xf32>
// CHECK: return %[[DX]], %[[DG]], %[[DB]]
func.func @layer_norm_grad(%dy: tensor<2x8x16xf32>, %x: tensor<2x8x16xf32>, %g: tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %dx, %dg, %db = graph.layer_norm_grad %dy, %x, %g {eps = 1.0e-5 : f64} : tensor<2x8x16xf32>, tensor<16xf32>
  return %dx, %dg, %db : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
}

// CHECK-LABEL: func.func @reduce_max_grad
// CHECK: graph.reduce_max_grad %{{.*}}, %{{.*}} {axes = array<i64: 1>} : tensor<4xf32>, tensor<4x8xf32>
// CHECK: graph.reduce_max_grad %{{.*}}, %{{.*}} {axes = array<i64: 0, 1>, keepdims} : tensor<1x1xf32>, tensor<4x8xf32>
func.func @reduce_max_grad(%dy: tensor<4xf32>, %dk: tensor<1x1xf32>, %x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = graph.reduce_max_grad %dy, %x {axes = array<i64: 1>} : tensor<4xf32>, tensor<4x8xf32>
  %1 = graph.reduce_max_grad %dk, %x {axes = array<i64: 0, 1>, keepdims} : tensor<1x1xf32>, tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @attention_grad
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = graph.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 2.500000e-01 : f64} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
func.func @attention_grad(%do: tensor<2x4x16x8xf32>, %q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>, %o: tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) {
  %dq, %dk, %dv = graph.attention_grad %do, %q, %k, %v, %o {causal, scale = 0.25 : f64} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  return %dq, %dk, %dv : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
}

// CHECK-LABEL: func.func @attention_grad_mask
// CHECK: graph.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<2x1x16x16xf32>) : tensor<2x4x16x8xf32>
func.func @attention_grad_mask(%do: tensor<2x4x16x8xf32>, %q: tensor<2x4x16x8xf32>, %o: tensor<2x4x16x8xf32>, %m: tensor<2x1x16x16xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) {
  %dq, %dk, %dv = graph.attention_grad %do, %q, %q, %q, %o mask(%m : tensor<2x1x16x16xf32>) : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  return %dq, %dk, %dv : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
}

// CHECK-LABEL: func.func @cross_entropy_grad
// CHECK: graph.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} {label_smoothing = 1.000000e-01 : f64} : tensor<f32>, tensor<32x10xf32>, tensor<32xi32>
func.func @cross_entropy_grad(%dl: tensor<f32>, %logits: tensor<32x10xf32>, %y: tensor<32xi32>) -> tensor<32x10xf32> {
  %0 = graph.cross_entropy_grad %dl, %logits, %y {label_smoothing = 0.1 : f64} : tensor<f32>, tensor<32x10xf32>, tensor<32xi32>
  return %0 : tensor<32x10xf32>
}

// CHECK-LABEL: func.func @embedding_grad
// CHECK: graph.embedding_grad %{{.*}}, %{{.*}} : tensor<2x8x16xf32>, tensor<2x8xi32> -> tensor<256x16xf32>
func.func @embedding_grad(%dy: tensor<2x8x16xf32>, %ids: tensor<2x8xi32>) -> tensor<256x16xf32> {
  %0 = graph.embedding_grad %dy, %ids : tensor<2x8x16xf32>, tensor<2x8xi32> -> tensor<256x16xf32>
  return %0 : tensor<256x16xf32>
}
