// RUN: kiln-opt %s --split-input-file --convert-gpu-to-emulator -verify-diagnostics

// The emulator splits a block's threads at barriers every thread reaches
// (top-level ones); a barrier under control flow is refused.
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    // expected-error @+1 {{uses gpu.barrier inside control flow, which the emulator does not run yet}}
    gpu.func @kiln_k0(%x: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %t = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %low = arith.cmpi ult, %t, %c32 : index
      scf.if %low {
        gpu.barrier
      }
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    // expected-error @+1 {{uses gpu.shuffle, which the emulator does not run yet}}
    gpu.func @kiln_k0(%x: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<64xf32>
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
      %s, %ok = gpu.shuffle xor %v, %c1, %c32 : f32
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    // expected-error @+1 {{the emulator runs kernels with a known one-dimensional grid and block}}
    gpu.func @kiln_k0(%x: memref<64xf32>) kernel attributes {known_block_size = array<i32: 8, 8, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    // expected-error @+1 {{uses private memory, which the emulator does not run yet}}
    gpu.func @kiln_k0(%x: memref<64xf32>) private(%s : memref<4xf32, #gpu.address_space<private>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      gpu.return
    }
  }
}
