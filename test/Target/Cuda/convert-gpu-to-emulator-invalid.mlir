// RUN: kiln-opt %s --split-input-file --convert-gpu-to-emulator -verify-diagnostics

// Running a block's threads one after the other would hide a missing
// barrier: kernels with barriers are refused until the emulator splits
// threads at them.
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    // expected-error @+1 {{uses gpu.barrier, which the emulator does not run yet}}
    gpu.func @kiln_k0(%x: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      gpu.barrier
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
    // expected-error @+1 {{uses shared or private memory, which the emulator does not run yet}}
    gpu.func @kiln_k0(%x: memref<64xf32>) workgroup(%s : memref<64xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      gpu.return
    }
  }
}
