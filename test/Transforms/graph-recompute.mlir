// RUN: kiln-opt %s -split-input-file -graph-train-step -graph-recompute=budget=1500000 | FileCheck %s
// RUN: kiln-opt %s -split-input-file -graph-train-step -graph-recompute="budget=1500000 solver=greedy" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -graph-train-step -graph-recompute="budget=1500000 solver=exact" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -graph-train-step=accumulate=2 -graph-recompute=budget=1700000 | FileCheck %s --check-prefix=ACC
// RUN: kiln-opt %s -split-input-file -graph-train-step -graph-recompute=budget=1751232 | FileCheck %s --check-prefix=FITS
// RUN: kiln-opt %s -split-input-file -graph-train-step | FileCheck %s --check-prefix=FITS

// A three-layer tanh MLP whose activations (256 KiB each) outweigh its
// weights. The step's estimated peak is 1751232 bytes; at 1500000 the first
// hidden layer is not kept: its matmul and tanh are cloned into the backward
// just before the weight gradient that needs them (the cheapest way to free
// 256 KiB, 2 x 512 x 16 x 128 + 512 x 128 FLOPs), and the saved tanh output
// dies in the forward.
module attributes {graph.train = {optimizer = {name = "sgd", lr = 0.1 : f64}, steps = 10 : i64}} {
  func.func @forward(%x: tensor<512x16xf32> {graph.input = "x"}, %y: tensor<512xi32> {graph.input = "y"},
                     %w1: tensor<16x128xf32> {graph.param = "w1", graph.init = {kind = "normal", std = 0.05 : f64}},
                     %w2: tensor<128x128xf32> {graph.param = "w2", graph.init = {kind = "normal", std = 0.05 : f64}},
                     %w3: tensor<128x128xf32> {graph.param = "w3", graph.init = {kind = "normal", std = 0.05 : f64}},
                     %w4: tensor<128x4xf32> {graph.param = "w4", graph.init = {kind = "normal", std = 0.05 : f64}})
      -> (tensor<f32> {graph.output = "loss", graph.loss}) {
    %0 = graph.matmul %x, %w1 : tensor<512x16xf32>, tensor<16x128xf32> -> tensor<512x128xf32>
    %1 = graph.tanh %0 : tensor<512x128xf32>
    %2 = graph.matmul %1, %w2 : tensor<512x128xf32>, tensor<128x128xf32> -> tensor<512x128xf32>
    %3 = graph.tanh %2 : tensor<512x128xf32>
    %4 = graph.matmul %3, %w3 : tensor<512x128xf32>, tensor<128x128xf32> -> tensor<512x128xf32>
    %5 = graph.tanh %4 : tensor<512x128xf32>
    %6 = graph.matmul %5, %w4 : tensor<512x128xf32>, tensor<128x4xf32> -> tensor<512x4xf32>
    %7 = graph.cross_entropy %6, %y : tensor<512x4xf32>, tensor<512xi32> -> tensor<f32>
    return %7 : tensor<f32>
  }
}

// CHECK: module attributes {{{.*}}graph.recompute_flops = 2162688 : i64
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<512x16xf32>
// CHECK-SAME: %[[W1:[a-z0-9]+]]: tensor<16x128xf32>
// CHECK-SAME: %[[W2:[a-z0-9]+]]: tensor<128x128xf32>
// The forward, unchanged: its first tanh now feeds only the next matmul.
// CHECK: %[[H1:.*]] = graph.tanh %{{.*}} : tensor<512x128xf32>
// CHECK-NEXT: graph.matmul %[[H1]], %[[W2]] :
// CHECK: graph.cross_entropy
// The backward up to the gradient that flows into layer 1.
// CHECK: %[[DH1:.*]] = graph.matmul %{{.*}}, %[[W2]] {transpose_rhs}
// CHECK-NEXT: %[[PRE:.*]] = graph.matmul %[[X]], %[[W1]] {graph.recomputed}
// CHECK-NEXT: %[[H1R:.*]] = graph.tanh %[[PRE]] {graph.recomputed}
// CHECK-NEXT: graph.matmul %[[H1R]], %{{.*}} {transpose_lhs}
// CHECK-NEXT: graph.mul %[[H1R]], %[[H1R]]
// CHECK-NOT: graph.recomputed
// CHECK-NOT: %[[H1]]{{[^0-9]}}
// CHECK: return

// With accumulation the entry is @accumulate_step (its accumulators make the
// peak 1892416 bytes).
// ACC: graph.recompute_flops = 2162688 : i64
// ACC-LABEL: func.func @accumulate_step
// ACC: graph.cross_entropy
// ACC: %[[PRE:.*]] = graph.matmul %{{.*}}, %{{.*}} {graph.recomputed}
// ACC-NEXT: graph.tanh %[[PRE]] {graph.recomputed}
// ACC-LABEL: func.func @apply_step
// ACC-NOT: graph.recomputed

// FITS-NOT: graph.recompute_flops
// FITS-NOT: graph.recomputed
