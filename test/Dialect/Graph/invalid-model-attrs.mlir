// RUN: kiln-opt %s -split-input-file -verify-diagnostics
// One case per error of the graph dialect's attribute verifiers.

// expected-error @+1 {{'graph.param' of argument 0 must be a string}}
func.func @param_not_string(%w: tensor<4xf32> {graph.param = 1 : i64}) {
  return
}

// -----

// expected-error @+1 {{'graph.input' of argument 1 must be a string}}
func.func @input_not_string(%a: tensor<4xf32>, %x: tensor<4xi32> {graph.input = ["x"]}) {
  return
}

// -----

// expected-error @+1 {{parameter argument 0 must be a ranked tensor}}
func.func @param_not_tensor(%w: f32 {graph.param = "w"}) {
  return
}

// -----

// expected-error @+1 {{'graph.init' must be a dictionary}}
func.func @init_not_dict(%w: tensor<4xf32> {graph.param = "w", graph.init = "zeros"}) {
  return
}

// -----

// expected-error @+1 {{'graph.init' needs a string 'kind'}}
func.func @init_no_kind(%w: tensor<4xf32> {graph.param = "w", graph.init = {std = 0.02 : f64}}) {
  return
}

// -----

// expected-error @+1 {{unknown initializer kind 'xavier' (expected zeros, ones, constant, normal or uniform)}}
func.func @init_unknown_kind(%w: tensor<4xf32> {graph.param = "w", graph.init = {kind = "xavier"}}) {
  return
}

// -----

// expected-error @+1 {{initializer 'normal' needs an f64 'std'}}
func.func @init_normal_no_std(%w: tensor<4xf32> {graph.param = "w", graph.init = {kind = "normal"}}) {
  return
}

// -----

// expected-error @+1 {{initializer 'uniform' needs an f64 'high'}}
func.func @init_uniform_no_high(%w: tensor<4xf32> {graph.param = "w", graph.init = {kind = "uniform", low = 0.0 : f64}}) {
  return
}

// -----

// expected-error @+1 {{initializer 'constant' needs an f64 'value'}}
func.func @init_constant_int(%w: tensor<4xf32> {graph.param = "w", graph.init = {kind = "constant", value = 1 : i64}}) {
  return
}

// -----

// expected-error @+1 {{unknown graph argument attribute 'graph.weight'}}
func.func @unknown_arg_attr(%w: tensor<4xf32> {graph.weight = "w"}) {
  return
}

// -----

// expected-error @+1 {{'graph.output' of result 0 must be a string}}
func.func @output_not_string(%x: tensor<4xf32>) -> (tensor<4xf32> {graph.output = 3 : i64}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{the loss (result 1) must be a scalar float tensor}}
func.func @loss_not_scalar(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32> {graph.loss}) {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{the loss (result 0) must be a scalar float tensor}}
func.func @loss_integer(%x: tensor<i32>) -> (tensor<i32> {graph.loss}) {
  return %x : tensor<i32>
}

// -----

// expected-error @+1 {{unknown graph result attribute 'graph.metric'}}
func.func @unknown_result_attr(%x: tensor<f32>) -> (tensor<f32> {graph.metric = "acc"}) {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{'graph.model' must be a string}}
module attributes {graph.model = 1 : i64} {}

// -----

// expected-error @+1 {{'graph.batch_dim' must be a string}}
module attributes {graph.batch_dim = 0 : i64} {}

// -----

// expected-error @+1 {{'graph.dims' must be a dictionary}}
module attributes {graph.dims = [32, 64]} {}

// -----

// expected-error @+1 {{dim 'T' must be a positive integer}}
module attributes {graph.dims = {B = 32 : i64, T = 0 : i64}} {}

// -----

// expected-error @+1 {{dim 'D' must be a positive integer}}
module attributes {graph.dims = {D = "wide"}} {}

// -----

// expected-error @+1 {{'graph.train' must be a dictionary}}
module attributes {graph.train = "adamw"} {}

// -----

// expected-error @+1 {{unknown graph attribute 'graph.name'}}
module attributes {graph.name = "gpt"} {}

// -----

// expected-error @+1 {{'graph.state' of argument 0 must be a string}}
func.func @state_not_string(%m: tensor<4xf32> {graph.state = 1 : i64}) {
  return
}

// -----

// expected-error @+1 {{'graph.update' of result 0 must be a string}}
func.func @update_not_string(%w: tensor<4xf32>) -> (tensor<4xf32> {graph.update = 2 : i64}) {
  return %w : tensor<4xf32>
}

// -----

// `rounded` (a weight's low-precision copy) derives a state from its
// parameter; a parameter cannot be one.
// expected-error @+1 {{initializer 'rounded' (a low-precision copy of a parameter) is for state arguments only}}
func.func @rounded_param(%w: tensor<4xbf16> {graph.param = "w", graph.init = {kind = "rounded"}}) -> tensor<4xbf16> {
  return %w : tensor<4xbf16>
}

// -----

// expected-error @+1 {{'graph.shard' of argument 0 must be {offset = N, shape = array<i64: ...>}}}
func.func @shard_malformed(%m: tensor<4xf32> {graph.state = "w.adam_m", graph.shard = {offset = 0 : i64}}) {
  return
}

// -----

// expected-error @+1 {{'graph.shard' of argument 0 is only valid on state}}
func.func @shard_on_param(%w: tensor<4xf32> {graph.param = "w", graph.shard = {offset = 0 : i64, shape = array<i64: 8>}}) {
  return
}

// -----

// expected-error @+1 {{'graph.shard' of argument 0: a 1-D state within the 8 elements of its tensor}}
func.func @shard_outside(%m: tensor<4xf32> {graph.state = "w.adam_m", graph.shard = {offset = 6 : i64, shape = array<i64: 2, 4>}}) {
  return
}
