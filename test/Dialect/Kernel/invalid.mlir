// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{range must be positive, got 0}}
kernel.func @k(%x: memref<8xf32>) attributes {grain = 1 : i64, range = 0 : i64} {
  kernel.return
}

// -----

// expected-error @+1 {{argument 0 must be a statically shaped memref with the identity layout}}
kernel.func @k(%x: memref<8xf32, strided<[2]>>) attributes {grain = 1 : i64, range = 8 : i64} {
  kernel.return
}

// -----

kernel.func @k(%x: memref<8xf32>) attributes {grain = 1 : i64, range = 8 : i64} {
  // expected-error @+1 {{allocates inside a kernel.func}}
  %t = memref.alloc() : memref<8xf32>
  kernel.return
}

// -----

kernel.entry @e(%x: memref<8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"}) {
  // expected-error @+1 {{'kernel.launch' op 'nothere' does not name a kernel.func}}
  kernel.launch @nothere(%x) : memref<8xf32>
  kernel.return
}

// -----

kernel.func @k(%x: memref<8xf32>) attributes {grain = 1 : i64, range = 8 : i64} {
  kernel.return
}
kernel.entry @e(%x: memref<4xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"}) {
  // expected-error @+1 {{buffer 0 has type 'memref<4xf32>' but @k expects 'memref<8xf32>'}}
  kernel.launch @k(%x) : memref<4xf32>
  kernel.return
}

// -----

// expected-error @+1 {{has two buffers named 'x'}}
kernel.entry @e(%x: memref<4xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                %y: memref<4xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "x"}) {
  kernel.return
}

// -----

// expected-error @+1 {{argument 0 needs 'kernel.name' and 'kernel.kind'}}
kernel.entry @e(%x: memref<4xf32>) {
  kernel.return
}

// -----

// expected-error @+1 {{a rng_state buffer must be 'kiln.rng_state' of type 'memref<4xi32>'}}
kernel.entry @e(%r: memref<2xi32> {kernel.kind = #kernel.kind<rng_state>, kernel.name = "kiln.rng_state"}) {
  kernel.return
}

// -----

kernel.entry @e() {
  // expected-error @+1 {{arena_offset must be a non-negative multiple of 64, got 32}}
  %t = kernel.alloc {arena_offset = 32 : i64} : memref<4xf32>
  kernel.return
}

// -----

kernel.entry @e() {
  %t = kernel.alloc : memref<4xf32>
  // expected-error @+1 {{must keep the element type and count}}
  %v = kernel.view %t : memref<4xf32> -> memref<5xf32>
  kernel.return
}

// -----

kernel.entry @e(%a: memref<2x3xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                %c: memref<2x2xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  // expected-error @+1 {{reads 8 elements of A, which has 6}}
  kernel.gemm %a, %a, %c {m = 2 : i64, n = 2 : i64, k = 4 : i64} : memref<2x3xf32>, memref<2x3xf32>, memref<2x2xf32>
  kernel.return
}

// -----

kernel.entry @e(%a: memref<2x2x2xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                %c: memref<2x2x2xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  // expected-error @+1 {{batches would overlap in C: stride_c 0 < m * n = 4}}
  kernel.gemm %a, %a, %c {m = 2 : i64, n = 2 : i64, k = 2 : i64, batch = 2 : i64, stride_a = 4 : i64, stride_b = 4 : i64} : memref<2x2x2xf32>, memref<2x2x2xf32>, memref<2x2x2xf32>
  kernel.return
}

// -----

kernel.entry @e(%a: memref<4xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                %c: memref<4xf64> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  // expected-error @+1 {{copies 16 bytes into a buffer of 32}}
  kernel.copy %a, %c : memref<4xf32>, memref<4xf64>
  kernel.return
}

// -----

kernel.entry @e() {
  // expected-error @+1 {{is not allowed in a kernel.entry}}
  %c = arith.constant 0 : index
  kernel.return
}

// -----

kernel.func @k(%x: memref<8xf32>) attributes {grain = 1 : i64, range = 8 : i64} {
  // expected-error @+1 {{'kernel.zero' op expects parent op 'kernel.entry'}}
  kernel.zero %x : memref<8xf32>
  kernel.return
}

// -----

kernel.entry @e(%a: memref<2x2xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                %c: memref<2x2xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  // expected-error @+1 {{tile sizes must be non-negative, got tile_m = -64, tile_n = 0}}
  kernel.gemm %a, %a, %c {m = 2 : i64, n = 2 : i64, k = 2 : i64, tile_m = -64 : i64} : memref<2x2xf32>, memref<2x2xf32>, memref<2x2xf32>
  kernel.return
}

// -----

kernel.entry @e(%a: memref<2x2xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                %c: memref<2x2xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  // expected-error @+1 {{batch strides must be non-negative}}
  kernel.gemm %a, %a, %c {m = 2 : i64, n = 2 : i64, k = 2 : i64, stride_b = -4 : i64} : memref<2x2xf32>, memref<2x2xf32>, memref<2x2xf32>
  kernel.return
}

// -----

kernel.entry @e(%a: memref<2x2xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                %c: memref<2x2xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  // expected-error @+1 {{m, n, k and batch must be positive}}
  kernel.gemm %a, %a, %c {m = -2 : i64, n = 2 : i64, k = 2 : i64} : memref<2x2xf32>, memref<2x2xf32>, memref<2x2xf32>
  kernel.return
}

// -----

kernel.entry @e(%a: memref<2x2xbf16> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                %b: memref<2x2xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "b"},
                %c: memref<2x2xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  // expected-error @+1 {{needs float buffers, A and B of one element type (C's may differ)}}
  kernel.gemm %a, %b, %c {m = 2 : i64, n = 2 : i64, k = 2 : i64} : memref<2x2xbf16>, memref<2x2xf32>, memref<2x2xf32>
  kernel.return
}

// -----

kernel.entry @e(%a: memref<2x2xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                %c: memref<2x2xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  // expected-error @+1 {{epilogue bias needs bias vector}}
  kernel.gemm %a, %a, %c {m = 2 : i64, n = 2 : i64, k = 2 : i64, epilogue = #kernel.epilogue<bias>} : memref<2x2xf32>, memref<2x2xf32>, memref<2x2xf32>
  kernel.return
}

// -----

kernel.entry @e(%a: memref<2x2xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                %v: memref<2xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "v"},
                %c: memref<2x2xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  // expected-error @+1 {{epilogue none takes no bias vector}}
  kernel.gemm %a, %a, %c bias %v {m = 2 : i64, n = 2 : i64, k = 2 : i64} : memref<2x2xf32>, memref<2x2xf32>, memref<2x2xf32> bias memref<2xf32>
  kernel.return
}

// -----

kernel.entry @e(%a: memref<2x2xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                %v: memref<3xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "v"},
                %c: memref<2x2xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  // expected-error @+1 {{bias must hold n = 2 elements of C's type, got 'memref<3xf32>'}}
  kernel.gemm %a, %a, %c bias %v {m = 2 : i64, n = 2 : i64, k = 2 : i64, epilogue = #kernel.epilogue<bias>} : memref<2x2xf32>, memref<2x2xf32>, memref<2x2xf32> bias memref<3xf32>
  kernel.return
}

// -----

kernel.entry @e(%a: memref<2x2xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                %c: memref<2x2xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  // expected-error @+1 {{epilogue dgelu needs the forward's pre-activation as aux}}
  kernel.gemm %a, %a, %c {m = 2 : i64, n = 2 : i64, k = 2 : i64, epilogue = #kernel.epilogue<dgelu>} : memref<2x2xf32>, memref<2x2xf32>, memref<2x2xf32>
  kernel.return
}

// -----

kernel.entry @e(%a: memref<2x2xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                %x: memref<4xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                %c: memref<2x2xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  // expected-error @+1 {{aux must have C's type 'memref<2x2xf32>', got 'memref<4xf32>'}}
  kernel.gemm %a, %a, %c aux %x {m = 2 : i64, n = 2 : i64, k = 2 : i64, epilogue = #kernel.epilogue<gelu>} : memref<2x2xf32>, memref<2x2xf32>, memref<2x2xf32> aux memref<4xf32>
  kernel.return
}

// -----

kernel.entry @e(%a: memref<2x2xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                %c: memref<2x2xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  // expected-error @+2 {{expected ::kiln::kernel::GemmEpilogue to be one of: none, bias, gelu, bias_gelu, dgelu, bias_grad}}
  // expected-error @+1 {{failed to parse Kernel_GemmEpilogueAttr parameter 'value'}}
  kernel.gemm %a, %a, %c {m = 2 : i64, n = 2 : i64, k = 2 : i64, epilogue = #kernel.epilogue<relu>} : memref<2x2xf32>, memref<2x2xf32>, memref<2x2xf32>
  kernel.return
}

// -----

kernel.entry @e(%x: memref<8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"}) {
  // expected-error @+1 {{'kernel.collective_start' op buffer 0 is not a gradient accumulator (an entry argument of kind 'optimizer_state' named '<param>.grad_acc')}}
  %t = kernel.collective_start %x {bucket = 0 : i64} : memref<8xf32>
  kernel.collective_wait %t(%x) : memref<8xf32>
  kernel.return
}

// -----

kernel.entry @e(%m: memref<8xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "w.adam_m"}) {
  // expected-error @+1 {{'kernel.collective_start' op buffer 0 is not a gradient accumulator}}
  %t = kernel.collective_start %m {bucket = 0 : i64} : memref<8xf32>
  kernel.collective_wait %t(%m) : memref<8xf32>
  kernel.return
}

// -----

kernel.entry @e(%g: memref<8xf16> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "w.grad_acc"}) {
  // expected-error @+1 {{'kernel.collective_start' op buffer 0 ('w.grad_acc') is not f32: the sums run in f32}}
  %t = kernel.collective_start %g {bucket = 0 : i64} : memref<8xf16>
  kernel.collective_wait %t(%g) : memref<8xf16>
  kernel.return
}

// -----

kernel.entry @e(%g: memref<8xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "w.grad_acc"}) {
  // expected-error @+1 {{'kernel.collective_start' op buffer 1 ('w.grad_acc') is in the bucket twice}}
  %t = kernel.collective_start %g, %g {bucket = 0 : i64} : memref<8xf32>, memref<8xf32>
  kernel.collective_wait %t(%g, %g) : memref<8xf32>, memref<8xf32>
  kernel.return
}

// -----

kernel.entry @e(%g: memref<8xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "w.grad_acc"},
                %h: memref<8xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "v.grad_acc"}) {
  %t = kernel.collective_start %g {bucket = 0 : i64} : memref<8xf32>
  // expected-error @+1 {{'kernel.collective_start' op is bucket 2, but the entry's starts number their buckets 0, 1, ... in program order: expected 1}}
  %u = kernel.collective_start %h {bucket = 2 : i64} : memref<8xf32>
  kernel.collective_wait %t(%g) : memref<8xf32>
  kernel.collective_wait %u(%h) : memref<8xf32>
  kernel.return
}

// -----

kernel.entry @e(%g: memref<8xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "w.grad_acc"}) {
  // expected-error @+1 {{'kernel.collective_start' op must be waited for by exactly one kernel.collective_wait}}
  %t = kernel.collective_start %g {bucket = 0 : i64} : memref<8xf32>
  kernel.return
}

// -----

kernel.entry @e(%g: memref<8xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "w.grad_acc"},
                %h: memref<8xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "v.grad_acc"}) {
  %t = kernel.collective_start %g {bucket = 0 : i64} : memref<8xf32>
  // expected-error @+1 {{'kernel.collective_wait' op must take the buffers of its kernel.collective_start, in its order}}
  kernel.collective_wait %t(%h) : memref<8xf32>
  kernel.return
}

// -----

kernel.entry @e(%g: memref<8xf32> {kernel.kind = #kernel.kind<optimizer_state>, kernel.name = "w.grad_acc"}) {
  // expected-error @+1 {{'kernel.collective_start' op starts a collective over no buffers}}
  %t = "kernel.collective_start"() {bucket = 0 : i64} : () -> !kernel.collective
  "kernel.collective_wait"(%t) : (!kernel.collective) -> ()
  kernel.return
}
