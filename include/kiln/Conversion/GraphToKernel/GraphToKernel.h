//===- GraphToKernel.h - Lowering graph ops to kernels ----------*- C++ -*-===//
//
// Part of Kiln. `--convert-graph-to-kernel` turns graph functions into
// kernel.entry ops whose bodies launch generated kernel.func kernels, call
// GEMMs and move buffers. The conversion walks each function in program
// order and hands every graph op to the pattern registered for it; a pattern
// reads its operands' buffers, builds kernels or library calls, and binds
// buffers to the op's results.
//
// Why not MLIR's dialect conversion: the lowering outlines code into new
// symbols, binds results to caller-visible output buffers (destination
// passing) and adds runtime buffers (rng_state, status) to the entry on
// demand. A program-order walk with per-op patterns keeps each op's lowering
// in its own place while the driver owns that bookkeeping.
//
// Adding an op: write a pattern (OpToKernelPattern<graph::FooOp>) in the
// file of its family, add it in that family's populate function, and list
// the family once in populateGraphToKernelPatterns (Patterns.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONVERSION_GRAPHTOKERNEL_GRAPHTOKERNEL_H
#define KILN_CONVERSION_GRAPHTOKERNEL_GRAPHTOKERNEL_H

#include "kiln/Dialect/Graph/IR/GraphEntries.h"
#include "kiln/Dialect/Graph/IR/GraphShapes.h"
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Target/TargetInfo.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <memory>

namespace kiln {

/// Whether `argument` of `function` is an argument of its entry: it is
/// used, or a result updates it.
bool isEntryArgument(mlir::func::FuncOp function, mlir::BlockArgument argument);

/// Builds the body of a kernel.func: `arguments` are its block arguments, in
/// the order of the buffers passed to launch(); the builder is positioned
/// before the kernel's terminator.
using KernelBodyBuilder = llvm::function_ref<void(
    mlir::OpBuilder &builder, mlir::Location loc, mlir::ValueRange arguments)>;

/// How a kernel reads the elements of one operand of the op being lowered:
/// loads from the operand's buffer, or, for the fused operand of an anchor
/// in a graph.fusion region, the formulas of the region's producers over
/// loads of the values the region reads. A pattern appends getBuffers() to
/// its launch's buffers and calls read() in the kernel body with the
/// kernel arguments from the first of them on.
class ElementSource {
public:
  /// Builds the element at `indices` (of the view shape the source was made
  /// for). `covering` marks the one read of each element by the pass that
  /// reads every element exactly once, where values the region yields are
  /// written; it must precede, in the same kernel iteration, every other
  /// read of the element, which may then load the value written.
  using ReadFn = std::function<mlir::Value(
      mlir::OpBuilder &builder, mlir::Location loc, mlir::ValueRange args,
      mlir::ValueRange indices, bool covering)>;

  ElementSource(llvm::SmallVector<mlir::Value> buffers, ReadFn readFn)
      : buffers(std::move(buffers)), readFn(std::move(readFn)) {}

  llvm::ArrayRef<mlir::Value> getBuffers() const { return buffers; }
  mlir::Value read(mlir::OpBuilder &builder, mlir::Location loc,
                   mlir::ValueRange args, mlir::ValueRange indices,
                   bool covering = false) const {
    return readFn(builder, loc, args, indices, covering);
  }

private:
  llvm::SmallVector<mlir::Value> buffers;
  ReadFn readFn;
};

class GraphToKernelPatternSet;

/// The state of lowering one graph function into one kernel.entry: the
/// buffer bound to each graph value, the entry being built, and the kernels
/// created so far. Patterns talk to the entry only through this class.
class KernelLowering {
public:
  KernelLowering(mlir::ModuleOp module, kernel::EntryOp entry,
                 mlir::func::FuncOp source, bool training,
                 const GraphToKernelPatternSet &patterns,
                 const TargetInfo &target, bool fusedAttention = true);

  /// The builder that inserts entry-level ops (alloc, launch, gemm, ...) in
  /// program order.
  mlir::OpBuilder &getBuilder() { return builder; }
  mlir::MLIRContext *getContext() { return builder.getContext(); }
  /// Whether dropout is active (train_step) rather than the identity.
  bool isTraining() const { return training; }
  /// The block sizes of the templates, from the target.
  const ScheduleParameters &getSchedule() const { return schedule; }
  /// What the target decides beyond the block sizes.
  const TargetInfo &getTarget() const { return target; }
  /// Whether attention may take the target's fused kernels
  /// (--convert-graph-to-kernel's fused-attention).
  bool allowsFusedAttention() const { return fusedAttention; }

  /// The buffer bound to a graph value (a memref of the tensor's shape).
  mlir::Value lookup(mlir::Value tensor) const;
  /// Binds `buffer` to the graph value `tensor`.
  void bind(mlir::Value tensor, mlir::Value buffer);
  /// Whether `tensor` has its buffer already.
  bool isBound(mlir::Value tensor) const { return buffers.count(tensor); }
  /// Per-row statistics a fused op saved beside its result `tensor` (a
  /// fused attention's log-sum-exp), for the op's gradient; null if none.
  void bindStatistics(mlir::Value tensor, mlir::Value buffer) {
    statistics[tensor] = buffer;
  }
  mlir::Value lookupStatistics(mlir::Value tensor) const {
    return statistics.lookup(tensor);
  }

  /// A fresh buffer for the result `tensor` of the op being lowered. For a
  /// result that updates a parameter or state (`graph.update = "X"`), X's
  /// own buffer when writing it now is safe (see canUpdateInPlace), so no
  /// copy is needed; for a returned result, the entry's output buffer;
  /// otherwise a transient kernel.alloc. The caller writes all of it and
  /// binds it.
  mlir::Value allocateResult(mlir::Value tensor);
  /// A transient buffer of `type` (scratch of a kernel, a broadcast operand).
  mlir::Value allocateTransient(mlir::MemRefType type);
  /// `buffer` seen with `shape` (a kernel.view), or `buffer` itself when the
  /// shape already matches.
  mlir::Value view(mlir::Value buffer, llvm::ArrayRef<int64_t> shape);

  /// The elements of `tensor` as a kernel reads them, at indices of `shape`
  /// (the tensor's shape or a row-major view of it): loads from its buffer,
  /// unless a fused source was set for it.
  ElementSource getElementSource(mlir::Value tensor,
                                 llvm::ArrayRef<int64_t> shape);
  /// Builds the source of an anchor's fused operand for a view shape.
  using FusedSourceBuilder =
      std::function<ElementSource(llvm::ArrayRef<int64_t> shape)>;
  /// Makes getElementSource(tensor, ...) call `source` (FusionToKernel, for
  /// the operand its anchor reads from the region).
  void setFusedSource(mlir::Value tensor, FusedSourceBuilder source);
  /// Makes allocateResult(tensor) hand out `buffer` (an anchor's result is
  /// its region's result).
  void presetResult(mlir::Value tensor, mlir::Value buffer);
  /// Lowers `op` with the pattern registered for it (an error when there is
  /// none), after beginOp.
  mlir::LogicalResult lower(mlir::Operation *op);
  /// Lowers `op`, nested in the op being lowered, with its pattern; what it
  /// builds names `origin` (the enclosing region's ops) as its origin.
  mlir::LogicalResult lowerNested(mlir::Operation *op, llvm::StringRef origin);

  /// Creates a kernel.func whose arguments have the types of `buffers`, with
  /// the parallel extent `range`, each of whose iterations does `work`
  /// elements of work (see kb::chooseGrain; the grain where the target runs
  /// ranges in chunks); fills its body with
  /// `body`; and launches it on `buffers`. `origin` names the graph op(s) the
  /// kernel implements (the plan's op name); `loc` is their location.
  kernel::LaunchOp launch(mlir::Location loc, llvm::StringRef origin,
                          mlir::ValueRange buffers, int64_t range, int64_t work,
                          KernelBodyBuilder body);
  /// Marks an entry-level op with the graph op(s) it implements.
  void setOrigin(mlir::Operation *op, llvm::StringRef origin);

  /// The runtime-provided buffers (see KernelDialect.td), added to the
  /// entry's arguments on first use.
  mlir::Value getRngState();
  mlir::Value getStatus();

  /// The memref type of a graph tensor type.
  static mlir::MemRefType getBufferType(mlir::Type tensorType);

  /// Writes the entry's outputs and the updated parameters and state that
  /// were not written in place (copying where a result's buffer is not its
  /// destination) and ends the entry. Called once, at func.return.
  void finish(mlir::ValueRange results);

  /// The buffer a view (or chain of views) aliases; `buffer` itself
  /// otherwise.
  static mlir::Value getRootBuffer(mlir::Value buffer);

private:
  /// Called by lower() before a pattern lowers `op`. `readsAtResultIndex`: the
  /// pattern's kernel reads element i of each operand (of the result's
  /// shape) only in the iteration that writes element i of the results, so
  /// a result may share its buffer with an operand.
  void beginOp(mlir::Operation *op, bool readsAtResultIndex);

  /// Whether the op being lowered may write `destination` (an updated
  /// parameter or state buffer) now: no later op, nor the return, reads a
  /// value held in that buffer, and the op itself reads it only at the index
  /// it writes.
  bool canUpdateInPlace(mlir::Value destination) const;

  mlir::Value addRuntimeBuffer(kernel::BufferKind kind, llvm::StringRef name,
                               mlir::MemRefType type);

  mlir::ModuleOp module;
  /// The module's symbols, for naming new kernels.
  mlir::SymbolTable symbols;
  kernel::EntryOp entry;
  mlir::OpBuilder builder;
  bool training;
  const TargetInfo &target;
  ScheduleParameters schedule;
  bool fusedAttention;
  llvm::DenseMap<mlir::Value, mlir::Value> buffers;
  llvm::DenseMap<mlir::Value, mlir::Value> statistics;
  /// For each `graph.update` result: the buffer of the parameter or state it
  /// updates, until allocateResult writes it there (then null).
  llvm::DenseMap<mlir::Value, mlir::Value> updateBuffers;
  /// The updated buffers, in result order, for finish().
  llvm::SmallVector<std::pair<mlir::Value, mlir::Value>> updates;
  /// The op being lowered, and whether it reads only at the index it writes.
  mlir::Operation *currentOp = nullptr;
  bool currentReadsAtResultIndex = false;
  /// For each graph value returned by the function: the output buffer it
  /// is written to directly, once allocateResult hands it out.
  llvm::DenseMap<mlir::Value, mlir::Value> outputBuffers;
  /// Each returned value that is not an update, with its output buffer.
  llvm::SmallVector<std::pair<mlir::Value, mlir::Value>> outputs;
  mlir::Value rngState, status;
  unsigned nextKernelNumber = 0;
  const GraphToKernelPatternSet &patterns;
  llvm::DenseMap<mlir::Value, FusedSourceBuilder> fusedSources;
  llvm::DenseMap<mlir::Value, mlir::Value> presetResults;
  /// The origin of everything lowerNested builds, while it runs.
  std::string originOverride;
};

/// Lowers one kind of graph op. Patterns are stateless; everything they
/// build goes through the KernelLowering they are given.
class GraphToKernelPattern {
public:
  virtual ~GraphToKernelPattern() = default;
  /// The op this pattern lowers (`graph.add`).
  virtual llvm::StringRef getRootName() const = 0;
  /// Lowers `op`, binding buffers to all its results; on failure, emits an
  /// error at the op.
  virtual mlir::LogicalResult lower(mlir::Operation *op,
                                    KernelLowering &lowering) const = 0;
  /// Whether the kernels of this pattern read element i of each operand
  /// that has the result's shape only in the iteration that writes element
  /// i of the results (elementwise ops, optimizer updates), so that a
  /// result may be written over an operand's buffer.
  virtual bool readsAtResultIndex() const { return false; }
};

/// A pattern for one op class.
template <typename OpTy> class OpToKernelPattern : public GraphToKernelPattern {
public:
  llvm::StringRef getRootName() const final { return OpTy::getOperationName(); }
  mlir::LogicalResult lower(mlir::Operation *op,
                            KernelLowering &lowering) const final {
    return lowerOp(llvm::cast<OpTy>(op), lowering);
  }
  virtual mlir::LogicalResult lowerOp(OpTy op,
                                      KernelLowering &lowering) const = 0;
};

/// The patterns of a conversion, by root op name.
class GraphToKernelPatternSet {
public:
  template <typename PatternTy, typename... Args> void add(Args &&...args) {
    auto pattern = std::make_unique<PatternTy>(std::forward<Args>(args)...);
    llvm::StringRef root = pattern->getRootName();
    patterns[root] = std::move(pattern);
  }
  /// The pattern for ops named `name`, or null.
  const GraphToKernelPattern *lookup(llvm::StringRef name) const {
    auto it = patterns.find(name);
    return it == patterns.end() ? nullptr : it->second.get();
  }

private:
  llvm::StringMap<std::unique_ptr<GraphToKernelPattern>> patterns;
};

/// Computes one result element from the operands' elements.
using ElementwiseScalarFn = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;
/// Launches `y[i] = scalar(x0[i], x1[i], ...)` over the flattened operands
/// and the single result of `op` (all of one shape), and binds the result.
/// `workPerElement` weighs an element's cost (kb::chooseGrain):
/// 1 for a few arithmetic ops, more for transcendental functions.
void launchElementwise(mlir::Operation *op, KernelLowering &lowering,
                       ElementwiseScalarFn scalar, int64_t workPerElement = 1);

/// The sizes of an attention: `batches` (batch x head) independent
/// problems of `queries` rows and `keys` keys of `keyDim` features.
/// With a mask, `mask` is its buffer viewed as [maskLayout.batches *
/// maskLayout.queries, maskLayout.keys] (graph::AttentionMaskLayout).
struct AttentionShape {
  int64_t batches, queries, keys, keyDim;
  bool causal;
  double scale;
  mlir::Value mask = nullptr;
  graph::AttentionMaskLayout maskLayout = {};
};
/// Sets `shape`'s mask from the mask operand (null: none) of an attention
/// of `query` and `key` (tensors; the verifier checked the layout).
void setAttentionMask(KernelLowering &lowering, mlir::Value query,
                      mlir::Value key, mlir::Value maskTensor,
                      AttentionShape &shape);
/// The row of `shape`'s mask view that query `query` of flattened batch
/// `batch` adds, and the index of key `key` in it.
std::pair<mlir::Value, mlir::Value>
buildAttentionMaskIndex(mlir::OpBuilder &b, mlir::Location loc,
                        const AttentionShape &shape, mlir::Value batch,
                        mlir::Value query, mlir::Value key);
/// Writes softmax(q k^T * scale [+ mask]) over the visible keys (all, or
/// j <= i when causal) into `probabilities` ([batches, queries, keys], zero
/// where causally masked): a batched GEMM for the scores, then a row kernel
/// adding the mask and computing the max-subtracted exponentials and their
/// normalization in increasing key order, as the forward op is defined.
/// AttentionToKernel.cpp.
void computeAttentionProbabilities(KernelLowering &lowering, mlir::Location loc,
                                   llvm::StringRef origin, mlir::Value query,
                                   mlir::Value key, mlir::Value probabilities,
                                   const AttentionShape &shape);

/// The fused attention of a target that has one (FusedAttention.h), in
/// FusedAttentionToKernel.cpp. Whether `shape` (with `valueDim`, of
/// `elementType`) takes it on the lowering's target.
bool canFuseAttention(const KernelLowering &lowering,
                      const AttentionShape &shape, int64_t valueDim,
                      mlir::Type elementType);
/// out and its log-sum-exp (bound as out's statistics) from q, k, v.
void lowerFusedAttention(KernelLowering &lowering, mlir::Location loc,
                         llvm::StringRef origin, mlir::Value query,
                         mlir::Value key, mlir::Value value, mlir::Value out,
                         mlir::Value lse, const AttentionShape &shape,
                         int64_t valueDim);
/// dq, dk, dv from the forward's buffers and the log-sum-exp it saved.
void lowerFusedAttentionGrad(KernelLowering &lowering, mlir::Location loc,
                             llvm::StringRef origin, mlir::Value query,
                             mlir::Value key, mlir::Value value,
                             mlir::Value out, mlir::Value lse,
                             mlir::Value resultGrad, mlir::Value queryGrad,
                             mlir::Value keyGrad, mlir::Value valueGrad,
                             const AttentionShape &shape, int64_t valueDim);

/// Every family of lowering patterns (Patterns.cpp).
void populateGraphToKernelPatterns(GraphToKernelPatternSet &patterns);
/// The families, one per file.
void populateElementwiseToKernelPatterns(GraphToKernelPatternSet &patterns);
void populateShapeToKernelPatterns(GraphToKernelPatternSet &patterns);
void populateReductionToKernelPatterns(GraphToKernelPatternSet &patterns);
void populateNNToKernelPatterns(GraphToKernelPatternSet &patterns);
void populateAttentionToKernelPatterns(GraphToKernelPatternSet &patterns);
void populateMatmulToKernelPatterns(GraphToKernelPatternSet &patterns);
void populateRandomToKernelPatterns(GraphToKernelPatternSet &patterns);
void populateGradToKernelPatterns(GraphToKernelPatternSet &patterns);
void populateLayerNormGradToKernelPatterns(GraphToKernelPatternSet &patterns);
void populateAttentionGradToKernelPatterns(GraphToKernelPatternSet &patterns);
void populateOptimizerToKernelPatterns(GraphToKernelPatternSet &patterns);
void populateFusionToKernelPatterns(GraphToKernelPatternSet &patterns);

} // namespace kiln

#endif // KILN_CONVERSION_GRAPHTOKERNEL_GRAPHTOKERNEL_H
