// RUN: kiln-opt %s -split-input-file -graph-train-step=precision=fp16 | FileCheck %s

// fp16's dynamic loss scaling: the backward seeded with the scale state, the
// norm of the scaled gradients deciding the skip and the next scale, the
// clip factor computed from the unscaled norm and multiplied by 1/scale,
// updates that skip, and a step counter that does not count skipped steps.
module attributes {graph.train = {optimizer = {name = "adamw", lr = 1.0e-2 : f64, betas = [0.9, 0.95], eps = 1.0e-8 : f64, weight_decay = 0.1 : f64, decay_all = false, clip = 1.0 : f64}, loss_scale = {name = "dynamic", init = 1024.0 : f64, interval = 3 : i64}, steps = 100 : i64}} {
  func.func @forward(%x: tensor<4x3xf32> {graph.input = "x"}, %y: tensor<4xi32> {graph.input = "y"},
                     %w: tensor<3x2xf32> {graph.param = "w", graph.init = {kind = "normal", std = 0.1 : f64}})
      -> (tensor<f32> {graph.output = "loss", graph.loss}) {
    %0 = graph.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
    %1 = graph.cross_entropy %0, %y : tensor<4x2xf32>, tensor<4xi32> -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[SCALE:[a-z0-9]+]]: tensor<f32> {graph.init = {kind = "constant", value = 1.024000e+03 : f64}, graph.state = "loss_scale.scale"}
// CHECK-SAME: %[[STEP:[a-z0-9]+]]: tensor<f32> {graph.init = {kind = "zeros"}, graph.state = "optimizer.step"}
// CHECK-SAME: %[[GOOD:[a-z0-9]+]]: tensor<f32> {graph.init = {kind = "zeros"}, graph.state = "loss_scale.good_steps"}
// CHECK-SAME: %[[SKIPPED:[a-z0-9]+]]: tensor<f32> {graph.init = {kind = "zeros"}, graph.state = "loss_scale.skipped_steps"}
// CHECK-SAME: {graph.output = "grad_norm"}, tensor<f32> {graph.output = "loss_scale"}, tensor<f32> {graph.output = "skipped"}
// CHECK-SAME: {graph.update = "optimizer.step"}, tensor<f32> {graph.update = "loss_scale.scale"}, tensor<f32> {graph.update = "loss_scale.good_steps"}, tensor<f32> {graph.update = "loss_scale.skipped_steps"})
// CHECK: graph.cross_entropy_grad %[[SCALE]],
// CHECK: %[[T:.*]] = graph.add %[[STEP]], %{{.*}} : tensor<f32>
// CHECK: %[[SCALED_NORM:.*]] = graph.global_norm
// CHECK: %[[UNSCALE:.*]] = graph.div %{{.*}}, %[[SCALE]] : tensor<f32>
// CHECK: %[[NORM:.*]] = graph.mul %[[SCALED_NORM]], %[[UNSCALE]] : tensor<f32>
// CHECK: %[[NEW_SCALE:.*]], %[[NEW_GOOD:.*]], %[[SKIP:.*]] = graph.loss_scale_update %[[SCALED_NORM]], %[[SCALE]], %[[GOOD]] {backoff = 5.000000e-01 : f64, growth = 2.000000e+00 : f64, interval = 3 : i64} : tensor<f32>
// CHECK: %[[CLIP:.*]] = graph.clip_scale %[[NORM]]
// CHECK: %[[GRAD_SCALE:.*]] = graph.mul %[[CLIP]], %[[UNSCALE]] : tensor<f32>
// CHECK: graph.adamw_update {{.*}}, %[[GRAD_SCALE]] skip %[[SKIP]]
// CHECK: %[[COUNTED:.*]] = graph.sub %[[T]], %[[SKIP]] : tensor<f32>
// CHECK: %[[TOTAL:.*]] = graph.add %[[SKIPPED]], %[[SKIP]] : tensor<f32>
// CHECK: return {{.*}}%[[NORM]], %[[NEW_SCALE]], %[[SKIP]], {{.*}}, %[[COUNTED]], %[[NEW_SCALE]], %[[NEW_GOOD]], %[[TOTAL]] :
