// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// Every graph op, printed and parsed back.

// CHECK-LABEL: func.func @constant
func.func @constant() -> (tensor<f32>, tensor<2xi32>) {
  // CHECK: %[[HALF:.*]] = graph.constant dense<5.000000e-01> : tensor<f32>
  %0 = graph.constant dense<5.000000e-01> : tensor<f32>
  // CHECK: %[[IDS:.*]] = graph.constant dense<[1, 2]> : tensor<2xi32>
  %1 = graph.constant dense<[1, 2]> : tensor<2xi32>
  // CHECK: return %[[HALF]], %[[IDS]]
  return %0, %1 : tensor<f32>, tensor<2xi32>
}

// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
func.func @unary(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[NEG:.*]] = graph.neg %[[X]] : tensor<4x8xf32>
  // CHECK: %[[EXP:.*]] = graph.exp %[[NEG]] : tensor<4x8xf32>
  // CHECK: %[[LOG:.*]] = graph.log %[[EXP]] : tensor<4x8xf32>
  // CHECK: %[[TANH:.*]] = graph.tanh %[[LOG]] : tensor<4x8xf32>
  // CHECK: %[[SQRT:.*]] = graph.sqrt %[[TANH]] : tensor<4x8xf32>
  // CHECK: %[[RSQRT:.*]] = graph.rsqrt %[[SQRT]] : tensor<4x8xf32>
  // CHECK: %[[RELU:.*]] = graph.relu %[[RSQRT]] : tensor<4x8xf32>
  // CHECK: %[[GELU:.*]] = graph.gelu %[[RELU]] : tensor<4x8xf32>
  // CHECK: %[[SIGMOID:.*]] = graph.sigmoid %[[GELU]] : tensor<4x8xf32>
  // CHECK: %[[SILU:.*]] = graph.silu %[[SIGMOID]] : tensor<4x8xf32>
  // CHECK: %[[ABS:.*]] = graph.abs %[[SILU]] : tensor<4x8xf32>
  // CHECK: %[[SIN:.*]] = graph.sin %[[ABS]] : tensor<4x8xf32>
  // CHECK: %[[COS:.*]] = graph.cos %[[SIN]] : tensor<4x8xf32>
  // CHECK: %[[ERF:.*]] = graph.erf %[[COS]] : tensor<4x8xf32>
  // CHECK: return %[[ERF]]
  %0 = graph.neg %x : tensor<4x8xf32>
  %1 = graph.exp %0 : tensor<4x8xf32>
  %2 = graph.log %1 : tensor<4x8xf32>
  %3 = graph.tanh %2 : tensor<4x8xf32>
  %4 = graph.sqrt %3 : tensor<4x8xf32>
  %5 = graph.rsqrt %4 : tensor<4x8xf32>
  %6 = graph.relu %5 : tensor<4x8xf32>
  %7 = graph.gelu %6 : tensor<4x8xf32>
  %8 = graph.sigmoid %7 : tensor<4x8xf32>
  %9 = graph.silu %8 : tensor<4x8xf32>
  %10 = graph.abs %9 : tensor<4x8xf32>
  %11 = graph.sin %10 : tensor<4x8xf32>
  %12 = graph.cos %11 : tensor<4x8xf32>
  %13 = graph.erf %12 : tensor<4x8xf32>
  return %13 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @if_training
func.func @if_training(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: graph.if_training %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %0 = graph.if_training %a, %b : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @compare_select
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<4x8xf32>)
func.func @compare_select(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[LT:.*]] = graph.compare lt %[[A]], %[[B]] : tensor<4x8xf32>
  // CHECK: %[[NE:.*]] = graph.compare ne %[[LT]], %[[B]] : tensor<4x8xf32>
  // CHECK: %[[S:.*]] = graph.select %[[NE]], %[[A]], %[[B]] : tensor<4x8xf32>
  // CHECK: return %[[S]]
  %0 = graph.compare lt %a, %b : tensor<4x8xf32>
  %1 = graph.compare ne %0, %b : tensor<4x8xf32>
  %2 = graph.select %1, %a, %b : tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @binary
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xbf16>, %[[B:.*]]: tensor<4x8xbf16>)
func.func @binary(%a: tensor<4x8xbf16>, %b: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  // CHECK: %[[ADD:.*]] = graph.add %[[A]], %[[B]] : tensor<4x8xbf16>
  // CHECK: %[[SUB:.*]] = graph.sub %[[ADD]], %[[B]] : tensor<4x8xbf16>
  // CHECK: %[[MUL:.*]] = graph.mul %[[SUB]], %[[A]] : tensor<4x8xbf16>
  // CHECK: %[[DIV:.*]] = graph.div %[[MUL]], %[[B]] : tensor<4x8xbf16>
  // CHECK: %[[POW:.*]] = graph.pow %[[DIV]], %[[A]] : tensor<4x8xbf16>
  // CHECK: %[[MAX:.*]] = graph.maximum %[[POW]], %[[B]] : tensor<4x8xbf16>
  // CHECK: %[[MIN:.*]] = graph.minimum %[[MAX]], %[[A]] : tensor<4x8xbf16>
  // CHECK: return %[[MIN]]
  %0 = graph.add %a, %b : tensor<4x8xbf16>
  %1 = graph.sub %0, %b : tensor<4x8xbf16>
  %2 = graph.mul %1, %a : tensor<4x8xbf16>
  %3 = graph.div %2, %b : tensor<4x8xbf16>
  %4 = graph.pow %3, %a : tensor<4x8xbf16>
  %5 = graph.maximum %4, %b : tensor<4x8xbf16>
  %6 = graph.minimum %5, %a : tensor<4x8xbf16>
  return %6 : tensor<4x8xbf16>
}

// CHECK-LABEL: func.func @matmul
func.func @matmul(%x: tensor<32x64x128xf32>, %w: tensor<128x384xf32>,
                  %q: tensor<2x4x64x32xf32>, %k: tensor<2x4x64x32xf32>)
    -> (tensor<32x64x384xf32>, tensor<2x4x64x64xf32>, tensor<2x4x32x32xf32>) {
  // CHECK: graph.matmul %{{.*}}, %{{.*}} : tensor<32x64x128xf32>, tensor<128x384xf32> -> tensor<32x64x384xf32>
  %0 = graph.matmul %x, %w : tensor<32x64x128xf32>, tensor<128x384xf32> -> tensor<32x64x384xf32>
  // CHECK: graph.matmul %{{.*}}, %{{.*}} {transpose_rhs} : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x64xf32>
  %1 = graph.matmul %q, %k {transpose_rhs} : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x64xf32>
  // CHECK: graph.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x32x32xf32>
  %2 = graph.matmul %q, %k {transpose_lhs} : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x32x32xf32>
  return %0, %1, %2 : tensor<32x64x384xf32>, tensor<2x4x64x64xf32>, tensor<2x4x32x32xf32>
}

// CHECK-LABEL: func.func @matmul_batch_broadcast
func.func @matmul_batch_broadcast(%a: tensor<3x1x4x8xf32>, %b: tensor<5x8x2xf32>) -> tensor<3x5x4x2xf32> {
  // CHECK: graph.matmul {{.*}} -> tensor<3x5x4x2xf32>
  %0 = graph.matmul %a, %b : tensor<3x1x4x8xf32>, tensor<5x8x2xf32> -> tensor<3x5x4x2xf32>
  return %0 : tensor<3x5x4x2xf32>
}

// CHECK-LABEL: func.func @shapes
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[BIAS:.*]]: tensor<8xf32>)
func.func @shapes(%x: tensor<4x8xf32>, %bias: tensor<8xf32>)
    -> (tensor<2x4x8xf32>, tensor<4xf32>, tensor<4x1xf32>, tensor<f32>,
        tensor<2x16xf32>, tensor<8x4xf32>, tensor<4x3xf32>) {
  // CHECK: %[[B:.*]] = graph.broadcast %[[BIAS]] : tensor<8xf32> -> tensor<2x4x8xf32>
  %0 = graph.broadcast %bias : tensor<8xf32> -> tensor<2x4x8xf32>
  // CHECK: %[[S:.*]] = graph.reduce sum %[[X]] {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
  %1 = graph.reduce sum %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
  // CHECK: %[[M:.*]] = graph.reduce max %[[X]] {axes = array<i64: 1>, keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
  %2 = graph.reduce max %x {axes = array<i64: 1>, keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
  // CHECK: %[[MEAN:.*]] = graph.reduce mean %[[X]] {axes = array<i64: 0, 1>} : tensor<4x8xf32> -> tensor<f32>
  %3 = graph.reduce mean %x {axes = array<i64: 0, 1>} : tensor<4x8xf32> -> tensor<f32>
  // CHECK: %[[R:.*]] = graph.reshape %[[X]] : tensor<4x8xf32> -> tensor<2x16xf32>
  %4 = graph.reshape %x : tensor<4x8xf32> -> tensor<2x16xf32>
  // CHECK: %[[T:.*]] = graph.transpose %[[X]] {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %5 = graph.transpose %x {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  // CHECK: %[[SL:.*]] = graph.slice %[[X]] {offsets = array<i64: 0, 5>} : tensor<4x8xf32> -> tensor<4x3xf32>
  %6 = graph.slice %x {offsets = array<i64: 0, 5>} : tensor<4x8xf32> -> tensor<4x3xf32>
  // CHECK: return %[[B]], %[[S]], %[[M]], %[[MEAN]], %[[R]], %[[T]], %[[SL]]
  return %0, %1, %2, %3, %4, %5, %6 : tensor<2x4x8xf32>, tensor<4xf32>, tensor<4x1xf32>, tensor<f32>, tensor<2x16xf32>, tensor<8x4xf32>, tensor<4x3xf32>
}

// CHECK-LABEL: func.func @concat_split
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<4x2xf32>)
func.func @concat_split(%a: tensor<4x8xf32>, %b: tensor<4x2xf32>)
    -> (tensor<4x3xf32>, tensor<4x7xf32>) {
  // CHECK: %[[C:.*]] = graph.concat %[[A]], %[[B]] {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x10xf32>
  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x10xf32>
  // CHECK: %[[P:.*]]:2 = graph.split %[[C]] {axis = 1 : i64} : tensor<4x10xf32> -> (tensor<4x3xf32>, tensor<4x7xf32>)
  %1:2 = graph.split %0 {axis = 1 : i64} : tensor<4x10xf32> -> (tensor<4x3xf32>, tensor<4x7xf32>)
  // CHECK: return %[[P]]#0, %[[P]]#1
  return %1#0, %1#1 : tensor<4x3xf32>, tensor<4x7xf32>
}

// CHECK-LABEL: func.func @nn
func.func @nn(%wte: tensor<256x128xf32>, %tokens: tensor<32x64xi32>,
              %g: tensor<128xf32>, %b: tensor<128xf32>, %targets: tensor<32x64xi64>)
    -> (tensor<32x64x128xf32>, tensor<32x64x128xf32>, tensor<32x64x256xf32>, tensor<f32>) {
  // CHECK: %[[E:.*]] = graph.embedding %{{.*}}, %{{.*}} : tensor<256x128xf32>, tensor<32x64xi32> -> tensor<32x64x128xf32>
  %e = graph.embedding %wte, %tokens : tensor<256x128xf32>, tensor<32x64xi32> -> tensor<32x64x128xf32>
  // CHECK: %[[LN:.*]] = graph.layer_norm %[[E]], %{{.*}}, %{{.*}} {eps = 1.250000e-01 : f64} : tensor<32x64x128xf32>, tensor<128xf32>
  %ln = graph.layer_norm %e, %g, %b {eps = 0.125 : f64} : tensor<32x64x128xf32>, tensor<128xf32>
  // CHECK: %[[D:.*]] = graph.dropout %[[LN]] {rate = 1.000000e-01 : f64, stream = 3 : i64} : tensor<32x64x128xf32>
  %d = graph.dropout %ln {rate = 1.0e-1 : f64, stream = 3 : i64} : tensor<32x64x128xf32>
  // CHECK: %[[LOGITS:.*]] = graph.matmul %[[D]], %{{.*}} {transpose_rhs}
  %logits = graph.matmul %d, %wte {transpose_rhs} : tensor<32x64x128xf32>, tensor<256x128xf32> -> tensor<32x64x256xf32>
  // CHECK: %[[P:.*]] = graph.softmax %[[LOGITS]] {axis = 2 : i64} : tensor<32x64x256xf32>
  %p = graph.softmax %logits {axis = 2 : i64} : tensor<32x64x256xf32>
  // CHECK: %[[L:.*]] = graph.cross_entropy %[[LOGITS]], %{{.*}} {label_smoothing = 1.000000e-01 : f64} : tensor<32x64x256xf32>, tensor<32x64xi64> -> tensor<f32>
  %l = graph.cross_entropy %logits, %targets {label_smoothing = 1.0e-1 : f64} : tensor<32x64x256xf32>, tensor<32x64xi64> -> tensor<f32>
  // CHECK: return %[[E]], %[[D]], %[[P]], %[[L]]
  return %e, %d, %p, %l : tensor<32x64x128xf32>, tensor<32x64x128xf32>, tensor<32x64x256xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x64x32xf32>, %[[K:.*]]: tensor<2x4x48x32xf32>, %[[V:.*]]: tensor<2x4x48x16xf32>, %[[S:.*]]: tensor<2x4x64x32xf32>)
func.func @attention(%q: tensor<2x4x64x32xf32>, %k: tensor<2x4x48x32xf32>,
                     %v: tensor<2x4x48x16xf32>, %s: tensor<2x4x64x32xf32>)
    -> (tensor<2x4x64x16xf32>, tensor<2x4x64x32xf32>) {
  // CHECK: %[[A:.*]] = graph.attention %[[Q]], %[[K]], %[[V]] {scale = 2.500000e-01 : f64} : tensor<2x4x64x32xf32>, tensor<2x4x48x32xf32>, tensor<2x4x48x16xf32> -> tensor<2x4x64x16xf32>
  %0 = graph.attention %q, %k, %v {scale = 0.25 : f64} : tensor<2x4x64x32xf32>, tensor<2x4x48x32xf32>, tensor<2x4x48x16xf32> -> tensor<2x4x64x16xf32>
  // CHECK: %[[C:.*]] = graph.attention %[[S]], %[[S]], %[[S]] {causal} : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x32xf32>
  %1 = graph.attention %s, %s, %s {causal} : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x32xf32>
  // CHECK: return %[[A]], %[[C]]
  return %0, %1 : tensor<2x4x64x16xf32>, tensor<2x4x64x32xf32>
}

// An additive mask: per key and batch ([B, 1, 1, Tk]), or shared ([Tq, Tk]).
// CHECK-LABEL: func.func @attention_mask
func.func @attention_mask(%s: tensor<2x4x64x32xf32>, %pad: tensor<2x1x1x64xf32>,
                          %bias: tensor<64x64xf32>)
    -> (tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>) {
  // CHECK: graph.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<2x1x1x64xf32>) : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x32xf32>
  %0 = graph.attention %s, %s, %s mask(%pad : tensor<2x1x1x64xf32>) : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x32xf32>
  // CHECK: graph.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<64x64xf32>) {causal} : tensor<2x4x64x32xf32>
  %1 = graph.attention %s, %s, %s mask(%bias : tensor<64x64xf32>) {causal} : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x32xf32>
  return %0, %1 : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>
}

// CHECK-LABEL: func.func @cast
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
func.func @cast(%x: tensor<4x8xf32>) -> (tensor<4x8xbf16>, tensor<4x8xi32>) {
  // CHECK: %[[H:.*]] = graph.cast %[[X]] : tensor<4x8xf32> -> tensor<4x8xbf16>
  %0 = graph.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
  // CHECK: %[[I:.*]] = graph.cast %[[H]] : tensor<4x8xbf16> -> tensor<4x8xi32>
  %1 = graph.cast %0 : tensor<4x8xbf16> -> tensor<4x8xi32>
  // CHECK: return %[[H]], %[[I]]
  return %0, %1 : tensor<4x8xbf16>, tensor<4x8xi32>
}

// -----

// CHECK-LABEL: func.func @indices
func.func @indices(%x: tensor<4x8xf32>, %y: tensor<4xi32>) -> (tensor<4xi32>, tensor<4x8xf32>) {
  // CHECK: graph.argmax %{{.*}} {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4xi32>
  %0 = graph.argmax %x {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4xi32>
  // CHECK: graph.one_hot %{{.*}} : tensor<4xi32> -> tensor<4x8xf32>
  %1 = graph.one_hot %y : tensor<4xi32> -> tensor<4x8xf32>
  return %0, %1 : tensor<4xi32>, tensor<4x8xf32>
}
