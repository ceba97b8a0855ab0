// RUN: kiln-opt %s | kiln-opt | FileCheck %s

// CHECK-LABEL: func.func @updates
func.func @updates(%p: tensor<4x8xf32>, %g: tensor<4x8xf32>, %m: tensor<4x8xf32>,
                   %v: tensor<4x8xf32>, %b: tensor<8xf32>, %gb: tensor<8xf32>,
                   %t: tensor<f32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  // CHECK: %[[LR:.*]] = graph.lr_schedule cosine %{{.*}} {final = 1.000000e-01 : f64, lr = 1.000000e-03 : f64, total = 2000 : i64, warmup = 100 : i64} : tensor<f32>
  %lr = graph.lr_schedule cosine %t {lr = 1.0e-3 : f64, warmup = 100 : i64, total = 2000 : i64, final = 0.1 : f64} : tensor<f32>
  // CHECK: %[[NORM:.*]] = graph.global_norm %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<f32>
  %n = graph.global_norm %g, %gb : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<f32>
  // CHECK: %[[SCALE:.*]] = graph.clip_scale %[[NORM]] {max_norm = 1.000000e+00 : f64} : tensor<f32>
  %s = graph.clip_scale %n {max_norm = 1.0 : f64} : tensor<f32>
  // CHECK: graph.adamw_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[LR]], %{{.*}}, %[[SCALE]] {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-01 : f64} : tensor<4x8xf32>, tensor<f32>
  %p1, %m1, %v1 = graph.adamw_update %p, %g, %m, %v, %lr, %t, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64} : tensor<4x8xf32>, tensor<f32>
  // CHECK: graph.momentum_update {{.*}} {momentum = 9.000000e-01 : f64, nesterov, weight_decay = 0.000000e+00 : f64} : tensor<8xf32>, tensor<f32>
  %b1, %buf1 = graph.momentum_update %b, %gb, %b, %lr, %s {momentum = 0.9 : f64, weight_decay = 0.0 : f64, nesterov} : tensor<8xf32>, tensor<f32>
  // CHECK: graph.sgd_update {{.*}} {weight_decay = 0.000000e+00 : f64} : tensor<8xf32>, tensor<f32>
  %b2 = graph.sgd_update %b1, %gb, %lr, %s {weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<f32>
  return %p1, %b2 : tensor<4x8xf32>, tensor<8xf32>
}

// fp16's dynamic loss scaling: the scale's update, and updates that skip.
// CHECK-LABEL: func.func @loss_scaling
func.func @loss_scaling(%p: tensor<8xf32>, %g: tensor<8xf32>, %n: tensor<f32>,
                        %s: tensor<f32>, %c: tensor<f32>, %lr: tensor<f32>) -> (tensor<8xf32>, tensor<f32>) {
  // CHECK: %[[NEW:.*]], %{{.*}}, %[[SKIP:.*]] = graph.loss_scale_update %{{.*}}, %{{.*}}, %{{.*}} {backoff = 5.000000e-01 : f64, growth = 2.000000e+00 : f64, interval = 2000 : i64} : tensor<f32>
  %s1, %c1, %skip = graph.loss_scale_update %n, %s, %c {growth = 2.0 : f64, backoff = 0.5 : f64, interval = 2000 : i64} : tensor<f32>
  // CHECK: graph.sgd_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} skip %[[SKIP]] {weight_decay = 0.000000e+00 : f64} : tensor<8xf32>, tensor<f32>, tensor<f32>
  %p1 = graph.sgd_update %p, %g, %lr, %s skip %skip {weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<f32>, tensor<f32>
  // CHECK: graph.momentum_update {{.*}} skip %[[SKIP]] {momentum = 9.000000e-01 : f64, weight_decay = 0.000000e+00 : f64} : tensor<8xf32>, tensor<f32>, tensor<f32>
  %p2, %b2 = graph.momentum_update %p1, %g, %p, %lr, %s skip %skip {momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<f32>, tensor<f32>
  // CHECK: graph.adamw_update {{.*}} skip %[[SKIP]] {{.*}} : tensor<8xf32>, tensor<f32>, tensor<f32>
  %p3, %m3, %v3 = graph.adamw_update %p2, %g, %p, %p, %lr, %lr, %s skip %skip {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<f32>, tensor<f32>
  return %p3, %s1 : tensor<8xf32>, tensor<f32>
}
