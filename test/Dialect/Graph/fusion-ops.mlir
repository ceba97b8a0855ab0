// RUN: kiln-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// A fusion region round-trips: fusible ops over values defined above it,
// yielding values of one shape.

// CHECK-LABEL: func.func @fused
// CHECK: %[[R:.*]]:2 = graph.fusion -> (tensor<4x8xf32>, tensor<4x8xf32>) {
// CHECK:   %[[B:.*]] = graph.broadcast %arg1 : tensor<8xf32> -> tensor<4x8xf32>
// CHECK:   %[[S:.*]] = graph.add %arg0, %[[B]] : tensor<4x8xf32>
// CHECK:   %[[G:.*]] = graph.gelu %[[S]] : tensor<4x8xf32>
// CHECK:   graph.yield %[[G]], %[[S]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK: }
func.func @fused(%x: tensor<4x8xf32>, %bias: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %r:2 = graph.fusion -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    %b = graph.broadcast %bias : tensor<8xf32> -> tensor<4x8xf32>
    %s = graph.add %x, %b : tensor<4x8xf32>
    %g = graph.gelu %s : tensor<4x8xf32>
    graph.yield %g, %s : tensor<4x8xf32>, tensor<4x8xf32>
  }
  return %r#0, %r#1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

func.func @not_fusible(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %r = graph.fusion -> (tensor<4x4xf32>) {
    // expected-error @below {{'graph.matmul' op cannot be fused: not elementwise, data movement or a splat constant}}
    %m = graph.matmul %a, %b : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
    graph.yield %m : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}

// -----

func.func @two_shapes(%a: tensor<4x8xf32>, %v: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  // expected-error @below {{'graph.fusion' op results must share one shape (the iteration space); got 'tensor<4x8xf32>', 'tensor<8xf32>'}}
  %r:2 = graph.fusion -> (tensor<4x8xf32>, tensor<8xf32>) {
    %e = graph.exp %a : tensor<4x8xf32>
    %n = graph.neg %v : tensor<8xf32>
    graph.yield %e, %n : tensor<4x8xf32>, tensor<8xf32>
  }
  return %r#0, %r#1 : tensor<4x8xf32>, tensor<8xf32>
}

// -----

func.func @yield_types(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{'graph.fusion' op yields 'tensor<4x8xf64>' but returns 'tensor<4x8xf32>'}}
  %r = graph.fusion -> (tensor<4x8xf32>) {
    %c = graph.cast %a : tensor<4x8xf32> -> tensor<4x8xf64>
    graph.yield %c : tensor<4x8xf64>
  }
  return %r : tensor<4x8xf32>
}

// -----

func.func @non_splat(%a: tensor<2xf32>) -> tensor<2xf32> {
  %r = graph.fusion -> (tensor<2xf32>) {
    // expected-error @below {{'graph.constant' op cannot be fused}}
    %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %s = graph.add %a, %c : tensor<2xf32>
    graph.yield %s : tensor<2xf32>
  }
  return %r : tensor<2xf32>
}
