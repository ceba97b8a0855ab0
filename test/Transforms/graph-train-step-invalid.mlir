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
