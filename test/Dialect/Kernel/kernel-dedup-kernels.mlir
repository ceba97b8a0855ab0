// RUN: kiln-opt %s -split-input-file -kernel-dedup-kernels | FileCheck %s

// Two layers' copies of one kernel (@neg0, @neg1: the same body over other
// buffers, other value names) become the first; each launch keeps its own
// origin. The one whose constant differs (@scale) and the one whose grain
// differs (@neg_grain) stay.
// CHECK-LABEL: kernel.func @neg0
// CHECK-NOT: kernel.func @neg1
// CHECK: kernel.func @scale
// CHECK: kernel.func @neg_grain
// CHECK-LABEL: kernel.entry @step
// CHECK: kernel.launch @neg0(%{{.*}}, %{{.*}}) {kernel.origin = "layer 0"}
// CHECK: kernel.launch @neg0(%{{.*}}, %{{.*}}) {kernel.origin = "layer 1"}
// CHECK: kernel.launch @scale
// CHECK: kernel.launch @neg_grain
kernel.func @neg0(%x: memref<8xf32>, %y: memref<8xf32>) attributes {grain = 4 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  }
  kernel.return
}
kernel.func @neg1(%a: memref<8xf32>, %b: memref<8xf32>) attributes {grain = 4 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%a : memref<8xf32>) outs(%b : memref<8xf32>) {
  ^bb0(%value: f32, %unused: f32):
    %negated = arith.negf %value : f32
    linalg.yield %negated : f32
  }
  kernel.return
}
kernel.func @scale(%x: memref<8xf32>, %y: memref<8xf32>) attributes {grain = 4 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %c = arith.constant 2.0 : f32
    %n = arith.mulf %in, %c : f32
    linalg.yield %n : f32
  }
  kernel.return
}
kernel.func @neg_grain(%x: memref<8xf32>, %y: memref<8xf32>) attributes {grain = 8 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  }
  kernel.return
}
kernel.entry @step(%p: memref<8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "p"},
                   %q: memref<8xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "q"}) {
  %t = kernel.alloc : memref<8xf32>
  kernel.launch @neg0(%p, %t) {kernel.origin = "layer 0"} : memref<8xf32>, memref<8xf32>
  %u = kernel.alloc : memref<8xf32>
  kernel.launch @neg1(%t, %u) {kernel.origin = "layer 1"} : memref<8xf32>, memref<8xf32>
  %v = kernel.alloc : memref<8xf32>
  kernel.launch @scale(%u, %v) : memref<8xf32>, memref<8xf32>
  kernel.launch @neg_grain(%v, %q) : memref<8xf32>, memref<8xf32>
  kernel.return
}

// -----

// Kernels of different shapes are different kernels.
// CHECK-LABEL: kernel.func @copy8
// CHECK: kernel.func @copy4
// CHECK: kernel.launch @copy8
// CHECK: kernel.launch @copy4
kernel.func @copy8(%x: memref<8xf32>, %y: memref<8xf32>) attributes {grain = 4 : i64, range = 8 : i64} {
  memref.copy %x, %y : memref<8xf32> to memref<8xf32>
  kernel.return
}
kernel.func @copy4(%x: memref<4xf32>, %y: memref<4xf32>) attributes {grain = 4 : i64, range = 4 : i64} {
  memref.copy %x, %y : memref<4xf32> to memref<4xf32>
  kernel.return
}
kernel.entry @step(%p: memref<8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "p"},
                   %q: memref<8xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "q"},
                   %r: memref<4xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "r"},
                   %s: memref<4xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "s"}) {
  kernel.launch @copy8(%p, %q) : memref<8xf32>, memref<8xf32>
  kernel.launch @copy4(%r, %s) : memref<4xf32>, memref<4xf32>
  kernel.return
}

// -----

// The same ops over the same types, wired differently (x - y against
// y - x), are different kernels.
// CHECK-LABEL: kernel.func @sub_xy
// CHECK: kernel.func @sub_yx
// CHECK: kernel.launch @sub_xy
// CHECK: kernel.launch @sub_yx
kernel.func @sub_xy(%x: memref<8xf32>, %y: memref<8xf32>, %z: memref<8xf32>) attributes {grain = 4 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x, %y : memref<8xf32>, memref<8xf32>) outs(%z : memref<8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  }
  kernel.return
}
kernel.func @sub_yx(%x: memref<8xf32>, %y: memref<8xf32>, %z: memref<8xf32>) attributes {grain = 4 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x, %y : memref<8xf32>, memref<8xf32>) outs(%z : memref<8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %d = arith.subf %b, %a : f32
    linalg.yield %d : f32
  }
  kernel.return
}
kernel.entry @step(%p: memref<8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "p"},
                   %q: memref<8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "q"},
                   %r: memref<8xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "r"}) {
  %t = kernel.alloc : memref<8xf32>
  kernel.launch @sub_xy(%p, %q, %t) : memref<8xf32>, memref<8xf32>, memref<8xf32>
  kernel.launch @sub_yx(%t, %q, %r) : memref<8xf32>, memref<8xf32>, memref<8xf32>
  kernel.return
}
