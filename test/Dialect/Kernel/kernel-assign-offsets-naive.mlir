// RUN: kiln-opt %s --kernel-assign-offsets-naive | FileCheck %s

// Each transient gets the next 64-byte aligned slice; entries start at 0;
// the arena is the largest entry's total.
// CHECK: module attributes {kernel.arena_bytes = 384 : i64}
// CHECK-LABEL: kernel.entry @predict
// CHECK: kernel.alloc {arena_offset = 0 : i64} : memref<3xf32>
// CHECK: kernel.alloc {arena_offset = 64 : i64} : memref<20xf32>
// CHECK: kernel.alloc {arena_offset = 192 : i64} : memref<1xf64>
// CHECK: kernel.alloc {arena_offset = 256 : i64} : memref<16xf64>
// CHECK-LABEL: kernel.entry @eval_step
// CHECK: kernel.alloc {arena_offset = 0 : i64} : memref<2xi64>
kernel.entry @predict() {
  %a = kernel.alloc : memref<3xf32>
  %b = kernel.alloc : memref<20xf32>
  %c = kernel.alloc : memref<1xf64>
  %d = kernel.alloc : memref<16xf64>
  kernel.return
}
kernel.entry @eval_step() {
  %a = kernel.alloc : memref<2xi64>
  kernel.return
}
