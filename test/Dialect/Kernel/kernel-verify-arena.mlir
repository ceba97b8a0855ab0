// RUN: kiln-opt %s -split-input-file --kernel-verify-arena -verify-diagnostics | FileCheck %s

// A sound placement passes unchanged: %a and %b are never live together and
// share bytes; %c and %d are an in-place pair (@exp is elementwise and %c
// dies at it) and start at the same offset.
// CHECK-LABEL: kernel.entry @sound
// CHECK: kernel.alloc {arena_offset = 0 : i64} : memref<16xf32>
#id = affine_map<(d0) -> (d0)>
module attributes {kernel.arena_bytes = 128 : i64} {
kernel.func @exp(%x: memref<16xf32>, %y: memref<16xf32>) attributes {grain = 16 : i64, range = 16 : i64} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<16xf32>) outs(%y : memref<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  kernel.return
}
kernel.entry @sound(%x: memref<16xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                    %y: memref<16xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  %a = kernel.alloc {arena_offset = 0 : i64} : memref<16xf32>
  kernel.launch @exp(%x, %a) : memref<16xf32>, memref<16xf32>
  kernel.copy %a, %y : memref<16xf32>, memref<16xf32>
  %b = kernel.alloc {arena_offset = 0 : i64} : memref<16xf32>
  kernel.launch @exp(%x, %b) : memref<16xf32>, memref<16xf32>
  %c = kernel.alloc {arena_offset = 64 : i64} : memref<16xf32>
  kernel.launch @exp(%b, %c) : memref<16xf32>, memref<16xf32>
  %d = kernel.alloc {arena_offset = 64 : i64} : memref<16xf32>
  kernel.launch @exp(%c, %d) : memref<16xf32>, memref<16xf32>
  kernel.copy %d, %y : memref<16xf32>, memref<16xf32>
  kernel.return
}
}

// -----

// Two buffers live at the same time may not share a byte.
module attributes {kernel.arena_bytes = 128 : i64} {
kernel.entry @overlap(%y: memref<16xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  // expected-note @+1 {{the other buffer}}
  %a = kernel.alloc {arena_offset = 0 : i64} : memref<16xf32>
  kernel.zero %a : memref<16xf32>
  // expected-error @+1 {{transient buffer at bytes [0, 64) overlaps a buffer at bytes [0, 64) while both are live (program point 1)}}
  %b = kernel.alloc {arena_offset = 0 : i64} : memref<16xf32>
  // expected-note @+1 {{both are live at this op}}
  kernel.zero %b : memref<16xf32>
  kernel.copy %a, %y : memref<16xf32>, memref<16xf32>
  kernel.copy %b, %y : memref<16xf32>, memref<16xf32>
  kernel.return
}
}

// -----

// A view keeps its root alive: %a is read through %v after %b is written.
module attributes {kernel.arena_bytes = 128 : i64} {
kernel.entry @view_keeps_alive(%y: memref<2x16xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  // expected-note @+1 {{the other buffer}}
  %a = kernel.alloc {arena_offset = 0 : i64} : memref<32xf32>
  %v = kernel.view %a : memref<32xf32> -> memref<2x16xf32>
  kernel.zero %a : memref<32xf32>
  // expected-error @+1 {{overlaps a buffer at bytes [0, 128)}}
  %b = kernel.alloc {arena_offset = 64 : i64} : memref<16xf32>
  // expected-note @+1 {{both are live at this op}}
  kernel.zero %b : memref<16xf32>
  kernel.copy %v, %y : memref<2x16xf32>, memref<2x16xf32>
  kernel.return
}
}

// -----

// A partial overlap of an in-place pair is not sharing.
#id = affine_map<(d0) -> (d0)>
module attributes {kernel.arena_bytes = 256 : i64} {
kernel.func @exp(%x: memref<32xf32>, %y: memref<32xf32>) attributes {grain = 32 : i64, range = 32 : i64} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<32xf32>) outs(%y : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  kernel.return
}
kernel.entry @shifted_pair(%x: memref<32xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                           %y: memref<32xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  // expected-note @+1 {{the other buffer}}
  %a = kernel.alloc {arena_offset = 0 : i64} : memref<32xf32>
  kernel.launch @exp(%x, %a) : memref<32xf32>, memref<32xf32>
  // expected-error @+1 {{transient buffer at bytes [64, 192) overlaps a buffer at bytes [0, 128)}}
  %b = kernel.alloc {arena_offset = 64 : i64} : memref<32xf32>
  // expected-note @+1 {{both are live at this op}}
  kernel.launch @exp(%a, %b) : memref<32xf32>, memref<32xf32>
  kernel.copy %b, %y : memref<32xf32>, memref<32xf32>
  kernel.return
}
}

// -----

module attributes {kernel.arena_bytes = 64 : i64} {
kernel.entry @unplaced() {
  // expected-error @+1 {{transient buffer has no arena offset}}
  %a = kernel.alloc : memref<16xf32>
  kernel.zero %a : memref<16xf32>
  kernel.return
}
}

// -----

module attributes {kernel.arena_bytes = 64 : i64} {
kernel.entry @past_the_end() {
  // expected-error @+1 {{transient buffer at bytes [64, 128) ends past the arena (64 bytes)}}
  %a = kernel.alloc {arena_offset = 64 : i64} : memref<16xf32>
  kernel.zero %a : memref<16xf32>
  kernel.return
}
}
