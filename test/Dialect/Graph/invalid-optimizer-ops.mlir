// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @unknown_schedule(%t: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [constant, linear, cosine]}}
  %lr = graph.lr_schedule step %t {lr = 1.0e-3 : f64, warmup = 0 : i64, total = 10 : i64, final = 0.0 : f64} : tensor<f32>
  return %lr : tensor<f32>
}

// -----

func.func @nonpositive_lr(%t: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{lr must be in (0, inf), got 0}}
  %lr = graph.lr_schedule constant %t {lr = 0.0 : f64, warmup = 0 : i64, total = 10 : i64, final = 0.0 : f64} : tensor<f32>
  return %lr : tensor<f32>
}

// -----

func.func @final_above_one(%t: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{final must be in [0, 1], got 1.5}}
  %lr = graph.lr_schedule cosine %t {lr = 1.0e-3 : f64, warmup = 0 : i64, total = 10 : i64, final = 1.5 : f64} : tensor<f32>
  return %lr : tensor<f32>
}

// -----

func.func @negative_warmup(%t: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{warmup must not be negative, got -1}}
  %lr = graph.lr_schedule constant %t {lr = 1.0e-3 : f64, warmup = -1 : i64, total = 10 : i64, final = 0.0 : f64} : tensor<f32>
  return %lr : tensor<f32>
}

// -----

func.func @zero_total(%t: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{total must be at least 1, got 0}}
  %lr = graph.lr_schedule constant %t {lr = 1.0e-3 : f64, warmup = 0 : i64, total = 0 : i64, final = 0.0 : f64} : tensor<f32>
  return %lr : tensor<f32>
}

// -----

func.func @warmup_covers_total(%t: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{the cosine schedule needs total (100) > warmup (100)}}
  %lr = graph.lr_schedule cosine %t {lr = 1.0e-3 : f64, warmup = 100 : i64, total = 100 : i64, final = 0.0 : f64} : tensor<f32>
  return %lr : tensor<f32>
}

// -----

func.func @empty_norm() -> tensor<f32> {
  // expected-error @+1 {{needs at least one tensor}}
  %n = graph.global_norm : () -> tensor<f32>
  return %n : tensor<f32>
}

// -----

func.func @zero_max_norm(%n: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{max_norm must be in (0, inf), got 0}}
  %s = graph.clip_scale %n {max_norm = 0.0 : f64} : tensor<f32>
  return %s : tensor<f32>
}

// -----

func.func @negative_decay(%p: tensor<8xf32>, %lr: tensor<f32>) -> tensor<8xf32> {
  // expected-error @+1 {{weight_decay must be in [0, inf), got -0.1}}
  %p1 = graph.sgd_update %p, %p, %lr, %lr {weight_decay = -0.1 : f64} : tensor<8xf32>, tensor<f32>
  return %p1 : tensor<8xf32>
}

// -----

func.func @momentum_one(%p: tensor<8xf32>, %lr: tensor<f32>) -> tensor<8xf32> {
  // expected-error @+1 {{momentum must be in [0, 1), got 1}}
  %p1, %b1 = graph.momentum_update %p, %p, %p, %lr, %lr {momentum = 1.0 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<f32>
  return %p1 : tensor<8xf32>
}

// -----

func.func @beta2_one(%p: tensor<8xf32>, %lr: tensor<f32>) -> tensor<8xf32> {
  // expected-error @+1 {{beta2 must be in [0, 1), got 1}}
  %p1, %m1, %v1 = graph.adamw_update %p, %p, %p, %p, %lr, %lr, %lr {beta1 = 0.9 : f64, beta2 = 1.0 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<f32>
  return %p1 : tensor<8xf32>
}

// -----

func.func @zero_eps(%p: tensor<8xf32>, %lr: tensor<f32>) -> tensor<8xf32> {
  // expected-error @+1 {{eps must be in (0, inf), got 0}}
  %p1, %m1, %v1 = graph.adamw_update %p, %p, %p, %p, %lr, %lr, %lr {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<f32>
  return %p1 : tensor<8xf32>
}

// -----

func.func @mismatched_moment(%p: tensor<8xf32>, %m: tensor<4xf32>, %lr: tensor<f32>) -> tensor<8xf32> {
  // expected-error @+1 {{failed to verify that all of {param, grad, m, v, new_param, new_m, new_v} have same type}}
  %p1, %m1, %v1 = "graph.adamw_update"(%p, %p, %m, %p, %lr, %lr, %lr) {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %p1 : tensor<8xf32>
}

// -----

func.func @shrinking_growth(%n: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{growth must be in [1, inf), got 0.5}}
  %s, %c, %k = graph.loss_scale_update %n, %n, %n {growth = 0.5 : f64, backoff = 0.5 : f64, interval = 2000 : i64} : tensor<f32>
  return %s : tensor<f32>
}

// -----

func.func @growing_backoff(%n: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{backoff must be in (0, 1], got 2}}
  %s, %c, %k = graph.loss_scale_update %n, %n, %n {growth = 2.0 : f64, backoff = 2.0 : f64, interval = 2000 : i64} : tensor<f32>
  return %s : tensor<f32>
}

// -----

func.func @no_interval(%n: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{interval must be at least 1, got 0}}
  %s, %c, %k = graph.loss_scale_update %n, %n, %n {growth = 2.0 : f64, backoff = 0.5 : f64, interval = 0 : i64} : tensor<f32>
  return %s : tensor<f32>
}

// -----

func.func @mixed_scalars(%n: tensor<f32>, %d: tensor<f64>) -> tensor<f32> {
  // expected-error @+1 {{failed to verify that all of {norm, scale, good_steps, new_scale, new_good_steps, skip} have same type}}
  %s, %c, %k = "graph.loss_scale_update"(%n, %d, %n) {growth = 2.0 : f64, backoff = 0.5 : f64, interval = 2 : i64} : (tensor<f32>, tensor<f64>, tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>)
  return %s : tensor<f32>
}

// -----

func.func @skip_of_another_type(%p: tensor<8xf32>, %lr: tensor<f32>, %skip: tensor<f64>) -> tensor<8xf32> {
  // expected-error @+1 {{skip must have the type of lr ('tensor<f32>'), got 'tensor<f64>'}}
  %p1 = graph.sgd_update %p, %p, %lr, %lr skip %skip {weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<f32>, tensor<f64>
  return %p1 : tensor<8xf32>
}
