// RUN: kiln-opt %s --convert-kernel-to-gpu --split-input-file | FileCheck %s
// RUN: kiln-opt %s --convert-kernel-to-gpu='block-size=64' --split-input-file \
// RUN:   | FileCheck %s --check-prefix=SMALL

// An elementwise kernel: a thread per 16 bytes (4 f32) of consecutive
// elements of its whole 2-d loop (not per row), the last dim fastest; the
// 512 elements on one block of 128 threads. Its buffers (distinct in every
// launch) are 16-byte aligned and do not alias, so that NVPTX makes each
// thread's four accesses one.
// CHECK-LABEL: gpu.module @kiln_kernels
// CHECK: gpu.func @kiln_k0(%[[X:.*]]: memref<4x128xf32> {llvm.align = 16 : i64, llvm.noalias}, %[[Y:.*]]: memref<4x128xf32> {llvm.align = 16 : i64, llvm.noalias}) kernel
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>
// CHECK: %[[B:.*]] = gpu.block_id x
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[I:.*]] = arith.addi %{{.*}}, %[[T]] : index
// CHECK: scf.if
// CHECK: %[[E:.*]] = arith.muli %[[I]], %c4
// CHECK: %[[COL:.*]] = arith.remui %[[E]], %c128
// CHECK: %[[ROW:.*]] = arith.divui %[[E]], %c128
// CHECK: memref.load %[[X]][%[[ROW]], %[[COL]]]
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[Y]][%[[ROW]], %[[COL]]]
// CHECK: %[[COL1:.*]] = arith.addi %[[COL]], %c1
// CHECK: memref.load %[[X]][%[[ROW]], %[[COL1]]]
// CHECK: %[[COL3:.*]] = arith.addi %[[COL]], %c3
// CHECK: memref.store %{{.*}}, %[[Y]][%[[ROW]], %[[COL3]]]
// CHECK: gpu.return
// SMALL: known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 2, 1, 1>
// The entries are the plan, not code.
// CHECK-NOT: kernel.entry
kernel.func @k0(%x: memref<4x128xf32>, %y: memref<4x128xf32>) attributes {range = 4 : i64} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x128xf32>) outs(%y : memref<4x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  kernel.return
}
kernel.entry @predict(%x: memref<4x128xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                      %y: memref<4x128xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  kernel.launch @k0(%x, %y) : memref<4x128xf32>, memref<4x128xf32>
  kernel.return
}

// -----

// A row kernel (a sum per row) with no launch to show its buffers
// distinct: the row template cannot rule out aliasing, so a thread per
// row, the row's loop inside it; a range smaller than a block takes one
// block of whole warps.
// CHECK-LABEL: gpu.func @kiln_rows
// CHECK-SAME: known_block_size = array<i32: 32, 1, 1>, known_grid_size = array<i32: 1, 1, 1>
// CHECK: %[[I:.*]] = arith.addi
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[I]], %c6
// CHECK: scf.if %[[IN]]
// CHECK-NOT: scf.parallel
// CHECK: scf.for
// CHECK: memref.load %arg0[%[[I]], %{{.*}}]
// CHECK: memref.store %{{.*}}, %arg1[%[[I]]]

kernel.func @rows(%x: memref<6x100xf32>, %y: memref<6xf32>) attributes {range = 6 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c100 = arith.constant 100 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%r) = (%c0) to (%c6) step (%c1) {
    %s = scf.for %j = %c0 to %c100 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %x[%r, %j] : memref<6x100xf32>
      %n = arith.addf %acc, %v : f32
      scf.yield %n : f32
    }
    memref.store %s, %y[%r] : memref<6xf32>
    scf.reduce
  }
  kernel.return
}

// -----

// Two loops that are not segments of a merged kernel: the second may read
// what the first wrote at the same index of the range, so a thread takes
// one iteration of the range through both (the host's chunk [i, i + 1)).
// CHECK-LABEL: gpu.func @kiln_two_loops
// CHECK-SAME: known_block_size = array<i32: 32, 1, 1>, known_grid_size = array<i32: 1, 1, 1>
// CHECK: %[[I:.*]] = arith.addi
// CHECK: scf.if
// CHECK: %[[NEXT:.*]] = arith.addi %[[I]], %c1
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%[[I]], %c0) to (%[[NEXT]], %c8)
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%[[I]], %c0) to (%[[NEXT]], %c8)
kernel.func @two_loops(%x: memref<4x8xf32>, %y: memref<4x8xf32>) attributes {range = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<4x8xf32>
    memref.store %v, %y[%i, %j] : memref<4x8xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
    %k = arith.subi %c8, %j : index
    %l = arith.subi %k, %c1 : index
    %v = memref.load %y[%i, %l] : memref<4x8xf32>
    memref.store %v, %x[%i, %j] : memref<4x8xf32>
    scf.reduce
  }
  kernel.return
}

// -----

// Segments of a merged kernel are independent: each loop is taken four
// elements at a time, on as many threads as the largest needs (1024 / 4).
// Without a launch to show its buffers distinct, no noalias.
// CHECK-LABEL: gpu.func @kiln_merged
// CHECK-SAME: %arg0: memref<1024xf32> {llvm.align = 16 : i64}
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 1, 1, 1>
// CHECK: %[[I:.*]] = arith.addi
// CHECK: arith.cmpi ult, %[[I]], %c256
// CHECK: %[[E:.*]] = arith.muli %[[I]], %c4
// CHECK: arith.cmpi ult, %[[E]], %c1024
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %arg1[%[[E]]]
// CHECK: %[[E2:.*]] = arith.muli %[[I]], %c4
// CHECK: arith.cmpi ult, %[[E2]], %c256
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %arg3[%[[E2]]]
kernel.func @merged(%a: memref<1024xf32>, %b: memref<1024xf32>, %c: memref<256xf32>, %d: memref<256xf32>) attributes {range = 5 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1024 = arith.constant 1024 : index
  %c256 = arith.constant 256 : index
  scf.parallel (%i) = (%c0) to (%c1024) step (%c1) {
    %v = memref.load %a[%i] : memref<1024xf32>
    memref.store %v, %b[%i] : memref<1024xf32>
    scf.reduce
  } {kernel.segment_offset = 0 : i64}
  scf.parallel (%i) = (%c0) to (%c256) step (%c1) {
    %v = memref.load %c[%i] : memref<256xf32>
    memref.store %v, %d[%i] : memref<256xf32>
    scf.reduce
  } {kernel.segment_offset = 4 : i64}
  kernel.return
}

// -----

// A sequential kernel (range 1) runs on thread 0.
// CHECK-LABEL: gpu.func @kiln_scalar
// CHECK-SAME: known_block_size = array<i32: 32, 1, 1>, known_grid_size = array<i32: 1, 1, 1>
// CHECK: arith.cmpi ult, %{{.*}}, %c1
kernel.func @scalar(%x: memref<f32>, %y: memref<f32>) attributes {range = 1 : i64} {
  %v = memref.load %x[] : memref<f32>
  %w = arith.addf %v, %v : f32
  memref.store %w, %y[] : memref<f32>
  kernel.return
}

// -----

// The row template, where every launch passes distinct buffers: a warp
// per row (rows of at most 1024 elements), eight rows to a block of 256
// threads. Lane l takes elements l, l + 32, ... of the row; its partial
// sum is combined over the warp by five xor shuffles and lane 0's result
// broadcast, so that every lane holds the same bits; the row's own store
// is lane 0's.
// CHECK-LABEL: gpu.func @kiln_row_sums
// CHECK-SAME: kiln.row = "warp", known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 2, 1, 1>
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[LANE:.*]] = arith.remui %[[T]], %c32
// CHECK: %[[WARP:.*]] = arith.divui %[[T]], %c32
// CHECK: %[[ROW:.*]] = arith.addi %{{.*}}, %[[WARP]]
// CHECK: %[[FIRST:.*]] = arith.addi %c0{{.*}}, %[[LANE]]
// CHECK: scf.for %[[J:.*]] = %[[FIRST]] to %c100{{.*}} step %c32{{.*}} iter_args
// CHECK: memref.load %arg0[%[[ROW]], %[[J]]]
// CHECK: gpu.shuffle  xor %{{.*}}, %c16_i32, %c32_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c8_i32, %c32_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32, %c32_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32
// CHECK: gpu.shuffle  idx %{{.*}}, %c0_i32, %c32_i32
// CHECK: arith.cmpi eq, %[[LANE]], %c0
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %arg1[%[[ROW]]]
kernel.func @row_sums(%x: memref<16x100xf32>, %y: memref<16xf32>) attributes {range = 16 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c100 = arith.constant 100 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%r) = (%c0) to (%c16) step (%c1) {
    %s = scf.for %j = %c0 to %c100 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %x[%r, %j] : memref<16x100xf32>
      %n = arith.addf %acc, %v : f32
      scf.yield %n : f32
    }
    memref.store %s, %y[%r] : memref<16xf32>
    scf.reduce
  }
  kernel.return
}
kernel.entry @predict(%x: memref<16x100xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                      %y: memref<16xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  kernel.launch @row_sums(%x, %y) : memref<16x100xf32>, memref<16xf32>
  kernel.return
}

// -----

// A sequential kernel (range 1) summing 2048 elements is one row of one
// block: 256 threads take every 256th element, each warp's sum goes to a
// word of shared memory, and after the barrier every thread adds the
// eight words in warp order.
// CHECK-LABEL: gpu.func @kiln_total
// CHECK-SAME: workgroup(%[[S:.*]] : memref<8xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: kiln.row = "block", known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 1, 1, 1>
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2048{{.*}} step %c256
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: gpu.shuffle  idx
// CHECK: memref.store %{{.*}}, %[[S]][%{{.*}}]
// CHECK: gpu.barrier
// CHECK: memref.load %[[S]][%c0
// CHECK: memref.load %[[S]][%c7
// CHECK: arith.divf
kernel.func @total(%x: memref<2048xf32>, %y: memref<f32>) attributes {range = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2048 = arith.constant 2048 : index
  %zero = arith.constant 0.0 : f32
  %count = arith.constant 2048.0 : f32
  %s = scf.for %j = %c0 to %c2048 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%j] : memref<2048xf32>
    %n = arith.addf %acc, %v : f32
    scf.yield %n : f32
  }
  %mean = arith.divf %s, %count : f32
  memref.store %mean, %y[] : memref<f32>
  kernel.return
}
kernel.entry @predict(%x: memref<2048xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                      %y: memref<f32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  kernel.launch @total(%x, %y) : memref<2048xf32>, memref<f32>
  kernel.return
}

// -----

// A row that reads back what it wrote at another position (y[r, 99 - j]
// after y[r, j]) would read other threads' elements: the row template
// refuses it, and a thread takes the row.
// CHECK-LABEL: gpu.func @kiln_reversed
// CHECK-NOT: kiln.row
// CHECK-SAME: known_block_size = array<i32: 32, 1, 1>
kernel.func @reversed(%x: memref<4x100xf32>, %y: memref<4x100xf32>) attributes {range = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c99 = arith.constant 99 : index
  %c100 = arith.constant 100 : index
  scf.parallel (%r) = (%c0) to (%c4) step (%c1) {
    scf.for %j = %c0 to %c100 step %c1 {
      %v = memref.load %x[%r, %j] : memref<4x100xf32>
      memref.store %v, %y[%r, %j] : memref<4x100xf32>
    }
    scf.for %j = %c0 to %c100 step %c1 {
      %k = arith.subi %c99, %j : index
      %v = memref.load %y[%r, %k] : memref<4x100xf32>
      memref.store %v, %x[%r, %j] : memref<4x100xf32>
    }
    scf.reduce
  }
  kernel.return
}
kernel.entry @predict(%x: memref<4x100xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                      %y: memref<4x100xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  kernel.launch @reversed(%x, %y) : memref<4x100xf32>, memref<4x100xf32>
  kernel.return
}

// -----

// A column sum accumulated through memory (a bias gradient: zero the
// column, then for each row M[c] += x[r, c]) is rewritten as a sum over the
// rows carried in a register, and the column block of one around it inlined. Its
// loads walk down a column, so the column template takes it: a block per 32
// columns, a column per lane (consecutive lanes read consecutive words of
// a row of x), the 8 warps splitting the rows. Each thread's partial sum
// goes to its own shared word; after the barrier every thread adds its
// column's 8 words in warp order, and warp 0 adds the total to M[c]. The
// 40 columns take 2 blocks; the lanes past column 39 repeat it, their
// stores dropped.
// CHECK-LABEL: gpu.func @kiln_bias_grad
// CHECK-SAME: workgroup(%[[BUF:.*]] : memref<256xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: kiln.row = "column"
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 2, 1, 1>
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[B:.*]] = gpu.block_id x
// CHECK: %[[LANE:.*]] = arith.remui %[[T]], %c32
// CHECK: %[[WARP:.*]] = arith.divui %[[T]], %c32
// CHECK: %[[FIRSTCOL:.*]] = arith.muli %[[B]], %c32
// CHECK: %[[COL:.*]] = arith.addi %[[FIRSTCOL]], %[[LANE]]
// CHECK: %[[VALID:.*]] = arith.cmpi ult, %[[COL]], %c40
// CHECK: %[[C:.*]] = arith.minui %[[COL]], %c39
// CHECK: scf.for %[[Z:.*]] = %[[C]] to
// CHECK: %[[W0:.*]] = arith.cmpi eq, %[[WARP]], %c0
// CHECK: %[[ZERO:.*]] = arith.andi %[[W0]], %[[VALID]]
// CHECK: scf.if %[[ZERO]] {
// CHECK-NEXT: memref.store %{{.*}}, %arg0[%[[Z]]]
// CHECK: %[[START:.*]] = arith.addi %c0, %[[WARP]]
// CHECK: %[[SUM:.*]] = scf.for %[[R:.*]] = %[[START]] to %c64 step %c8{{.*}} iter_args
// CHECK: memref.load %arg1[%[[R]], %[[C]]]
// CHECK: %[[ROWBASE:.*]] = arith.muli %[[WARP]], %c32
// CHECK: %[[OWN:.*]] = arith.addi %[[ROWBASE]], %[[LANE]]
// CHECK: memref.store %[[SUM]], %[[BUF]][%[[OWN]]]
// CHECK-NEXT: gpu.barrier
// CHECK: %[[AT0:.*]] = arith.addi %c0{{.*}}, %[[LANE]]
// CHECK: %[[P0:.*]] = memref.load %[[BUF]][%[[AT0]]]
// CHECK: %[[AT1:.*]] = arith.addi %c32{{.*}}, %[[LANE]]
// CHECK: %[[P1:.*]] = memref.load %[[BUF]][%[[AT1]]]
// CHECK: arith.addf %[[P0]], %[[P1]]
// CHECK: %[[AT7:.*]] = arith.addi %c224, %[[LANE]]
// CHECK: memref.load %[[BUF]][%[[AT7]]]
// CHECK-NOT: gpu.barrier
// CHECK: %[[LAST:.*]] = arith.andi %{{.*}}, %[[VALID]]
// CHECK: scf.if %[[LAST]] {
// CHECK-NEXT: %[[OLD:.*]] = memref.load %arg0[%[[C]]]
// CHECK-NEXT: %[[NEW:.*]] = arith.addf %[[OLD]], %{{.*}}
// CHECK-NEXT: memref.store %[[NEW]], %arg0[%[[C]]]
kernel.func @bias_grad(%m: memref<40xf32>, %x: memref<64x40xf32>) attributes {range = 40 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c40 = arith.constant 40 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%b) = (%c0) to (%c40) step (%c1) {
    %next = arith.addi %b, %c1 : index
    %end = arith.minui %next, %c40 : index
    scf.for %c = %b to %end step %c1 {
      memref.store %zero, %m[%c] : memref<40xf32>
    }
    scf.for %r = %c0 to %c64 step %c1 {
      scf.for %c = %b to %end step %c1 {
        %v = memref.load %x[%r, %c] : memref<64x40xf32>
        %old = memref.load %m[%c] : memref<40xf32>
        %new = arith.addf %old, %v : f32
        memref.store %new, %m[%c] : memref<40xf32>
      }
    }
    scf.reduce
  }
  kernel.return
}
kernel.entry @train_step(%m: memref<40xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "m"},
                         %x: memref<64x40xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"}) {
  kernel.launch @bias_grad(%m, %x) : memref<40xf32>, memref<64x40xf32>
  kernel.return
}

// -----

// A merged kernel's scalar segment (a step counter: increment through a
// view, then read through the buffer itself) shares no loop: its first
// thread runs it alone and in order, so its arguments may alias while the
// other segment's rows are spread over warps.
// CHECK-LABEL: gpu.func @kiln_counter_and_sums
// CHECK-SAME: kiln.row = "warp"
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[LANE:.*]] = arith.remui %[[T]], %c32
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0{{.*}}
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-NEXT: %[[OLD:.*]] = memref.load %arg0[%c0]
// CHECK-NEXT: %[[NEW:.*]] = arith.addf %[[OLD]]
// CHECK-NEXT: memref.store %[[NEW]], %arg0[%c0]
// CHECK-NEXT: %[[STEP:.*]] = memref.load %arg1[]
// CHECK-NEXT: memref.store %[[STEP]], %arg2[]
// CHECK-NEXT: }
// CHECK: %[[START:.*]] = arith.addi %c0, %[[LANE]]
// CHECK: scf.for %{{.*}} = %[[START]] to %c100 step %c32{{.*}}
// CHECK: gpu.shuffle  xor
kernel.func @counter_and_sums(%view: memref<1xf32>, %step: memref<f32>, %copy: memref<f32>, %x: memref<4x100xf32>, %y: memref<4xf32>) attributes {range = 5 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c100 = arith.constant 100 : index
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
    %old = memref.load %view[%c0] : memref<1xf32>
    %new = arith.addf %old, %one : f32
    memref.store %new, %view[%c0] : memref<1xf32>
    %now = memref.load %step[] : memref<f32>
    memref.store %now, %copy[] : memref<f32>
    scf.reduce
  } {kernel.segment_offset = 0 : i64}
  scf.parallel (%r) = (%c0) to (%c4) step (%c1) {
    %sum = scf.for %k = %c0 to %c100 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %x[%r, %k] : memref<4x100xf32>
      %next = arith.addf %acc, %v : f32
      scf.yield %next : f32
    }
    memref.store %sum, %y[%r] : memref<4xf32>
    scf.reduce
  } {kernel.segment_offset = 1 : i64}
  kernel.return
}
kernel.entry @train_step(%step: memref<f32> {kernel.kind = #kernel.kind<output>, kernel.name = "step"},
                         %copy: memref<f32> {kernel.kind = #kernel.kind<output>, kernel.name = "copy"},
                         %x: memref<4x100xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                         %y: memref<4xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  %view = kernel.view %step : memref<f32> -> memref<1xf32>
  kernel.launch @counter_and_sums(%view, %step, %copy, %x, %y) : memref<1xf32>, memref<f32>, memref<f32>, memref<4x100xf32>, memref<4xf32>
  kernel.return
}

// -----

// A residual add that also sums its output's columns (the bias gradient
// of the layer below): the map's store reaches a distinct element per
// (row, column), through the row split as (r / 16, r % 16), so the loops
// may be swapped; the column template spreads the rows over the warps,
// each thread storing its own elements of `out`.
// CHECK-LABEL: gpu.func @kiln_add_and_column_sum
// CHECK-SAME: kiln.row = "column"
// CHECK-SAME: known_grid_size = array<i32: 2, 1, 1>
// CHECK: %[[WARP:.*]] = arith.divui %{{.*}}, %c32
// CHECK: %[[C:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[START:.*]] = arith.addi %c0, %[[WARP]]
// CHECK: scf.for %[[R:.*]] = %[[START]] to %c64 step %c8{{.*}} iter_args
// CHECK-DAG: %[[LOW:.*]] = arith.remui %[[R]], %c16
// CHECK-DAG: %[[HIGH:.*]] = arith.divui %[[R]], %c16
// CHECK: memref.store %{{.*}}, %arg2[%[[HIGH]], %[[LOW]], %[[C]]]
// CHECK: gpu.barrier
kernel.func @add_and_column_sum(%x: memref<4x16x64xf32>, %y: memref<4x16x64xf32>, %out: memref<4x16x64xf32>, %m: memref<64xf32>) attributes {range = 64 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%b) = (%c0) to (%c64) step (%c1) {
    %next = arith.addi %b, %c1 : index
    %end = arith.minui %next, %c64 : index
    scf.for %c = %b to %end step %c1 {
      memref.store %zero, %m[%c] : memref<64xf32>
    }
    scf.for %r = %c0 to %c64 step %c1 {
      scf.for %c = %b to %end step %c1 {
        %low = arith.remui %r, %c16 : index
        %high = arith.divui %r, %c16 : index
        %u = memref.load %x[%high, %low, %c] : memref<4x16x64xf32>
        %v = memref.load %y[%high, %low, %c] : memref<4x16x64xf32>
        %w = arith.addf %u, %v : f32
        memref.store %w, %out[%high, %low, %c] : memref<4x16x64xf32>
        %old = memref.load %m[%c] : memref<64xf32>
        %new = arith.addf %old, %w : f32
        memref.store %new, %m[%c] : memref<64xf32>
      }
    }
    scf.reduce
  }
  kernel.return
}
kernel.entry @train_step(%x: memref<4x16x64xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                         %y: memref<4x16x64xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "y"},
                         %out: memref<4x16x64xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "out"},
                         %m: memref<64xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "m"}) {
  kernel.launch @add_and_column_sum(%x, %y, %out, %m) : memref<4x16x64xf32>, memref<4x16x64xf32>, memref<4x16x64xf32>, memref<64xf32>
  kernel.return
}

// -----

// The position embedding's gradient: a sum over the batch of each (t, c)
// element of a 4x16x8 tensor, the row index split as (i / 8, i % 8). With
// the row's low part last, neighbouring rows are neighbouring words, and
// the column template takes it.
// CHECK-LABEL: gpu.func @kiln_batch_sum
// CHECK-SAME: kiln.row = "column"
// CHECK-SAME: known_grid_size = array<i32: 4, 1, 1>
// CHECK: %[[LANE:.*]] = arith.remui %{{.*}}, %c32
// CHECK: %[[WARP:.*]] = arith.divui %{{.*}}, %c32
// CHECK: %[[START:.*]] = arith.addi %c0, %[[WARP]]
// CHECK: scf.for %[[B:.*]] = %[[START]] to %c4 step %c8{{.*}} iter_args
// CHECK: memref.load %arg0[%[[B]], %{{.*}}, %{{.*}}] : memref<4x16x8xf32>
// CHECK: gpu.barrier
kernel.func @batch_sum(%x: memref<4x16x8xf32>, %m: memref<128xf32>) attributes {range = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c128) step (%c1) {
    %next = arith.addi %i, %c1 : index
    %end = arith.minui %next, %c128 : index
    scf.for %c = %i to %end step %c1 {
      memref.store %zero, %m[%c] : memref<128xf32>
    }
    scf.for %b = %c0 to %c4 step %c1 {
      scf.for %c = %i to %end step %c1 {
        %low = arith.remui %c, %c8 : index
        %high = arith.divui %c, %c8 : index
        %v = memref.load %x[%b, %high, %low] : memref<4x16x8xf32>
        %old = memref.load %m[%c] : memref<128xf32>
        %new = arith.addf %old, %v : f32
        memref.store %new, %m[%c] : memref<128xf32>
      }
    }
    scf.reduce
  }
  kernel.return
}
kernel.entry @train_step(%x: memref<4x16x8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                         %m: memref<128xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "m"}) {
  kernel.launch @batch_sum(%x, %m) : memref<4x16x8xf32>, memref<128xf32>
  kernel.return
}

// -----

// The embedding gradient: a scatter-add by token id, a column per
// iteration. Ids repeat, so the tokens stay in order on one thread, but
// the destination rows are split: thread i takes column i % 16 of
// partition p = i / 16 (8 partitions, one per row of G here), zeroes the
// rows v with v % 8 == p, and adds only the tokens whose id it owns. A bad
// id still sets the status on every thread that meets it.
// CHECK-LABEL: gpu.func @kiln_embedding_grad
// CHECK-SAME: kiln.scatter = 8
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>
// CHECK: %[[I:.*]] = arith.addi
// CHECK: %[[COL:.*]] = arith.remui %[[I]], %c16
// CHECK: %[[PART:.*]] = arith.divui %[[I]], %c16
// CHECK: scf.for %[[V:.*]] = %[[PART]] to %c8{{.*}} step %c8
// CHECK: memref.store %{{.*}}, %arg2[%[[V]], %{{.*}}]
// CHECK: scf.for %[[T:.*]] = %c0{{.*}} to %c10
// CHECK: %[[ID:.*]] = arith.index_cast
// CHECK: %[[OWNER:.*]] = arith.remui %[[ID]], %c8
// CHECK: %[[OWNS:.*]] = arith.cmpi eq, %[[OWNER]], %[[PART]]
// CHECK: scf.if %[[OWNS]] {
// CHECK: memref.load %arg2[%[[ID]],
// CHECK: memref.store %{{.*}}, %arg2[%[[ID]],
kernel.func @embedding_grad(%dy: memref<10x16xf32>, %ids: memref<10xi32>, %g: memref<8x16xf32>, %status: memref<2xi64>) attributes {range = 16 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c10 = arith.constant 10 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %c0_i64 = arith.constant 0 : i64
  %c1_i64 = arith.constant 1 : i64
  %c8_i64 = arith.constant 8 : i64
  scf.parallel (%b) = (%c0) to (%c16) step (%c1) {
    %next = arith.addi %b, %c1 : index
    %end = arith.minui %next, %c16 : index
    scf.for %v = %c0 to %c8 step %c1 {
      scf.for %c = %b to %end step %c1 {
        memref.store %zero, %g[%v, %c] : memref<8x16xf32>
      }
    }
    scf.for %t = %c0 to %c10 step %c1 {
      %raw = memref.load %ids[%t] : memref<10xi32>
      %wide = arith.extsi %raw : i32 to i64
      %low = arith.cmpi slt, %wide, %c0_i64 : i64
      %high = arith.cmpi sge, %wide, %c8_i64 : i64
      %bad = arith.ori %low, %high : i1
      scf.if %bad {
        %0 = memref.atomic_rmw maxs %c1_i64, %status[%c0] : (i64, memref<2xi64>) -> i64
      } else {
        %id = arith.index_cast %wide : i64 to index
        scf.for %c = %b to %end step %c1 {
          %old = memref.load %g[%id, %c] : memref<8x16xf32>
          %x = memref.load %dy[%t, %c] : memref<10x16xf32>
          %new = arith.addf %old, %x : f32
          memref.store %new, %g[%id, %c] : memref<8x16xf32>
        }
      }
    }
    scf.reduce
  }
  kernel.return
}
kernel.entry @train_step(%dy: memref<10x16xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "dy"},
                         %ids: memref<10xi32> {kernel.kind = #kernel.kind<input>, kernel.name = "ids"},
                         %g: memref<8x16xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "g"},
                         %status: memref<2xi64> {kernel.kind = #kernel.kind<output>, kernel.name = "status"}) {
  kernel.launch @embedding_grad(%dy, %ids, %g, %status) : memref<10x16xf32>, memref<10xi32>, memref<8x16xf32>, memref<2xi64>
  kernel.return
}

// -----

// A row whose second loop starts one element later reads y[r, j] on
// another thread than the one that wrote it (iteration j runs on lane
// (j - start) % 32): the template refuses it, and a thread takes the row.
// The same loops from equal starts are a row kernel, and so are loops that
// touch different elements, one ending where the next starts (a causal
// row: y[r, j] for j <= r, then zeros after it).
// CHECK-LABEL: gpu.func @kiln_shifted
// CHECK-NOT: kiln.row
// CHECK-SAME: known_block_size = array<i32: 32, 1, 1>
// CHECK-LABEL: gpu.func @kiln_aligned
// CHECK-SAME: kiln.row = "warp"
// CHECK-LABEL: gpu.func @kiln_causal
// CHECK-SAME: kiln.row = "warp"
kernel.func @shifted(%x: memref<4x100xf32>, %y: memref<4x100xf32>, %z: memref<4xf32>) attributes {range = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c100 = arith.constant 100 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%r) = (%c0) to (%c4) step (%c1) {
    scf.for %j = %c0 to %c100 step %c1 {
      %v = memref.load %x[%r, %j] : memref<4x100xf32>
      memref.store %v, %y[%r, %j] : memref<4x100xf32>
    }
    %sum = scf.for %j = %c1 to %c100 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %y[%r, %j] : memref<4x100xf32>
      %next = arith.addf %acc, %v : f32
      scf.yield %next : f32
    }
    memref.store %sum, %z[%r] : memref<4xf32>
    scf.reduce
  }
  kernel.return
}
kernel.func @aligned(%x: memref<4x100xf32>, %y: memref<4x100xf32>, %z: memref<4xf32>) attributes {range = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c100 = arith.constant 100 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%r) = (%c0) to (%c4) step (%c1) {
    scf.for %j = %c0 to %c100 step %c1 {
      %v = memref.load %x[%r, %j] : memref<4x100xf32>
      memref.store %v, %y[%r, %j] : memref<4x100xf32>
    }
    %sum = scf.for %j = %c0 to %c100 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %y[%r, %j] : memref<4x100xf32>
      %next = arith.addf %acc, %v : f32
      scf.yield %next : f32
    }
    memref.store %sum, %z[%r] : memref<4xf32>
    scf.reduce
  }
  kernel.return
}
kernel.func @causal(%x: memref<4x100xf32>, %y: memref<4x100xf32>) attributes {range = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c100 = arith.constant 100 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%r) = (%c0) to (%c4) step (%c1) {
    %next = arith.addi %r, %c1 : index
    %t = arith.minui %next, %c100 : index
    scf.for %j = %c0 to %t step %c1 {
      %v = memref.load %x[%r, %j] : memref<4x100xf32>
      memref.store %v, %y[%r, %j] : memref<4x100xf32>
    }
    scf.for %j = %t to %c100 step %c1 {
      memref.store %zero, %y[%r, %j] : memref<4x100xf32>
    }
    scf.reduce
  }
  kernel.return
}
kernel.entry @predict(%x: memref<4x100xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                      %y: memref<4x100xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"},
                      %z: memref<4xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "z"},
                      %y3: memref<4x100xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y3"},
                      %y2: memref<4x100xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y2"},
                      %z2: memref<4xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "z2"}) {
  kernel.launch @shifted(%x, %y, %z) : memref<4x100xf32>, memref<4x100xf32>, memref<4xf32>
  kernel.launch @aligned(%x, %y2, %z2) : memref<4x100xf32>, memref<4x100xf32>, memref<4xf32>
  kernel.launch @causal(%x, %y3) : memref<4x100xf32>, memref<4x100xf32>
  kernel.return
}

// -----

// A transpose: y[i, j] = x[j, i] + b[i, j]. Its store runs along j, its
// load of x along i: a block per 32 x 32 tile (2 x 3 tiles of 40 x 72),
// whose 256 threads read x's tile with neighbouring lanes on its last dim
// into shared memory (a word of padding per row), meet at one barrier, and
// store y's tile with neighbouring lanes on y's last dim, x read back from
// the tile; b, read along j like y, stays a plain load.
// CHECK-LABEL: gpu.func @kiln_transpose
// CHECK-SAME: workgroup(%[[TILE:.*]] : memref<32x33xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: kiln.transpose = 32
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 6, 1, 1>
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[LANE:.*]] = arith.remui %[[T]], %c32
// CHECK: %[[ROW:.*]] = arith.divui %[[T]], %c32
// CHECK: scf.if
// CHECK: %[[X:.*]] = memref.load %arg0[%{{.*}}, %[[READ:.*]]] : memref<72x40xf32>
// CHECK: memref.store %[[X]], %[[TILE]][%[[ROW]], %[[LANE]]]
// CHECK-COUNT-3: memref.store %{{.*}}, %[[TILE]]
// CHECK-NOT: memref.load %arg0
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: scf.if
// CHECK: %[[BACK:.*]] = memref.load %[[TILE]][%[[LANE]], %[[ROW]]]
// CHECK: %[[B:.*]] = memref.load %arg1[%[[I:.*]], %[[J:.*]]] : memref<40x72xf32>
// CHECK: arith.addf %[[BACK]], %[[B]]
// CHECK: memref.store %{{.*}}, %arg2[%[[I]], %[[J]]]
// CHECK-NOT: memref.load %arg0
// CHECK: gpu.return
kernel.func @transpose(%x: memref<72x40xf32>, %b: memref<40x72xf32>, %y: memref<40x72xf32>) attributes {range = 40 : i64} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<72x40xf32>, memref<40x72xf32>) outs(%y : memref<40x72xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  }
  kernel.return
}
kernel.entry @predict(%x: memref<72x40xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                      %b: memref<40x72xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "b"},
                      %y: memref<40x72xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
  kernel.launch @transpose(%x, %b, %y) : memref<72x40xf32>, memref<40x72xf32>, memref<40x72xf32>
  kernel.return
}

// -----

// Not tiled: a transposed read of a buffer the kernel also writes (its
// tile would be read before the stores it must see), and a transpose with
// a dim too short to fill a tile. Both stay elementwise.
// CHECK-LABEL: gpu.func @kiln_in_place
// CHECK-NOT: kiln.transpose
// CHECK-SAME: kiln.elementwise
// CHECK-LABEL: gpu.func @kiln_short
// CHECK-NOT: kiln.transpose
// CHECK-SAME: kiln.elementwise
kernel.func @in_place(%x: memref<64x64xf32>) attributes {range = 64 : i64} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x64xf32>) outs(%x : memref<64x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  kernel.return
}
kernel.func @short(%x: memref<64x8xf32>, %y: memref<8x64xf32>) attributes {range = 8 : i64} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x8xf32>) outs(%y : memref<8x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  kernel.return
}
kernel.entry @predict(%x: memref<64x64xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                      %s: memref<64x8xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "s"},
                      %t: memref<8x64xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "t"}) {
  kernel.launch @in_place(%x) : memref<64x64xf32>
  kernel.launch @short(%s, %t) : memref<64x8xf32>, memref<8x64xf32>
  kernel.return
}

// -----

// A softmax row in place: the maximum pass and the exp-sum pass (which
// stores exp(x - m)) become one online pass carrying (m, s) from (-inf,
// 0), combined as pairs across the warp; the normalizing pass, which
// overwrote each stored exponential, recomputes it from the input. Two
// loops where there were three; the row is read twice and written once.
// CHECK-LABEL: gpu.func @kiln_softmax
// CHECK-SAME: kiln.row = "warp"
// CHECK: %[[PAIR:[0-9]+]]:2 = scf.for %{{[a-z0-9_]+}} = %{{[a-z0-9_]+}} to %c64 step %c32{{[_0-9]*}} iter_args(%[[M:[a-z0-9_]+]] = %cst{{[_0-9]*}}, %[[S:[a-z0-9_]+]] = %cst{{[_0-9]*}}) -> (f32, f32)
// CHECK: %[[X:.*]] = memref.load %arg0
// CHECK: arith.cmpf olt, %[[M]], %[[X]]
// CHECK: math.exp
// CHECK: scf.yield
// CHECK-NOT: memref.store
// CHECK: gpu.shuffle xor %[[PAIR]]#0, %c16
// CHECK: gpu.shuffle xor %[[PAIR]]#1, %c16
// CHECK: gpu.shuffle idx
// CHECK: scf.for
// CHECK: %[[Y:.*]] = memref.load %arg0
// CHECK: arith.subf %[[Y]]
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: memref.store
// CHECK-NOT: scf.for
// CHECK: gpu.return
kernel.func @softmax(%x: memref<16x64xf32>) attributes {range = 16 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%r) = (%c0) to (%c16) step (%c1) {
    %ninf = arith.constant 0xFF800000 : f32
    %m = scf.for %j = %c0 to %c64 step %c1 iter_args(%acc = %ninf) -> (f32) {
      %v = memref.load %x[%r, %j] : memref<16x64xf32>
      %less = arith.cmpf olt, %acc, %v : f32
      %max = arith.select %less, %v, %acc : f32
      scf.yield %max : f32
    }
    %zero = arith.constant 0.000000e+00 : f32
    %s = scf.for %j = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %x[%r, %j] : memref<16x64xf32>
      %d = arith.subf %v, %m : f32
      %e = math.exp %d : f32
      memref.store %e, %x[%r, %j] : memref<16x64xf32>
      %sum = arith.addf %acc, %e : f32
      scf.yield %sum : f32
    }
    scf.for %j = %c0 to %c64 step %c1 {
      %e = memref.load %x[%r, %j] : memref<16x64xf32>
      %y = arith.divf %e, %s : f32
      memref.store %y, %x[%r, %j] : memref<16x64xf32>
    }
    scf.reduce
  }
  kernel.return
}
kernel.entry @predict(%x: memref<16x64xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "x"}) {
  kernel.launch @softmax(%x) : memref<16x64xf32>
  kernel.return
}

// -----

// Not fused: the exponentials are the kernel's output (no later pass
// overwrites them), so the exp-sum pass keeps its stores, and with them
// the maximum's pass before it.
// CHECK-LABEL: gpu.func @kiln_exponentials
// CHECK: scf.for {{.*}} -> (f32) {
// CHECK: scf.for {{.*}} -> (f32) {
// CHECK: memref.store
kernel.func @exponentials(%x: memref<16x64xf32>, %e: memref<16x64xf32>, %sums: memref<16xf32>) attributes {range = 16 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%r) = (%c0) to (%c16) step (%c1) {
    %ninf = arith.constant 0xFF800000 : f32
    %m = scf.for %j = %c0 to %c64 step %c1 iter_args(%acc = %ninf) -> (f32) {
      %v = memref.load %x[%r, %j] : memref<16x64xf32>
      %less = arith.cmpf olt, %acc, %v : f32
      %max = arith.select %less, %v, %acc : f32
      scf.yield %max : f32
    }
    %zero = arith.constant 0.000000e+00 : f32
    %s = scf.for %j = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %x[%r, %j] : memref<16x64xf32>
      %d = arith.subf %v, %m : f32
      %ex = math.exp %d : f32
      memref.store %ex, %e[%r, %j] : memref<16x64xf32>
      %sum = arith.addf %acc, %ex : f32
      scf.yield %sum : f32
    }
    memref.store %s, %sums[%r] : memref<16xf32>
    scf.reduce
  }
  kernel.return
}
kernel.entry @predict(%x: memref<16x64xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                      %e: memref<16x64xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "e"},
                      %sums: memref<16xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "sums"}) {
  kernel.launch @exponentials(%x, %e, %sums) : memref<16x64xf32>, memref<16x64xf32>, memref<16xf32>
  kernel.return
}
