// RUN: kiln-opt %s -split-input-file --graph-fuse | FileCheck %s

// A bias add and its GELU become one region; the broadcast reads only the
// bias. The matmul is not fusible and stays outside.

// CHECK-LABEL: func.func @bias_gelu
// CHECK: %[[M:.*]] = graph.matmul
// CHECK: %[[F:.*]] = graph.fusion -> (tensor<4x8xf32>) {
// CHECK-NEXT: graph.broadcast %arg2
// CHECK-NEXT: graph.add %[[M]]
// CHECK-NEXT: graph.gelu
// CHECK-NEXT: graph.yield
// CHECK: return %[[F]]
func.func @bias_gelu(%x: tensor<4x6xf32>, %w: tensor<6x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %m = graph.matmul %x, %w : tensor<4x6xf32>, tensor<6x8xf32> -> tensor<4x8xf32>
  %bb = graph.broadcast %b : tensor<8xf32> -> tensor<4x8xf32>
  %s = graph.add %m, %bb : tensor<4x8xf32>
  %g = graph.gelu %s : tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

// -----

// A value also used after the region, read at the identity, is yielded
// (multi-output): the pre-activation the backward needs.

// CHECK-LABEL: func.func @multi_output
// CHECK: %[[F:.*]]:2 = graph.fusion -> (tensor<4x8xf32>, tensor<4x8xf32>) {
// CHECK: %[[S:.*]] = graph.add
// CHECK: %[[G:.*]] = graph.gelu %[[S]]
// CHECK: graph.yield %[[G]], %[[S]]
// CHECK: graph.gelu_grad %arg2, %[[F]]#1
func.func @multi_output(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = graph.add %x, %y : tensor<4x8xf32>
  %g = graph.gelu %s : tensor<4x8xf32>
  %dx = graph.gelu_grad %dy, %s : tensor<4x8xf32>
  return %g, %dx : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Heads: a split feeding three reshape-transpose chains. Data movement is
// duplicated into each chain's region and the bias add with it (it reads
// no more bytes than the piece it replaces); the originals die.

// CHECK-LABEL: func.func @heads
// CHECK-COUNT-3: graph.fusion -> (tensor<2x4x8x4xf32>) {
// CHECK-NEXT: graph.broadcast %arg1
// CHECK-NEXT: graph.add %arg0
// CHECK-NEXT: graph.split
// CHECK-NEXT: graph.reshape
// CHECK-NEXT: graph.transpose
// CHECK-NEXT: graph.yield
// CHECK-NOT: graph.fusion
// CHECK-NOT: graph.split
// CHECK: return
func.func @heads(%x: tensor<2x8x48xf32>, %b: tensor<48xf32>) -> (tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>) {
  %bb = graph.broadcast %b : tensor<48xf32> -> tensor<2x8x48xf32>
  %s = graph.add %x, %bb : tensor<2x8x48xf32>
  %q, %k, %v = graph.split %s {axis = 2 : i64} : tensor<2x8x48xf32> -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
  %q4 = graph.reshape %q : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
  %k4 = graph.reshape %k : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
  %v4 = graph.reshape %v : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
  %qt = graph.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %kt = graph.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %vt = graph.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  return %qt, %kt, %vt : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>
}

// -----

// An expensive producer read through a broadcast would be recomputed per
// element: it stays outside, and so does one that is also used before the
// region (it cannot be yielded there). A residual add used elsewhere is
// not duplicated: the region would read two streams for one.

// CHECK-LABEL: func.func @not_recomputed
// CHECK: %[[E:.*]] = graph.exp %arg1 : tensor<8xf32>
// CHECK: graph.fusion
// CHECK: graph.broadcast %[[E]]
// CHECK: graph.yield
// CHECK-LABEL: func.func @used_before
// CHECK: %[[T:.*]] = graph.tanh %arg0
// CHECK: graph.reduce sum %[[T]]
// CHECK: graph.fusion
// CHECK-NOT: graph.tanh
// CHECK: graph.yield
// CHECK-LABEL: func.func @residual
// CHECK: %[[R:.*]] = graph.add %arg0, %arg1
// CHECK: graph.reduce sum %[[R]]
// CHECK-NOT: graph.fusion
func.func @not_recomputed(%x: tensor<4x8xf32>, %v: tensor<8xf32>) -> tensor<4x8xf32> {
  %e = graph.exp %v : tensor<8xf32>
  %be = graph.broadcast %e : tensor<8xf32> -> tensor<4x8xf32>
  %m = graph.mul %x, %be : tensor<4x8xf32>
  %n = graph.neg %m : tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}
func.func @used_before(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  %t = graph.tanh %x : tensor<4x8xf32>
  %r = graph.reduce sum %t {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  %n = graph.neg %t : tensor<4x8xf32>
  %m = graph.exp %n : tensor<4x8xf32>
  return %m, %r : tensor<4x8xf32>, tensor<8xf32>
}
func.func @residual(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  %r = graph.add %x, %y : tensor<4x8xf32>
  %s = graph.reduce sum %r {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  %n = graph.neg %r : tensor<4x8xf32>
  return %n, %s : tensor<4x8xf32>, tensor<8xf32>
}

// -----

// Producers into reductions: a residual add and its bias add feed a layer
// norm (one region, the residual sum yielded for its later use); the sum of
// two gradients feeds a bias-gradient sum (the sum yielded for the matmul
// after it).

// CHECK-LABEL: func.func @residual_norm
// CHECK: %[[F:.*]]:2 = graph.fusion -> (tensor<4x8xf32>, tensor<4x8xf32>) {
// CHECK-NEXT: %[[H:.*]] = graph.add %arg0, %arg1
// CHECK-NEXT: graph.broadcast %arg2
// CHECK-NEXT: %[[HB:.*]] = graph.add %[[H]]
// CHECK-NEXT: %[[Y:.*]] = graph.layer_norm %[[HB]], %arg3, %arg4
// CHECK-NEXT: graph.yield %[[Y]], %[[HB]]
// CHECK: return %[[F]]#0, %[[F]]#1
func.func @residual_norm(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>, %b: tensor<8xf32>, %g: tensor<8xf32>, %beta: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %h = graph.add %x, %r : tensor<4x8xf32>
  %bb = graph.broadcast %b : tensor<8xf32> -> tensor<4x8xf32>
  %hb = graph.add %h, %bb : tensor<4x8xf32>
  %y = graph.layer_norm %hb, %g, %beta : tensor<4x8xf32>, tensor<8xf32>
  return %y, %hb : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @gradient_sum_bias
// CHECK: %[[F:.*]]:2 = graph.fusion -> (tensor<8xf32>, tensor<4x8xf32>) {
// CHECK-NEXT: %[[D:.*]] = graph.add %arg0, %arg1
// CHECK-NEXT: %[[S:.*]] = graph.reduce sum %[[D]]
// CHECK-NEXT: graph.yield %[[S]], %[[D]]
// CHECK: graph.matmul %[[F]]#1
func.func @gradient_sum_bias(%dy: tensor<4x8xf32>, %dr: tensor<4x8xf32>, %w: tensor<8x3xf32>) -> (tensor<8xf32>, tensor<4x3xf32>) {
  %d = graph.add %dy, %dr : tensor<4x8xf32>
  %s = graph.reduce sum %d {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  %m = graph.matmul %d, %w : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  return %s, %m : tensor<8xf32>, tensor<4x3xf32>
}

// -----

// What stays out of an anchor's region: an expensive producer of a layer
// norm, which reads each element three times (the exp stays a kernel of its
// own); a broadcast, a GELU's gradient (expensive) or a transpose into a
// sum over the leading dims, which walks columns (cheap producers that read
// at their own index, as the negation and the add, do join).

// CHECK-LABEL: func.func @expensive_into_norm
// CHECK-NOT: graph.fusion
// CHECK: %[[E:.*]] = graph.exp %arg0
// CHECK-NEXT: graph.layer_norm %[[E]]
// CHECK-LABEL: func.func @broadcast_into_sum
// CHECK: %[[B:.*]] = graph.broadcast %arg0
// CHECK-NEXT: graph.fusion -> (tensor<8xf32>) {
// CHECK-NEXT: graph.neg %[[B]]
// CHECK-NEXT: graph.reduce sum
// CHECK-LABEL: func.func @expensive_into_column_sum
// CHECK-NOT: graph.fusion
// CHECK: %[[D:.*]] = graph.gelu_grad %arg0, %arg1
// CHECK-NEXT: graph.reduce sum %[[D]]
// CHECK-LABEL: func.func @transpose_into_column_sum
// CHECK: %[[T:.*]] = graph.transpose %arg0
// CHECK-NEXT: graph.fusion
// CHECK-NEXT: graph.add %[[T]], %arg1
func.func @expensive_into_norm(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %beta: tensor<8xf32>) -> tensor<4x8xf32> {
  %e = graph.exp %x : tensor<4x8xf32>
  %y = graph.layer_norm %e, %g, %beta : tensor<4x8xf32>, tensor<8xf32>
  return %y : tensor<4x8xf32>
}
func.func @broadcast_into_sum(%b: tensor<8xf32>) -> tensor<8xf32> {
  %bb = graph.broadcast %b : tensor<8xf32> -> tensor<4x8xf32>
  %n = graph.neg %bb : tensor<4x8xf32>
  %s = graph.reduce sum %n {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  return %s : tensor<8xf32>
}
func.func @expensive_into_column_sum(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>) -> tensor<8xf32> {
  %d = graph.gelu_grad %dy, %x : tensor<4x8xf32>
  %s = graph.reduce sum %d {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  return %s : tensor<8xf32>
}
func.func @transpose_into_column_sum(%a: tensor<8x4xf32>, %b: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<4x8xf32>) {
  %t = graph.transpose %a {perm = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
  %d = graph.add %t, %b : tensor<4x8xf32>
  %s = graph.reduce sum %d {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  return %s, %d : tensor<8xf32>, tensor<4x8xf32>
}

// -----

// The cross-entropy and its gradient are anchors on their logits: a cast up
// from bf16 read by both is computed in each of their kernels, so only the
// bf16 logits live on to the backward.
// CHECK-LABEL: func.func @logits_cast_into_both_losses
func.func @logits_cast_into_both_losses(%logits: tensor<4x16xbf16>, %y: tensor<4xi32>, %seed: tensor<f32>) -> (tensor<f32>, tensor<4x16xf32>) {
  // CHECK-NOT: graph.cast
  // CHECK: graph.fusion -> (tensor<f32>) {
  // CHECK-NEXT: graph.cast %{{.*}} : tensor<4x16xbf16> -> tensor<4x16xf32>
  // CHECK-NEXT: graph.cross_entropy
  // CHECK: graph.fusion -> (tensor<4x16xf32>) {
  // CHECK-NEXT: graph.cast %{{.*}} : tensor<4x16xbf16> -> tensor<4x16xf32>
  // CHECK-NEXT: graph.cross_entropy_grad
  %wide = graph.cast %logits : tensor<4x16xbf16> -> tensor<4x16xf32>
  %loss = graph.cross_entropy %wide, %y : tensor<4x16xf32>, tensor<4xi32> -> tensor<f32>
  %grad = graph.cross_entropy_grad %seed, %wide, %y : tensor<f32>, tensor<4x16xf32>, tensor<4xi32>
  return %loss, %grad : tensor<f32>, tensor<4x16xf32>
}
