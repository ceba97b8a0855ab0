// RUN: kiln-opt %s -split-input-file -graph-train-step | FileCheck %s
// RUN: kiln-opt %s -split-input-file -graph-train-step=accumulate=4 | FileCheck %s --check-prefix=ACC

// AdamW with clipping and a warmup-then-cosine schedule: the state arguments,
// the step counter, the schedule, the clip factor shared by every update, and
// weight decay on the matrix only.
module attributes {graph.train = {optimizer = {name = "adamw", lr = 1.0e-2 : f64, betas = [0.9, 0.95], eps = 1.0e-8 : f64, weight_decay = 0.1 : f64, decay_all = false, clip = 1.0 : f64}, schedule = {name = "cosine", warmup = 10 : i64, final = 0.0 : f64}, steps = 100 : i64}} {
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

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x2xf32> {graph.init = {kind = "normal", std = 1.000000e-01 : f64}, graph.param = "w"}
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<2xf32> {graph.init = {kind = "zeros"}, graph.param = "b"}
// CHECK-SAME: %[[WM:[a-z0-9]+]]: tensor<3x2xf32> {graph.init = {kind = "zeros"}, graph.state = "w.adam_m"}
// CHECK-SAME: %[[WV:[a-z0-9]+]]: tensor<3x2xf32> {graph.init = {kind = "zeros"}, graph.state = "w.adam_v"}
// CHECK-SAME: graph.state = "b.adam_m"
// CHECK-SAME: graph.state = "b.adam_v"
// CHECK-SAME: %[[STEP:[a-z0-9]+]]: tensor<f32> {graph.init = {kind = "zeros"}, graph.state = "optimizer.step"}
// CHECK-SAME: -> (tensor<f32> {graph.loss, graph.output = "loss"}, tensor<f32> {graph.output = "lr"}, tensor<f32> {graph.output = "grad_norm"}, tensor<3x2xf32> {graph.update = "w"}, tensor<2xf32> {graph.update = "b"}, tensor<3x2xf32> {graph.update = "w.adam_m"}, tensor<3x2xf32> {graph.update = "w.adam_v"}, tensor<2xf32> {graph.update = "b.adam_m"}, tensor<2xf32> {graph.update = "b.adam_v"}, tensor<f32> {graph.update = "optimizer.step"})
// CHECK: %[[LOSS:.*]] = graph.cross_entropy
// CHECK: %[[T:.*]] = graph.add %[[STEP]], %{{.*}} : tensor<f32>
// CHECK: %[[LR:.*]] = graph.lr_schedule cosine %[[T]] {final = 0.000000e+00 : f64, lr = 1.000000e-02 : f64, total = 100 : i64, warmup = 10 : i64}
// CHECK: %[[NORM:.*]] = graph.global_norm %[[GW:.*]], %[[GB:.*]] : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<f32>
// CHECK: %[[SCALE:.*]] = graph.clip_scale %[[NORM]] {max_norm = 1.000000e+00 : f64}
// CHECK: %[[NW:.*]], %[[NWM:.*]], %[[NWV:.*]] = graph.adamw_update %[[W]], %[[GW]], %[[WM]], %[[WV]], %[[LR]], %[[T]], %[[SCALE]] {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-01 : f64}
// CHECK: %[[NB:.*]], %{{.*}}, %{{.*}} = graph.adamw_update %[[B]], %[[GB]], {{.*}} {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, eps = 1.000000e-08 : f64, weight_decay = 0.000000e+00 : f64}
// CHECK: return %[[LOSS]], %[[LR]], %[[NORM]], %[[NW]], %[[NB]], %[[NWM]], %[[NWV]], {{.*}}, %[[T]]

// With accumulation, a micro-batch adds its gradients into accumulators and
// the update uses their mean, then resets them.
// ACC-LABEL: func.func @accumulate_step
// ACC-SAME: %[[ACC:[a-z0-9]+]]: tensor<3x2xf32> {graph.init = {kind = "zeros"}, graph.state = "w.grad_acc"}
// ACC: %[[SUM:.*]] = graph.add %[[ACC]], %{{.*}} : tensor<3x2xf32>
// ACC: return {{.*}}%[[SUM]]
// ACC-LABEL: func.func @apply_step
// ACC-SAME: graph.param = "w"
// ACC-SAME: graph.state = "w.grad_acc"
// ACC-SAME: graph.state = "w.adam_m"
// ACC: %[[QUARTER:.*]] = graph.constant dense<2.500000e-01> : tensor<3x2xf32>
// ACC: %[[MEAN:.*]] = graph.mul %{{.*}}, %[[QUARTER]] : tensor<3x2xf32>
// ACC: graph.global_norm %[[MEAN]]
// ACC: graph.adamw_update %{{.*}}, %[[MEAN]],
// ACC: %[[ZEROS:.*]] = graph.constant dense<0.000000e+00> : tensor<3x2xf32>
// ACC: return {{.*}}%[[ZEROS]]
// ACC-NOT: func.func @train_step

// -----

// SGD and momentum keep no state but the step counter and the buffer; with
// no train block, AdamW at 1e-3 with a constant rate is the default.
module attributes {graph.train = {optimizer = {name = "momentum", lr = 0.1 : f64, momentum = 0.8 : f64, nesterov = true, weight_decay = 0.0 : f64, clip = 0.0 : f64}, steps = 10 : i64}} {
  func.func @forward(%w: tensor<2xf32> {graph.param = "w", graph.init = {kind = "ones"}})
      -> (tensor<f32> {graph.output = "loss", graph.loss}) {
    %0 = graph.mul %w, %w : tensor<2xf32>
    %1 = graph.reduce sum %0 {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: graph.state = "w.momentum"
// CHECK-SAME: graph.state = "optimizer.step"
// CHECK-NOT: graph.global_norm
// CHECK: graph.lr_schedule
// CHECK-NOT: graph.global_norm
// CHECK: %[[UNIT:.*]] = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK: graph.momentum_update {{.*}}, %[[UNIT]] {momentum = 8.000000e-01 : f64, nesterov, weight_decay = 0.000000e+00 : f64}

// -----

module {
  func.func @forward(%w: tensor<2xf64> {graph.param = "w", graph.init = {kind = "ones"}})
      -> (tensor<f64> {graph.output = "loss", graph.loss}) {
    %0 = graph.mul %w, %w : tensor<2xf64>
    %1 = graph.reduce sum %0 {axes = array<i64: 0>} : tensor<2xf64> -> tensor<f64>
    return %1 : tensor<f64>
  }
}

// An f64 model keeps its scalars in f64.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %{{.*}}: tensor<f64> {graph.init = {kind = "zeros"}, graph.state = "optimizer.step"}
// CHECK: graph.lr_schedule constant %{{.*}} {final = 0.000000e+00 : f64, lr = 1.000000e-03 : f64, total = 1000 : i64, warmup = 0 : i64} : tensor<f64>
// CHECK: graph.adamw_update {{.*}} {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, weight_decay = 0.000000e+00 : f64} : tensor<2xf64>, tensor<f64>
