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
