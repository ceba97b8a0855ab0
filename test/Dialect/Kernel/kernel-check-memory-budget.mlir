// The budget's figures by hand. Persistent buffers, each name once across
// entries: x (input), w (param, in both entries), y and z (outputs), 64
// bytes each: 256. Arenas: @a holds one 64-byte transient; in @b, %t1 is
// still read by the GEMM that writes %t2 (a GEMM never works in place), so
// 128 bytes live at once, and the module's arena is 128. Peak: 384 bytes.
// RUN: kiln-opt %s --kernel-plan-memory '--kernel-check-memory-budget=budget=384' | FileCheck %s
// RUN: kiln-opt %s --kernel-plan-memory '--kernel-check-memory-budget=budget=383' -verify-diagnostics
// Without a budget, nothing is checked.
// RUN: kiln-opt %s --kernel-plan-memory --kernel-check-memory-budget | FileCheck %s

// CHECK: module attributes {kernel.arena_bytes = 128 : i64
// CHECK-LABEL: kernel.entry @a
kernel.entry @a(%x: memref<16xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                %w: memref<4x4xf32> {kernel.kind = #kernel.kind<param>, kernel.name = "w"},
                %y: memref<4x4xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  %t = kernel.alloc : memref<4x4xf32>
  kernel.gemm %w, %w, %t {m = 4 : i64, n = 4 : i64, k = 4 : i64} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
  kernel.copy %t, %y : memref<4x4xf32>, memref<4x4xf32>
  kernel.return
}

// CHECK-LABEL: kernel.entry @b
// CHECK-SAME: kernel.arena_bytes = 128 : i64
// expected-error @+1 {{@b does not fit the memory budget: peak_bytes 384 (384 B) > budget 383 (383 B); arena 128 (128 B), live lower bound 128, + persistent 256 (256 B): params 64, inputs 64, outputs 128}}
kernel.entry @b(%w: memref<4x4xf32> {kernel.kind = #kernel.kind<param>, kernel.name = "w"},
                %z: memref<4x4xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "z"}) {
  %t1 = kernel.alloc : memref<4x4xf32>
  kernel.gemm %w, %w, %t1 {m = 4 : i64, n = 4 : i64, k = 4 : i64} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
  %t2 = kernel.alloc : memref<4x4xf32>
  kernel.gemm %t1, %w, %t2 {m = 4 : i64, n = 4 : i64, k = 4 : i64} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
  kernel.copy %t2, %z : memref<4x4xf32>, memref<4x4xf32>
  kernel.return
}
