// RUN: kiln-opt %s -split-input-file --convert-graph-to-kernel -verify-diagnostics | FileCheck %s

// Training entries: graph.state arguments are optimizer_state buffers, and a
// graph.update result has no output buffer: its value is written into the
// buffer it updates. An elementwise op whose operand is the old value, read
// by nothing later, writes the new value in place (the step count here).
// Zeros (a reset accumulator) become kernel.zero.

// CHECK-LABEL: kernel.entry @accumulate_step
// CHECK-SAME: %[[G:[^:]*]]: memref<4x8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "g"}
// CHECK-SAME: %[[ACC:[^:]*]]: memref<4x8xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "w.grad_acc"}
// CHECK-SAME: %[[STEP:[^:]*]]: memref<f32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "optimizer.step"}
// CHECK-SAME: %[[RESET:[^:]*]]: memref<3xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "b.grad_acc"}
// CHECK-SAME: %[[T:[^:]*]]: memref<f32> {kernel.kind = #kernel.kind<output>, kernel.name = "t"})
// CHECK-NOT: kernel.kind<output>
// CHECK: %[[ACCV:.*]] = kernel.view %[[ACC]] : memref<4x8xf32> -> memref<32xf32>
// CHECK: %[[GV:.*]] = kernel.view %[[G]]
// CHECK: %[[ACCV2:.*]] = kernel.view %[[ACC]] : memref<4x8xf32> -> memref<32xf32>
// CHECK: kernel.launch @{{.*}}(%[[ACCV]], %[[GV]], %[[ACCV2]]) {kernel.origin = "graph.add"}
// CHECK: %[[STEPV:.*]] = kernel.view %[[STEP]] : memref<f32> -> memref<1xf32>
// CHECK: %[[STEPV2:.*]] = kernel.view %[[STEP]] : memref<f32> -> memref<1xf32>
// CHECK: kernel.launch @{{.*}}(%[[STEPV]], %{{.*}}, %[[STEPV2]]) {kernel.origin = "graph.add"}
// CHECK: kernel.copy %[[STEP]], %[[T]] {kernel.origin = "func.return"}
// CHECK-NEXT: kernel.zero %[[RESET]] {kernel.origin = "graph.update"}
// CHECK-NEXT: kernel.return
func.func @accumulate_step(%g: tensor<4x8xf32> {graph.input = "g"},
                           %acc: tensor<4x8xf32> {graph.state = "w.grad_acc"},
                           %step: tensor<f32> {graph.state = "optimizer.step"},
                           %reset: tensor<3xf32> {graph.state = "b.grad_acc"})
    -> (tensor<4x8xf32> {graph.update = "w.grad_acc"},
        tensor<f32> {graph.update = "optimizer.step"},
        tensor<f32> {graph.output = "t"},
        tensor<3xf32> {graph.update = "b.grad_acc"}) {
  %0 = graph.add %acc, %g : tensor<4x8xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %t = graph.add %step, %one : tensor<f32>
  %z = graph.constant dense<0.0> : tensor<3xf32>
  return %0, %t, %t, %z : tensor<4x8xf32>, tensor<f32>, tensor<f32>, tensor<3xf32>
}

// -----

// The old parameter is read after the op that computes its new value: the
// new value goes to a transient, copied into the parameter once every output
// is written.

// CHECK-LABEL: kernel.entry @train_step
// CHECK-SAME: %[[W:[^:]*]]: memref<5x7xf32> {kernel.kind = #kernel.kind<param>, kernel.name = "w"}
// CHECK-SAME: %[[LATE:[^:]*]]: memref<5x7xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "late"}
// CHECK: %[[NEW:.*]] = kernel.alloc : memref<5x7xf32>
// CHECK: kernel.launch @{{.*}} {kernel.origin = "graph.neg"}
// CHECK: kernel.launch @{{.*}} {kernel.origin = "graph.mul"}
// CHECK: kernel.copy %[[NEW]], %[[W]] {kernel.origin = "graph.update"}
// CHECK-NEXT: kernel.return
func.func @train_step(%w: tensor<5x7xf32> {graph.param = "w"})
    -> (tensor<5x7xf32> {graph.update = "w"}, tensor<5x7xf32> {graph.output = "late"}) {
  %p = graph.neg %w : tensor<5x7xf32>
  %late = graph.mul %w, %p : tensor<5x7xf32>
  return %p, %late : tensor<5x7xf32>, tensor<5x7xf32>
}

// -----

// A state that only a result writes is still a buffer of the entry.

// CHECK-LABEL: kernel.entry @apply_step
// CHECK-SAME: kernel.name = "w.grad_acc"
// CHECK: kernel.zero
func.func @apply_step(%acc: tensor<4xf32> {graph.state = "w.grad_acc"})
    -> (tensor<4xf32> {graph.update = "w.grad_acc"}) {
  %z = graph.constant dense<0.0> : tensor<4xf32>
  return %z : tensor<4xf32>
}

// -----

// expected-error @+1 {{result 0 of @train_step updates 'v', which is neither a parameter nor a state argument}}
func.func @train_step(%w: tensor<4xf32> {graph.param = "w"})
    -> (tensor<4xf32> {graph.update = "v"}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{result 0 of @train_step updates 'w' with another type}}
func.func @train_step(%w: tensor<4xf32> {graph.param = "w"})
    -> (tensor<2x2xf32> {graph.update = "w"}) {
  %0 = graph.reshape %w : tensor<4xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// The optimizer update writes the parameter and both moments in place, each
// buffer passed once (lr, here also the grad scale, too); the update kernel
// runs over blocks of 1024 elements.
// embedding_grad runs over blocks of 16 table columns (40 -> 3 blocks), each
// iteration scanning every id, so no two iterations add into one element.

// CHECK-LABEL: kernel.func @k0
// CHECK-SAME: attributes {grain = 3 : i64, range = 3 : i64}
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK-LABEL: kernel.func @k1
// CHECK-SAME: (%{{.*}}: memref<3000xf32>, %{{.*}}: memref<3000xf32>, %{{.*}}: memref<3000xf32>, %{{.*}}: memref<3000xf32>, %{{.*}}: memref<f32>, %{{.*}}: memref<f32>)
// CHECK-SAME: attributes {grain = 3 : i64, range = 3 : i64}
// CHECK: math.powf
// CHECK-LABEL: kernel.entry @train_step
// CHECK-SAME: %[[W:[^:]*]]: memref<3x1000xf32> {kernel.kind = #kernel.kind<param>, kernel.name = "w"}
// CHECK-SAME: %[[M:[^:]*]]: memref<3x1000xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "w.adam_m"}
// CHECK-SAME: %[[V:[^:]*]]: memref<3x1000xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "w.adam_v"}
// CHECK: kernel.launch @k0({{.*}}) {kernel.origin = "graph.embedding_grad"}
// CHECK: %[[WV:.*]] = kernel.view %[[W]]
// CHECK: %[[GV:.*]] = kernel.view %{{.*}} :
// CHECK: %[[MV:.*]] = kernel.view %[[M]]
// CHECK: %[[VV:.*]] = kernel.view %[[V]]
// CHECK: kernel.launch @k1(%[[WV]], %[[GV]], %[[MV]], %[[VV]], %{{[^,]*}}, %{{[^,]*}}) {kernel.origin = "graph.adamw_update"}
// CHECK-NOT: kernel.copy
// CHECK: kernel.return
func.func @train_step(%w: tensor<3x1000xf32> {graph.param = "w"},
                      %g: tensor<3x1000xf32> {graph.input = "g"},
                      %m: tensor<3x1000xf32> {graph.state = "w.adam_m"},
                      %v: tensor<3x1000xf32> {graph.state = "w.adam_v"},
                      %lr: tensor<f32> {graph.input = "lr"},
                      %t: tensor<f32> {graph.input = "t"},
                      %dy: tensor<9x40xf32> {graph.input = "dy"},
                      %ids: tensor<9xi32> {graph.input = "ids"})
    -> (tensor<5x40xf32> {graph.output = "table_grad"},
        tensor<3x1000xf32> {graph.update = "w"},
        tensor<3x1000xf32> {graph.update = "w.adam_m"},
        tensor<3x1000xf32> {graph.update = "w.adam_v"}) {
  %e = graph.embedding_grad %dy, %ids : tensor<9x40xf32>, tensor<9xi32> -> tensor<5x40xf32>
  %p, %m1, %v1 = graph.adamw_update %w, %g, %m, %v, %lr, %t, %lr {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64} : tensor<3x1000xf32>, tensor<f32>
  return %e, %p, %m1, %v1 : tensor<5x40xf32>, tensor<3x1000xf32>, tensor<3x1000xf32>, tensor<3x1000xf32>
}
