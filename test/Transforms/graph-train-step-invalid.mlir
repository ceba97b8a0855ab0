// RUN: kiln-opt %s -split-input-file -graph-train-step -verify-diagnostics

// expected-error @+1 {{training needs a 'func.func @forward'}}
module {
  func.func @other() {
    return
  }
}

// -----

module {
  // expected-error @+1 {{the model has no parameters to train}}
  func.func @forward(%x: tensor<2xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss", graph.loss}) {
    %0 = graph.reduce sum %x {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// expected-error @+1 {{graph.train: unknown optimizer 'lion'}}
module attributes {graph.train = {optimizer = {name = "lion", lr = 1.0e-3 : f64}}} {
  func.func @forward(%w: tensor<2xf32> {graph.param = "w", graph.init = {kind = "ones"}}) -> (tensor<f32> {graph.output = "loss", graph.loss}) {
    %0 = graph.reduce sum %w {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// expected-error @+1 {{graph.train: the cosine schedule needs steps (10) > warmup (10)}}
module attributes {graph.train = {schedule = {name = "cosine", warmup = 10 : i64, final = 0.0 : f64}, steps = 10 : i64}} {
  func.func @forward(%w: tensor<2xf32> {graph.param = "w", graph.init = {kind = "ones"}}) -> (tensor<f32> {graph.output = "loss", graph.loss}) {
    %0 = graph.reduce sum %w {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// expected-error @+1 {{the module already has @train_step}}
module {
  func.func @forward(%w: tensor<2xf32> {graph.param = "w", graph.init = {kind = "ones"}}) -> (tensor<f32> {graph.output = "loss", graph.loss}) {
    %0 = graph.reduce sum %w {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
    return %0 : tensor<f32>
  }
  func.func @train_step() {
    return
  }
}

// -----

// loss_scale without fp16 would be ignored: it is refused where it was set.
// expected-error @+1 {{loss_scale applies to precision = fp16 only (this step trains in fp32)}}
module attributes {graph.train = {optimizer = {name = "sgd", lr = 0.1 : f64}, loss_scale = {name = "dynamic", init = 8.0 : f64, interval = 2 : i64}}} {
  func.func @forward(%w: tensor<2xf32> {graph.param = "w", graph.init = {kind = "zeros"}}) -> (tensor<f32> {graph.output = "loss", graph.loss}) {
    %0 = graph.reduce sum %w {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// expected-error @+1 {{loss_scale needs init > 0 and interval >= 1}}
module attributes {graph.train = {optimizer = {name = "sgd", lr = 0.1 : f64}, precision = "fp16", loss_scale = {name = "dynamic", init = 8.0 : f64, interval = 0 : i64}}} {
  func.func @forward(%w: tensor<2xf32> {graph.param = "w", graph.init = {kind = "zeros"}}) -> (tensor<f32> {graph.output = "loss", graph.loss}) {
    %0 = graph.reduce sum %w {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// expected-error @+1 {{graph.train: zero must be 0 or 1 (ZeRO-1 shards the optimizer state; stages 2 and 3 are not built)}}
module attributes {graph.train = {world = 2 : i64, zero = 2 : i64}} {
  func.func @forward(%w: tensor<2xf32> {graph.param = "w", graph.init = {kind = "ones"}}) -> (tensor<f32> {graph.output = "loss", graph.loss}) {
    %0 = graph.reduce sum %w {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// expected-error @+1 {{graph.train: zero = 1 shards the optimizer state over the ranks, and world is 1}}
module attributes {graph.train = {zero = 1 : i64}} {
  func.func @forward(%w: tensor<2xf32> {graph.param = "w", graph.init = {kind = "ones"}}) -> (tensor<f32> {graph.output = "loss", graph.loss}) {
    %0 = graph.reduce sum %w {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// expected-error @+1 {{graph.train: rank 2 is not one of the world's 2}}
module attributes {graph.train = {world = 2 : i64, zero = 1 : i64, rank = 2 : i64}} {
  func.func @forward(%w: tensor<2xf32> {graph.param = "w", graph.init = {kind = "ones"}}) -> (tensor<f32> {graph.output = "loss", graph.loss}) {
    %0 = graph.reduce sum %w {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
    return %0 : tensor<f32>
  }
}
