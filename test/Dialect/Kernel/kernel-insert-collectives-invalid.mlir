// RUN: kiln-opt %s -split-input-file --kernel-insert-collectives="world=2" -verify-diagnostics

// A step for 2 ranks without the entry whose gradients it sums.
// expected-error @+1 {{kernel-insert-collectives: a step for 2 ranks sums the gradients of its 'accumulate_step', and the module has none}}
module {
  kernel.entry @train_step(%x: memref<8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"}) {
    kernel.return
  }
}

// -----

// The world asked for must be the train step's.
// expected-error @+1 {{kernel-insert-collectives: world 2 differs from the train step's world 4}}
module attributes {graph.train = {world = 4 : i64}} {
  kernel.entry @accumulate_step(%x: memref<8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"}) {
    kernel.return
  }
}

// -----

// The sums run in f32.
// expected-error @+1 {{'kernel.entry' op has the gradient accumulator 'w.grad_acc' in 'memref<8xbf16>': the sums over the ranks run in f32}}
kernel.entry @accumulate_step(%g: memref<8xbf16> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "w.grad_acc"}) {
  kernel.return
}

// -----

// expected-error @+1 {{'kernel.entry' op has collectives already (kernel-insert-collectives ran)}}
kernel.entry @accumulate_step(%g: memref<8xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "w.grad_acc"}) {
  %t = kernel.collective_start %g {bucket = 0 : i64} : memref<8xf32>
  kernel.collective_wait %t(%g) : memref<8xf32>
  kernel.return
}
