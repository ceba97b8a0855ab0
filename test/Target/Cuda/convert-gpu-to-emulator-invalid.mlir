// RUN: kiln-opt %s --split-input-file --convert-gpu-to-emulator -verify-diagnostics

// The emulator splits a block's threads at barriers and a warp's at
// shuffles; control flow around them must be scf.if or scf.for.
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @kiln_k0(%x: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %c0 = arith.constant 0 : index
      // expected-error @+1 {{holds a gpu.barrier, gpu.shuffle or nvvm.mma.sync, which the emulator runs only inside scf.if and scf.for}}
      %r = scf.while (%i = %c0) : (index) -> index {
        %c4 = arith.constant 4 : index
        %go = arith.cmpi ult, %i, %c4 : index
        scf.condition(%go) %i : index
      } do {
      ^bb0(%j: index):
        gpu.barrier
        %c1 = arith.constant 1 : index
        %n = arith.addi %j, %c1 : index
        scf.yield %n : index
      }
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @kiln_k0(%x: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<64xf32>
      %c1 = arith.constant 1 : i32
      %c16 = arith.constant 16 : i32
      // expected-error @+1 {{the emulator runs gpu.shuffle over whole warps: its width must be the constant 32}}
      %s, %ok = gpu.shuffle xor %v, %c1, %c16 : f32
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    // expected-error @+1 {{the emulator runs blocks of whole warps (32 threads), got 48}}
    gpu.func @kiln_k0(%x: memref<64xf32>) kernel attributes {known_block_size = array<i32: 48, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
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

// -----

// The emulator models mma.sync m16n8k16 with 16-bit multiplicands and f32
// accumulators only; another shape is refused, not run wrongly.
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @kiln_k0(%x: memref<64xf32>, %a: i32) kernel attributes {known_block_size = array<i32: 32, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<64xf32>
      // expected-error @+1 {{the emulator runs nvvm.mma.sync m16n8k16 with row-major A, column-major B, bf16 or f16 multiplicands and f32 accumulators}}
      %d = nvvm.mma.sync A[%a, %a] B[%a] C[%v, %v, %v, %v] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 8>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
      gpu.return
    }
  }
}
