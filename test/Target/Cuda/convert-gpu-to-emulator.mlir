// RUN: kiln-opt %s --split-input-file --convert-gpu-to-emulator | FileCheck %s
// RUN: kiln-opt %s --split-input-file --convert-gpu-to-emulator='checked=true' \
// RUN:   | FileCheck %s --check-prefix=CHECKED

// A kernel on 3 blocks of 64 threads: a host kernel over the blocks
// (range 3), each running its 64 threads in order with the launch ids
// replaced by the loops' indices.
// CHECK-NOT: gpu.module
// CHECK-LABEL: kernel.func @k7(%{{.*}}: memref<150xf32>, %{{.*}}: memref<150xf32>)
// CHECK-SAME: grain = 3 : i64, kernel.emulator, range = 3 : i64
// CHECK: scf.parallel (%[[B:.*]]) = (%c0) to (%c3) step (%c1)
// CHECK: scf.for %[[T:.*]] = %c0 to %c64 step %c1
// CHECK: %[[BASE:.*]] = arith.muli %[[B]], %c64
// CHECK: %[[I:.*]] = arith.addi %[[BASE]], %[[T]]
// CHECK: arith.cmpi ult, %[[I]], %c150
// CHECK: memref.load %{{.*}}[%[[I]]]
// CHECK-NOT: gpu.
// With checked=true every access is checked against its buffer first; a
// failed check writes its message to standard error (fd 2) and aborts.
// CHECKED: llvm.func @write(i32, !llvm.ptr, i64) -> i64
// CHECKED: llvm.func @abort()
// CHECKED: llvm.mlir.global private constant @kiln_emulator_check_{{[0-9]+}}("GPU emulator: kernel kiln_k7: ERROR: Runtime op verification failed
// CHECKED-LABEL: kernel.func @k7
// CHECKED: scf.if
// CHECKED: llvm.call @write
// CHECKED: llvm.call @abort()
// CHECKED: memref.load
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @kiln_k7(%x: memref<150xf32>, %y: memref<150xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 3, 1, 1>} {
      %b = gpu.block_id x
      %t = gpu.thread_id x
      %n = gpu.block_dim x
      %base = arith.muli %b, %n : index
      %i = arith.addi %base, %t : index
      %c150 = arith.constant 150 : index
      %in = arith.cmpi ult, %i, %c150 : index
      scf.if %in {
        %v = memref.load %x[%i] : memref<150xf32>
        %w = arith.mulf %v, %v : f32
        memref.store %w, %y[%i] : memref<150xf32>
      }
      gpu.return
    }
  }
}

// -----

// A barrier splits the block's threads: shared memory is one buffer per
// block, each segment between barriers a loop over the threads, and a
// value a later segment uses (the thread's index) is kept per thread.
// CHECK-LABEL: kernel.func @k1
// CHECK: scf.parallel
// CHECK: %[[SHARED:.*]] = memref.alloca() : memref<64xf32>
// CHECK: %[[KEPT:.*]] = memref.alloca() : memref<64xindex>
// CHECK: scf.for %[[T0:.*]] = %c0 to %c64
// CHECK: memref.store %{{.*}}, %[[SHARED]][%[[T0]]]
// CHECK: memref.store %[[T0]], %[[KEPT]][%[[T0]]]
// CHECK: scf.for %[[T1:.*]] = %c0 to %c64
// CHECK: %[[I:.*]] = memref.load %[[KEPT]][%[[T1]]]
// CHECK: arith.subi %c63, %[[I]]
// CHECK: memref.load %[[SHARED]]
// Checked, each shared access checks who touched the word in this segment.
// CHECKED: "GPU emulator: kernel kiln_k1: shared-memory race
// CHECKED-LABEL: kernel.func @k1
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @kiln_k1(%x: memref<64xf32>, %y: memref<64xf32>) workgroup(%s : memref<64xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<64xf32>
      memref.store %v, %s[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %c63 = arith.constant 63 : index
      %r = arith.subi %c63, %t : index
      %w = memref.load %s[%r] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %w, %y[%t] : memref<64xf32>
      gpu.return
    }
  }
}
