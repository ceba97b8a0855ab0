// RUN: kiln-opt %s -graph-mixed-precision=policy=bf16 -split-input-file -verify-diagnostics
// RUN: not kiln-opt %s -graph-mixed-precision=policy=fp8 -split-input-file 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not kiln-opt %s '-graph-mixed-precision=policy=bf16 target-precisions=fp32' -split-input-file 2>&1 | FileCheck %s --check-prefix=TARGET

// UNKNOWN: unknown precision 'fp8' (expected fp32, bf16 or fp16)
// RUN: not kiln-opt %s '-graph-mixed-precision=policy=fp32 weight-copies=false' -split-input-file 2>&1 | FileCheck %s --check-prefix=COPIES
// TARGET: precision = bf16 is not supported on this target yet (it trains in fp32)
// COPIES: --no-weight-copies applies to bf16 and fp16 (this step trains in fp32: it keeps no 16-bit weight copies)

// An op of another dialect: its precision policy is unknown.
func.func @foreign(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{is not a graph op: --graph-mixed-precision cannot tell its precision policy}}
  %y = arith.addf %x, %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Fused regions come later in the pipeline.
func.func @fused(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{--graph-mixed-precision runs before --graph-fuse}}
  %y = graph.fusion -> (tensor<4xf32>) {
    %n = graph.neg %x : tensor<4xf32>
    graph.yield %n : tensor<4xf32>
  }
  return %y : tensor<4xf32>
}
