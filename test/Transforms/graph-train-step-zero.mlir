// RUN: kiln-opt %s -split-input-file -graph-train-step | FileCheck %s

// ZeRO-1 (zero = 1), rank 1 of 4. w (6 values) splits into the runs
// [0,1) [1,3) [3,4) [4,6): rank 1 updates [1,3) with the state of those 2
// values only, its rest kept until the runtime all-gathers it. b (2 values,
// fewer than the ranks) is not split: every rank updates it whole. The
// clipping norm is the global one, an input combined from the ranks'
// @shard_norm_step, to which b contributes on rank 0 only.
module attributes {graph.train = {optimizer = {name = "adamw", lr = 1.0e-2 : f64, weight_decay = 0.1 : f64, clip = 1.0 : f64}, world = 4 : i64, zero = 1 : i64, rank = 1 : i64}} {
  func.func @forward(%x: tensor<4x3xf32> {graph.input = "x"}, %y: tensor<4xi32> {graph.input = "y"},
                     %w: tensor<3x2xf32> {graph.param = "w", graph.init = {kind = "normal", std = 0.1 : f64}},
                     %b: tensor<2xf32> {graph.param = "b", graph.init = {kind = "zeros"}})
      -> (tensor<f32> {graph.output = "loss", graph.loss}) {
    %0 = graph.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
    %1 = graph.broadcast %b : tensor<2xf32> -> tensor<4x2xf32>
    %2 = graph.add %0, %1 : tensor<4x2xf32>
    %3 = graph.cross_entropy %2, %y : tensor<4x2xf32>, tensor<4xi32> -> tensor<f32>
    return %3 : tensor<f32>
  }
}

// CHECK-LABEL: func.func @accumulate_step
// CHECK-SAME: graph.state = "w.grad_acc"
// CHECK-SAME: graph.state = "b.grad_acc"

// CHECK-LABEL: func.func @shard_norm_step
// CHECK-SAME: (%[[WACC:[a-z0-9]+]]: tensor<3x2xf32> {graph.init = {kind = "zeros"}, graph.state = "w.grad_acc"}, %{{.*}}: tensor<2xf32> {graph.init = {kind = "zeros"}, graph.state = "b.grad_acc"})
// CHECK-SAME: -> (tensor<f32> {graph.output = "zero.shard_norm"})
// CHECK: %[[FLAT:.*]] = graph.reshape %[[WACC]] : tensor<3x2xf32> -> tensor<6xf32>
// CHECK: %[[PART:.*]] = graph.slice %[[FLAT]] {offsets = array<i64: 1>} : tensor<6xf32> -> tensor<2xf32>
// CHECK: %[[MEAN:.*]] = graph.mul %[[PART]], %{{.*}} : tensor<2xf32>
// CHECK: %[[NORM:.*]] = graph.global_norm %[[MEAN]] : (tensor<2xf32>) -> tensor<f32>
// CHECK: return %[[NORM]]

// CHECK-LABEL: func.func @apply_step
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x2xf32> {graph.init = {kind = "normal", std = 1.000000e-01 : f64}, graph.param = "w"}
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<2xf32> {graph.init = {kind = "zeros"}, graph.param = "b"}
// CHECK-SAME: %[[GNORM:[a-z0-9]+]]: tensor<f32> {graph.input = "zero.grad_norm"}
// CHECK-SAME: %[[WM:[a-z0-9]+]]: tensor<2xf32> {graph.init = {kind = "zeros"}, graph.shard = {offset = 1 : i64, shape = array<i64: 3, 2>}, graph.state = "w.adam_m"}
// CHECK-SAME: %[[WV:[a-z0-9]+]]: tensor<2xf32> {graph.init = {kind = "zeros"}, graph.shard = {offset = 1 : i64, shape = array<i64: 3, 2>}, graph.state = "w.adam_v"}
// CHECK-SAME: %[[BM:[a-z0-9]+]]: tensor<2xf32> {graph.init = {kind = "zeros"}, graph.state = "b.adam_m"}
// CHECK-SAME: -> (tensor<f32> {graph.output = "lr"}, tensor<f32> {graph.output = "grad_norm"}, tensor<3x2xf32> {graph.update = "w"}, tensor<2xf32> {graph.update = "b"}, tensor<2xf32> {graph.update = "w.adam_m"}
// CHECK: %[[WF:.*]] = graph.reshape %[[W]] : tensor<3x2xf32> -> tensor<6xf32>
// CHECK: %[[WPART:.*]] = graph.slice %[[WF]] {offsets = array<i64: 1>} : tensor<6xf32> -> tensor<2xf32>
// CHECK: %[[SCALE:.*]] = graph.clip_scale %[[GNORM]]
// CHECK: %[[NWPART:.*]], %{{.*}}, %{{.*}} = graph.adamw_update %[[WPART]], %{{.*}}, %[[WM]], %[[WV]], %{{.*}}, %{{.*}}, %[[SCALE]] {{.*}}weight_decay = 1.000000e-01 : f64}
// CHECK: %[[NB:.*]], %{{.*}}, %{{.*}} = graph.adamw_update %[[B]], {{.*}}weight_decay = 0.000000e+00 : f64}
// CHECK: %[[WFLAT:.*]] = graph.reshape %[[W]] : tensor<3x2xf32> -> tensor<6xf32>
// CHECK: %[[BEFORE:.*]] = graph.slice %[[WFLAT]] {offsets = array<i64: 0>} : tensor<6xf32> -> tensor<1xf32>
// CHECK: %[[AFTER:.*]] = graph.slice %{{.*}} {offsets = array<i64: 3>} : tensor<6xf32> -> tensor<3xf32>
// CHECK: %[[JOINED:.*]] = graph.concat %[[BEFORE]], %[[NWPART]], %[[AFTER]] {axis = 0 : i64} : (tensor<1xf32>, tensor<2xf32>, tensor<3xf32>) -> tensor<6xf32>
// CHECK: %[[NW:.*]] = graph.reshape %[[JOINED]] : tensor<6xf32> -> tensor<3x2xf32>
// CHECK: return %{{.*}}, %[[GNORM]], %[[NW]], %[[NB]]

// -----

// Rank 0 of 2, SGD without clipping: no optimizer state, no norm entry; b
// (2 values) now splits, and rank 0's part of w is its first 3 values.
module attributes {graph.train = {optimizer = {name = "sgd", lr = 1.0e-1 : f64}, world = 2 : i64, zero = 1 : i64, rank = 0 : i64}} {
  func.func @forward(%x: tensor<4x3xf32> {graph.input = "x"}, %y: tensor<4xi32> {graph.input = "y"},
                     %w: tensor<3x2xf32> {graph.param = "w", graph.init = {kind = "normal", std = 0.1 : f64}},
                     %b: tensor<2xf32> {graph.param = "b", graph.init = {kind = "zeros"}})
      -> (tensor<f32> {graph.output = "loss", graph.loss}) {
    %0 = graph.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
    %1 = graph.broadcast %b : tensor<2xf32> -> tensor<4x2xf32>
    %2 = graph.add %0, %1 : tensor<4x2xf32>
    %3 = graph.cross_entropy %2, %y : tensor<4x2xf32>, tensor<4xi32> -> tensor<f32>
    return %3 : tensor<f32>
  }
}

// CHECK-NOT: func.func @shard_norm_step
// CHECK-LABEL: func.func @apply_step
// CHECK-NOT: graph.input
// CHECK-SAME: -> (tensor<f32> {graph.output = "lr"}, tensor<3x2xf32> {graph.update = "w"}, tensor<2xf32> {graph.update = "b"},
// CHECK: graph.slice %{{.*}} {offsets = array<i64: 0>} : tensor<6xf32> -> tensor<3xf32>
// CHECK: graph.sgd_update
// CHECK: graph.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<3xf32>, tensor<3xf32>) -> tensor<6xf32>
// CHECK: graph.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<1xf32>, tensor<1xf32>) -> tensor<2xf32>
