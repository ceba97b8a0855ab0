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
    // expected-error @below {{'graph.matmul' op cannot be fused: not elementwise, data movement or a splat constant, nor an anchor ending the region}}
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

// -----

// An anchored region: a layer norm reading its input through the add; the
// add's value, used after the region, is yielded after the anchor's result.

// CHECK-LABEL: func.func @anchored
// CHECK: %[[R:.*]]:2 = graph.fusion -> (tensor<4x8xf32>, tensor<4x8xf32>) {
// CHECK:   %[[H:.*]] = graph.add %arg0, %arg1 : tensor<4x8xf32>
// CHECK:   %[[Y:.*]] = graph.layer_norm %[[H]], %arg2, %arg3
// CHECK:   graph.yield %[[Y]], %[[H]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-LABEL: func.func @anchored_reduce
// CHECK: graph.fusion -> (tensor<8xf32>, tensor<4x8xf32>) {
// CHECK:   graph.reduce sum
func.func @anchored(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %f:2 = graph.fusion -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    %h = graph.add %x, %r : tensor<4x8xf32>
    %y = graph.layer_norm %h, %g, %b : tensor<4x8xf32>, tensor<8xf32>
    graph.yield %y, %h : tensor<4x8xf32>, tensor<4x8xf32>
  }
  return %f#0, %f#1 : tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @anchored_reduce(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<4x8xf32>) {
  %f:2 = graph.fusion -> (tensor<8xf32>, tensor<4x8xf32>) {
    %h = graph.add %x, %r : tensor<4x8xf32>
    %s = graph.reduce sum %h {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
    graph.yield %s, %h : tensor<8xf32>, tensor<4x8xf32>
  }
  return %f#0, %f#1 : tensor<8xf32>, tensor<4x8xf32>
}

// -----

func.func @anchor_not_last(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  %f = graph.fusion -> (tensor<8xf32>) {
    %e = graph.exp %x : tensor<4x8xf32>
    // expected-error @below {{'graph.reduce' op cannot be fused: not elementwise, data movement or a splat constant, nor an anchor ending the region}}
    %s = graph.reduce sum %e {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
    %n = graph.neg %s : tensor<8xf32>
    graph.yield %n : tensor<8xf32>
  }
  return %f : tensor<8xf32>
}

// -----

func.func @anchor_yielded_late(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  // expected-error @below {{'graph.fusion' op must yield the results of its anchor graph.reduce first}}
  %f:2 = graph.fusion -> (tensor<4x8xf32>, tensor<8xf32>) {
    %e = graph.exp %x : tensor<4x8xf32>
    %s = graph.reduce sum %e {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
    graph.yield %e, %s : tensor<4x8xf32>, tensor<8xf32>
  }
  return %f#0, %f#1 : tensor<4x8xf32>, tensor<8xf32>
}

// -----

func.func @anchor_reads_outside(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  // expected-error @below {{'graph.fusion' op anchor graph.reduce must read its fused operand from the region}}
  %f = graph.fusion -> (tensor<8xf32>) {
    %s = graph.reduce sum %x {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
    graph.yield %s : tensor<8xf32>
  }
  return %f : tensor<8xf32>
}

// -----

func.func @anchor_gamma_inside(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{'graph.fusion' op anchor graph.layer_norm may read only operand #0 from the region}}
  %f = graph.fusion -> (tensor<4x8xf32>) {
    %e = graph.exp %x : tensor<4x8xf32>
    %n = graph.neg %g : tensor<8xf32>
    %y = graph.layer_norm %e, %n, %b : tensor<4x8xf32>, tensor<8xf32>
    graph.yield %y : tensor<4x8xf32>
  }
  return %f : tensor<4x8xf32>
}

// -----

func.func @anchored_two_shapes(%x: tensor<4x8xf32>, %v: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // expected-error @below {{'graph.fusion' op results must share one shape (the iteration space)}}
  %f:2 = graph.fusion -> (tensor<8xf32>, tensor<8xf32>) {
    %n = graph.neg %v : tensor<8xf32>
    %b = graph.broadcast %n : tensor<8xf32> -> tensor<4x8xf32>
    %e = graph.add %x, %b : tensor<4x8xf32>
    %s = graph.reduce sum %e {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
    graph.yield %s, %n : tensor<8xf32>, tensor<8xf32>
  }
  return %f#0, %f#1 : tensor<8xf32>, tensor<8xf32>
}

// -----

func.func @anchored_unread_yield(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<4x8xf32>) {
  // expected-error @below {{'graph.fusion' op yields a value its anchor graph.reduce does not read}}
  %f:2 = graph.fusion -> (tensor<8xf32>, tensor<4x8xf32>) {
    %e = graph.exp %x : tensor<4x8xf32>
    %n = graph.neg %r : tensor<4x8xf32>
    %s = graph.reduce sum %e {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
    graph.yield %s, %n : tensor<8xf32>, tensor<4x8xf32>
  }
  return %f#0, %f#1 : tensor<8xf32>, tensor<4x8xf32>
}
