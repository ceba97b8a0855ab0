// RUN: kiln-opt %s -split-input-file --convert-kernel-to-host-llvm -verify-diagnostics | FileCheck %s

// Each kernel becomes an exported `kiln_kN(void **buffers, i64 begin, i64
// end)` that loads its buffer pointers and calls the internal body, whose
// outermost parallel loop runs over [begin, end). Entries are dropped. Math
// goes to libm.

// CHECK-NOT: kernel.entry
// CHECK-LABEL: llvm.func internal @kiln_k0_body
// CHECK-SAME: (%[[X:.*]]: !llvm.ptr, %[[Y:.*]]: !llvm.ptr, %[[BEGIN:.*]]: i64, %[[END:.*]]: i64)
// CHECK: llvm.br ^[[HEAD:.*]](%[[BEGIN]] : i64)
// CHECK: ^[[HEAD]](%[[I:.*]]: i64):
// CHECK: llvm.icmp "slt" %[[I]], %[[END]]
// CHECK: llvm.call @expf
// CHECK-LABEL: llvm.func @kiln_k0
// CHECK-SAME: (%[[BUFFERS:.*]]: !llvm.ptr, %[[B:.*]]: i64, %[[E:.*]]: i64)
// CHECK: %[[S0:.*]] = llvm.getelementptr %[[BUFFERS]][0]
// CHECK: %[[P0:.*]] = llvm.load %[[S0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[S1:.*]] = llvm.getelementptr %[[BUFFERS]][1]
// CHECK: %[[P1:.*]] = llvm.load %[[S1]] : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.call @kiln_k0_body(%[[P0]], %[[P1]], %[[B]], %[[E]])
#id = affine_map<(d0, d1) -> (d0, d1)>
kernel.func @k0(%x: memref<8x4xf32>, %y: memref<8x4xf32>) attributes {grain = 2 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x4xf32>) outs(%y : memref<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  kernel.return
}
kernel.entry @predict(%x: memref<8x4xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                      %y: memref<8x4xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  kernel.launch @k0(%x, %y) : memref<8x4xf32>, memref<8x4xf32>
  kernel.return
}

// -----

// A sequential kernel (range 1) runs only in a non-empty chunk.
// CHECK-LABEL: llvm.func internal @kiln_k1_body
// CHECK-SAME: (%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %[[BEGIN:.*]]: i64, %[[END:.*]]: i64)
// CHECK: %[[NONEMPTY:.*]] = llvm.icmp "slt" %[[BEGIN]], %[[END]]
// CHECK: llvm.cond_br %[[NONEMPTY]]
kernel.func @k1(%x: memref<5xf32>, %y: memref<f32>) attributes {grain = 1 : i64, range = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c5 = arith.constant 5 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %i = %c0 to %c5 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%i] : memref<5xf32>
    %n = arith.addf %acc, %v : f32
    scf.yield %n : f32
  }
  memref.store %sum, %y[] : memref<f32>
  kernel.return
}

// -----

// A reduction as the outermost loop would cross chunks: rejected.
kernel.func @k2(%x: memref<5x3xf32>, %y: memref<3xf32>) attributes {grain = 1 : i64, range = 5 : i64} {
  %c0 = arith.constant 0 : index
  %c5 = arith.constant 5 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{has side effects outside the kernel's parallel loop over [0, 5)}}
  scf.for %i = %c0 to %c5 step %c1 {
    %v = memref.load %x[%i, %c0] : memref<5x3xf32>
    memref.store %v, %y[%c0] : memref<3xf32>
  }
  kernel.return
}

// -----

// The parallel loop must cover exactly the kernel's range.
kernel.func @k3(%x: memref<8xf32>) attributes {grain = 1 : i64, range = 8 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  // expected-error @+1 {{the outermost parallel loop of a kernel must run over [0, 8) in steps of 1}}
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %f, %x[%i] : memref<8xf32>
    scf.reduce
  }
  kernel.return
}

// -----

// An elementwise kernel over one dim computes whole vectors (512 bits: 16
// f32 lanes) over the chunk's multiple of 16, loading every input before
// storing (correct when the result is planned in place of an input), then
// the scalar remainder. The lanes compute the scalar formula op for op.

// CHECK-LABEL: llvm.func internal @kiln_k2_body
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xf32>
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xf32>
// CHECK: llvm.fmul %{{.*}} : vector<16xf32>
// CHECK: llvm.fadd %{{.*}} : vector<16xf32>
// CHECK: llvm.store %{{.*}} {alignment = 4 : i64} : vector<16xf32>, !llvm.ptr
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK: llvm.fmul %{{.*}} : f32
// CHECK: llvm.store %{{.*}} : f32, !llvm.ptr
#id1 = affine_map<(d0) -> (d0)>
kernel.func @k2(%x: memref<40xf32>, %y: memref<40xf32>, %z: memref<40xf32>) attributes {grain = 8 : i64, range = 40 : i64} {
  linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]}
      ins(%x, %y : memref<40xf32>, memref<40xf32>) outs(%z : memref<40xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %c = arith.constant 2.0 : f32
    %m = arith.mulf %a, %c : f32
    %s = arith.addf %m, %b : f32
    linalg.yield %s : f32
  }
  kernel.return
}

// -----

// A loop whose innermost index is not the last index of every access (a
// transpose) stays scalar for LLVM's loop vectorizer; a read that no lane
// index touches (a broadcast row) would not stop it.

// CHECK-LABEL: llvm.func internal @kiln_k3_body
// CHECK-NOT: vector<
// CHECK-LABEL: llvm.func @kiln_k3
#swap = affine_map<(d0, d1) -> (d1, d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
kernel.func @k3(%x: memref<4x8xf32>, %y: memref<8x4xf32>) attributes {grain = 2 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [#swap, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x8xf32>) outs(%y : memref<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  kernel.return
}

// -----

// A merged kernel's segment loops (kernel.segment_offset) each see the
// chunk [begin, end) shifted by their offset and clamped to their size:
// [min(max(begin - 8, 0), 4), min(max(end - 8, 0), 4)) for the second.

// CHECK-LABEL: llvm.func internal @kiln_k4_body
// CHECK-SAME: %[[BEGIN:[^:]*]]: i64, %[[END:[^:]*]]: i64)
// CHECK-DAG: %[[EIGHT:.*]] = llvm.mlir.constant(8 : index) : i64
// CHECK-DAG: %[[FOUR:.*]] = llvm.mlir.constant(4 : index) : i64
// CHECK: %[[SHIFTED:.*]] = llvm.sub %[[BEGIN]], %[[EIGHT]]
// CHECK: %[[POSITIVE:.*]] = llvm.icmp "sgt" %[[SHIFTED]]
// CHECK: %[[LOW:.*]] = llvm.select %[[POSITIVE]], %[[SHIFTED]]
// CHECK: %[[SMALL:.*]] = llvm.icmp "slt" %[[LOW]], %[[FOUR]]
// CHECK: llvm.select %[[SMALL]], %[[LOW]], %[[FOUR]]
// CHECK: llvm.sub %[[END]], %[[EIGHT]]
kernel.func @k4(%x: memref<8xf32>, %y: memref<4xf32>) attributes {grain = 1 : i64, range = 12 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %one, %x[%i] : memref<8xf32>
    scf.reduce
  } {kernel.segment_offset = 0 : i64}
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %one, %y[%i] : memref<4xf32>
    scf.reduce
  } {kernel.segment_offset = 8 : i64}
  kernel.return
}

// -----

// A segment must lie within the kernel's range.
kernel.func @k5(%x: memref<8xf32>) attributes {grain = 1 : i64, range = 10 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  // expected-error @below {{a segment loop must run over [0, size) in steps of 1 within the kernel's range 10}}
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %one, %x[%i] : memref<8xf32>
    scf.reduce
  } {kernel.segment_offset = 4 : i64}
  kernel.return
}

// -----

// A bias broadcast over rows: the innermost dim is vectorized, the bias
// and the input read contiguously along it, and a per-row scale (no lane
// index) loaded once and broadcast to the lanes.

// CHECK-LABEL: llvm.func internal @kiln_k6_body
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xf32>
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xf32>
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK: llvm.insertelement
// CHECK: llvm.shufflevector
// CHECK: llvm.store %{{.*}} {alignment = 4 : i64} : vector<16xf32>, !llvm.ptr
#bias = affine_map<(d0, d1) -> (d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#ident = affine_map<(d0, d1) -> (d0, d1)>
kernel.func @k6(%x: memref<8x40xf32>, %b: memref<40xf32>, %s: memref<8xf32>, %y: memref<8x40xf32>) attributes {grain = 2 : i64, range = 8 : i64} {
  linalg.generic {indexing_maps = [#ident, #bias, #rows, #ident], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b, %s : memref<8x40xf32>, memref<40xf32>, memref<8xf32>) outs(%y : memref<8x40xf32>) {
  ^bb0(%in: f32, %bias_in: f32, %scale: f32, %out: f32):
    %a = arith.addf %in, %bias_in : f32
    %m = arith.mulf %a, %scale : f32
    linalg.yield %m : f32
  }
  kernel.return
}

// -----

// An index computed from the loop variables (a fused reshape or
// transpose) that moves with the innermost variable by one element is
// contiguous: the vector loads start at the first lane's index.

// CHECK-LABEL: llvm.func internal @kiln_k7_body
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xf32>
// CHECK: llvm.store %{{.*}} {alignment = 4 : i64} : vector<16xf32>, !llvm.ptr
#flat = affine_map<(d0, d1) -> (d0 * 32 + d1)>
#tile = affine_map<(d0, d1) -> (d0, d1)>
kernel.func @k7(%x: memref<128xf32>, %y: memref<4x32xf32>) attributes {grain = 1 : i64, range = 4 : i64} {
  linalg.generic {indexing_maps = [#flat, #tile], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<128xf32>) outs(%y : memref<4x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  }
  kernel.return
}

// -----

// An index that moves by more than one element per lane (a column read)
// is not vectorized.

// CHECK-LABEL: llvm.func internal @kiln_k8_body
// CHECK-NOT: vector<
// CHECK-LABEL: llvm.func @kiln_k8
#column = affine_map<(d0, d1) -> (d1 * 4 + d0)>
#tile2 = affine_map<(d0, d1) -> (d0, d1)>
kernel.func @k8(%x: memref<128xf32>, %y: memref<4x32xf32>) attributes {grain = 1 : i64, range = 4 : i64} {
  linalg.generic {indexing_maps = [#column, #tile2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<128xf32>) outs(%y : memref<4x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  }
  kernel.return
}
