// RUN: kiln-opt %s -split-input-file -verify-diagnostics
// One case per verifier error of graph.pad and the gradient ops.

func.func @pad_does_not_fit(%x: tensor<4x128xf32>) -> tensor<4x200xf32> {
  // expected-error @+1 {{'graph.pad' op}}
  %0 = graph.pad %x {offsets = array<i64: 0, 128>} : tensor<4x128xf32> -> tensor<4x200xf32>
  return %0 : tensor<4x200xf32>
}

// -----

func.func @pad_element_type(%x: tensor<4xf32>) -> tensor<8xf64> {
  // expected-error @+1 {{'graph.pad' op result element type 'f64' differs from input element type 'f32'}}
  %0 = graph.pad %x {offsets = array<i64: 0>} : tensor<4xf32> -> tensor<8xf64>
  return %0 : tensor<8xf64>
}

// -----

func.func @relu_grad_types(%dy: tensor<4xf32>, %x: tensor<5xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.relu_grad' op requires the same type for all operands and results}}
  %0 = "graph.relu_grad"(%dy, %x) : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @softmax_grad_axis(%dy: tensor<4x10xf32>, %y: tensor<4x10xf32>) -> tensor<4x10xf32> {
  // expected-error @+1 {{'graph.softmax_grad' op}}
  %0 = graph.softmax_grad %dy, %y {axis = 2 : i64} : tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

func.func @layer_norm_grad_gamma(%dy: tensor<2x16xf32>, %x: tensor<2x16xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'graph.layer_norm_grad' op}}
  %dx, %dg, %db = graph.layer_norm_grad %dy, %x, %g : tensor<2x16xf32>, tensor<8xf32>
  return
}

// -----

func.func @layer_norm_grad_eps(%dy: tensor<2x16xf32>, %x: tensor<2x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{'graph.layer_norm_grad' op eps must be finite and non-negative, got -1}}
  %dx, %dg, %db = graph.layer_norm_grad %dy, %x, %g {eps = -1.0 : f64} : tensor<2x16xf32>, tensor<16xf32>
  return
}

// -----

func.func @reduce_max_grad_shape(%dy: tensor<8xf32>, %x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'graph.reduce_max_grad' op result_grad shape 8 does not match the inferred shape 4}}
  %0 = graph.reduce_max_grad %dy, %x {axes = array<i64: 1>} : tensor<8xf32>, tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @reduce_max_grad_element_type(%dy: tensor<4xf64>, %x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'graph.reduce_max_grad' op result_grad element type 'f64' differs from input element type 'f32'}}
  %0 = graph.reduce_max_grad %dy, %x {axes = array<i64: 1>} : tensor<4xf64>, tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @attention_grad_dout(%do: tensor<2x16x4xf32>, %q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>, %o: tensor<2x16x4xf32>) {
  // expected-error @+1 {{'graph.attention_grad' op result_grad shape 2x16x4 does not match the inferred shape 2x16x8}}
  %dq, %dk, %dv = graph.attention_grad %do, %q, %k, %v, %o : tensor<2x16x4xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @attention_grad_scale(%do: tensor<2x16x8xf32>, %q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>, %o: tensor<2x16x8xf32>) {
  // expected-error @+1 {{'graph.attention_grad' op scale must be finite and positive, got 0}}
  %dq, %dk, %dv = graph.attention_grad %do, %q, %k, %v, %o {scale = 0.0 : f64} : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @cross_entropy_grad_targets(%dl: tensor<f32>, %logits: tensor<32x10xf32>, %y: tensor<16xi32>) -> tensor<32x10xf32> {
  // expected-error @+1 {{'graph.cross_entropy_grad' op}}
  %0 = graph.cross_entropy_grad %dl, %logits, %y : tensor<f32>, tensor<32x10xf32>, tensor<16xi32>
  return %0 : tensor<32x10xf32>
}

// -----

func.func @cross_entropy_grad_smoothing(%dl: tensor<f32>, %logits: tensor<32x10xf32>, %y: tensor<32xi32>) -> tensor<32x10xf32> {
  // expected-error @+1 {{'graph.cross_entropy_grad' op label_smoothing must be in [0, 1], got 2}}
  %0 = graph.cross_entropy_grad %dl, %logits, %y {label_smoothing = 2.0 : f64} : tensor<f32>, tensor<32x10xf32>, tensor<32xi32>
  return %0 : tensor<32x10xf32>
}

// -----

func.func @embedding_grad_width(%dy: tensor<2x8x16xf32>, %ids: tensor<2x8xi32>) -> tensor<256x32xf32> {
  // expected-error @+1 {{'graph.embedding_grad' op result_grad shape 2x8x16 does not match the inferred shape 2x8x32}}
  %0 = graph.embedding_grad %dy, %ids : tensor<2x8x16xf32>, tensor<2x8xi32> -> tensor<256x32xf32>
  return %0 : tensor<256x32xf32>
}

// -----

func.func @attention_grad_mask(%do: tensor<2x16x8xf32>, %q: tensor<2x16x8xf32>, %m: tensor<3x16x16xf32>) -> tensor<2x16x8xf32> {
  // expected-error @+1 {{attention mask does not broadcast to the scores: dim 0 is 3, expected 1 or 2 (mask 3x16x16, scores 2x16x16)}}
  %dq, %dk, %dv = graph.attention_grad %do, %q, %q, %q, %do mask(%m : tensor<3x16x16xf32>) : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return %dq : tensor<2x16x8xf32>
}
