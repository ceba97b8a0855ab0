// RUN: kiln-opt %s -split-input-file --kernel-merge-launches | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kernel-merge-launches="max-ops=10" | FileCheck %s --check-prefix=CAP

// Two launches over disjoint buffers and a sequential (range 1) one become
// one kernel of range 8 + 4 + 1 and the smallest grain: each body is a segment, its top-level
// parallel loop tagged with the segment's offset; the sequential body runs
// as the single iteration of its segment. Scalars read by all (%lr) are
// shared. The originals are erased.

// CHECK-NOT: kernel.func @rev8
// CHECK-LABEL: kernel.func @k{{[0-9]+}}
// CHECK-SAME: (%[[A:.*]]: memref<8xf32>, %[[B:.*]]: memref<8xf32>, %[[LR:.*]]: memref<f32>, %[[C:.*]]: memref<4xf32>, %[[D:.*]]: memref<4xf32>, %[[E:.*]]: memref<f32>)
// CHECK-SAME: grain = 1 : i64, range = 13 : i64
// CHECK: scf.parallel
// CHECK: memref.load %[[A]]
// CHECK: } {kernel.segment_offset = 0 : i64}
// CHECK: scf.parallel
// CHECK: memref.load %[[C]]
// CHECK: } {kernel.segment_offset = 8 : i64}
// CHECK: scf.parallel
// CHECK: memref.load %[[LR]]
// CHECK: memref.store %{{.*}}, %[[E]]
// CHECK: } {kernel.segment_offset = 12 : i64}
// CHECK: kernel.entry @step
// CHECK: kernel.launch @k{{[0-9]+}}(%{{.*}}) {kernel.origin = "graph.adamw_update+graph.lr_schedule"}
// CHECK-NOT: kernel.launch
// With at most 10 ops per merged kernel (@rev8 and @rev4 count 4 each:
// kernel.func, linalg.generic, linalg.yield, kernel.return), the third
// (@scalar, 4 more) keeps a launch of its own.
// CAP-LABEL: kernel.entry @step
// CAP-NEXT: kernel.launch @k{{[0-9]+}}(%{{.*}}) {kernel.origin = "graph.adamw_update"}
// CAP-NEXT: kernel.launch @scalar(%{{.*}}) {kernel.origin = "graph.lr_schedule"}
// CAP-NEXT: kernel.return
#rev8 = affine_map<(d0) -> (7 - d0)>
#id8 = affine_map<(d0) -> (d0)>
#rev4 = affine_map<(d0) -> (3 - d0)>
kernel.func @rev8(%x: memref<8xf32>, %y: memref<8xf32>, %s: memref<f32>) attributes {grain = 4 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [#rev8, #id8], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  kernel.return
}
kernel.func @rev4(%x: memref<4xf32>, %y: memref<4xf32>, %s: memref<f32>) attributes {grain = 2 : i64, range = 4 : i64} {
  linalg.generic {indexing_maps = [#rev4, #id8], iterator_types = ["parallel"]}
      ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  kernel.return
}
kernel.func @scalar(%s: memref<f32>, %t: memref<f32>) attributes {grain = 1 : i64, range = 1 : i64} {
  %v = memref.load %s[] : memref<f32>
  memref.store %v, %t[] : memref<f32>
  kernel.return
}
kernel.entry @step(%a: memref<8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                   %c: memref<4xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "c"},
                   %lr: memref<f32> {kernel.kind = #kernel.kind<input>, kernel.name = "lr"},
                   %b: memref<8xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "b"},
                   %d: memref<4xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "d"},
                   %e: memref<f32> {kernel.kind = #kernel.kind<output>, kernel.name = "e"}) {
  kernel.launch @rev8(%a, %b, %lr) {kernel.origin = "graph.adamw_update"} : memref<8xf32>, memref<8xf32>, memref<f32>
  kernel.launch @rev4(%c, %d, %lr) {kernel.origin = "graph.adamw_update"} : memref<4xf32>, memref<4xf32>, memref<f32>
  kernel.launch @scalar(%lr, %e) {kernel.origin = "graph.lr_schedule"} : memref<f32>, memref<f32>
  kernel.return
}

// -----

// A launch that reads what the run wrote, or writes what it read, starts a
// new run: copy(b, c) reads what copy(a, b) wrote; copy(d, a) is
// independent of copy(b, c) and joins it. A launch whose output may be
// planned over its dying input (@exp: elementwise) keeps its own launch.

// CHECK-LABEL: kernel.func @k{{[0-9]+}}
// CHECK-SAME: range = 16 : i64
// CHECK-LABEL: kernel.entry @dependent
// CHECK-SAME: (%[[A:[^:]*]]: memref<8xf32> {{.*}}, %[[B:[^:]*]]: memref<8xf32> {{.*}}, %[[C:[^:]*]]: memref<8xf32> {{.*}}, %[[D:[^:]*]]: memref<8xf32>
// CHECK-NEXT: kernel.launch @copy(%[[A]], %[[B]])
// CHECK-NEXT: kernel.launch @k{{[0-9]+}}(%[[B]], %[[C]], %[[D]], %[[A]]) :
// CHECK-NEXT: kernel.launch @exp(%[[C]], %[[D]])
// CHECK-NEXT: kernel.return
#id = affine_map<(d0) -> (d0)>
#rev = affine_map<(d0) -> (7 - d0)>
kernel.func @copy(%x: memref<8xf32>, %y: memref<8xf32>) attributes {grain = 4 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [#rev, #id], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  kernel.return
}
kernel.func @exp(%x: memref<8xf32>, %y: memref<8xf32>) attributes {grain = 4 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  kernel.return
}
kernel.entry @dependent(%a: memref<8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                        %b: memref<8xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "b"},
                        %c: memref<8xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"},
                        %d: memref<8xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "d"}) {
  kernel.launch @copy(%a, %b) : memref<8xf32>, memref<8xf32>
  kernel.launch @copy(%b, %c) : memref<8xf32>, memref<8xf32>
  kernel.launch @copy(%d, %a) : memref<8xf32>, memref<8xf32>
  kernel.launch @exp(%c, %d) : memref<8xf32>, memref<8xf32>
  kernel.return
}

// -----

// The pieces of a concat write disjoint boxes of one buffer
// (kernel.write_box): they merge. Overlapping boxes do not.

// CHECK-LABEL: kernel.entry @pieces
// CHECK-NEXT: kernel.launch @k{{[0-9]+}}(%{{.*}}, %[[OUT:[^,]*]], %{{.*}}) :
// CHECK-NEXT: kernel.launch @into(%{{.*}}, %[[OUT]]) {kernel.write_box = array<i64: 0, 2, 4, 2>}
// CHECK-NEXT: kernel.return
kernel.func @into(%x: memref<4x2xf32>, %y: memref<4x6xf32>) attributes {grain = 1 : i64, range = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c2) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<4x2xf32>
    memref.store %v, %y[%i, %j] : memref<4x6xf32>
    scf.reduce
  }
  kernel.return
}
kernel.entry @pieces(%a: memref<4x2xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                     %b: memref<4x2xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "b"},
                     %y: memref<4x6xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  kernel.launch @into(%a, %y) {kernel.write_box = array<i64: 0, 0, 4, 2>} : memref<4x2xf32>, memref<4x6xf32>
  kernel.launch @into(%b, %y) {kernel.write_box = array<i64: 0, 2, 4, 2>} : memref<4x2xf32>, memref<4x6xf32>
  kernel.launch @into(%a, %y) {kernel.write_box = array<i64: 0, 2, 4, 2>} : memref<4x2xf32>, memref<4x6xf32>
  kernel.return
}

// -----

// Consecutive sequential kernels (range 1) chain into one sequential kernel
// even when each reads what the one before wrote (the step count, then the
// learning rate from it): their bodies run in program order, with no loop.
// A parallel kernel that reads the chain's result ends it; the sequential
// kernel after that, independent of it, shares its launch as a segment.

// CHECK-LABEL: kernel.func @k{{[0-9]+}}
// CHECK-SAME: (%[[S:[^:]*]]: memref<f32>, %[[T:[^:]*]]: memref<f32>, %[[U:[^:]*]]: memref<f32>)
// CHECK-SAME: grain = 1 : i64, range = 1 : i64
// CHECK-NOT: scf.parallel
// CHECK: memref.load %[[S]][]
// CHECK: memref.store %{{.*}}, %[[T]][]
// CHECK: memref.load %[[T]][]
// CHECK: memref.store %{{.*}}, %[[U]][]
// CHECK-NEXT: kernel.return
// CHECK-LABEL: kernel.entry @chain
// CHECK-NEXT: kernel.launch @k{{[0-9]+}}(%{{.*}}) {kernel.origin = "graph.add+graph.lr_schedule"}
// CHECK-NEXT: kernel.launch @k{{[0-9]+}}({{.*}}) {kernel.origin = "graph.rev+graph.add"}
// CHECK-NEXT: kernel.return
#rev8c = affine_map<(d0) -> (7 - d0)>
#id8c = affine_map<(d0) -> (d0)>
kernel.func @scalar_inc(%s: memref<f32>, %t: memref<f32>) attributes {grain = 1 : i64, range = 1 : i64} {
  %v = memref.load %s[] : memref<f32>
  %one = arith.constant 1.0 : f32
  %w = arith.addf %v, %one : f32
  memref.store %w, %t[] : memref<f32>
  kernel.return
}
#scalar8c = affine_map<(d0) -> ()>
kernel.func @rev8c(%x: memref<8xf32>, %y: memref<8xf32>, %z: memref<f32>) attributes {grain = 4 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [#rev8c, #scalar8c, #id8c], iterator_types = ["parallel"]}
      ins(%x, %z : memref<8xf32>, memref<f32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %scale: f32, %out: f32):
    %m = arith.mulf %in, %scale : f32
    linalg.yield %m : f32
  }
  kernel.return
}
kernel.entry @chain(%s: memref<f32> {kernel.kind = #kernel.kind<input>, kernel.name = "s"},
                    %a: memref<8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                    %t: memref<f32> {kernel.kind = #kernel.kind<output>, kernel.name = "t"},
                    %u: memref<f32> {kernel.kind = #kernel.kind<output>, kernel.name = "u"},
                    %b: memref<8xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "b"},
                    %v: memref<f32> {kernel.kind = #kernel.kind<output>, kernel.name = "v"}) {
  kernel.launch @scalar_inc(%s, %t) {kernel.origin = "graph.add"} : memref<f32>, memref<f32>
  kernel.launch @scalar_inc(%t, %u) {kernel.origin = "graph.lr_schedule"} : memref<f32>, memref<f32>
  // Reads %u: depends on the chain.
  kernel.launch @rev8c(%a, %b, %u) {kernel.origin = "graph.rev"} : memref<8xf32>, memref<8xf32>, memref<f32>
  kernel.launch @scalar_inc(%u, %v) {kernel.origin = "graph.add"} : memref<f32>, memref<f32>
  kernel.return
}

// -----

// A chain joins an independent parallel neighbour as a segment of size 1.

// CHECK-LABEL: kernel.func @k{{[0-9]+}}
// CHECK-SAME: range = 9 : i64
// CHECK: scf.parallel
// CHECK: memref.load
// CHECK: memref.store
// CHECK: memref.load
// CHECK: memref.store
// CHECK: } {kernel.segment_offset = 0 : i64}
// CHECK: } {kernel.segment_offset = 1 : i64}
// CHECK-LABEL: kernel.entry @chain_and_neighbour
// CHECK-NEXT: kernel.launch @k{{[0-9]+}}({{.*}}) {kernel.origin = "graph.add+graph.lr_schedule+graph.rev"}
// CHECK-NEXT: kernel.return
#rev8d = affine_map<(d0) -> (7 - d0)>
#id8d = affine_map<(d0) -> (d0)>
kernel.func @scalar_inc(%s: memref<f32>, %t: memref<f32>) attributes {grain = 1 : i64, range = 1 : i64} {
  %v = memref.load %s[] : memref<f32>
  %one = arith.constant 1.0 : f32
  %w = arith.addf %v, %one : f32
  memref.store %w, %t[] : memref<f32>
  kernel.return
}
kernel.func @rev8d(%x: memref<8xf32>, %y: memref<8xf32>) attributes {grain = 4 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [#rev8d, #id8d], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  kernel.return
}
kernel.entry @chain_and_neighbour(%s: memref<f32> {kernel.kind = #kernel.kind<input>, kernel.name = "s"},
                    %a: memref<8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                    %t: memref<f32> {kernel.kind = #kernel.kind<output>, kernel.name = "t"},
                    %u: memref<f32> {kernel.kind = #kernel.kind<output>, kernel.name = "u"},
                    %b: memref<8xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "b"}) {
  kernel.launch @scalar_inc(%s, %t) {kernel.origin = "graph.add"} : memref<f32>, memref<f32>
  kernel.launch @scalar_inc(%t, %u) {kernel.origin = "graph.lr_schedule"} : memref<f32>, memref<f32>
  kernel.launch @rev8d(%a, %b) {kernel.origin = "graph.rev"} : memref<8xf32>, memref<8xf32>
  kernel.return
}

// -----

// A parallel launch with no mergeable neighbour after it moves down past a
// GEMM it does not touch to the next launch it is independent of, and the
// two share a launch (a bias-gradient sum joining the next layer norm's
// gradient). Not when that would keep a transient alive across the GEMM
// and raise the live lower bound: @late reads %t, which would then live
// next to the GEMM's output. (A launch writing an output never moves.)

// CHECK-LABEL: kernel.entry @sink
// CHECK-NEXT: kernel.gemm
// CHECK-NEXT: kernel.view
// CHECK-NEXT: kernel.launch @k{{[0-9]+}}({{.*}}) {kernel.origin = "early+next"}
// CHECK-NEXT: kernel.return
// CHECK-LABEL: kernel.entry @output_stays
// CHECK-NEXT: kernel.launch @rev8s({{.*}}) {kernel.origin = "loss"}
// CHECK-NEXT: kernel.gemm
// CHECK-LABEL: kernel.entry @no_sink
// CHECK: kernel.launch @fill8s
// CHECK-NEXT: kernel.launch @rev8s({{.*}}) {kernel.origin = "late"}
// CHECK-NEXT: kernel.alloc
// CHECK-NEXT: kernel.gemm
// CHECK-NEXT: kernel.view
// CHECK-NEXT: kernel.launch @rev8s({{.*}}) {kernel.origin = "next"}
#rev8s = affine_map<(d0) -> (7 - d0)>
#id8s = affine_map<(d0) -> (d0)>
kernel.func @rev8s(%x: memref<8xf32>, %y: memref<8xf32>) attributes {grain = 4 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [#rev8s, #id8s], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  kernel.return
}
kernel.func @fill8s(%x: memref<8xf32>, %y: memref<8xf32>) attributes {grain = 4 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [#rev8s, #id8s], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  }
  kernel.return
}
kernel.entry @sink(%a: memref<8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                   %w: memref<4x4xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "w"},
                   %b: memref<8xf32> {kernel.kind = #kernel.kind<gradient>, kernel.name = "b"},
                   %g: memref<4x4xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "g"},
                   %c: memref<8xf32> {kernel.kind = #kernel.kind<gradient>, kernel.name = "c"}) {
  kernel.launch @rev8s(%a, %b) {kernel.origin = "early"} : memref<8xf32>, memref<8xf32>
  kernel.gemm %w, %w, %g {m = 4 : i64, n = 4 : i64, k = 4 : i64} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
  %v = kernel.view %g : memref<4x4xf32> -> memref<16xf32>
  kernel.launch @rev8s(%a, %c) {kernel.origin = "next"} : memref<8xf32>, memref<8xf32>
  kernel.return
}
kernel.entry @output_stays(%a: memref<8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                   %w: memref<4x4xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "w"},
                   %b: memref<8xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "loss"},
                   %g: memref<4x4xf32> {kernel.kind = #kernel.kind<gradient>, kernel.name = "g"},
                   %c: memref<8xf32> {kernel.kind = #kernel.kind<gradient>, kernel.name = "c"}) {
  kernel.launch @rev8s(%a, %b) {kernel.origin = "loss"} : memref<8xf32>, memref<8xf32>
  kernel.gemm %w, %w, %g {m = 4 : i64, n = 4 : i64, k = 4 : i64} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
  kernel.launch @rev8s(%a, %c) {kernel.origin = "next"} : memref<8xf32>, memref<8xf32>
  kernel.return
}
kernel.entry @no_sink(%a: memref<8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                      %w: memref<4x4xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "w"},
                      %b: memref<8xf32> {kernel.kind = #kernel.kind<gradient>, kernel.name = "b"},
                      %c: memref<8xf32> {kernel.kind = #kernel.kind<gradient>, kernel.name = "c"}) {
  %t = kernel.alloc : memref<8xf32>
  kernel.launch @fill8s(%a, %t) {kernel.origin = "fill"} : memref<8xf32>, memref<8xf32>
  kernel.launch @rev8s(%t, %b) {kernel.origin = "late"} : memref<8xf32>, memref<8xf32>
  %g = kernel.alloc : memref<4x4xf32>
  kernel.gemm %w, %w, %g {m = 4 : i64, n = 4 : i64, k = 4 : i64} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
  %v = kernel.view %g : memref<4x4xf32> -> memref<16xf32>
  kernel.launch @rev8s(%a, %c) {kernel.origin = "next"} : memref<8xf32>, memref<8xf32>
  kernel.return
}
