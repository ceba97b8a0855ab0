// RUN: kiln-opt %s -split-input-file --share-loop-bodies | FileCheck %s

// Two segments of a multi-tensor update, the same but for their sizes
// (the leading dim of the memrefs they load and store, the bound of the
// inner loop): one private, never-inlined function over the larger size,
// with the bound as a parameter. Constants they share stay constants in
// it, those from outside the loops (the inner loop's step) too. The
// smaller memrefs are reinterpreted to the larger type.

// CHECK-LABEL: func.func @update
// CHECK-SAME: (%[[A:.*]]: memref<64xf32>, %[[B:.*]]: memref<64xf32>, %[[C:.*]]: memref<16xf32>, %[[D:.*]]: memref<16xf32>, %[[BEGIN:.*]]: index, %[[END:.*]]: index)
// CHECK: %[[SIXTYFOUR:.*]] = arith.constant 64 : index
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK-NEXT: func.call @kiln_shared_body_0(%[[I]], %[[A]], %[[B]], %[[SIXTYFOUR]]) : (index, memref<64xf32>, memref<64xf32>, index) -> ()
// CHECK-NEXT: scf.reduce
// CHECK-DAG: %[[C64:.*]] = memref.reinterpret_cast %[[C]] to offset: [0], sizes: [64], strides: [1] : memref<16xf32> to memref<64xf32>
// CHECK-DAG: %[[D64:.*]] = memref.reinterpret_cast %[[D]] to offset: [0], sizes: [64], strides: [1] : memref<16xf32> to memref<64xf32>
// CHECK-DAG: %[[SIXTEEN:.*]] = arith.constant 16 : index
// CHECK: scf.parallel (%[[J:.*]]) =
// CHECK-NEXT: func.call @kiln_shared_body_0(%[[J]], %[[C64]], %[[D64]], %[[SIXTEEN]])
// CHECK-NEXT: scf.reduce
// CHECK: func.func private @kiln_shared_body_0(%[[IV:.*]]: index, %[[X:.*]]: memref<64xf32>, %[[Y:.*]]: memref<64xf32>, %[[SIZE:.*]]: index)
// CHECK-SAME: passthrough = ["noinline"]
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-DAG: %[[HI:.*]] = arith.minui %{{.*}}, %[[SIZE]] : index
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %[[HI]] step %[[ONE]]
// CHECK: memref.load %[[X]][%[[K]]]
// CHECK: arith.mulf %{{.*}}, %[[TWO]]
// CHECK: memref.store %{{.*}}, %[[Y]][%[[K]]]
// CHECK: return
func.func @update(%a: memref<64xf32>, %b: memref<64xf32>, %c: memref<16xf32>,
                  %d: memref<16xf32>, %begin: index, %end: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%begin) to (%end) step (%c1) {
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %two = arith.constant 2.0 : f32
    %lo = arith.muli %i, %c8 : index
    %hi0 = arith.addi %lo, %c8 : index
    %hi = arith.minui %hi0, %c64 : index
    scf.for %k = %lo to %hi step %c1 {
      %x = memref.load %a[%k] : memref<64xf32>
      %y = arith.mulf %x, %two : f32
      memref.store %y, %b[%k] : memref<64xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%begin) to (%end) step (%c1) {
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %two = arith.constant 2.0 : f32
    %lo = arith.muli %i, %c8 : index
    %hi0 = arith.addi %lo, %c8 : index
    %hi = arith.minui %hi0, %c16 : index
    scf.for %k = %lo to %hi step %c1 {
      %x = memref.load %c[%k] : memref<16xf32>
      %y = arith.mulf %x, %two : f32
      memref.store %y, %d[%k] : memref<16xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Equal bodies in two functions (two kernels) share one function too; a
// body that differs by one op (addf for mulf) keeps its own code.

// CHECK-LABEL: func.func @first
// CHECK: func.call @kiln_shared_body_0
// CHECK-LABEL: func.func @second
// CHECK: scf.parallel
// CHECK-NEXT: func.call @kiln_shared_body_0
// CHECK: scf.parallel
// CHECK-NOT: func.call
// CHECK: arith.addf
// CHECK-LABEL: func.func private @kiln_shared_body_0
// CHECK-NOT: func.func private @kiln_shared_body_1
func.func @first(%a: memref<32x4xf32>, %begin: index, %end: index) {
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%begin) to (%end) step (%c1) {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %three = arith.constant 3.0 : f32
    scf.for %k = %c0 to %c4 step %c1 {
      %x = memref.load %a[%i, %k] : memref<32x4xf32>
      %y = arith.mulf %x, %three : f32
      memref.store %y, %a[%i, %k] : memref<32x4xf32>
    }
    scf.reduce
  }
  return
}
func.func @second(%a: memref<8x4xf32>, %begin: index, %end: index) {
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%begin) to (%end) step (%c1) {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %three = arith.constant 3.0 : f32
    scf.for %k = %c0 to %c4 step %c1 {
      %x = memref.load %a[%i, %k] : memref<8x4xf32>
      %y = arith.mulf %x, %three : f32
      memref.store %y, %a[%i, %k] : memref<8x4xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%begin) to (%end) step (%c1) {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %three = arith.constant 3.0 : f32
    scf.for %k = %c0 to %c4 step %c1 {
      %x = memref.load %a[%i, %k] : memref<8x4xf32>
      %y = arith.addf %x, %three : f32
      memref.store %y, %a[%i, %k] : memref<8x4xf32>
    }
    scf.reduce
  }
  return
}

// -----

// What stays: memrefs that differ in a trailing dim (other strides); a
// memref whose leading dim the body reads (memref.dim); bodies without a
// loop of their own.

// CHECK-LABEL: func.func @kept
// CHECK-NOT: func.call
// CHECK-NOT: kiln_shared_body
func.func @kept(%a: memref<8x4xf32>, %b: memref<8x2xf32>, %c: memref<8xf32>,
                %d: memref<4xf32>, %begin: index, %end: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%begin) to (%end) step (%c1) {
    %c2 = arith.constant 2 : index
    %three = arith.constant 3.0 : f32
    scf.for %k = %c0 to %c2 step %c1 {
      %x = memref.load %a[%i, %k] : memref<8x4xf32>
      %y = arith.mulf %x, %three : f32
      memref.store %y, %a[%i, %k] : memref<8x4xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%begin) to (%end) step (%c1) {
    %c2 = arith.constant 2 : index
    %three = arith.constant 3.0 : f32
    scf.for %k = %c0 to %c2 step %c1 {
      %x = memref.load %b[%i, %k] : memref<8x2xf32>
      %y = arith.mulf %x, %three : f32
      memref.store %y, %b[%i, %k] : memref<8x2xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%begin) to (%end) step (%c1) {
    %n = memref.dim %c, %c0 : memref<8xf32>
    %three = arith.constant 3.0 : f32
    scf.for %k = %c0 to %n step %c1 {
      %x = memref.load %c[%k] : memref<8xf32>
      %y = arith.mulf %x, %three : f32
      memref.store %y, %c[%k] : memref<8xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%begin) to (%end) step (%c1) {
    %n = memref.dim %d, %c0 : memref<4xf32>
    %three = arith.constant 3.0 : f32
    scf.for %k = %c0 to %n step %c1 {
      %x = memref.load %d[%k] : memref<4xf32>
      %y = arith.mulf %x, %three : f32
      memref.store %y, %d[%k] : memref<4xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%begin) to (%end) step (%c1) {
    %three = arith.constant 3.0 : f32
    %x0 = memref.load %c[%i] : memref<8xf32>
    %x1 = arith.mulf %x0, %three : f32
    %x2 = arith.mulf %x1, %three : f32
    %x3 = arith.mulf %x2, %three : f32
    %x4 = arith.mulf %x3, %three : f32
    %x5 = arith.mulf %x4, %three : f32
    %x6 = arith.mulf %x5, %three : f32
    memref.store %x6, %c[%i] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%begin) to (%end) step (%c1) {
    %three = arith.constant 3.0 : f32
    %x0 = memref.load %c[%i] : memref<8xf32>
    %x1 = arith.mulf %x0, %three : f32
    %x2 = arith.mulf %x1, %three : f32
    %x3 = arith.mulf %x2, %three : f32
    %x4 = arith.mulf %x3, %three : f32
    %x5 = arith.mulf %x4, %three : f32
    %x6 = arith.mulf %x5, %three : f32
    memref.store %x6, %c[%i] : memref<8xf32>
    scf.reduce
  }
  return
}
