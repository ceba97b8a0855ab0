// RUN: kiln-opt %s --split-input-file --convert-gpu-to-emulator | FileCheck %s
// RUN: kiln-opt %s --split-input-file --convert-gpu-to-emulator='checked=true' \
// RUN:   | FileCheck %s --check-prefix=CHECKED

// A kernel on 3 blocks of 64 threads: a host kernel over the blocks
// (range 3), each running its 64 threads in order with the launch ids
// replaced by the loops' indices.
// CHECK-NOT: gpu.module
// CHECK-LABEL: kernel.func @k7(%{{.*}}: memref<150xf32>, %{{.*}}: memref<150xf32>)
// CHECK-SAME: grain = 3 : i64, range = 3 : i64
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
