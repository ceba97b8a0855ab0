// RUN: kiln-opt %s --convert-kernel-to-gpu='block-size=48' -verify-diagnostics

// expected-error @+1 {{convert-kernel-to-gpu: block-size must be a multiple of 32 in [32, 1024], got 48}}
module {
  kernel.func @k(%x: memref<8xf32>) attributes {range = 8 : i64} {
    kernel.return
  }
}
