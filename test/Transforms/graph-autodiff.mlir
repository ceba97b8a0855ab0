// RUN: kiln-opt %s -split-input-file -graph-autodiff -verify-diagnostics | FileCheck %s

// A linear classifier: the VJPs chain from d(loss) = 1 through
// cross_entropy, add, broadcast and matmul. The integer targets and the
// float input x get no gradient: the cotangent of x is never built.

// CHECK-LABEL: func.func @grad_step
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32> {graph.input = "x"}, %[[Y:.*]]: tensor<4xi32> {graph.input = "y"}, %[[W:.*]]: tensor<3x5xf32> {{.*}}graph.param = "w"}, %[[B:.*]]: tensor<5xf32> {{.*}}graph.param = "b"})
// CHECK-SAME: -> (tensor<f32> {graph.loss}, tensor<3x5xf32> {graph.grad = "w"}, tensor<5xf32> {graph.grad = "b"})
// CHECK: %[[MM:.*]] = graph.matmul %[[X]], %[[W]]
// CHECK: %[[LOGITS:.*]] = graph.add %[[MM]], %{{.*}} : tensor<4x5xf32>
// CHECK: %[[LOSS:.*]] = graph.cross_entropy %[[LOGITS]], %[[Y]]
// CHECK: %[[ONE:.*]] = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DLOGITS:.*]] = graph.cross_entropy_grad %[[ONE]], %[[LOGITS]], %[[Y]]
// CHECK: %[[DB:.*]] = graph.reduce sum %[[DLOGITS]] {axes = array<i64: 0>} : tensor<4x5xf32> -> tensor<5xf32>
// CHECK: %[[DW:.*]] = graph.matmul %[[X]], %[[DLOGITS]] {transpose_lhs} : tensor<4x3xf32>, tensor<4x5xf32> -> tensor<3x5xf32>
// CHECK-NOT: graph.matmul
// CHECK: return %[[LOSS]], %[[DW]], %[[DB]]
func.func @forward(%x: tensor<4x3xf32> {graph.input = "x"},
                   %y: tensor<4xi32> {graph.input = "y"},
                   %w: tensor<3x5xf32> {graph.param = "w", graph.init = {kind = "zeros"}},
                   %b: tensor<5xf32> {graph.param = "b", graph.init = {kind = "zeros"}})
    -> (tensor<f32> {graph.loss}) {
  %0 = graph.matmul %x, %w : tensor<4x3xf32>, tensor<3x5xf32> -> tensor<4x5xf32>
  %1 = graph.broadcast %b : tensor<5xf32> -> tensor<4x5xf32>
  %2 = graph.add %0, %1 : tensor<4x5xf32>
  %3 = graph.cross_entropy %2, %y : tensor<4x5xf32>, tensor<4xi32> -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// A tied embedding: wte is used by the embedding and, transposed, by the
// output matmul. Its two contributions are added; the token ids are not
// differentiated. The forward's other outputs come back after the loss.

// CHECK-LABEL: func.func @grad_step
// CHECK-SAME: -> (tensor<f32> {graph.loss}, tensor<2x3x7xf32> {graph.output = "logits"}, tensor<7x4xf32> {graph.grad = "wte"})
// The shared weight's cotangent is one GEMM over the batch's stacked rows
// (dlogits^T h), not a GEMM per sequence and a sum.
// CHECK-DAG: %[[H_ROWS:.*]] = graph.reshape %{{.*}} : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-DAG: %[[D_ROWS:.*]] = graph.reshape %{{.*}} : tensor<2x3x7xf32> -> tensor<6x7xf32>
// CHECK-DAG: %[[FROM_OUTPUT:.*]] = graph.matmul %[[D_ROWS]], %[[H_ROWS]] {transpose_lhs} : tensor<6x7xf32>, tensor<6x4xf32> -> tensor<7x4xf32>
// CHECK-DAG: %[[FROM_EMBED:.*]] = graph.embedding_grad %{{.*}}, %{{.*}} : tensor<2x3x4xf32>, tensor<2x3xi32> -> tensor<7x4xf32>
// CHECK: %[[DWTE:.*]] = graph.add %{{.*}}, %{{.*}} : tensor<7x4xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[DWTE]]
func.func @forward(%ids: tensor<2x3xi32> {graph.input = "tokens"},
                   %targets: tensor<2x3xi32> {graph.input = "targets"},
                   %wte: tensor<7x4xf32> {graph.param = "wte", graph.init = {kind = "normal", std = 0.02 : f64}})
    -> (tensor<f32> {graph.loss}, tensor<2x3x7xf32> {graph.output = "logits"}) {
  %h = graph.embedding %wte, %ids : tensor<7x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
  %t = graph.tanh %h : tensor<2x3x4xf32>
  %logits = graph.matmul %t, %wte {transpose_rhs} : tensor<2x3x4xf32>, tensor<7x4xf32> -> tensor<2x3x7xf32>
  %loss = graph.cross_entropy %logits, %targets : tensor<2x3x7xf32>, tensor<2x3xi32> -> tensor<f32>
  return %loss, %logits : tensor<f32>, tensor<2x3x7xf32>
}

// -----

// A residual: x feeds both the tanh and the add, so its cotangent is the
// sum of the two paths.

// CHECK-LABEL: func.func @grad_step
// CHECK: %[[T:.*]] = graph.tanh %[[X:.*]] : tensor<3xf64>
// CHECK: %[[SEED:.*]] = graph.constant dense<1.000000e+00> : tensor<f64>
// CHECK: %[[DR:.*]] = graph.broadcast
// CHECK: %[[SQUARE:.*]] = graph.mul %[[T]], %[[T]]
// CHECK: %[[DT:.*]] = graph.mul %[[DR]], %{{.*}}
// CHECK: %[[DX:.*]] = graph.add %[[DR]], %[[DT]] : tensor<3xf64>
// CHECK: return %{{.*}}, %[[DX]]
func.func @forward(%x: tensor<3xf64> {graph.param = "x", graph.init = {kind = "zeros"}})
    -> (tensor<f64> {graph.loss}) {
  %t = graph.tanh %x : tensor<3xf64>
  %r = graph.add %x, %t : tensor<3xf64>
  %l = graph.reduce sum %r {axes = array<i64: 0>} : tensor<3xf64> -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// A parameter the loss does not depend on gets a zero gradient and a
// warning at its argument.

// CHECK-LABEL: func.func @grad_step
// CHECK: %[[ZERO:.*]] = graph.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[ZERO]]
func.func @forward(%a: tensor<2xf32> {graph.param = "a", graph.init = {kind = "zeros"}},
                   // expected-warning @+1 {{parameter 'unused' does not affect the loss: its gradient is zero}}
                   %unused: tensor<2xf32> {graph.param = "unused", graph.init = {kind = "zeros"}})
    -> (tensor<f32> {graph.loss}) {
  %l = graph.reduce sum %a {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{@forward has no loss to differentiate: mark one scalar float result with 'graph.loss'}}
func.func @forward(%a: tensor<2xf32> {graph.param = "a", graph.init = {kind = "zeros"}})
    -> (tensor<2xf32> {graph.output = "y"}) {
  return %a : tensor<2xf32>
}

// -----

// expected-error @+1 {{graph-autodiff needs a 'func.func @forward' to differentiate}}
module {
  func.func @model(%a: tensor<f32>) -> tensor<f32> {
    return %a : tensor<f32>
  }
}

// -----

// Gradient ops are not differentiable (no second-order autodiff).
func.func @forward(%x: tensor<3xf32> {graph.param = "x", graph.init = {kind = "zeros"}},
                   %dy: tensor<3xf32> {graph.input = "dy"})
    -> (tensor<f32> {graph.loss}) {
  // expected-error @+1 {{'graph.relu_grad' lies between a parameter and the loss but has no VJP (DifferentiableOpInterface)}}
  %g = graph.relu_grad %dy, %x : tensor<3xf32>
  %l = graph.reduce sum %g {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{cannot build @grad_step: the module already has a symbol of that name}}
func.func @forward(%a: tensor<f32> {graph.param = "a", graph.init = {kind = "zeros"}})
    -> (tensor<f32> {graph.loss}) {
  return %a : tensor<f32>
}
func.func @grad_step() {
  return
}
