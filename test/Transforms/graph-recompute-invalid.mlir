// RUN: kiln-opt %s -split-input-file -graph-train-step -graph-recompute=budget=1489087 -verify-diagnostics
// RUN: kiln-opt %s -split-input-file -graph-train-step -graph-recompute=budget=1489088 | FileCheck %s
// RUN: not kiln-opt %s -split-input-file -graph-train-step -graph-recompute="budget=1 solver=fast" 2>&1 | FileCheck %s --check-prefix=SOLVER

// A budget below what recomputation can reach is an error at the model, and
// it names the smallest budget that can be met; that budget is met.
module attributes {graph.train = {optimizer = {name = "sgd", lr = 0.1 : f64}, steps = 10 : i64}} {
  // expected-error @+1 {{memory budget of 1489087 bytes cannot be met: the step needs 1751232 bytes without recomputation, and the smallest budget recomputation can meet is 1489088 bytes}}
  func.func @forward(%x: tensor<512x16xf32> {graph.input = "x"}, %y: tensor<512xi32> {graph.input = "y"},
                     %w1: tensor<16x128xf32> {graph.param = "w1", graph.init = {kind = "normal", std = 0.05 : f64}},
                     %w2: tensor<128x128xf32> {graph.param = "w2", graph.init = {kind = "normal", std = 0.05 : f64}},
                     %w3: tensor<128x128xf32> {graph.param = "w3", graph.init = {kind = "normal", std = 0.05 : f64}},
                     %w4: tensor<128x4xf32> {graph.param = "w4", graph.init = {kind = "normal", std = 0.05 : f64}})
      -> (tensor<f32> {graph.output = "loss", graph.loss}) {
    %0 = graph.matmul %x, %w1 : tensor<512x16xf32>, tensor<16x128xf32> -> tensor<512x128xf32>
    %1 = graph.tanh %0 : tensor<512x128xf32>
    %2 = graph.matmul %1, %w2 : tensor<512x128xf32>, tensor<128x128xf32> -> tensor<512x128xf32>
    %3 = graph.tanh %2 : tensor<512x128xf32>
    %4 = graph.matmul %3, %w3 : tensor<512x128xf32>, tensor<128x128xf32> -> tensor<512x128xf32>
    %5 = graph.tanh %4 : tensor<512x128xf32>
    %6 = graph.matmul %5, %w4 : tensor<512x128xf32>, tensor<128x4xf32> -> tensor<512x4xf32>
    %7 = graph.cross_entropy %6, %y : tensor<512x4xf32>, tensor<512xi32> -> tensor<f32>
    return %7 : tensor<f32>
  }
}

// CHECK: graph.recompute_flops = 2162688
// SOLVER: unknown solver 'fast' (auto, exact or greedy)
