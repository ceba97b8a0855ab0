//===- Recompute.h - Choosing activations to recompute ----------*- C++ -*-===//
//
// Part of Kiln. The core of `--graph-recompute`: the choice of which forward
// activations of a training entry (@train_step or @accumulate_step) stay
// alive until the backward and which are recomputed there, under a memory
// budget, at the least recomputed FLOPs (CostOpInterface).
//
// The model it searches with, at the graph level, mirrors the kernel-level
// one (kernel::BufferLiveness) closely enough to search with; the pass checks
// the chosen plan with the exact figure when the pipeline gives it one.
//
// - The boundary: the op that defines the loss result. Ops up to it are the
//   forward, ops after it the backward (as BufferLiveness defines it).
// - Buffers: every result is one buffer of its size (64-byte aligned), live
//   from its definition through its last use, except that a reshape is a view
//   of its operand's buffer (as the kernel lowering makes it). Arguments and
//   returned values live in persistent buffers (parameters, state, inputs,
//   outputs): they count once, for the whole step.
// - Candidates: forward values the backward uses. Dropping one means the
//   backward uses a clone of its producing chain instead, rebuilt from kept
//   values just before the first backward use that needs it; the original
//   then dies in the forward.
// - The estimate of a plan: persistent bytes plus the largest sum of live
//   buffer bytes at any point of the rewritten schedule.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_GRAPH_TRANSFORMS_RECOMPUTE_H
#define KILN_DIALECT_GRAPH_TRANSFORMS_RECOMPUTE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SmallVector.h"

#include <functional>
#include <vector>
#include <memory>
#include <optional>

namespace kiln::graph {

/// A choice: which candidates are recomputed, and its figures.
struct RecomputePlan {
  /// One bit per candidate: set when it is recomputed.
  llvm::BitVector dropped;
  /// FLOPs of the ops cloned into the backward.
  int64_t recomputeFlops = 0;
  /// The graph-level estimate of peak bytes.
  int64_t estimatedPeakBytes = 0;
};

/// The recomputation problem of one training entry.
class RecomputeProblem {
public:
  /// Analyzes `entry`; fails without a diagnostic when it has no loss.
  static std::optional<RecomputeProblem> build(mlir::func::FuncOp entry);

  unsigned getNumCandidates() const { return candidates.size(); }
  /// The value of candidate `index`.
  mlir::Value getCandidate(unsigned index) const;
  /// Whether candidate `index` can be recomputed (its producer is pure and
  /// has no regions).
  bool isRecomputable(unsigned index) const;

  /// The figures of a plan.
  RecomputePlan evaluate(const llvm::BitVector &dropped) const;
  /// Nothing recomputed.
  RecomputePlan keepAll() const;
  /// The candidates whose recomputation, with every other one kept, costs
  /// at most kCheapFlopsPerElement per element: recomputed first, always.
  llvm::BitVector cheapCandidates() const;
  /// The plan of least estimated peak the greedy search finds.
  RecomputePlan leastMemory() const;

  /// The greedy heuristic: cheap candidates first, then the candidates that
  /// free the most saved bytes per recomputed FLOP, until the estimate is at
  /// most `target`; then what can be kept again is. None if it cannot get
  /// there.
  std::optional<RecomputePlan> solveGreedy(int64_t target) const;
  /// Branch and bound over the candidates that are not cheap: the plan of
  /// least recompute FLOPs whose estimate is at most `target`. None if none
  /// is, or if there are more than `maxCandidates` to decide.
  std::optional<RecomputePlan> solveExact(int64_t target,
                                          unsigned maxCandidates = 22) const;

  /// Rewrites the entry by the plan: clones the recomputed ops into the
  /// backward (marked GraphDialect::kRecomputedAttr) and returns their FLOPs.
  int64_t apply(const RecomputePlan &plan);

  /// Recomputing costs at most this many FLOPs per element of the value it
  /// frees: such candidates are recomputed before any other.
  static constexpr int64_t kCheapFlopsPerElement = 10;

private:
  /// One op of the entry.
  struct Node {
    mlir::Operation *op;
    int64_t flops = 0;
    bool recomputable = false;
    /// A reshape: its result is a view of its operand's buffer.
    bool isView = false;
    llvm::SmallVector<unsigned, 4> operands;
    llvm::SmallVector<unsigned, 2> results;
  };
  /// One value of the entry.
  struct ValueInfo {
    mlir::Value value;
    /// The defining node; -1 for block arguments.
    int def = -1;
    int64_t bytes = 0;
    /// Lives in a persistent buffer: an argument, a returned value, or a
    /// view of one.
    bool persistent = false;
    /// The value whose buffer this one is (itself unless a view).
    unsigned root = 0;
    /// Whether a recomputed chain through it can be rebuilt (every node on
    /// the way back to kept values is recomputable).
    bool chainRecomputable = true;
    bool usedInBackward = false;
  };
  struct Schedule;

  RecomputeProblem() = default;
  /// Whether forward value `value` is unavailable in the backward under
  /// `dropped` (a dropped candidate or an intermediate nobody keeps).
  bool needsRecompute(unsigned value, const llvm::BitVector &dropped) const;
  /// Marks in `marked` the nodes a clone of `value` needs that are not
  /// marked yet; returns their FLOPs.
  int64_t markChain(unsigned value, const llvm::BitVector &dropped,
                    llvm::BitVector &marked) const;
  /// The nodes recomputed under `dropped`.
  llvm::BitVector recomputedNodes(const llvm::BitVector &dropped) const;
  int64_t flopsOf(const llvm::BitVector &nodes) const;
  /// Bytes of buffers live across the boundary, persistent bytes excluded.
  int64_t boundaryBytes(const llvm::BitVector &dropped) const;
  int64_t estimatePeak(const llvm::BitVector &dropped) const;
  /// The greedy's drop order down to `target`; returns the plans after
  /// each step. Scores freed bytes per FLOP: bytes saved across the boundary,
  /// or (`byPeak`) the drop of the estimated peak.
  llvm::SmallVector<RecomputePlan> greedyTrajectory(int64_t target,
                                                    bool byPeak) const;
  /// The greedy from `dropped`, never recomputing `forbidden`.
  llvm::SmallVector<RecomputePlan> greedyFrom(llvm::BitVector dropped,
                                              const llvm::BitVector &forbidden,
                                              int64_t target,
                                              bool byPeak) const;
  /// Adds to `dropped` the candidates whose recomputation it makes cheap;
  /// returns the FLOPs that adds to `marked`.
  int64_t addFollowers(llvm::BitVector &dropped,
                       llvm::BitVector &marked) const;
  /// Improves a feasible plan: keeps again what the target allows, then
  /// swaps a recomputed candidate for cheaper ones while that helps.
  RecomputePlan refine(RecomputePlan plan, int64_t target) const;

  mlir::func::FuncOp entry;
  std::vector<Node> nodes;
  std::vector<ValueInfo> values;
  llvm::SmallVector<unsigned> candidates;
  /// Per value: its candidate index, or -1.
  llvm::SmallVector<int> candidateOf;
  int boundary = -1;
  int64_t persistentBytes = 0;
};

/// The exact peak bytes of a module once lowered (peak_bytes of `kiln compile
/// --stats`); must not change the module it is given.
using PeakBytesMeasure =
    std::function<mlir::FailureOr<int64_t>(mlir::ModuleOp)>;

/// `--graph-recompute` with a measure of the exact peak: each plan is checked
/// with it and the search tightened until the measured peak fits.
std::unique_ptr<mlir::Pass> createGraphRecomputePass(int64_t budget,
                                                     PeakBytesMeasure measure);

} // namespace kiln::graph

#endif // KILN_DIALECT_GRAPH_TRANSFORMS_RECOMPUTE_H
