// RUN: kiln-opt %s -split-input-file --kernel-plan-memory -verify-diagnostics | FileCheck %s

// Kernels used below: @exp is elementwise (element i from element i); @rev
// reads the input backwards; @acc reads its output; @copy2 writes two
// outputs from one input; @fill writes without reading.
#id = affine_map<(d0) -> (d0)>
#rev = affine_map<(d0) -> (15 - d0)>
kernel.func @exp(%x: memref<16xf32>, %y: memref<16xf32>) attributes {grain = 16 : i64, range = 16 : i64} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<16xf32>) outs(%y : memref<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  kernel.return
}
kernel.func @rev(%x: memref<16xf32>, %y: memref<16xf32>) attributes {grain = 16 : i64, range = 16 : i64} {
  linalg.generic {indexing_maps = [#rev, #id], iterator_types = ["parallel"]}
      ins(%x : memref<16xf32>) outs(%y : memref<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  kernel.return
}
kernel.func @acc(%x: memref<16xf32>, %y: memref<16xf32>) attributes {grain = 16 : i64, range = 16 : i64} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<16xf32>) outs(%y : memref<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  kernel.return
}
kernel.func @add(%x: memref<16xf32>, %y: memref<16xf32>, %z: memref<16xf32>) attributes {grain = 16 : i64, range = 16 : i64} {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %y : memref<16xf32>, memref<16xf32>) outs(%z : memref<16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  kernel.return
}
kernel.func @fill(%y: memref<16xf32>) attributes {grain = 16 : i64, range = 16 : i64} {
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
      outs(%y : memref<16xf32>) {
  ^bb0(%out: f32):
    %c = arith.constant 1.0 : f32
    linalg.yield %c : f32
  }
  kernel.return
}

// Reuse: %b is defined after %a's last use, so it takes %a's bytes; %c lives
// with %b and goes next to it. gemm is not elementwise, so its output never
// takes an input's bytes; the arena is the live lower bound.
// CHECK: module attributes {kernel.arena_bytes = 128 : i64, kernel.live_lower_bound_bytes = 128 : i64}
// CHECK-LABEL: kernel.entry @reuse
// CHECK-SAME: kernel.arena_bytes = 128 : i64, kernel.live_lower_bound_bytes = 128 : i64
// CHECK: kernel.alloc {arena_offset = 0 : i64} : memref<16xf32>
// CHECK: kernel.alloc {arena_offset = 0 : i64} : memref<4x4xf32>
// CHECK: kernel.alloc {arena_offset = 64 : i64} : memref<4x4xf32>
kernel.entry @reuse(%x: memref<16xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                    %w: memref<4x4xf32> {kernel.kind = #kernel.kind<param>, kernel.name = "w"},
                    %y: memref<4x4xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  %a = kernel.alloc : memref<16xf32>
  kernel.launch @exp(%x, %a) : memref<16xf32>, memref<16xf32>
  %av = kernel.view %a : memref<16xf32> -> memref<4x4xf32>
  kernel.copy %av, %y : memref<4x4xf32>, memref<4x4xf32>
  %b = kernel.alloc : memref<4x4xf32>
  kernel.gemm %x, %w, %b {m = 4 : i64, n = 4 : i64, k = 4 : i64} : memref<16xf32>, memref<4x4xf32>, memref<4x4xf32>
  %c = kernel.alloc : memref<4x4xf32>
  kernel.gemm %b, %w, %c {m = 4 : i64, n = 4 : i64, k = 4 : i64} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
  kernel.copy %c, %y : memref<4x4xf32>, memref<4x4xf32>
  kernel.return
}

// -----

// A view keeps its root alive: %a is last used through %v, after %b and %c
// are written, so all three are live together and none overlaps another.
// CHECK-LABEL: kernel.entry @views
// CHECK-SAME: kernel.arena_bytes = 192 : i64, kernel.live_lower_bound_bytes = 192 : i64
// CHECK: kernel.alloc {arena_offset = 0 : i64} : memref<16xf32>
// CHECK: kernel.alloc {arena_offset = 64 : i64} : memref<4x4xf32>
// CHECK: kernel.alloc {arena_offset = 128 : i64} : memref<2x8xf32>
#id = affine_map<(d0) -> (d0)>
kernel.func @fill(%y: memref<16xf32>) attributes {grain = 16 : i64, range = 16 : i64} {
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
      outs(%y : memref<16xf32>) {
  ^bb0(%out: f32):
    %c = arith.constant 1.0 : f32
    linalg.yield %c : f32
  }
  kernel.return
}
kernel.entry @views(%w: memref<4x4xf32> {kernel.kind = #kernel.kind<param>, kernel.name = "w"},
                    %y: memref<4x4xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  %a = kernel.alloc : memref<16xf32>
  kernel.launch @fill(%a) : memref<16xf32>
  %v = kernel.view %a : memref<16xf32> -> memref<4x4xf32>
  %b = kernel.alloc : memref<4x4xf32>
  kernel.gemm %w, %w, %b {m = 4 : i64, n = 4 : i64, k = 4 : i64} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
  %c = kernel.alloc : memref<2x8xf32>
  %cv = kernel.view %c : memref<2x8xf32> -> memref<4x4xf32>
  kernel.gemm %b, %w, %cv {m = 4 : i64, n = 4 : i64, k = 4 : i64} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
  kernel.gemm %v, %cv, %y {m = 4 : i64, n = 4 : i64, k = 4 : i64} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
  kernel.return
}

// -----

// In place: @exp's output takes the bytes of its input, which dies there,
// and so on down the chain (through a view of the same shape as the
// kernel's argument); one slot of 64 bytes serves the whole entry.
// CHECK-LABEL: kernel.entry @in_place_chain
// CHECK-SAME: kernel.arena_bytes = 64 : i64, kernel.live_lower_bound_bytes = 64 : i64
// CHECK-COUNT-3: kernel.alloc {arena_offset = 0 : i64} : memref<16xf32>
// CHECK: kernel.alloc {arena_offset = 0 : i64} : memref<4x4xf32>
#id = affine_map<(d0) -> (d0)>
kernel.func @exp(%x: memref<16xf32>, %y: memref<16xf32>) attributes {grain = 16 : i64, range = 16 : i64} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<16xf32>) outs(%y : memref<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  kernel.return
}
kernel.entry @in_place_chain(%x: memref<16xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                             %y: memref<16xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  %a = kernel.alloc : memref<16xf32>
  kernel.launch @exp(%x, %a) : memref<16xf32>, memref<16xf32>
  %b = kernel.alloc : memref<16xf32>
  kernel.launch @exp(%a, %b) : memref<16xf32>, memref<16xf32>
  %c = kernel.alloc : memref<16xf32>
  kernel.launch @exp(%b, %c) : memref<16xf32>, memref<16xf32>
  %d = kernel.alloc : memref<4x4xf32>
  %dv = kernel.view %d : memref<4x4xf32> -> memref<16xf32>
  kernel.launch @exp(%c, %dv) : memref<16xf32>, memref<16xf32>
  kernel.launch @exp(%dv, %y) : memref<16xf32>, memref<16xf32>
  kernel.return
}

// -----

// No reuse where it would be wrong: the input is read later (%a by the
// copy), the kernel reads another index (@rev), the kernel reads its output
// (@acc), or the input is passed twice (@add of %d with itself). Two
// buffers are live at each launch, so the arena is two slots, and every
// output sits in the other slot from its input.
// CHECK-LABEL: kernel.entry @not_in_place
// CHECK-SAME: kernel.arena_bytes = 128 : i64, kernel.live_lower_bound_bytes = 128 : i64
// CHECK: kernel.alloc {arena_offset = 0 : i64}
// CHECK-NEXT: kernel.launch @exp(%arg0
// CHECK-NEXT: kernel.alloc {arena_offset = 64 : i64}
// CHECK-NEXT: kernel.launch @exp
// CHECK-NEXT: kernel.copy
// CHECK-NEXT: kernel.alloc {arena_offset = 0 : i64}
// CHECK-NEXT: kernel.launch @rev
// CHECK-NEXT: kernel.alloc {arena_offset = 64 : i64}
// CHECK-NEXT: kernel.launch @acc
// CHECK-NEXT: kernel.alloc {arena_offset = 0 : i64}
// CHECK-NEXT: kernel.launch @add
#id = affine_map<(d0) -> (d0)>
#rev = affine_map<(d0) -> (15 - d0)>
kernel.func @exp(%x: memref<16xf32>, %y: memref<16xf32>) attributes {grain = 16 : i64, range = 16 : i64} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<16xf32>) outs(%y : memref<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  kernel.return
}
kernel.func @rev(%x: memref<16xf32>, %y: memref<16xf32>) attributes {grain = 16 : i64, range = 16 : i64} {
  linalg.generic {indexing_maps = [#rev, #id], iterator_types = ["parallel"]}
      ins(%x : memref<16xf32>) outs(%y : memref<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  kernel.return
}
kernel.func @acc(%x: memref<16xf32>, %y: memref<16xf32>) attributes {grain = 16 : i64, range = 16 : i64} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<16xf32>) outs(%y : memref<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  kernel.return
}
kernel.func @add(%x: memref<16xf32>, %y: memref<16xf32>, %z: memref<16xf32>) attributes {grain = 16 : i64, range = 16 : i64} {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %y : memref<16xf32>, memref<16xf32>) outs(%z : memref<16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  kernel.return
}
kernel.entry @not_in_place(%x: memref<16xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                           %y: memref<16xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  %a = kernel.alloc : memref<16xf32>
  kernel.launch @exp(%x, %a) : memref<16xf32>, memref<16xf32>
  %b = kernel.alloc : memref<16xf32>
  kernel.launch @exp(%a, %b) : memref<16xf32>, memref<16xf32>
  kernel.copy %a, %y : memref<16xf32>, memref<16xf32>
  %c = kernel.alloc : memref<16xf32>
  kernel.launch @rev(%b, %c) : memref<16xf32>, memref<16xf32>
  %d = kernel.alloc : memref<16xf32>
  kernel.launch @acc(%c, %d) : memref<16xf32>, memref<16xf32>
  %e = kernel.alloc : memref<16xf32>
  kernel.launch @add(%d, %d, %e) : memref<16xf32>, memref<16xf32>, memref<16xf32>
  kernel.copy %e, %y : memref<16xf32>, memref<16xf32>
  kernel.return
}

// -----

// Entries never run at once: each starts at offset 0, and the module's
// arena and lower bound are the largest entry's.
// CHECK: module attributes {kernel.arena_bytes = 384 : i64, kernel.live_lower_bound_bytes = 384 : i64}
// CHECK-LABEL: kernel.entry @small
// CHECK-SAME: kernel.arena_bytes = 64 : i64
// CHECK: kernel.alloc {arena_offset = 0 : i64} : memref<16xf32>
// CHECK-LABEL: kernel.entry @large
// CHECK-SAME: kernel.arena_bytes = 384 : i64
// CHECK: kernel.alloc {arena_offset = 0 : i64} : memref<64xf32>
// CHECK: kernel.alloc {arena_offset = 256 : i64} : memref<16xf32>
// CHECK: kernel.alloc {arena_offset = 320 : i64} : memref<1xf32>
#id = affine_map<(d0) -> (d0)>
kernel.func @fill(%y: memref<16xf32>) attributes {grain = 16 : i64, range = 16 : i64} {
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
      outs(%y : memref<16xf32>) {
  ^bb0(%out: f32):
    %c = arith.constant 1.0 : f32
    linalg.yield %c : f32
  }
  kernel.return
}
kernel.entry @small(%y: memref<16xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  %a = kernel.alloc : memref<16xf32>
  kernel.launch @fill(%a) : memref<16xf32>
  kernel.copy %a, %y : memref<16xf32>, memref<16xf32>
  kernel.return
}
kernel.entry @large(%y: memref<16xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  %a = kernel.alloc : memref<64xf32>
  kernel.zero %a : memref<64xf32>
  %b = kernel.alloc : memref<16xf32>
  kernel.launch @fill(%b) : memref<16xf32>
  %c = kernel.alloc : memref<1xf32>
  kernel.zero %c : memref<1xf32>
  kernel.zero %a : memref<64xf32>
  kernel.copy %b, %y : memref<16xf32>, memref<16xf32>
  kernel.zero %c : memref<1xf32>
  kernel.return
}

// -----

// A transient that its defining op only reads holds whatever another buffer
// left in its bytes.
kernel.entry @read_first(%y: memref<16xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  // expected-error @+1 {{transient buffer is read before any op writes it}}
  %a = kernel.alloc : memref<16xf32>
  // expected-note @+1 {{first read here}}
  kernel.copy %a, %y : memref<16xf32>, memref<16xf32>
  kernel.return
}
