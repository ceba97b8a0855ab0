// RUN: kiln-opt %s --split-input-file --convert-gpu-to-emulator | FileCheck %s
// RUN: kiln-opt %s --split-input-file --convert-gpu-to-emulator='checked=true' \
// RUN:   | FileCheck %s --check-prefix=CHECKED

// A kernel on 3 blocks of 64 threads: a host kernel over the blocks
// (range 3), each running its two warps' 32 lanes in order with the launch
// ids replaced by the loops' indices.
// CHECK-NOT: gpu.module
// CHECK-LABEL: kernel.func @k7(%{{.*}}: memref<150xf32>, %{{.*}}: memref<150xf32>)
// CHECK-SAME: grain = 3 : i64, kernel.emulator, range = 3 : i64
// CHECK: scf.parallel (%[[B:.*]]) = (%c0) to (%c3) step (%c1)
// CHECK: scf.for %[[W:.*]] = %{{.*}} to %c2 step
// CHECK: scf.for %[[L:.*]] = %{{.*}} to %c32 step
// CHECK: %[[WB:.*]] = arith.muli %[[W]], %c32
// CHECK: %[[T:.*]] = arith.addi %[[WB]], %[[L]]
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
// block (allocated once per call, outside the loop over the blocks), each
// segment between barriers a loop over the warps and their lanes, the
// thread's index recomputed in each.
// CHECK-LABEL: kernel.func @k1
// CHECK: %[[SHARED:.*]] = memref.alloca() : memref<64xf32>
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %[[SHARED]][%{{.*}}]
// CHECK: scf.for
// CHECK: scf.for %[[L1:.*]] = %{{.*}} to %c32
// CHECK: %[[T1:.*]] = arith.addi %{{.*}}, %[[L1]]
// CHECK: arith.subi %c63, %[[T1]]
// CHECK: memref.load %[[SHARED]]
// Checked, each shared access checks who touched the word in this epoch.
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

// -----

// A shuffle reads what the lanes of its warp left behind: the value
// shuffled is kept per thread, and each lane reads its source lane's.
// CHECK-LABEL: kernel.func @k2
// CHECK: %[[KEPT:.*]] = memref.alloca() : memref<64xf32>
// CHECK: scf.parallel
// CHECK: scf.for %[[W:.*]] =
// CHECK: memref.store %{{.*}}, %[[KEPT]]
// CHECK: scf.for
// CHECK: %[[SOURCE:.*]] = arith.xori %{{.*}}, %c1_i32
// CHECK: memref.load %[[KEPT]]
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @kiln_k2(%x: memref<64xf32>, %y: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<64xf32>
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
      %s, %ok = gpu.shuffle xor %v, %c1, %c32 : f32
      memref.store %s, %y[%t] : memref<64xf32>
      gpu.return
    }
  }
}

// -----

// A barrier inside a block-uniform scf.for: the loop runs once for the
// block (its bound, computed per thread, the first thread's), the segments
// of its body loops over the warps and lanes. Checked, every thread's bounds are compared
// with the first's (a divergent barrier otherwise).
// CHECK-LABEL: kernel.func @k3
// CHECK: %[[BOUND:.*]] = memref.alloca() : memref<64xindex>
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %[[BOUND]]
// CHECK: %[[N:.*]] = memref.load %[[BOUND]][%c0
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[N]] step
// CHECK: scf.for
// CHECK: scf.for %{{.*}} = %{{.*}} to %c32
// CHECK: memref.store
// CHECKED: "GPU emulator: kernel kiln_k3: divergent barrier
// CHECKED-LABEL: kernel.func @k3
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @kiln_k3(%x: memref<64xf32>, %y: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c64 = arith.constant 64 : index
      %q = arith.divui %t, %c64 : index
      %n = arith.addi %q, %c4 : index
      scf.for %i = %c0 to %n step %c1 {
        %v = memref.load %x[%t] : memref<64xf32>
        memref.store %v, %y[%t] : memref<64xf32>
        gpu.barrier
      }
      gpu.return
    }
  }
}

// -----

// A view of an argument (a merged kernel's subview of one of its buffers)
// used on both sides of a barrier: the same for every thread, it is defined
// once for the block, not kept per thread.
// CHECK-LABEL: kernel.func @k4
// CHECK: scf.parallel
// CHECK-NEXT: %[[VIEW:.*]] = memref.subview %{{.*}}[0] [32] [1]
// CHECK-NOT: memref.alloca
// CHECK: memref.store %{{.*}}, %[[VIEW]]
// CHECK: memref.load %[[VIEW]]
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @kiln_k4(%x: memref<64xf32>, %y: memref<64xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %t = gpu.thread_id x
      %view = memref.subview %x[0] [32] [1] : memref<64xf32> to memref<32xf32, strided<[1]>>
      %c1 = arith.constant 1.0 : f32
      memref.store %c1, %view[%t] : memref<32xf32, strided<[1]>>
      gpu.barrier
      %v = memref.load %view[%t] : memref<32xf32, strided<[1]>>
      memref.store %v, %y[%t] : memref<64xf32>
      gpu.return
    }
  }
}
