// RUN: kiln-opt %s -split-input-file --kernel-insert-collectives="world=2 bucket-bytes=0" | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kernel-insert-collectives="world=2 bucket-bytes=300" | FileCheck %s --check-prefix=BYTES
// RUN: kiln-opt %s -split-input-file --kernel-insert-collectives="world=2 overlap=false" | FileCheck %s --check-prefix=AFTER
// RUN: kiln-opt %s -split-input-file --kernel-insert-collectives | FileCheck %s --check-prefix=ONE
// RUN: kiln-opt %s -split-input-file --kernel-insert-collectives --mlir-print-op-generic | kiln-opt --split-input-file | FileCheck %s --check-prefix=ONE

// The backward produces w2's gradient (the GEMM), then the rest of the
// backward runs, then the accumulations, as a train step emits them. The
// pass first moves each accumulation up to just after what it depends on:
// dw2 past the unrelated launch to just after the GEMM; db1 and dw1 (which
// read what "rest" writes) stay after it, in their order; views of the
// accumulators go to the top. Then one accumulator a bucket
// (bucket-bytes=0): c's (never touched) before the first op, each other's
// right after the op that last touches it (through the views for w1),
// all waited for at the end in bucket order.
// y += x
kernel.func @add(%x: memref<8x8xf32>, %y: memref<8x8xf32>) attributes {grain = 8 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  kernel.return
}
// y += the sums of x's columns
kernel.func @bias(%x: memref<8x8xf32>, %y: memref<8xf32>) attributes {grain = 1 : i64, range = 1 : i64} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<8x8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  kernel.return
}
kernel.entry @accumulate_step(
    %x: memref<8x8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
    %w1: memref<8x8xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "w1.grad_acc"},
    %b1: memref<8xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "b1.grad_acc"},
    %w2: memref<8x8xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "w2.grad_acc"},
    %c: memref<8xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "c.grad_acc"},
    %m: memref<8xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "w1.adam_m"}) {
  %t = kernel.alloc : memref<8x8xf32>
  kernel.gemm %x, %x, %t {m = 8 : i64, n = 8 : i64, k = 8 : i64} : memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>
  %u = kernel.alloc : memref<8x8xf32>
  kernel.launch @add(%x, %u) {kernel.origin = "rest"} : memref<8x8xf32>, memref<8x8xf32>
  kernel.launch @add(%t, %w2) {kernel.origin = "dw2"} : memref<8x8xf32>, memref<8x8xf32>
  kernel.launch @bias(%u, %b1) {kernel.origin = "db1"} : memref<8x8xf32>, memref<8xf32>
  %v = kernel.view %w1 : memref<8x8xf32> -> memref<64xf32>
  %v2 = kernel.view %v : memref<64xf32> -> memref<8x8xf32>
  kernel.launch @add(%u, %v2) {kernel.origin = "dw1"} : memref<8x8xf32>, memref<8x8xf32>
  kernel.return
}
// CHECK-LABEL: kernel.entry @accumulate_step
// CHECK-SAME:  (%[[X:.*]]: memref<8x8xf32> {{.*}}, %[[W1:.*]]: memref<8x8xf32> {{.*}}, %[[B1:.*]]: memref<8xf32> {{.*}}, %[[W2:.*]]: memref<8x8xf32> {{.*}}, %[[C:.*]]: memref<8xf32> {{.*}}, %[[M:.*]]: memref<8xf32>
// CHECK-NEXT:    %[[T0:.*]] = kernel.collective_start %[[C]] {bucket = 0 : i64} : memref<8xf32>
// CHECK-NEXT:    kernel.view %[[W1]]
// CHECK-NEXT:    kernel.view
// CHECK-NEXT:    kernel.alloc
// CHECK-NEXT:    kernel.gemm
// CHECK-NEXT:    kernel.launch @add({{.*}}, %[[W2]]) {kernel.origin = "dw2"}
// CHECK-NEXT:    %[[T1:.*]] = kernel.collective_start %[[W2]] {bucket = 1 : i64} : memref<8x8xf32>
// CHECK-NEXT:    kernel.alloc
// CHECK-NEXT:    kernel.launch @add({{.*}}) {kernel.origin = "rest"}
// CHECK-NEXT:    kernel.launch @bias({{.*}}, %[[B1]]) {kernel.origin = "db1"}
// CHECK-NEXT:    %[[T2:.*]] = kernel.collective_start %[[B1]] {bucket = 2 : i64} : memref<8xf32>
// CHECK-NEXT:    kernel.launch @add({{.*}}) {kernel.origin = "dw1"}
// CHECK-NEXT:    %[[T3:.*]] = kernel.collective_start %[[W1]] {bucket = 3 : i64} : memref<8x8xf32>
// CHECK-NEXT:    kernel.collective_wait %[[T0]](%[[C]]) : memref<8xf32>
// CHECK-NEXT:    kernel.collective_wait %[[T1]](%[[W2]]) : memref<8x8xf32>
// CHECK-NEXT:    kernel.collective_wait %[[T2]](%[[B1]]) : memref<8xf32>
// CHECK-NEXT:    kernel.collective_wait %[[T3]](%[[W1]]) : memref<8x8xf32>
// CHECK-NEXT:    kernel.return
// CHECK-NOT:   kernel.collective_start

// A bucket closes once it holds 300 bytes: c (32) and w2 (256) are 288, so
// b1 joins them (320) and the bucket starts where b1 is finished; w1 is
// the last bucket. Optimizer state that is no accumulator (w1.adam_m)
// stays out.
// BYTES-LABEL: kernel.entry @accumulate_step
// BYTES:         kernel.launch @bias({{.*}}) {kernel.origin = "db1"}
// BYTES-NEXT:    %[[T0:.*]] = kernel.collective_start %{{.*}}, %{{.*}}, %{{.*}} {bucket = 0 : i64} : memref<8xf32>, memref<8x8xf32>, memref<8xf32>
// BYTES-NEXT:    kernel.launch @add({{.*}}) {kernel.origin = "dw1"}
// BYTES-NEXT:    %[[T1:.*]] = kernel.collective_start %{{.*}} {bucket = 1 : i64} : memref<8x8xf32>
// BYTES-NEXT:    kernel.collective_wait %[[T0]]
// BYTES-NEXT:    kernel.collective_wait %[[T1]]
// BYTES-NEXT:    kernel.return

// overlap=false: the default 1 MiB holds them all, started after the
// backward.
// AFTER-LABEL: kernel.entry @accumulate_step
// AFTER-NOT:     kernel.collective
// AFTER:         kernel.origin = "dw1"
// AFTER-NEXT:    %[[T:.*]] = kernel.collective_start {{.*}} {bucket = 0 : i64} : memref<8xf32>, memref<8x8xf32>, memref<8xf32>, memref<8x8xf32>
// AFTER-NEXT:    kernel.collective_wait %[[T]]
// AFTER-NEXT:    kernel.return

// Without a world, the module's train setting decides: none here (1), so
// nothing changes.
// ONE-NOT: kernel.collective

// -----

// The world comes from the train step's setting (graph.train's world).
module attributes {graph.train = {world = 2 : i64}} {
  kernel.func @add(%x: memref<8xf32>, %y: memref<8xf32>) attributes {grain = 8 : i64, range = 8 : i64} {
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                    iterator_types = ["parallel"]}
        ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %s = arith.addf %in, %out : f32
      linalg.yield %s : f32
    }
    kernel.return
  }
  kernel.entry @accumulate_step(
      %x: memref<8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
      %g: memref<8xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "w.grad_acc"}) {
    kernel.launch @add(%x, %g) : memref<8xf32>, memref<8xf32>
    kernel.return
  }
  // Other entries keep no collectives.
  kernel.entry @apply_step(
      %g: memref<8xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "w.grad_acc"}) {
    kernel.zero %g : memref<8xf32>
    kernel.return
  }
}
// CHECK-LABEL: kernel.entry @accumulate_step
// CHECK:         kernel.launch @add
// CHECK-NEXT:    %[[T:.*]] = kernel.collective_start %{{.*}} {bucket = 0 : i64}
// CHECK-NEXT:    kernel.collective_wait %[[T]]
// CHECK-LABEL: kernel.entry @apply_step
// CHECK-NOT:     kernel.collective
// ONE-LABEL:   kernel.entry @accumulate_step
// ONE:           kernel.collective_start
