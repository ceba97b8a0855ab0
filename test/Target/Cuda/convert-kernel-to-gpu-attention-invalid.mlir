// RUN: kiln-opt %s --convert-kernel-to-gpu -verify-diagnostics

// A fused attention's part whose buffers are not the part's (here an
// output of the wrong width): the template refuses it, and its reference
// body (a thread per row) is never the fallback.
module {
  // expected-error @+1 {{convert-kernel-to-gpu: the attention template cannot take kernel kiln_k0 (forward)}}
  kernel.func @k0(%q: memref<1x4x8xf32>, %k: memref<1x4x8xf32>, %v: memref<1x4x8xf32>, %out: memref<1x4x16xf32>, %lse: memref<1x4xf32>) attributes {range = 4 : i64, kernel.attention = {part = "forward", batches = 1 : i64, queries = 4 : i64, keys = 4 : i64, key_dim = 8 : i64, value_dim = 8 : i64, causal = false, scale = 0.35 : f64}} {
    kernel.return
  }
}
