// RUN: kiln-opt %s -split-input-file -verify-diagnostics
// graph.matmul_epilogue's verifier: each epilogue's operands and results.

func.func @bias_missing(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{epilogue bias needs bias}}
  %y = graph.matmul_epilogue bias %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @bias_shape(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<4xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{bias must be 'tensor<16xf32>', got 'tensor<4xf32>'}}
  %y = graph.matmul_epilogue bias %x, %w bias %b : tensor<4x8xf32>, tensor<8x16xf32> bias tensor<4xf32> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @product_shape(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{result}}
  %y = graph.matmul_epilogue bias %x, %w bias %b : tensor<4x8xf32>, tensor<8x16xf32> bias tensor<8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @gelu_without_pre(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{epilogue bias_gelu has second result}}
  %y = graph.matmul_epilogue bias_gelu %x, %w bias %b : tensor<4x8xf32>, tensor<8x16xf32> bias tensor<16xf32> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @dgelu_without_aux(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{epilogue dgelu needs aux (the forward's pre-activation)}}
  %y = graph.matmul_epilogue dgelu %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @dgelu_aux_shape(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %pre: tensor<4x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{aux must have the result's type 'tensor<4x16xf32>', got 'tensor<4x8xf32>'}}
  %y = graph.matmul_epilogue dgelu %x, %w aux %pre : tensor<4x8xf32>, tensor<8x16xf32> aux tensor<4x8xf32> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @bias_grad_transposed(%x: tensor<8x4xf32>, %dz: tensor<16x8xf32>) -> (tensor<4x16xf32>, tensor<16xf32>) {
  // expected-error @+1 {{bias_grad sums the rows of a rank-2 rhs that is not transposed}}
  %dw, %db = graph.matmul_epilogue bias_grad %x, %dz {transpose_lhs, transpose_rhs} : tensor<8x4xf32>, tensor<16x8xf32> -> tensor<4x16xf32>, tensor<16xf32>
  return %dw, %db : tensor<4x16xf32>, tensor<16xf32>
}

// -----

func.func @bias_grad_shape(%x: tensor<8x4xf32>, %dz: tensor<8x16xf32>) -> (tensor<4x16xf32>, tensor<8xf32>) {
  // expected-error @+1 {{the bias gradient must be 'tensor<16xf32>', got 'tensor<8xf32>'}}
  %dw, %db = graph.matmul_epilogue bias_grad %x, %dz {transpose_lhs} : tensor<8x4xf32>, tensor<8x16xf32> -> tensor<4x16xf32>, tensor<8xf32>
  return %dw, %db : tensor<4x16xf32>, tensor<8xf32>
}
