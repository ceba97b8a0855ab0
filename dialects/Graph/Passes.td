//===- Passes.td - Passes over the graph dialect -----------*- tablegen -*-===//
//
// Part of Kiln. The graph-level passes, each with its own flag and lit file
// (test/Transforms/<flag>.mlir).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GRAPH_PASSES_TD
#define KILN_GRAPH_PASSES_TD

include "mlir/Pass/PassBase.td"

def GraphAutodiff : Pass<"graph-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode autodiff: builds @grad_step from @forward.";
  let description = [{
    Adds `func.func @grad_step` next to `@forward`. It takes the same
    arguments and returns the loss, then the forward's other results, then
    one gradient per parameter (`graph.param` argument) in argument order,
    each marked `graph.grad = "<parameter name>"`.

    The forward is cloned; the backward walks its ops in reverse from
    d(loss) = 1, asking each op for its VJP through DifferentiableOpInterface
    and adding up (`graph.add`) the cotangents of values used more than once.
    Integer values (ids, targets) carry no gradient. A parameter with no path
    to the loss gets a zero gradient and a warning. Backward ops whose values
    reach no returned gradient are not kept.
  }];
  let dependentDialects = ["::kiln::graph::GraphDialect",
                           "::mlir::func::FuncDialect"];
}

def GraphTrainStep : Pass<"graph-train-step", "::mlir::ModuleOp"> {
  let summary = "Builds the training entry points from @forward and the "
                "train block.";
  let description = [{
    Adds `func.func @train_step`: the forward, its backward (the same
    construction as `--graph-autodiff`), and the optimizer update of the
    train block (`graph.train`): the step counter, the learning-rate
    schedule, global-norm clipping and the sgd/momentum/adamw update of each
    parameter, weight decay on parameters of rank >= 2 unless `decay_all`.
    Its arguments are the forward's, then the optimizer state
    (`graph.state = "wte.adam_m"`, zero-initialized, and `optimizer.step`);
    its results the forward's, then `lr` (and `grad_norm` when clipping),
    then the new value of each parameter and state (`graph.update`).

    With `accumulate = N` (train block or option), it adds instead
    `@accumulate_step` (forward and backward of a micro-batch, gradients added
    into `<param>.grad_acc` accumulators) and `@apply_step` (the update with
    the accumulators' mean, which it then resets).

    With `precision = fp16` (train block or option) the step scales the
    loss dynamically: the backward starts from the scale
    (`loss_scale.scale`, the train block's `loss_scale = dynamic(init=...,
    interval=...)`, 65536 and 2000 by default), `graph.loss_scale_update`
    skips a step whose scaled gradients are not finite and halves the scale,
    or doubles it after `interval` clean steps, and the updates unscale the
    gradients. A `loss_scale` with another precision is an error at its
    line.
  }];
  let options = [
    Option<"accumulate", "accumulate", "int64_t", /*default=*/"0",
           "Micro-batches per step; 0 keeps the train block's setting">,
    Option<"precision", "precision", "std::string", /*default=*/"\"\"",
           "fp32, bf16 or fp16 (fp16 scales the loss); empty keeps the "
           "train block's">,
  ];
  let dependentDialects = ["::kiln::graph::GraphDialect",
                           "::mlir::func::FuncDialect"];
}

def GraphRecompute : Pass<"graph-recompute", "::mlir::ModuleOp"> {
  let summary = "Recomputes forward activations in the backward to fit a "
                "memory budget.";
  let description = [{
    On the training entry (`@train_step` or `@accumulate_step`), chooses
    which forward values the backward uses stay alive across the
    forward/backward boundary and which are recomputed: their producing ops
    are cloned (marked `graph.recomputed`) from kept values just before the
    first backward use, so that the saved value dies in the forward. It
    minimizes the recomputed FLOPs (CostOpInterface) under `budget`, the
    bytes `peak_bytes` must fit in: cheap ops (at most 10 FLOPs per element
    freed) first, then an exact branch and bound when at most `exact-limit`
    candidates remain, else a greedy by saved bytes per FLOP. The module gets
    `graph.recompute_flops`, the FLOPs cloned. Within the kernel pipeline
    each plan is checked against the exact peak of the lowered module and the
    search tightened until it fits. A budget no plan meets is an error at the
    model that names the smallest budget that can be met. `budget = 0` does
    nothing.
  }];
  let options = [
    Option<"budget", "budget", "int64_t", /*default=*/"0",
           "Peak bytes the step must fit in; 0: no budget">,
    Option<"solver", "solver", "std::string", /*default=*/"\"auto\"",
           "auto (exact when small enough, else greedy), exact or greedy">,
    Option<"exactLimit", "exact-limit", "unsigned", /*default=*/"22",
           "Most candidates the exact search decides">,
  ];
  let dependentDialects = ["::kiln::graph::GraphDialect",
                           "::mlir::func::FuncDialect"];
}

def GraphFoldTransposes : Pass<"graph-fold-transposes", "::mlir::ModuleOp"> {
  let summary = "Folds transposes of a matrix's last two dims into the "
                "matmuls that read or produce them.";
  let description = [{
    A matmul reads its operands transposed for free (the GEMM's layout
    flags), so a `graph.transpose` that swaps an operand's last two dims
    and keeps the others is folded into the matmul (`transpose_lhs` or
    `transpose_rhs` toggled), and one of a matmul's result, when the
    transpose is the matmul's only user, becomes the swapped product
    (`(a b)^T = b^T a^T`). A transpose left without users is erased; one
    with other users stays for them. Run before the train step, the
    matmul's VJP then reads the untransposed tensors too: the tied
    embedding's `x @ transpose(wte)` needs no transposed copy of the
    weight forward and none of its gradient backward.
    ```mlir
    %t = graph.transpose %w {perm = array<i64: 1, 0>} : tensor<256x128xf32> -> tensor<128x256xf32>
    %y = graph.matmul %x, %t : tensor<64x128xf32>, tensor<128x256xf32> -> tensor<64x256xf32>
    // becomes
    %y = graph.matmul %x, %w {transpose_rhs} : tensor<64x128xf32>, tensor<256x128xf32> -> tensor<64x256xf32>
    ```
  }];
  let dependentDialects = ["::kiln::graph::GraphDialect"];
}

def GraphPadLogits : Pass<"graph-pad-logits", "::mlir::ModuleOp"> {
  let summary = "Pads a cross-entropy's class dim to the target's alignment, "
                "the padded logits masked out.";
  let description = [{
    A vocabulary like GPT-2's 50257 makes the logits GEMM's rows, and its
    gradient's, an odd number of elements long: misaligned for the GPU
    GEMM library. Where `logits = matmul(x, w)` (`w` rank 2, `[V, D]` with
    `transpose_rhs` or `[D, V]`) feeds only cross-entropies without label
    smoothing, and rounding V up to a multiple of `alignment` adds at most
    a sixteenth to it, the weight is padded with zero rows (or columns) to
    Vp, the product is Vp wide, and a constant bias of 0 for the real
    classes and -1e30 for the padding is added: their probabilities are
    exactly 0, so the loss and every gradient are those of the unpadded
    model. The weight gradient is the padded one's slice (the VJP of the
    pad), so parameters and checkpoints keep their `[V, D]` shape. Logits
    something else reads (a model output) stay unpadded: the reader would
    need the unpadded logits in a buffer of their own, as much memory
    again as the largest tensor of a GPT-2 step. Run before the train
    step, so that autodiff derives the padded backward (on a step built
    without it, only the forward's product is padded). `alignment` 0 pads
    nothing. A target id in [V, Vp) is not an out-of-range error in the
    cross-entropy any more (it still is in an embedding lookup).
    ```mlir
    %l = graph.matmul %x, %wte {transpose_rhs} : tensor<64x128xf32>, tensor<2050x128xf32> -> tensor<64x2050xf32>
    %loss = graph.cross_entropy %l, %y : tensor<64x2050xf32>, tensor<64xi32> -> tensor<f32>
    // becomes, with alignment = 128
    %wp = graph.pad %wte {offsets = array<i64: 0, 0>} : tensor<2050x128xf32> -> tensor<2176x128xf32>
    %p = graph.matmul %x, %wp {transpose_rhs} : tensor<64x128xf32>, tensor<2176x128xf32> -> tensor<64x2176xf32>
    %m = graph.constant dense<[0.0, ..., -1.0e+30, ...]> : tensor<2176xf32>
    %mb = graph.broadcast %m : tensor<2176xf32> -> tensor<64x2176xf32>
    %lp = graph.add %p, %mb : tensor<64x2176xf32>
    %loss = graph.cross_entropy %lp, %y : tensor<64x2176xf32>, tensor<64xi32> -> tensor<f32>
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"0",
           "The class dim is padded to a multiple of this (0: none)">,
  ];
  let dependentDialects = ["::kiln::graph::GraphDialect"];
}

def GraphFoldGemmEpilogues
    : Pass<"graph-fold-gemm-epilogues", "::mlir::ModuleOp"> {
  let summary = "Folds bias adds, tanh GELUs, their gradients and bias "
                "gradients into the matmuls beside them (GEMM epilogues).";
  let description = [{
    For a target whose GEMM library applies an epilogue as it stores the
    product (cuda: cuBLASLt), run after the training step is built and
    before `--graph-fuse` (which would otherwise fuse the same ops into its
    own kernels). Each rewrite makes a `graph.matmul_epilogue`:
    - `gelu(matmul(x, w) + broadcast(b))` -> `bias_gelu`, whose second
      result (the pre-activation) replaces the add's other users (the
      backward's `gelu_grad`);
    - `matmul(x, w) + broadcast(b)` -> `bias`;
    - `gelu_grad(matmul(dy, w), pre)` -> `dgelu` with `aux = pre`;
    - `reduce sum(dz)` over every dim but the last, beside a weight
      gradient `matmul(x, dz)` with `transpose_lhs` (dz, or dz reshaped to
      rows x its last dim, as the rank-2 rhs) -> `bias_grad`, whose second
      result replaces the reduce.
    What stays out, and why: a matmul whose product has other users (the
    plain product would still be needed); a bias that is not a rank-1
    vector broadcast over the last dim; `bias_gelu` and `dgelu` where the
    last dim is not a multiple of 8 (cuBLASLt keeps the pre-activation
    with C's leading dimension, which must be one); a bias gradient whose
    weight-gradient matmul is batched or reads `dz` transposed, or whose
    users come before that matmul. A bias added after a residual add is
    not reassociated to reach the matmul.
    ```mlir
    %p = graph.matmul %x, %w : tensor<32x64xf32>, tensor<64x128xf32> -> tensor<32x128xf32>
    %bb = graph.broadcast %b : tensor<128xf32> -> tensor<32x128xf32>
    %y = graph.add %p, %bb : tensor<32x128xf32>
    // becomes
    %y = graph.matmul_epilogue bias %x, %w bias %b : tensor<32x64xf32>, tensor<64x128xf32> bias tensor<128xf32> -> tensor<32x128xf32>
    ```
  }];
  let options = [
    Option<"auxAlignment", "aux-alignment", "int64_t", /*default=*/"8",
           "The multiple of elements a GELU epilogue's auxiliary matrix's "
           "rows must be (cuBLASLt's: 8)">,
    Option<"elementTypes", "element-types", "std::string",
           /*default=*/"\"f32\"",
           "The element types (comma-separated: f32, bf16, f16) of the "
           "products the target's executor applies epilogues to">,
  ];
  let dependentDialects = ["::kiln::graph::GraphDialect"];
}

def GraphMixedPrecision : Pass<"graph-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "Runs a model's f32 values in bf16 or fp16 where the ops' "
                "precision policy allows, with casts shared.";
  let description = [{
    The policy is declared on the ops (GraphInterfaces.td), not listed
    here: an op with `LowPrecisionCompute` (graph.matmul, graph.attention
    and its gradient) takes its f32 operands cast down to `policy`'s type and
    stores its float results in it (it accumulates in f32 inside); an op with
    `FullPrecisionCompute` (reductions, softmax, layer_norm, cross_entropy,
    their gradients, embedding_grad, the optimizer) gets its low-precision
    operands cast up to f32; every other op computes in the type of its
    full-size, non-constant float operands, the others cast to it, and its
    float results take that type. Where they mix, that is the low type
    (activations are stored low: a residual add of the f32 embedding stream
    and a bf16 branch is bf16), unless one of them is an entry's f32
    argument (a parameter, optimizer state, a gradient accumulator: master
    values stay f32). Broadcast operands (a bias) and constants follow;
    constants are converted, not cast. Run after the train step, so that the backward and
    the optimizer follow the same policy: parameters, gradients handed to the
    optimizer and optimizer state stay f32 (master weights); each parameter
    is cast down once per step, where it is read. A narrowing cast (it
    rounds) is made once, right after its value, and shared by its readers;
    a widening one (exact) right before each reader, into which fusion puts
    it, so that what lives on to later readers (the backward) is the narrow
    value; a value widened and narrowed back is the original one. Function results
    keep their declared types (cast back where needed). Values of other
    float types (f64) are left alone. `policy=fp32` changes nothing. Run
    before `--graph-fuse`, which fuses the casts into their neighbours.
    ```mlir
    %y = graph.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    // becomes, with policy=bf16
    %xl = graph.cast %x : tensor<8x16xf32> -> tensor<8x16xbf16>
    %wl = graph.cast %w : tensor<16x4xf32> -> tensor<16x4xbf16>
    %y = graph.matmul %xl, %wl : tensor<8x16xbf16>, tensor<16x4xbf16> -> tensor<8x4xbf16>
    ```
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"\"",
           "fp32, bf16 or fp16: the low precision of the mixed policy "
           "(empty: the train block's `precision`, else fp32)">,
    ListOption<"targetPrecisions", "target-precisions", "std::string",
           "The policies the target's kernels are checked in (empty: "
           "all); another one is an error at the train block's line">,
    Option<"weightCopies", "weight-copies", "bool", /*default=*/"true",
           "Training entries read each weight they cast down from a state "
           "(`W.bf16`, initializer `rounded`) that its update writes, "
           "instead of casting it every step">,
  ];
  let dependentDialects = ["::kiln::graph::GraphDialect"];
}

def GraphFuse : Pass<"graph-fuse", "::mlir::ModuleOp"> {
  let summary = "Groups elementwise and data-movement ops into graph.fusion "
                "regions, one kernel each.";
  let description = [{
    In every function, from the last op up, each fusible op that is not yet
    grouped roots a group over its shape and pulls in its fusible producers
    (FusibleOpInterface), nearest first, when the cost model agrees:
    - a producer used only inside the group joins it; an expensive one
      (`getFlopsPerElement() >= 4`) only when the group reads it once per
      element (not through a broadcast, not at two index maps), so that it
      is never recomputed;
    - a producer of the group's shape also used after the group, read at
      the identity, joins it and is yielded too (a multi-output fusion);
    - a cheap producer used elsewhere as well is duplicated into the group
      when the bytes the group then reads from its operands are at most 5/4
      of the bytes of the value it replaces: data movement (split,
      transpose, reshape, broadcast chains), and arithmetic whose other
      users are all such data movement (a bias add before the q/k/v split),
      so that the original dies and nothing is computed twice beyond a
      cheap op per element.
    An anchor (FusionAnchorOpInterface: a reduction, a layer norm, a
    cross-entropy or its gradient) roots a
    group too, over the shape of its fused operand, whose producers join by
    the same rules; an expensive producer only when the anchor reads each
    element once (a reduction, not a layer norm's three passes), and into an
    anchor that walks columns (a sum over the leading dims) only cheap
    producers that read at the index they write (`walksColumns`). The anchor
    ends the region and its kernel reads the operand through the producers'
    formulas (an add into a bias-gradient sum, a residual add into the next
    layer norm).
    An anchor takes at most 8 producers of at most 32 FLOPs per element in
    all (its formula is computed inside its row loops; the caps keep it
    small), and its group must read some value of the full iteration space
    (a reduction of a broadcast gains nothing).
    A group becomes a `graph.fusion` at its root when at least two of its ops
    would otherwise be kernels of their own (reshapes are views, splat
    constants are free). Ops left without uses are erased.
    ```mlir
    // Before
    %b = graph.broadcast %bias : tensor<64xf32> -> tensor<32x64xf32>
    %s = graph.add %x, %b : tensor<32x64xf32>
    %g = graph.gelu %s : tensor<32x64xf32>
    // After
    %g = graph.fusion -> (tensor<32x64xf32>) {
      %b = graph.broadcast %bias : tensor<64xf32> -> tensor<32x64xf32>
      %s = graph.add %x, %b : tensor<32x64xf32>
      %g = graph.gelu %s : tensor<32x64xf32>
      graph.yield %g : tensor<32x64xf32>
    }
    ```
  }];
  let dependentDialects = ["::kiln::graph::GraphDialect",
                           "::mlir::func::FuncDialect"];
}

#endif // KILN_GRAPH_PASSES_TD
