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
// norm (one region, the residual sum yielded for its later use); a GELU's
// gradient feeds its bias-gradient sum (the gradient yielded for the
// matmul after it).

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

// CHECK-LABEL: func.func @gelu_grad_bias_sum
// CHECK: %[[F:.*]]:2 = graph.fusion -> (tensor<8xf32>, tensor<4x8xf32>) {
// CHECK-NEXT: %[[D:.*]] = graph.gelu_grad %arg0, %arg1
// CHECK-NEXT: %[[S:.*]] = graph.reduce sum %[[D]]
// CHECK-NEXT: graph.yield %[[S]], %[[D]]
// CHECK: graph.matmul %[[F]]#1
func.func @gelu_grad_bias_sum(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %w: tensor<8x3xf32>) -> (tensor<8xf32>, tensor<4x3xf32>) {
  %d = graph.gelu_grad %dy, %x : tensor<4x8xf32>
  %s = graph.reduce sum %d {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  %m = graph.matmul %d, %w : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  return %s, %m : tensor<8xf32>, tensor<4x3xf32>
}

// -----

// What stays out of an anchor's region: an expensive producer of a layer
// norm, which reads each element three times (the exp stays a kernel of its
// own); a reduction fed only through a broadcast (nothing to save: the
// broadcast and the negation fuse on their own, the sum reads their result).

// CHECK-LABEL: func.func @expensive_into_norm
// CHECK-NOT: graph.fusion
// CHECK: %[[E:.*]] = graph.exp %arg0
// CHECK-NEXT: graph.layer_norm %[[E]]
// CHECK-LABEL: func.func @broadcast_into_sum
// CHECK: %[[F:.*]] = graph.fusion -> (tensor<4x8xf32>) {
// CHECK: graph.yield
// CHECK-NEXT: }
// CHECK-NEXT: graph.reduce sum %[[F]]
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

// -----

// Data movement moves past a concat: the gradients of q, k and v, turned
// from heads to rows and joined, become one concat in the head layout and
// one transpose and reshape, which fuse into the bias-gradient sum (and are
// yielded for the matmul).

// CHECK-LABEL: func.func @heads_concat
// CHECK: %[[C:.*]] = graph.concat %arg0, %arg1, %arg2 {axis = 1 : i64} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) -> tensor<2x12x3x8xf32>
// CHECK: %[[F:.*]]:2 = graph.fusion -> (tensor<96xf32>, tensor<2x3x96xf32>) {
// CHECK-NEXT: %[[T:.*]] = graph.transpose %[[C]] {perm = array<i64: 0, 2, 1, 3>} : tensor<2x12x3x8xf32> -> tensor<2x3x12x8xf32>
// CHECK-NEXT: %[[R:.*]] = graph.reshape %[[T]] : tensor<2x3x12x8xf32> -> tensor<2x3x96xf32>
// CHECK-NEXT: %[[S:.*]] = graph.reduce sum %[[R]]
// CHECK-NEXT: graph.yield %[[S]], %[[R]]
// CHECK: graph.matmul %[[F]]#1
func.func @heads_concat(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x3x8xf32>, %v: tensor<2x4x3x8xf32>, %w: tensor<96x5xf32>) -> (tensor<96xf32>, tensor<2x3x5xf32>) {
  %tq = graph.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32> -> tensor<2x3x4x8xf32>
  %rq = graph.reshape %tq : tensor<2x3x4x8xf32> -> tensor<2x3x32xf32>
  %tk = graph.transpose %k {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32> -> tensor<2x3x4x8xf32>
  %rk = graph.reshape %tk : tensor<2x3x4x8xf32> -> tensor<2x3x32xf32>
  %tv = graph.transpose %v {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32> -> tensor<2x3x4x8xf32>
  %rv = graph.reshape %tv : tensor<2x3x4x8xf32> -> tensor<2x3x32xf32>
  %c = graph.concat %rq, %rk, %rv {axis = 2 : i64} : (tensor<2x3x32xf32>, tensor<2x3x32xf32>, tensor<2x3x32xf32>) -> tensor<2x3x96xf32>
  %s = graph.reduce sum %c {axes = array<i64: 0, 1>} : tensor<2x3x96xf32> -> tensor<96xf32>
  %m = graph.matmul %c, %w : tensor<2x3x96xf32>, tensor<96x5xf32> -> tensor<2x3x5xf32>
  return %s, %m : tensor<96xf32>, tensor<2x3x5xf32>
}

// -----

// No hoisting where it would not be exact or would compute twice: two
// permutations; a reshape that splits the concat axis; a transpose also
// used elsewhere.

// CHECK-LABEL: func.func @no_hoist_perms
// CHECK: graph.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x4xf32>
// CHECK-LABEL: func.func @no_hoist_split
// CHECK: graph.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x3x2xf32>, tensor<2x3x2xf32>) -> tensor<2x6x2xf32>
// CHECK-LABEL: func.func @no_hoist_used
// CHECK: graph.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<6x2xf32>
func.func @no_hoist_perms(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> tensor<3x4xf32> {
  %ta = graph.transpose %a {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %tb = graph.transpose %b {perm = array<i64: 0, 1>} : tensor<3x2xf32> -> tensor<3x2xf32>
  %c = graph.concat %ta, %tb {axis = 1 : i64} : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x4xf32>
  return %c : tensor<3x4xf32>
}
func.func @no_hoist_split(%a: tensor<2x6xf32>, %b: tensor<2x6xf32>) -> tensor<2x6x2xf32> {
  %ra = graph.reshape %a : tensor<2x6xf32> -> tensor<2x3x2xf32>
  %rb = graph.reshape %b : tensor<2x6xf32> -> tensor<2x3x2xf32>
  %c = graph.concat %ra, %rb {axis = 1 : i64} : (tensor<2x3x2xf32>, tensor<2x3x2xf32>) -> tensor<2x6x2xf32>
  return %c : tensor<2x6x2xf32>
}
func.func @no_hoist_used(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> (tensor<6x2xf32>, tensor<3x2xf32>) {
  %ta = graph.transpose %a {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %tb = graph.transpose %b {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %c = graph.concat %ta, %tb {axis = 0 : i64} : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<6x2xf32>
  return %c, %ta : tensor<6x2xf32>, tensor<3x2xf32>
}
