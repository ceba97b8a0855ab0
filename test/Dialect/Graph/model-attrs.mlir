// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// The discardable attributes that carry a model's structure survive a round
// trip and pass the dialect's verifiers.

// CHECK: module attributes
// CHECK-SAME: graph.batch_dim = "B"
// CHECK-SAME: graph.dims = {B = 32 : i64, C = 10 : i64, D = 64 : i64}
// CHECK-SAME: graph.model = "mlp"
// CHECK-SAME: graph.train = {lr = 3.000000e-04 : f64, optimizer = "adamw", steps = 100 : i64}
module attributes {graph.model = "mlp", graph.dims = {B = 32 : i64, D = 64 : i64, C = 10 : i64},
                   graph.batch_dim = "B",
                   graph.train = {optimizer = "adamw", lr = 3.0e-4 : f64, steps = 100 : i64}} {
  // CHECK-LABEL: func.func @forward
  // CHECK-SAME: %[[W:[^:]*]]: tensor<64x10xf32> {graph.init = {kind = "normal", std = 2.000000e-02 : f64}, graph.param = "fc.w"}
  // CHECK-SAME: %[[B:[^:]*]]: tensor<10xf32> {graph.init = {kind = "zeros"}, graph.param = "fc.b"}
  // CHECK-SAME: %[[G:[^:]*]]: tensor<64xf32> {graph.init = {kind = "ones"}, graph.param = "ln.g"}
  // CHECK-SAME: %[[U:[^:]*]]: tensor<64xf32> {graph.init = {high = 1.000000e-01 : f64, kind = "uniform", low = -1.000000e-01 : f64}, graph.param = "ln.b"}
  // CHECK-SAME: %[[S:[^:]*]]: tensor<f32> {graph.init = {kind = "constant", value = 5.000000e-01 : f64}, graph.param = "scale"}
  // CHECK-SAME: %[[X:[^:]*]]: tensor<32x64xf32> {graph.input = "x"}
  // CHECK-SAME: %[[Y:[^:]*]]: tensor<32xi32> {graph.input = "y"}
  // CHECK-SAME: -> (tensor<f32> {graph.loss, graph.output = "loss"}, tensor<32x10xf32> {graph.output = "logits"})
  func.func @forward(
      %w: tensor<64x10xf32> {graph.param = "fc.w", graph.init = {kind = "normal", std = 0.02 : f64}},
      %b: tensor<10xf32> {graph.param = "fc.b", graph.init = {kind = "zeros"}},
      %g: tensor<64xf32> {graph.param = "ln.g", graph.init = {kind = "ones"}},
      %u: tensor<64xf32> {graph.param = "ln.b", graph.init = {kind = "uniform", low = -0.1 : f64, high = 0.1 : f64}},
      %s: tensor<f32> {graph.param = "scale", graph.init = {kind = "constant", value = 0.5 : f64}},
      %x: tensor<32x64xf32> {graph.input = "x"},
      %y: tensor<32xi32> {graph.input = "y"})
      -> (tensor<f32> {graph.loss, graph.output = "loss"},
          tensor<32x10xf32> {graph.output = "logits"}) {
    // CHECK: %[[H:.*]] = graph.layer_norm %[[X]], %[[G]], %[[U]]
    %h = graph.layer_norm %x, %g, %u : tensor<32x64xf32>, tensor<64xf32>
    // CHECK: %[[MM:.*]] = graph.matmul %[[H]], %[[W]]
    %mm = graph.matmul %h, %w : tensor<32x64xf32>, tensor<64x10xf32> -> tensor<32x10xf32>
    %bb = graph.broadcast %b : tensor<10xf32> -> tensor<32x10xf32>
    %logits = graph.add %mm, %bb : tensor<32x10xf32>
    %loss = graph.cross_entropy %logits, %y : tensor<32x10xf32>, tensor<32xi32> -> tensor<f32>
    %ss = graph.mul %loss, %s : tensor<f32>
    // CHECK: return %{{.*}}, %{{.*}} : tensor<f32>, tensor<32x10xf32>
    return %ss, %logits : tensor<f32>, tensor<32x10xf32>
  }
}

// A training entry: optimizer state arguments and the updates that replace
// parameters and state.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %{{[^:]*}}: tensor<4xf32> {graph.init = {kind = "zeros"}, graph.state = "w.adam_m"}
// CHECK-SAME: -> (tensor<4xf32> {graph.update = "w"}, tensor<4xf32> {graph.update = "w.adam_m"})
func.func @train_step(%w: tensor<4xf32> {graph.param = "w", graph.init = {kind = "ones"}},
                      %m: tensor<4xf32> {graph.state = "w.adam_m", graph.init = {kind = "zeros"}})
    -> (tensor<4xf32> {graph.update = "w"}, tensor<4xf32> {graph.update = "w.adam_m"}) {
  return %w, %m : tensor<4xf32>, tensor<4xf32>
}
