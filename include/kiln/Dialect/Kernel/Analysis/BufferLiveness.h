//===- BufferLiveness.h - Live ranges of an entry's transients --*- C++ -*-===//
//
// Part of Kiln. The memory model of one kernel.entry, shared by the memory
// planner, the memory figures (`kiln compile --stats`, the timeline) and
// recomputation:
//
// - The schedule: the entry's ops that the runtime runs (isScheduledOp), in
//   program order; the i-th is program point i.
// - Transients: the kernel.alloc buffers. A transient lives from its
//   defining op -- the first scheduled op that touches it or a view of it
//   (allocs and views only name bytes) -- through its last use. A view keeps
//   its root alive. A transient no op touches is never live.
// - In-place reuse: at an elementwise launch (analyzeKernelArguments) whose
//   input transient dies there and whose output transient is defined there,
//   the output shares the input's bytes. Transients chained this way form a
//   *slot*: one set of bytes over the union of their live ranges.
// - The live lower bound: the maximum, over program points, of the summed
//   sizes (64-byte aligned) of the slots live there. No arena that keeps the
//   slots' bytes apart while they live can be smaller.
// - Kinds, for the timeline and recomputation (see TransientKind).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KERNEL_ANALYSIS_BUFFERLIVENESS_H
#define KILN_DIALECT_KERNEL_ANALYSIS_BUFFERLIVENESS_H

#include "kiln/Dialect/Kernel/Analysis/BufferAccess.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>

namespace kiln::kernel {

/// What a transient holds, as far as the IR tells:
/// - Workspace: scratch of one graph op's lowering: every op that touches
///   it is one scheduled op, or all carry the same `kernel.origin` and the
///   same location (the kernels of one graph op), and it does not live
///   across the forward/backward boundary.
/// - Activation: otherwise, defined at or before the forward/backward
///   boundary (in entries without a backward: every other transient).
/// - Gradient: otherwise, defined after the boundary (the backward and the
///   optimizer update).
enum class TransientKind { Activation, Gradient, Workspace };

/// The name of a kind, as the figures print it.
llvm::StringRef stringifyTransientKind(TransientKind kind);

/// Bytes per kind at one program point.
struct LiveBytes {
  int64_t activation = 0, gradient = 0, workspace = 0;
  int64_t total() const { return activation + gradient + workspace; }
  int64_t &operator[](TransientKind kind);
};

/// One kernel.alloc of the entry.
struct Transient {
  AllocOp alloc;
  /// The size rounded up to the arena alignment.
  int64_t sizeInBytes = 0;
  /// The first and last program points that touch it; both -1 when none.
  int64_t firstUse = -1, lastUse = -1;
  TransientKind kind = TransientKind::Activation;
  /// The slot whose bytes it occupies.
  unsigned slot = 0;
  /// What its defining op does to it: an op that only reads it reads bytes
  /// nothing wrote.
  BufferAccess firstAccess = BufferAccess::None;

  bool isUsed() const { return firstUse >= 0; }
  bool isLiveAt(int64_t point) const {
    return firstUse <= point && point <= lastUse;
  }
};

/// A set of bytes shared, one after another, by transients chained through
/// in-place reuse; a transient without reuse is a slot of its own.
struct TransientSlot {
  /// Transient indices, in program order of their definitions.
  llvm::SmallVector<unsigned, 2> members;
  int64_t sizeInBytes = 0;
  /// The union of the members' live ranges; -1 when none is used.
  int64_t firstUse = -1, lastUse = -1;

  bool isUsed() const { return firstUse >= 0; }
  bool isLiveAt(int64_t point) const {
    return firstUse <= point && point <= lastUse;
  }
  /// Whether both slots are live at some common point.
  bool interferesWith(const TransientSlot &other) const {
    return isUsed() && other.isUsed() && firstUse <= other.lastUse &&
           other.firstUse <= lastUse;
  }
};

/// An output written over a dying input at one op.
struct InPlaceReuse {
  mlir::Operation *op;
  /// Operand indices of `op`.
  unsigned inputOperand, outputOperand;
  /// Transient indices.
  unsigned input, output;
};

/// Liveness, slots and live bytes of one kernel.entry.
class BufferLiveness {
public:
  /// Analyzes `entry`; `access` caches kernel effects across entries.
  BufferLiveness(EntryOp entry, BufferAccessAnalysis &access);
  explicit BufferLiveness(EntryOp entry);

  EntryOp getEntry() const { return entry; }
  /// The scheduled ops; index = program point.
  llvm::ArrayRef<mlir::Operation *> getSchedule() const { return schedule; }
  llvm::ArrayRef<Transient> getTransients() const { return transients; }
  llvm::ArrayRef<TransientSlot> getSlots() const { return slots; }
  llvm::ArrayRef<InPlaceReuse> getInPlaceReuses() const { return reuses; }

  /// The transient that `buffer` (an alloc or a view of one) is, if any.
  std::optional<unsigned> lookupTransient(mlir::Value buffer) const;
  /// The program point of a scheduled op, if it is one of this entry's.
  std::optional<int64_t> lookupPoint(mlir::Operation *op) const;

  /// Whether the scheduled op at `point` writes bytes it also reads: an
  /// operand both read and written, a buffer written that another operand
  /// reads, or an in-place reuse.
  bool writesInPlace(int64_t point) const;

  /// The live lower bound, in bytes, and a point where it is reached (-1
  /// for an entry without live transients).
  int64_t getLiveLowerBound() const { return lowerBound; }
  int64_t getPeakPoint() const { return peakPoint; }
  /// Live bytes per kind at each program point (the timeline); totals are
  /// slot bytes, so in-place pairs count once.
  llvm::ArrayRef<LiveBytes> getLiveBytes() const { return liveBytes; }

  /// The last scheduled op of the forward: in an entry that writes
  /// parameters, optimizer state or gradients, the last op that writes the
  /// `loss` output (-1, before every op, when it has none). None for
  /// entries without a backward.
  std::optional<int64_t> getForwardBackwardBoundary() const {
    return boundary;
  }
  /// Bytes of activations saved at the boundary: defined at or before it
  /// and used after it. 0 without a boundary.
  int64_t getSavedActivationBytes() const;

  /// The sum of every transient's size: what one buffer per value (the
  /// naive placement) needs.
  int64_t getTotalTransientBytes() const;

private:
  void buildSchedule(BufferAccessAnalysis &access);
  void findInPlaceReuses(BufferAccessAnalysis &access);
  void buildSlots();
  void classifyTransients();
  void computeLiveBytes();

  EntryOp entry;
  llvm::SmallVector<mlir::Operation *> schedule;
  llvm::DenseMap<mlir::Operation *, int64_t> points;
  llvm::SmallVector<Transient> transients;
  llvm::DenseMap<mlir::Value, unsigned> transientIndex;
  llvm::SmallVector<TransientSlot> slots;
  llvm::SmallVector<InPlaceReuse> reuses;
  /// Per point: whether the op reads and writes the same root buffer.
  llvm::SmallVector<bool> readWritesSameBuffer;
  llvm::SmallVector<LiveBytes> liveBytes;
  std::optional<int64_t> boundary;
  /// Facts gathered by buildSchedule for classifyTransients: whether the
  /// entry writes parameters, optimizer state or gradients; the last write
  /// of the loss output (-1: none); per transient, whether every op that
  /// touches it comes from one graph op.
  bool updatesPersistentState = false;
  int64_t lastLossWrite = -1;
  llvm::SmallVector<bool> sameOrigin;
  int64_t lowerBound = 0;
  int64_t peakPoint = -1;
};

} // namespace kiln::kernel

#endif // KILN_DIALECT_KERNEL_ANALYSIS_BUFFERLIVENESS_H
