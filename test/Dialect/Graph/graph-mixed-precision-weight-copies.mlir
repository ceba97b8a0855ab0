// RUN: kiln-opt %s -graph-mixed-precision=policy=bf16 -split-input-file | FileCheck %s
// RUN: kiln-opt %s -graph-mixed-precision=policy=fp16 -split-input-file | FileCheck %s --check-prefix=F16
// RUN: kiln-opt %s -graph-mixed-precision="policy=bf16 weight-copies=false" -split-input-file | FileCheck %s --check-prefix=CAST

// A training entry that updates its weight reads the weight's bf16 copy, a
// state with the initializer `rounded`, instead of casting it; it returns
// the updated weight rounded as the copy's next value. The bias, read by
// an f32 add, has no copy. The update reads the f32 master weight.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[^:]*]]: tensor<16x4xf32> {graph.init = {kind = "normal", std = 1.000000e-01 : f64}, graph.param = "w"}
// CHECK-SAME: %[[COPY:[^:]*]]: tensor<16x4xbf16> {graph.init = {kind = "rounded"}, graph.state = "w.bf16"}
// CHECK-SAME: {graph.update = "w.bf16"}
// CHECK-NOT: graph.cast %[[W]]
// CHECK: graph.matmul %{{.*}}, %[[COPY]] : tensor<8x16xbf16>, tensor<16x4xbf16> -> tensor<8x4xbf16>
// CHECK: %[[NEW:.*]] = graph.sgd_update %[[W]],
// CHECK: %[[ROUNDED:.*]] = graph.cast %[[NEW]] : tensor<16x4xf32> -> tensor<16x4xbf16>
// CHECK: return %{{.*}}, %[[NEW]], %{{.*}}, %[[ROUNDED]]
// F16-LABEL: func.func @train_step
// F16-SAME: tensor<16x4xf16> {graph.init = {kind = "rounded"}, graph.state = "w.fp16"}
// CAST-LABEL: func.func @train_step
// CAST-NOT: rounded
// CAST: graph.cast %arg1 : tensor<16x4xf32> -> tensor<16x4xbf16>
// CAST-NOT: rounded
func.func @train_step(%x: tensor<8x16xf32> {graph.input = "x"},
                      %w: tensor<16x4xf32> {graph.param = "w", graph.init = {kind = "normal", std = 0.1 : f64}},
                      %b: tensor<4xf32> {graph.param = "b", graph.init = {kind = "zeros"}},
                      %lr: tensor<f32> {graph.state = "lr", graph.init = {kind = "zeros"}})
    -> (tensor<8x4xf32> {graph.output = "y"}, tensor<16x4xf32> {graph.update = "w"},
        tensor<4xf32> {graph.update = "b"}) {
  %y = graph.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  %bb = graph.broadcast %b : tensor<4xf32> -> tensor<8x4xf32>
  %z = graph.add %y, %bb : tensor<8x4xf32>
  %w1 = graph.sgd_update %w, %w, %lr, %lr {weight_decay = 0.000000e+00 : f64} : tensor<16x4xf32>, tensor<f32>
  %b1 = graph.sgd_update %b, %b, %lr, %lr {weight_decay = 0.000000e+00 : f64} : tensor<4xf32>, tensor<f32>
  return %z, %w1, %b1 : tensor<8x4xf32>, tensor<16x4xf32>, tensor<4xf32>
}

// -----

// Gradient accumulation: @accumulate_step reads the copy (it accumulates
// w's gradient), @apply_step writes it (it updates w).
// CHECK-LABEL: func.func @accumulate_step
// CHECK-SAME: %[[COPY:[^:]*]]: tensor<16x4xbf16> {graph.init = {kind = "rounded"}, graph.state = "w.bf16"}
// CHECK: graph.matmul %{{.*}}, %[[COPY]]
// CHECK-LABEL: func.func @apply_step
// CHECK-SAME: tensor<16x4xbf16> {graph.init = {kind = "rounded"}, graph.state = "w.bf16"}
// CHECK-SAME: tensor<16x4xbf16> {graph.update = "w.bf16"}
// CHECK: %[[NEW:.*]] = graph.sgd_update
// CHECK: %[[ROUNDED:.*]] = graph.cast %[[NEW]] : tensor<16x4xf32> -> tensor<16x4xbf16>
// CHECK: return %[[NEW]], %[[ROUNDED]]
func.func @accumulate_step(%x: tensor<8x16xf32> {graph.input = "x"},
                           %w: tensor<16x4xf32> {graph.param = "w", graph.init = {kind = "zeros"}},
                           %acc: tensor<16x4xf32> {graph.state = "w.grad_acc", graph.init = {kind = "zeros"}})
    -> (tensor<8x4xf32> {graph.output = "y"}, tensor<16x4xf32> {graph.update = "w.grad_acc"}) {
  %y = graph.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  %a = graph.add %acc, %acc : tensor<16x4xf32>
  return %y, %a : tensor<8x4xf32>, tensor<16x4xf32>
}
func.func @apply_step(%w: tensor<16x4xf32> {graph.param = "w", graph.init = {kind = "zeros"}},
                      %acc: tensor<16x4xf32> {graph.state = "w.grad_acc", graph.init = {kind = "zeros"}},
                      %lr: tensor<f32> {graph.state = "lr", graph.init = {kind = "zeros"}})
    -> (tensor<16x4xf32> {graph.update = "w"}) {
  %w1 = graph.sgd_update %w, %acc, %lr, %lr {weight_decay = 0.000000e+00 : f64} : tensor<16x4xf32>, tensor<f32>
  return %w1 : tensor<16x4xf32>
}
