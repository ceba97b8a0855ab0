// RUN: kiln-opt %s -split-input-file -verify-diagnostics
// One case per verifier error of every graph op.

// Type constraints (ODS): graph values have static shapes.
func.func @dynamic_shape(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{must be statically shaped tensor of floating-point values}}
  %0 = graph.exp %x : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @unary_integer(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{must be statically shaped tensor of floating-point values}}
  %0 = graph.relu %x : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

//===----------------------------------------------------------------------===//
// constant
//===----------------------------------------------------------------------===//

func.func @constant_index() -> tensor<2xindex> {
  // expected-error @+1 {{element type must be a float or an integer, got 'index'}}
  %0 = graph.constant dense<[1, 2]> : tensor<2xindex>
  return %0 : tensor<2xindex>
}

// -----

func.func @constant_type_mismatch() -> tensor<3xf32> {
  // expected-error @+1 {{all of {value, result} have same type}}
  %0 = "graph.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

func.func @matmul_contracting(%a: tensor<4x64xf32>, %b: tensor<32x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{matmul contracting dims differ: 64 vs 32 (lhs 4x64, rhs 32x16)}}
  %0 = graph.matmul %a, %b : tensor<4x64xf32>, tensor<32x16xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @matmul_contracting_transposed(%a: tensor<4x64xf32>, %b: tensor<64x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{matmul contracting dims differ: 4 vs 64 (lhs 4x64, rhs 64x16)}}
  %0 = graph.matmul %a, %b {transpose_lhs} : tensor<4x64xf32>, tensor<64x16xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @matmul_rank(%a: tensor<64xf32>, %b: tensor<64x16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{matmul operands need rank >= 2, got rank 1 and 2 (lhs 64, rhs 64x16)}}
  %0 = graph.matmul %a, %b : tensor<64xf32>, tensor<64x16xf32> -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

func.func @matmul_batch(%a: tensor<3x4x8xf32>, %b: tensor<5x8x2xf32>) -> tensor<3x4x2xf32> {
  // expected-error @+1 {{matmul batch dims do not broadcast: 3 vs 5 (lhs 3x4x8, rhs 5x8x2)}}
  %0 = graph.matmul %a, %b : tensor<3x4x8xf32>, tensor<5x8x2xf32> -> tensor<3x4x2xf32>
  return %0 : tensor<3x4x2xf32>
}

// -----

func.func @matmul_result(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{result shape 4x3 does not match the inferred shape 4x2}}
  %0 = graph.matmul %a, %b : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @matmul_element_type(%a: tensor<4x8xf32>, %b: tensor<8x2xbf16>) -> tensor<4x2xf32> {
  // expected-error @+1 {{rhs element type 'bf16' differs from lhs element type 'f32'}}
  %0 = graph.matmul %a, %b : tensor<4x8xf32>, tensor<8x2xbf16> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @matmul_result_element_type(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x2xf16> {
  // expected-error @+1 {{result element type 'f16' differs from lhs element type 'f32'}}
  %0 = graph.matmul %a, %b : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf16>
  return %0 : tensor<4x2xf16>
}

// -----

//===----------------------------------------------------------------------===//
// broadcast
//===----------------------------------------------------------------------===//

func.func @broadcast_dim(%x: tensor<3xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{cannot broadcast 3 to 4x5: dim 0 is 3, expected 5 or 1}}
  %0 = graph.broadcast %x : tensor<3xf32> -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

func.func @broadcast_rank(%x: tensor<2x3x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{cannot broadcast 2x3x4 to 3x4: rank 3 is larger than rank 2}}
  %0 = graph.broadcast %x : tensor<2x3x4xf32> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @broadcast_element_type(%x: tensor<4xf32>) -> tensor<2x4xf16> {
  // expected-error @+1 {{result element type 'f16' differs from input element type 'f32'}}
  %0 = graph.broadcast %x : tensor<4xf32> -> tensor<2x4xf16>
  return %0 : tensor<2x4xf16>
}

// -----

//===----------------------------------------------------------------------===//
// reduce
//===----------------------------------------------------------------------===//

func.func @reduce_axis_range(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2 (expected 0..1) (input 4x8)}}
  %0 = graph.reduce sum %x {axes = array<i64: 2>} : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @reduce_axis_negative(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{axis -1 is out of range for rank 2 (expected 0..1)}}
  %0 = graph.reduce sum %x {axes = array<i64: -1>} : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @reduce_axes_unsorted(%x: tensor<4x8x2xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{axes must be sorted and distinct, got [2, 0] (input 4x8x2)}}
  %0 = graph.reduce max %x {axes = array<i64: 2, 0>} : tensor<4x8x2xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @reduce_axes_repeated(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{axes must be sorted and distinct, got [1, 1] (input 4x8)}}
  %0 = graph.reduce mean %x {axes = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @reduce_result(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{result shape 4 does not match the inferred shape 4x1}}
  %0 = graph.reduce sum %x {axes = array<i64: 1>, keepdims} : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @reduce_element_type(%x: tensor<4x8xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{result element type 'f16' differs from input element type 'f32'}}
  %0 = graph.reduce sum %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

//===----------------------------------------------------------------------===//
// reshape
//===----------------------------------------------------------------------===//

func.func @reshape_count(%x: tensor<4x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{cannot reshape 4x8 (32 elements) to 3x8 (24 elements)}}
  %0 = graph.reshape %x : tensor<4x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @reshape_element_type(%x: tensor<4x8xf32>) -> tensor<32xi32> {
  // expected-error @+1 {{result element type 'i32' differs from input element type 'f32'}}
  %0 = graph.reshape %x : tensor<4x8xf32> -> tensor<32xi32>
  return %0 : tensor<32xi32>
}

// -----

//===----------------------------------------------------------------------===//
// transpose
//===----------------------------------------------------------------------===//

func.func @transpose_perm_size(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{transpose perm [1, 0, 2] has 3 entries, but the input 4x8 has rank 2}}
  %0 = graph.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<4x8xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @transpose_perm_range(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{transpose perm [2, 0] has entry 2 out of range 0..1 (input 4x8)}}
  %0 = graph.transpose %x {perm = array<i64: 2, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @transpose_perm_repeated(%x: tensor<4x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{transpose perm [1, 1] repeats 1: not a permutation (input 4x8)}}
  %0 = graph.transpose %x {perm = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @transpose_result(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{result shape 2x4x8 does not match the inferred shape 2x8x4}}
  %0 = graph.transpose %x {perm = array<i64: 0, 2, 1>} : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

func.func @transpose_element_type(%x: tensor<4x8xf32>) -> tensor<8x4xbf16> {
  // expected-error @+1 {{result element type 'bf16' differs from input element type 'f32'}}
  %0 = graph.transpose %x {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xbf16>
  return %0 : tensor<8x4xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// slice
//===----------------------------------------------------------------------===//

func.func @slice_rank(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{slice of 4x8 must keep its rank 2, got 8}}
  %0 = graph.slice %x {offsets = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @slice_offsets(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{slice needs one offset per dim: 1 offsets for input 4x8}}
  %0 = graph.slice %x {offsets = array<i64: 5>} : tensor<4x8xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @slice_negative(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{slice offset -1 of dim 1 is negative}}
  %0 = graph.slice %x {offsets = array<i64: 0, -1>} : tensor<4x8xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @slice_bounds(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{slice of dim 1 exceeds it: offset 6 + size 3 > 8 (input 4x8, slice 4x3)}}
  %0 = graph.slice %x {offsets = array<i64: 0, 6>} : tensor<4x8xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @slice_element_type(%x: tensor<4x8xf32>) -> tensor<4x3xf16> {
  // expected-error @+1 {{result element type 'f16' differs from input element type 'f32'}}
  %0 = graph.slice %x {offsets = array<i64: 0, 5>} : tensor<4x8xf32> -> tensor<4x3xf16>
  return %0 : tensor<4x3xf16>
}

// -----

//===----------------------------------------------------------------------===//
// concat
//===----------------------------------------------------------------------===//

func.func @concat_empty() -> tensor<4xf32> {
  // expected-error @+1 {{concat needs at least one input}}
  %0 = "graph.concat"() {axis = 0 : i64} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @concat_axis(%a: tensor<4x8xf32>, %b: tensor<4x2xf32>) -> tensor<4x10xf32> {
  // expected-error @+1 {{axis 2 is out of range for shape 4x8 (expected 0..1)}}
  %0 = graph.concat %a, %b {axis = 2 : i64} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

func.func @concat_rank(%a: tensor<4x8xf32>, %b: tensor<4xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{concat inputs differ in rank: input 0 is 4x8, input 1 is 4}}
  %0 = graph.concat %a, %b {axis = 0 : i64} : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @concat_dims(%a: tensor<4x8xf32>, %b: tensor<3x2xf32>) -> tensor<4x10xf32> {
  // expected-error @+1 {{concat inputs differ in dim 0 (axis is 1): input 0 is 4x8, input 1 is 3x2}}
  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<4x8xf32>, tensor<3x2xf32>) -> tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

func.func @concat_result(%a: tensor<4x8xf32>, %b: tensor<4x2xf32>) -> tensor<4x9xf32> {
  // expected-error @+1 {{result shape 4x9 does not match the inferred shape 4x10}}
  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x9xf32>
  return %0 : tensor<4x9xf32>
}

// -----

func.func @concat_element_type(%a: tensor<4x8xf32>, %b: tensor<4x2xf16>) -> tensor<4x10xf32> {
  // expected-error @+1 {{input 1 element type 'f16' differs from input 0 element type 'f32'}}
  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x2xf16>) -> tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

//===----------------------------------------------------------------------===//
// split
//===----------------------------------------------------------------------===//

func.func @split_empty(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{split needs at least one result}}
  "graph.split"(%x) {axis = 1 : i64} : (tensor<4x10xf32>) -> ()
  return
}

// -----

func.func @split_sum(%x: tensor<4x10xf32>) -> (tensor<4x3xf32>, tensor<4x6xf32>) {
  // expected-error @+1 {{split sizes [3, 6] add up to 9, but dim 1 of 4x10 is 10}}
  %0:2 = graph.split %x {axis = 1 : i64} : tensor<4x10xf32> -> (tensor<4x3xf32>, tensor<4x6xf32>)
  return %0#0, %0#1 : tensor<4x3xf32>, tensor<4x6xf32>
}

// -----

func.func @split_zero_size(%x: tensor<4x10xf32>) -> (tensor<4x0xf32>, tensor<4x10xf32>) {
  // expected-error @+1 {{split piece 0 has size 0: sizes must be positive}}
  %0:2 = graph.split %x {axis = 1 : i64} : tensor<4x10xf32> -> (tensor<4x0xf32>, tensor<4x10xf32>)
  return %0#0, %0#1 : tensor<4x0xf32>, tensor<4x10xf32>
}

// -----

func.func @split_axis(%x: tensor<4x10xf32>) -> (tensor<4x5xf32>, tensor<4x5xf32>) {
  // expected-error @+1 {{axis 2 is out of range for shape 4x10 (expected 0..1)}}
  %0:2 = graph.split %x {axis = 2 : i64} : tensor<4x10xf32> -> (tensor<4x5xf32>, tensor<4x5xf32>)
  return %0#0, %0#1 : tensor<4x5xf32>, tensor<4x5xf32>
}

// -----

func.func @split_rank(%x: tensor<4x10xf32>) -> (tensor<4x5xf32>, tensor<20xf32>) {
  // expected-error @+1 {{result 1 has rank 1, but the input 4x10 has rank 2}}
  %0:2 = graph.split %x {axis = 1 : i64} : tensor<4x10xf32> -> (tensor<4x5xf32>, tensor<20xf32>)
  return %0#0, %0#1 : tensor<4x5xf32>, tensor<20xf32>
}

// -----

func.func @split_other_dim(%x: tensor<4x10xf32>) -> (tensor<4x5xf32>, tensor<2x5xf32>) {
  // expected-error @+1 {{result 1 shape 2x5 does not match the inferred shape 4x5}}
  %0:2 = graph.split %x {axis = 1 : i64} : tensor<4x10xf32> -> (tensor<4x5xf32>, tensor<2x5xf32>)
  return %0#0, %0#1 : tensor<4x5xf32>, tensor<2x5xf32>
}

// -----

func.func @split_element_type(%x: tensor<4x10xf32>) -> (tensor<4x5xf32>, tensor<4x5xbf16>) {
  // expected-error @+1 {{result 1 element type 'bf16' differs from input element type 'f32'}}
  %0:2 = graph.split %x {axis = 1 : i64} : tensor<4x10xf32> -> (tensor<4x5xf32>, tensor<4x5xbf16>)
  return %0#0, %0#1 : tensor<4x5xf32>, tensor<4x5xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// embedding
//===----------------------------------------------------------------------===//

func.func @embedding_table(%t: tensor<256xf32>, %ids: tensor<32xi32>) -> tensor<32xf32> {
  // expected-error @+1 {{embedding table must be [V, D] (rank 2), got 256}}
  %0 = graph.embedding %t, %ids : tensor<256xf32>, tensor<32xi32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

func.func @embedding_result(%t: tensor<256x128xf32>, %ids: tensor<32x64xi32>) -> tensor<32x128xf32> {
  // expected-error @+1 {{result shape 32x128 does not match the inferred shape 32x64x128}}
  %0 = graph.embedding %t, %ids : tensor<256x128xf32>, tensor<32x64xi32> -> tensor<32x128xf32>
  return %0 : tensor<32x128xf32>
}

// -----

func.func @embedding_element_type(%t: tensor<256x128xf32>, %ids: tensor<32xi32>) -> tensor<32x128xbf16> {
  // expected-error @+1 {{result element type 'bf16' differs from table element type 'f32'}}
  %0 = graph.embedding %t, %ids : tensor<256x128xf32>, tensor<32xi32> -> tensor<32x128xbf16>
  return %0 : tensor<32x128xbf16>
}

// -----

func.func @embedding_float_ids(%t: tensor<256x128xf32>, %ids: tensor<32xf32>) -> tensor<32x128xf32> {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = graph.embedding %t, %ids : tensor<256x128xf32>, tensor<32xf32> -> tensor<32x128xf32>
  return %0 : tensor<32x128xf32>
}

// -----

//===----------------------------------------------------------------------===//
// layer_norm
//===----------------------------------------------------------------------===//

func.func @layer_norm_gamma(%x: tensor<2x64xf32>, %g: tensor<32xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{layer_norm gamma must be [64] (the last dim of input 2x64), got 32}}
  %0 = graph.layer_norm %x, %g, %g : tensor<2x64xf32>, tensor<32xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @layer_norm_gamma_rank(%x: tensor<2x64xf32>, %g: tensor<1x64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{layer_norm gamma must be [64] (the last dim of input 2x64), got 1x64}}
  %0 = graph.layer_norm %x, %g, %g : tensor<2x64xf32>, tensor<1x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @layer_norm_beta(%x: tensor<2x64xf32>, %g: tensor<64xf32>, %b: tensor<32xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{all of {gamma, beta} have same type}}
  %0 = "graph.layer_norm"(%x, %g, %b) {eps = 1.0e-5 : f64} : (tensor<2x64xf32>, tensor<64xf32>, tensor<32xf32>) -> tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @layer_norm_scalar(%x: tensor<f32>, %g: tensor<1xf32>) -> tensor<f32> {
  // expected-error @+1 {{layer_norm input must have rank >= 1, got a scalar}}
  %0 = graph.layer_norm %x, %g, %g : tensor<f32>, tensor<1xf32>
  return %0 : tensor<f32>
}

// -----

func.func @layer_norm_eps(%x: tensor<2x64xf32>, %g: tensor<64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{eps must be finite and non-negative, got -1.000000e-05}}
  %0 = graph.layer_norm %x, %g, %g {eps = -1.0e-5 : f64} : tensor<2x64xf32>, tensor<64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @layer_norm_element_type(%x: tensor<2x64xbf16>, %g: tensor<64xf32>) -> tensor<2x64xbf16> {
  // expected-error @+1 {{gamma element type 'f32' differs from input element type 'bf16'}}
  %0 = graph.layer_norm %x, %g, %g : tensor<2x64xbf16>, tensor<64xf32>
  return %0 : tensor<2x64xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// softmax
//===----------------------------------------------------------------------===//

func.func @softmax_axis(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  // expected-error @+1 {{softmax axis 2 is out of range for shape 4x10 (expected 0..1)}}
  %0 = graph.softmax %x {axis = 2 : i64} : tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

func.func @softmax_negative_axis(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  // expected-error @+1 {{softmax axis -1 is out of range for shape 4x10 (expected 0..1)}}
  %0 = graph.softmax %x {axis = -1 : i64} : tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attention
//===----------------------------------------------------------------------===//

func.func @attention_head_dim(%q: tensor<2x64x32xf32>, %k: tensor<2x64x16xf32>, %v: tensor<2x64x32xf32>) -> tensor<2x64x32xf32> {
  // expected-error @+1 {{attention head dims differ: query 32 vs key 16 (query 2x64x32, key 2x64x16, value 2x64x32)}}
  %0 = graph.attention %q, %k, %v : tensor<2x64x32xf32>, tensor<2x64x16xf32>, tensor<2x64x32xf32> -> tensor<2x64x32xf32>
  return %0 : tensor<2x64x32xf32>
}

// -----

func.func @attention_lengths(%q: tensor<2x64x32xf32>, %k: tensor<2x48x32xf32>, %v: tensor<2x64x32xf32>) -> tensor<2x64x32xf32> {
  // expected-error @+1 {{attention key and value lengths differ: 48 vs 64 (query 2x64x32, key 2x48x32, value 2x64x32)}}
  %0 = graph.attention %q, %k, %v : tensor<2x64x32xf32>, tensor<2x48x32xf32>, tensor<2x64x32xf32> -> tensor<2x64x32xf32>
  return %0 : tensor<2x64x32xf32>
}

// -----

func.func @attention_causal(%q: tensor<2x64x32xf32>, %k: tensor<2x48x32xf32>, %v: tensor<2x48x32xf32>) -> tensor<2x64x32xf32> {
  // expected-error @+1 {{causal attention needs as many queries as keys: 64 vs 48}}
  %0 = graph.attention %q, %k, %v {causal} : tensor<2x64x32xf32>, tensor<2x48x32xf32>, tensor<2x48x32xf32> -> tensor<2x64x32xf32>
  return %0 : tensor<2x64x32xf32>
}

// -----

func.func @attention_rank(%q: tensor<32xf32>, %k: tensor<32xf32>, %v: tensor<32xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{attention operands need rank >= 2 (query 32, key 32, value 32)}}
  %0 = graph.attention %q, %k, %v : tensor<32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

func.func @attention_rank_differs(%q: tensor<2x64x32xf32>, %k: tensor<64x32xf32>, %v: tensor<64x32xf32>) -> tensor<2x64x32xf32> {
  // expected-error @+1 {{attention operands differ in rank (query 2x64x32, key 64x32, value 64x32)}}
  %0 = graph.attention %q, %k, %v : tensor<2x64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32> -> tensor<2x64x32xf32>
  return %0 : tensor<2x64x32xf32>
}

// -----

func.func @attention_mask_type(%q: tensor<2x64x32xf32>, %m: tensor<64x64xbf16>) -> tensor<2x64x32xf32> {
  // expected-error @+1 {{mask element type 'bf16' differs from query element type 'f32'}}
  %0 = graph.attention %q, %q, %q mask(%m : tensor<64x64xbf16>) : tensor<2x64x32xf32>, tensor<2x64x32xf32>, tensor<2x64x32xf32> -> tensor<2x64x32xf32>
  return %0 : tensor<2x64x32xf32>
}

// -----

func.func @attention_mask_broadcast(%q: tensor<2x64x32xf32>, %m: tensor<2x64x63xf32>) -> tensor<2x64x32xf32> {
  // expected-error @+1 {{attention mask does not broadcast to the scores: dim 2 is 63, expected 1 or 64 (mask 2x64x63, scores 2x64x64)}}
  %0 = graph.attention %q, %q, %q mask(%m : tensor<2x64x63xf32>) : tensor<2x64x32xf32>, tensor<2x64x32xf32>, tensor<2x64x32xf32> -> tensor<2x64x32xf32>
  return %0 : tensor<2x64x32xf32>
}

// -----

func.func @attention_mask_rank(%q: tensor<2x8x4xf32>, %m: tensor<1x2x8x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{attention mask has a rank above the scores' (mask 1x2x8x8, scores 2x8x8)}}
  %0 = graph.attention %q, %q, %q mask(%m : tensor<1x2x8x8xf32>) : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  return %0 : tensor<2x8x4xf32>
}

// -----

// A mask over batch and chunk but not the heads between them: kernels read
// masks in place only when their leading dims are one run.
func.func @attention_mask_gap(%q: tensor<2x3x4x8x4xf32>, %m: tensor<2x1x4x8x8xf32>) -> tensor<2x3x4x8x4xf32> {
  // expected-error @+1 {{attention mask spans the scores' leading dims 0..2 but is 1 at dim 1: broadcast it first (mask 2x1x4x8x8, scores 2x3x4x8x8)}}
  %0 = graph.attention %q, %q, %q mask(%m : tensor<2x1x4x8x8xf32>) : tensor<2x3x4x8x4xf32>, tensor<2x3x4x8x4xf32>, tensor<2x3x4x8x4xf32> -> tensor<2x3x4x8x4xf32>
  return %0 : tensor<2x3x4x8x4xf32>
}

// -----

func.func @attention_leading(%q: tensor<2x64x32xf32>, %k: tensor<3x64x32xf32>, %v: tensor<3x64x32xf32>) -> tensor<2x64x32xf32> {
  // expected-error @+1 {{attention leading dims differ (query 2x64x32, key 3x64x32, value 3x64x32)}}
  %0 = graph.attention %q, %k, %v : tensor<2x64x32xf32>, tensor<3x64x32xf32>, tensor<3x64x32xf32> -> tensor<2x64x32xf32>
  return %0 : tensor<2x64x32xf32>
}

// -----

func.func @attention_result(%q: tensor<2x64x32xf32>, %k: tensor<2x48x32xf32>, %v: tensor<2x48x16xf32>) -> tensor<2x64x32xf32> {
  // expected-error @+1 {{result shape 2x64x32 does not match the inferred shape 2x64x16}}
  %0 = graph.attention %q, %k, %v : tensor<2x64x32xf32>, tensor<2x48x32xf32>, tensor<2x48x16xf32> -> tensor<2x64x32xf32>
  return %0 : tensor<2x64x32xf32>
}

// -----

func.func @attention_scale(%q: tensor<2x64x32xf32>) -> tensor<2x64x32xf32> {
  // expected-error @+1 {{scale must be finite and positive, got 0.000000e+00}}
  %0 = graph.attention %q, %q, %q {scale = 0.0 : f64} : tensor<2x64x32xf32>, tensor<2x64x32xf32>, tensor<2x64x32xf32> -> tensor<2x64x32xf32>
  return %0 : tensor<2x64x32xf32>
}

// -----

func.func @attention_element_type(%q: tensor<2x64x32xf32>, %k: tensor<2x64x32xbf16>) -> tensor<2x64x32xf32> {
  // expected-error @+1 {{key element type 'bf16' differs from query element type 'f32'}}
  %0 = graph.attention %q, %k, %k : tensor<2x64x32xf32>, tensor<2x64x32xbf16>, tensor<2x64x32xbf16> -> tensor<2x64x32xf32>
  return %0 : tensor<2x64x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// cross_entropy
//===----------------------------------------------------------------------===//

func.func @cross_entropy_targets(%l: tensor<32x10xf32>, %t: tensor<32x10xi32>) -> tensor<f32> {
  // expected-error @+1 {{cross_entropy targets must be 32 (logits 32x10 without the class dim), got 32x10}}
  %0 = graph.cross_entropy %l, %t : tensor<32x10xf32>, tensor<32x10xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_scalar(%l: tensor<f32>, %t: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{cross_entropy logits must have rank >= 1 ([..., C]), got a scalar}}
  %0 = graph.cross_entropy %l, %t : tensor<f32>, tensor<i32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_float_targets(%l: tensor<32x10xf32>, %t: tensor<32xf32>) -> tensor<f32> {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = graph.cross_entropy %l, %t : tensor<32x10xf32>, tensor<32xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_result_rank(%l: tensor<32x10xf32>, %t: tensor<32xi32>) -> tensor<32xf32> {
  // expected-error @+1 {{result #0 must be 0D tensor of floating-point values}}
  %0 = graph.cross_entropy %l, %t : tensor<32x10xf32>, tensor<32xi32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

func.func @cross_entropy_element_type(%l: tensor<32x10xbf16>, %t: tensor<32xi32>) -> tensor<f32> {
  // expected-error @+1 {{result element type 'f32' differs from logits element type 'bf16'}}
  %0 = graph.cross_entropy %l, %t : tensor<32x10xbf16>, tensor<32xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_smoothing(%l: tensor<32x10xf32>, %t: tensor<32xi32>) -> tensor<f32> {
  // expected-error @+1 {{label_smoothing must be in [0, 1], got 1.500000e+00}}
  %0 = graph.cross_entropy %l, %t {label_smoothing = 1.5 : f64} : tensor<32x10xf32>, tensor<32xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

//===----------------------------------------------------------------------===//
// dropout
//===----------------------------------------------------------------------===//

func.func @dropout_rate_one(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{rate must be in [0, 1), got 1.000000e+00}}
  %0 = graph.dropout %x {rate = 1.0 : f64, stream = 0 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @dropout_rate_negative(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{rate must be in [0, 1), got -1.000000e-01}}
  %0 = graph.dropout %x {rate = -0.1 : f64, stream = 0 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @dropout_stream(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{stream must be non-negative, got -2}}
  %0 = graph.dropout %x {rate = 0.1 : f64, stream = -2 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// cast
//===----------------------------------------------------------------------===//

func.func @cast_shape(%x: tensor<4x8xf32>) -> tensor<8x4xbf16> {
  // expected-error @+1 {{cast keeps the shape: input 4x8, result 8x4}}
  %0 = graph.cast %x : tensor<4x8xf32> -> tensor<8x4xbf16>
  return %0 : tensor<8x4xbf16>
}

// -----

func.func @cast_index(%x: tensor<4xf32>) -> tensor<4xindex> {
  // expected-error @+1 {{result element type must be a float or an integer, got 'index'}}
  %0 = graph.cast %x : tensor<4xf32> -> tensor<4xindex>
  return %0 : tensor<4xindex>
}

//===----------------------------------------------------------------------===//
// argmax, one_hot
//===----------------------------------------------------------------------===//

// -----

func.func @argmax_axis(%x: tensor<4x8xf32>) -> tensor<4xi32> {
  // expected-error @+1 {{axis 2 is outside [0, 2) for a rank-2 input}}
  %0 = graph.argmax %x {axis = 2 : i64} : tensor<4x8xf32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @argmax_result(%x: tensor<4x8xf32>) -> tensor<8xi32> {
  // expected-error @+1 {{result shape must be the input's without axis 1}}
  %0 = graph.argmax %x {axis = 1 : i64} : tensor<4x8xf32> -> tensor<8xi32>
  return %0 : tensor<8xi32>
}

// -----

func.func @argmax_empty(%x: tensor<4x0xf32>) -> tensor<4xi32> {
  // expected-error @+1 {{axis 1 is empty: no largest element}}
  %0 = graph.argmax %x {axis = 1 : i64} : tensor<4x0xf32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @one_hot_shape(%y: tensor<32xi32>) -> tensor<16x10xf32> {
  // expected-error @+1 {{result shape must be the ids' shape plus a classes dim}}
  %0 = graph.one_hot %y : tensor<32xi32> -> tensor<16x10xf32>
  return %0 : tensor<16x10xf32>
}

// -----

func.func @one_hot_classes(%y: tensor<32xi32>) -> tensor<32x0xf32> {
  // expected-error @+1 {{needs at least one class}}
  %0 = graph.one_hot %y : tensor<32xi32> -> tensor<32x0xf32>
  return %0 : tensor<32x0xf32>
}

// -----

func.func @compare_types(%a: tensor<4x8xf32>, %b: tensor<4x8xf64>) -> tensor<4x8xf32> {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "graph.compare"(%a, %b) {predicate = 0 : i32} : (tensor<4x8xf32>, tensor<4x8xf64>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @compare_predicate(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{attribute 'predicate' failed to satisfy constraint}}
  %0 = "graph.compare"(%a, %a) {predicate = 9 : i32} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @select_shapes(%c: tensor<4x8xf32>, %a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "graph.select"(%c, %a, %b) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
