// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s

// CHECK-LABEL: kernel.func @k0
// CHECK-SAME: (%{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>)
// CHECK-SAME: attributes {grain = 4 : i64, range = 8 : i64}
// CHECK: linalg.generic
// CHECK: kernel.return
#id = affine_map<(d0) -> (d0)>
kernel.func @k0(%x: memref<8xf32>, %y: memref<8xf32>) attributes {grain = 4 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  kernel.return
}

// CHECK-LABEL: kernel.entry @eval_step
// CHECK-SAME: kernel.kind = #kernel.kind<input>, kernel.name = "x"
// CHECK-SAME: kernel.init = {kind = "zeros"}, kernel.kind = #kernel.kind<param>
// CHECK-SAME: kernel.kind = #kernel.kind<output>, kernel.name = "y"
// CHECK-SAME: kernel.kind = #kernel.kind<status>, kernel.name = "kiln.status"
// CHECK: %[[T:.*]] = kernel.alloc {arena_offset = 64 : i64} : memref<2x4xf32>
// CHECK: %[[V:.*]] = kernel.view %[[T]] : memref<2x4xf32> -> memref<8xf32>
// CHECK: %[[C:.*]] = kernel.constant dense<5.000000e-01> : tensor<8xf32> : memref<8xf32>
// CHECK: kernel.gemm %{{.*}}, %{{.*}}, %[[T]] {k = 3 : i64, m = 2 : i64, n = 4 : i64, transpose_b}
// CHECK: kernel.launch @k0(%[[V]], %{{.*}}) : memref<8xf32>, memref<8xf32>
// CHECK: kernel.copy %[[C]], %{{.*}} : memref<8xf32>, memref<8xf32>
// CHECK: kernel.zero %[[T]] : memref<2x4xf32>
// CHECK: kernel.return
kernel.entry @eval_step(
    %x: memref<2x3xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
    %w: memref<4x3xf32> {kernel.kind = #kernel.kind<param>, kernel.name = "w", kernel.init = {kind = "zeros"}},
    %y: memref<8xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"},
    %s: memref<2xi64> {kernel.kind = #kernel.kind<status>, kernel.name = "kiln.status"}) {
  %t = kernel.alloc {arena_offset = 64 : i64} : memref<2x4xf32>
  %v = kernel.view %t : memref<2x4xf32> -> memref<8xf32>
  %c = kernel.constant dense<5.000000e-01> : tensor<8xf32> : memref<8xf32>
  kernel.gemm %x, %w, %t {m = 2 : i64, n = 4 : i64, k = 3 : i64, transpose_b} : memref<2x3xf32>, memref<4x3xf32>, memref<2x4xf32>
  kernel.launch @k0(%v, %y) : memref<8xf32>, memref<8xf32>
  kernel.copy %c, %y : memref<8xf32>, memref<8xf32>
  kernel.zero %t : memref<2x4xf32>
  kernel.return
}

// GEMM contracts: A and B of one type, C of its own (bf16 x bf16 -> f32),
// and an epilogue with its bias vector and pre-activation output.
// CHECK-LABEL: kernel.entry @epilogues
// CHECK: kernel.gemm %{{.*}}, %{{.*}}, %{{.*}} {k = 3 : i64, m = 2 : i64, n = 4 : i64} : memref<2x3xbf16>, memref<3x4xbf16>, memref<2x4xf32>
// CHECK: kernel.gemm %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}} aux %{{.*}} {epilogue = #kernel.epilogue<bias_gelu>, k = 3 : i64, m = 2 : i64, n = 4 : i64} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32> bias memref<4xf32> aux memref<2x4xf32>
// CHECK: kernel.gemm %{{.*}}, %{{.*}}, %{{.*}} aux %{{.*}} {epilogue = #kernel.epilogue<dgelu>
// CHECK: kernel.gemm %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}} {epilogue = #kernel.epilogue<bias_grad>
kernel.entry @epilogues(
    %xh: memref<2x3xbf16> {kernel.kind = #kernel.kind<input>, kernel.name = "xh"},
    %wh: memref<3x4xbf16> {kernel.kind = #kernel.kind<param>, kernel.name = "wh", kernel.init = {kind = "zeros"}},
    %x: memref<2x3xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
    %w: memref<3x4xf32> {kernel.kind = #kernel.kind<param>, kernel.name = "w", kernel.init = {kind = "zeros"}},
    %b: memref<4xf32> {kernel.kind = #kernel.kind<param>, kernel.name = "b", kernel.init = {kind = "zeros"}},
    %y: memref<2x4xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  %pre = kernel.alloc {arena_offset = 0 : i64} : memref<2x4xf32>
  %dw = kernel.alloc {arena_offset = 64 : i64} : memref<3x4xf32>
  %db = kernel.alloc {arena_offset = 128 : i64} : memref<4xf32>
  kernel.gemm %xh, %wh, %y {m = 2 : i64, n = 4 : i64, k = 3 : i64} : memref<2x3xbf16>, memref<3x4xbf16>, memref<2x4xf32>
  kernel.gemm %x, %w, %y bias %b aux %pre {m = 2 : i64, n = 4 : i64, k = 3 : i64, epilogue = #kernel.epilogue<bias_gelu>} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32> bias memref<4xf32> aux memref<2x4xf32>
  kernel.gemm %x, %w, %y aux %pre {m = 2 : i64, n = 4 : i64, k = 3 : i64, epilogue = #kernel.epilogue<dgelu>} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32> aux memref<2x4xf32>
  kernel.gemm %x, %y, %dw bias %db {m = 3 : i64, n = 4 : i64, k = 2 : i64, transpose_a, epilogue = #kernel.epilogue<bias_grad>} : memref<2x3xf32>, memref<2x4xf32>, memref<3x4xf32> bias memref<4xf32>
  kernel.return
}
