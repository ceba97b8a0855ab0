//===- KernelPasses.td - Passes over the kernel dialect ----*- tablegen -*-===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNEL_PASSES_TD
#define KILN_KERNEL_PASSES_TD

include "mlir/Pass/PassBase.td"

def KernelAssignOffsetsNaive : Pass<"kernel-assign-offsets-naive", "::mlir::ModuleOp"> {
  let summary = "Gives every transient buffer its own arena slice, in program order.";
  let description = [{
    The placeholder for the memory planner (`--kernel-plan-memory`): within
    each `kernel.entry`, every `kernel.alloc` gets an `arena_offset` right
    after the previous one, rounded up to 64 bytes; nothing is reused. Entries
    never run at the same time, so each starts at offset 0, and the module's
    `kernel.arena_bytes` is the largest entry's total.
  }];
  let dependentDialects = ["::kiln::kernel::KernelDialect"];
}

def KernelDedupKernels : Pass<"kernel-dedup-kernels", "::mlir::ModuleOp"> {
  let summary = "Keeps one kernel.func of each set of identical ones.";
  let description = [{
    Kernels receive their buffers as arguments, so the repeated layers of a
    model produce the same kernel over other buffers many times (a 12-layer
    GPT: each layer's layer norm, bias + GELU, attention row kernels and
    their gradients). Two `kernel.func`s are identical when they print the
    same apart from their names: same signature, range, grain and body. The
    first of each set (in module order) is kept; every `kernel.launch` of
    the others launches it instead, and the others are erased, so that code
    generation compiles each distinct kernel once. Launches keep their own
    `kernel.origin`, so profiles still name each op.
    ```mlir
    kernel.func @k0(%x: memref<8xf32>, %y: memref<8xf32>) attributes {grain = 8 : i64, range = 8 : i64} { ... }
    kernel.func @k1(%x: memref<8xf32>, %y: memref<8xf32>) attributes {grain = 8 : i64, range = 8 : i64} { ... }
    kernel.launch @k1(%a, %b) : ...
    // becomes
    kernel.func @k0(...) { ... }
    kernel.launch @k0(%a, %b) : ...
    ```
  }];
  let dependentDialects = ["::kiln::kernel::KernelDialect"];
}

def KernelTileGemms : Pass<"kernel-tile-gemms", "::mlir::ModuleOp"> {
  let summary = "Cuts each GEMM's C into the tiles the cpu executor runs in parallel.";
  let description = [{
    Sets `tile_m` and `tile_n` on every `kernel.gemm`: the cpu executor
    computes each tile of each batch entry's C as one single-threaded call
    of its GEMM library, spread over the session's threads. The tiles are
    chosen here, from the shape alone, so that the bytes of C do not depend
    on the thread count that runs them (bit-exact resume and recompute).

    A product of `m * n * k` multiply-adds gets about `work / tile-work`
    tiles (at least 1, at most `max-tiles`), made of whole `block`-row
    blocks first (each tile then reads all of B, as the library packs it
    once per call), then of whole `block`-column blocks. A dim left whole
    gets 0.

    A tile of `tm x tn` reads `1/tm + 1/tn` elements of A and B per
    multiply-add; a library packs them only when that is small (oneDNN's
    sgemm on AVX2: below 0.0038). With `max-traffic` set, a product that is
    itself within it and has `k >= traffic-min-k` gets the grid with the
    most tiles (at most the tiles wanted) whose smallest tile keeps within
    it, the squarest of those; unless that is a single tile, which would
    leave the other threads idle.
    ```mlir
    // 2048 x 384 x 128 = 48 * tile-work: 32 blocks of 64 rows, each cut
    // into 2 tiles of 192 columns.
    kernel.gemm %a, %b, %c {m = 2048 : i64, n = 384 : i64, k = 128 : i64,
                            tile_m = 64 : i64, tile_n = 192 : i64} : ...
    ```
  }];
  let options = [
    Option<"tileWork", "tile-work", "int64_t", /*default=*/"2097152",
           "Multiply-adds a tile is worth">,
    Option<"maxTiles", "max-tiles", "int64_t", /*default=*/"64",
           "The most tiles one batch entry is cut into">,
    Option<"block", "block", "int64_t", /*default=*/"64",
           "Tile sizes are multiples of this many rows or columns">,
    Option<"maxTraffic", "max-traffic", "double", /*default=*/"0",
           "The most A and B elements a tile may read per multiply-add, "
           "1/tile_m + 1/tile_n, where the whole product keeps within it "
           "(0: no bound)">,
    Option<"trafficMinK", "traffic-min-k", "int64_t", /*default=*/"0",
           "max-traffic bounds the products with at least this k">,
  ];
  let dependentDialects = ["::kiln::kernel::KernelDialect"];
}

def KernelPlanMemory : Pass<"kernel-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Places every transient buffer in one arena by size and lifetime.";
  let description = [{
    The memory planner. For each `kernel.entry`, BufferLiveness gives every
    transient (`kernel.alloc`) its live range over the entry's schedule and
    chains elementwise in-place reuse into slots: an elementwise kernel's
    output takes the bytes of an input that dies at that launch. The slots
    are then packed by ArenaPacking (greedy placement in several orders,
    the smallest arena kept), and each alloc gets its slot's
    `arena_offset`.

    Entries never run at the same time, so each starts at offset 0: the
    module's `kernel.arena_bytes` is the largest entry's arena, and
    `kernel.live_lower_bound_bytes` the largest entry's live lower bound.
    Each entry carries its own `kernel.arena_bytes` and
    `kernel.live_lower_bound_bytes`.

    A transient whose defining op only reads it is an error (it would read
    whatever bytes another buffer left there). With `verify` (the default),
    the placement is checked as `--kernel-verify-arena` does.
    ```mlir
    %a = kernel.alloc {arena_offset = 0 : i64} : memref<256xf32>
    kernel.launch @exp(%x, %a) : memref<256xf32>, memref<256xf32>
    // %b takes %a's bytes: @neg is elementwise and %a dies here.
    %b = kernel.alloc {arena_offset = 0 : i64} : memref<256xf32>
    kernel.launch @neg(%a, %b) : memref<256xf32>, memref<256xf32>
    ```
  }];
  let options = [
    Option<"verify", "verify", "bool", /*default=*/"true",
           "Check the placement: no two live transients share a byte">,
  ];
  let dependentDialects = ["::kiln::kernel::KernelDialect"];
}

def KernelMergeLaunches : Pass<"kernel-merge-launches", "::mlir::ModuleOp"> {
  let summary = "Merges runs of independent launches into one kernel each.";
  let description = [{
    First, within each `kernel.entry`, launches move down to where they can
    join a neighbour, when no scheduled op in between writes what they touch
    or reads what they write: a sequential launch (range 1: the scalar steps
    of a loss, a learning-rate schedule, a clipping scale) to the next
    sequential one, if the transients it reads total at most 64 KiB; a
    parallel launch without a mergeable neighbour to the next launch it is
    independent of, unless the move raises the entry's live lower bound (a
    bias-gradient sum past two GEMMs to the next layer norm's gradient).
    A launch that writes an entry output stays where it is: the loss's
    writer marks the end of the forward (`activation_bytes`).
    Then a run of consecutive launches of sequential kernels, dependent or
    not, becomes one sequential kernel running their bodies in order.
    Then a run of consecutive launches of parallel
    kernels (range > 0; a sequential body becomes a segment of
    size 1) where no launch writes a buffer that another one
    reads or writes (except disjoint boxes of one buffer declared by
    `kernel.write_box`, the pieces of a concat) becomes one launch of a new
    kernel. The new kernel's
    range is the sum of the ranges; each original body is a segment of it,
    its top-level parallel loops tagged with `kernel.segment_offset` (linalg
    ops are lowered to their parallel loops for that). The cpu backend maps
    a chunk of the merged range onto each segment, so every iteration
    computes what it did in its own kernel. Launches whose outputs the
    memory planner may place over a dying input (elementwise pairs) keep
    their own launch. The optimizer's per-parameter updates, which run one
    after another and touch disjoint buffers, become one multi-tensor
    kernel. The merged launch's `kernel.origin` joins the originals' with
    `+`; its location fuses theirs.
    ```mlir
    // Before: two launches over disjoint buffers.
    kernel.launch @k0(%a, %b) : memref<64xf32>, memref<64xf32>
    kernel.launch @k1(%c, %d) : memref<32xf32>, memref<32xf32>
    // After: one kernel of range 64 + 32; @k1's loops start at offset 64.
    kernel.launch @k2(%a, %b, %c, %d) : ...
    ```
  }];
  let options = [
    Option<"maxOps", "max-ops", "int64_t", /*default=*/"0",
           "The most ops (of the kernels' bodies) one merged kernel or "
           "chain of sequential kernels holds (0: no limit); a launch whose "
           "kernel alone is larger still joins an empty run">,
  ];
  let dependentDialects = ["::kiln::kernel::KernelDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def KernelInsertCollectives
    : Pass<"kernel-insert-collectives", "::mlir::ModuleOp"> {
  let summary = "Sums a data-parallel step's gradients over the ranks during its backward.";
  let description = [{
    In a step compiled for `world` > 1 ranks, each rank's `accumulate_step`
    adds its slice of the batch into the gradient accumulators (the
    `<param>.grad_acc` optimizer state; the train step already scales them so
    that their sum over the ranks is the mean gradient). This pass sums them
    over the ranks where the backward finishes them. First, each op that
    writes an accumulator (the train step emits them after the whole
    backward) moves up to just after the last op it depends on: the one
    defining an operand, or a scheduled op writing what it touches or
    reading what it writes (views of the accumulators move to the top
    first); those moved to one place keep their order. Then the
    accumulators go
    into buckets in the order of the scheduled op that last touches each
    (ties in argument order), a bucket closing once it holds `bucket-bytes`
    (the last may hold less); each bucket's `kernel.collective_start`
    comes right after its members' last op (before the first op for an
    accumulator the entry never touches), and every bucket's
    `kernel.collective_wait` comes at the entry's end, where apply_step,
    the next entry, needs the sums. With `overlap=false` every start waits
    for the end of the backward too (the comparison run). A world of 1
    leaves the module alone; a world over 1 without an `accumulate_step`
    entry, or one whose entry has collectives already, is an error.

    `world` = 0 takes the module's train setting (`graph.train`'s `world`,
    else 1). Run after the passes that reorder an entry's ops
    (`--kernel-merge-launches`).
    ```mlir
    kernel.launch @dw1(%x, %dy, %g1) : ...
    %t0 = kernel.collective_start %g1 {bucket = 0 : i64} : memref<64x64xf32>
    kernel.launch @dw0(%x, %dy, %g0) : ...
    %t1 = kernel.collective_start %g0 {bucket = 1 : i64} : memref<64x64xf32>
    kernel.collective_wait %t0(%g1) : memref<64x64xf32>
    kernel.collective_wait %t1(%g0) : memref<64x64xf32>
    kernel.return
    ```
  }];
  let options = [
    Option<"world", "world", "int64_t", /*default=*/"0",
           "Ranks the step is compiled for (0: the module's train setting)">,
    Option<"bucketBytes", "bucket-bytes", "int64_t",
           /*default=*/"1048576",
           "A bucket closes once it holds this many bytes (0: one "
           "accumulator per bucket)">,
    Option<"overlap", "overlap", "bool", /*default=*/"true",
           "Start each bucket as soon as the backward has finished it "
           "(false: all at the end of the backward)">,
  ];
  let dependentDialects = ["::kiln::kernel::KernelDialect"];
}

def KernelVerifyArena : Pass<"kernel-verify-arena", "::mlir::ModuleOp"> {
  let summary = "Proves that no two simultaneously live transients overlap.";
  let description = [{
    Checks the arena offsets of every `kernel.entry` (from either placement
    pass) against BufferLiveness: each transient has an offset, a multiple
    of 64, ending within the module's `kernel.arena_bytes`; transients live
    at a common program point share no byte, except an in-place pair, which
    starts at the same offset. Changes nothing; fails with an error at the
    offending `kernel.alloc` otherwise.
  }];
}

def KernelCheckMemoryBudget
    : Pass<"kernel-check-memory-budget", "::mlir::ModuleOp"> {
  let summary = "Fails when the placed module's peak bytes exceed a budget.";
  let description = [{
    The memory planner's last word, run after placement
    (`--kernel-plan-memory` or `--kernel-assign-offsets-naive`). The peak is
    what `kiln compile --stats` calls `peak_bytes`: the persistent buffers of
    every entry (parameters, gradients, optimizer state, inputs, outputs,
    runtime buffers, constants; each name once) plus the module's
    `kernel.arena_bytes`. Over `budget`, the pass fails with an error at the
    entry whose arena is the module's, giving the peak, the budget, the
    arena and its live lower bound, and the persistent bytes by kind:
    ```
    error: @train_step does not fit the memory budget: peak_bytes
    84871716 (80.94 MiB) > budget 67108864 (64.00 MiB); arena 72746496
    (69.38 MiB), live lower bound 72746496, + persistent 12125220
    (11.56 MiB): params 3337216, optimizer state 6674436, ...
    ```
    A budget of 0 (the default) checks nothing. Changes nothing.
  }];
  let options = [
    Option<"budget", "budget", "int64_t", /*default=*/"0",
           "The bytes the peak must fit in (0: no budget)">,
  ];
}

#endif // KILN_KERNEL_PASSES_TD
