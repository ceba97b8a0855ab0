//===- KernelMergeLaunches.cpp - Independent launches as one kernel -------===//
//
// Part of Kiln. The --kernel-merge-launches pass: a run of consecutive
// launches that touch disjoint buffers (none writes what another reads or
// writes) becomes one launch of one kernel whose range is the sum of the
// ranges. Each original body is one *segment* of the new range: its
// top-level parallel loops are tagged with the segment's offset, and the
// cpu backend's chunk restriction shifts a chunk [begin, end) of the merged
// range into each segment. The optimizer's per-parameter updates become one
// multi-tensor kernel this way, and any other independent neighbours (the
// three heads of q, k and v) share one launch.
//
// Every iteration computes what it computed in its own kernel: results do
// not change, whatever the chunking. Before that, consecutive sequential
// kernels (range 1), dependent or not, are chained into one sequential
// kernel: one thread runs their bodies in program order.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/Analysis/BufferAccess.h"
#include "kiln/Dialect/Kernel/Analysis/BufferLiveness.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_KERNELMERGELAUNCHES
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;
using namespace kiln::kernel;

namespace {
/// A box of a buffer: offsets then sizes.
using Box = ArrayRef<int64_t>;

/// A run of launches being collected, with the buffers it touches: roots
/// read, roots written wholly, and buffers written only in boxes.
struct LaunchRun {
  llvm::DenseSet<Value> read, written;
  llvm::DenseMap<Value, SmallVector<Box>> boxes;
  /// The ops in the bodies of its kernels.
  int64_t ops = 0;

  void clear() {
    read.clear();
    written.clear();
    boxes.clear();
    ops = 0;
  }
};

/// Whether two boxes of one buffer share no element.
bool areDisjoint(Box a, Box b) {
  size_t rank = a.size() / 2;
  for (size_t d = 0; d < rank; ++d)
    if (a[d] + a[rank + d] <= b[d] || b[d] + b[rank + d] <= a[d])
      return true;
  return false;
}
} // namespace

/// Whether `launch` may join a run: a kernel with work (range > 0) whose
/// outputs are not candidates for in-place reuse (the planner's elementwise
/// pairs need a launch of their own).
static bool isMergeable(LaunchOp launch, FuncOp kernel,
                        BufferAccessAnalysis &access) {
  // A fused attention's kernel is the target's own template, not its body.
  if (!kernel || kernel.getRange() <= 0 ||
      kernel->hasAttr(KernelDialect::kAttentionAttr))
    return false;
  return access.getElementwiseOperandPairs(launch).empty();
}

/// The box `launch` writes of `operand`, if it declares one and writes
/// only that operand.
static std::optional<Box> getWriteBox(LaunchOp launch, Value operand,
                                      ArrayRef<BufferAccess> operandAccess) {
  auto box =
      launch->getAttrOfType<DenseI64ArrayAttr>(KernelDialect::kWriteBoxAttr);
  auto type = dyn_cast<MemRefType>(operand.getType());
  if (!box || !type || box.size() != 2 * type.getRank() ||
      llvm::count_if(operandAccess, writes) != 1)
    return std::nullopt;
  return box.asArrayRef();
}

/// The entry buffer kind of `root`, if it is an argument of its entry.
static std::optional<BufferKind> getEntryKind(Value root) {
  auto argument = dyn_cast<BlockArgument>(root);
  auto entry = argument ? dyn_cast<EntryOp>(argument.getOwner()->getParentOp())
                        : EntryOp();
  if (!entry)
    return std::nullopt;
  return entry.getBufferKind(argument.getArgNumber());
}

/// Whether `root` is the entry's status buffer: kernels only record bad
/// input there, with atomic operations, so any two may do so together.
static bool isStatusBuffer(Value root) {
  return getEntryKind(root) == BufferKind::Status;
}

/// Whether operands accessed as `operandAccess` write what `read` or
/// `written` holds (by root buffer), or read what `written` holds; the
/// status buffer is no conflict.
static bool conflictsWith(ValueRange operands,
                          ArrayRef<BufferAccess> operandAccess,
                          const llvm::DenseSet<Value> &read,
                          const llvm::DenseSet<Value> &written) {
  for (auto [operand, access] : llvm::zip_equal(operands, operandAccess)) {
    if (!isa<MemRefType>(operand.getType()))
      continue;
    Value root = getRootBuffer(operand);
    if (isStatusBuffer(root))
      continue;
    if ((writes(access) && (read.contains(root) || written.contains(root))) ||
        (reads(access) && written.contains(root)))
      return true;
  }
  return false;
}

/// Whether `launch` touches none of the buffers the run writes and writes
/// none the run reads; disjoint boxes of one buffer are no conflict, nor
/// is the status buffer.
static bool isIndependent(const LaunchRun &run, LaunchOp launch,
                          ArrayRef<BufferAccess> operandAccess) {
  if (conflictsWith(launch->getOperands(), operandAccess, run.read,
                    run.written))
    return false;
  for (auto [operand, access] :
       llvm::zip_equal(launch->getOperands(), operandAccess)) {
    Value root = getRootBuffer(operand);
    if (access == BufferAccess::None || isStatusBuffer(root))
      continue;
    std::optional<Box> box = getWriteBox(launch, operand, operandAccess);
    for (auto &[written, boxes] : run.boxes) {
      if (getRootBuffer(written) != root)
        continue;
      // Boxes compare only in the coordinates of one buffer value.
      if (reads(access) || !box || written != operand ||
          !llvm::all_of(boxes,
                        [&](Box other) { return areDisjoint(*box, other); }))
        return false;
    }
  }
  return true;
}

static void addToRun(LaunchRun &run, LaunchOp launch,
                     ArrayRef<BufferAccess> operandAccess) {
  for (auto [operand, access] :
       llvm::zip_equal(launch->getOperands(), operandAccess)) {
    Value root = getRootBuffer(operand);
    if (reads(access))
      run.read.insert(root);
    if (!writes(access))
      continue;
    if (std::optional<Box> box = getWriteBox(launch, operand, operandAccess))
      run.boxes[operand].push_back(*box);
    else
      run.written.insert(root);
  }
}

/// A new kernel replacing the launches of `run`: its arguments are their
/// distinct operands; `buildBody` fills its body (positioned before the
/// terminator) given the argument of each launch operand. One launch of it
/// replaces the run, where the last of them was (only allocations and views
/// lie between them), named by the joined origins.
static LogicalResult
replaceRun(ArrayRef<LaunchOp> run, ArrayRef<FuncOp> kernels, int64_t range,
           SymbolTable &symbols, unsigned &nextName,
           llvm::function_ref<LogicalResult(OpBuilder &, Location,
                                            llvm::function_ref<Value(Value)>)>
               buildBody) {
  llvm::SetVector<Value> operands;
  for (LaunchOp launch : run)
    operands.insert(launch->getOperands().begin(), launch->getOperands().end());
  SmallVector<Type> types;
  for (Value operand : operands)
    types.push_back(operand.getType());
  // The smallest grain, where every kernel has one (the cpu target's).
  std::optional<int64_t> grain = std::numeric_limits<int64_t>::max();
  llvm::SetVector<StringRef> origins;
  SmallVector<Location> locations;
  for (size_t i = 0; i < run.size(); ++i) {
    LaunchOp launch = run[i];
    std::optional<uint64_t> kernelGrain = FuncOp(kernels[i]).getGrain();
    grain = grain && kernelGrain
                ? std::optional(std::min<int64_t>(*grain, *kernelGrain))
                : std::nullopt;
    if (auto origin =
            launch->getAttrOfType<StringAttr>(KernelDialect::kOriginAttr))
      origins.insert(origin.getValue());
    locations.push_back(launch.getLoc());
  }
  Location loc = FusedLoc::get(LaunchOp(run.front()).getContext(), locations);

  OpBuilder moduleBuilder(FuncOp(kernels.front()));
  auto merged =
      FuncOp::create(moduleBuilder, loc, getUniqueKernelName(symbols, nextName),
                     moduleBuilder.getFunctionType(types, {}), range);
  if (grain)
    merged.setGrainAttr(moduleBuilder.getI64IntegerAttr(*grain));
  symbols.insert(merged);
  Block *body = moduleBuilder.createBlock(
      &merged.getBody(), {}, types, SmallVector<Location>(types.size(), loc));
  OpBuilder builder = OpBuilder::atBlockEnd(body);
  ReturnOp::create(builder, loc);
  builder.setInsertionPointToStart(body);
  auto argumentOf = [&](Value operand) {
    return body->getArgument(llvm::find(operands, operand) - operands.begin());
  };
  if (failed(buildBody(builder, loc, argumentOf)))
    return failure();

  OpBuilder launchBuilder(LaunchOp(run.back()));
  auto launch = LaunchOp::create(
      launchBuilder, loc, FlatSymbolRefAttr::get(merged.getSymNameAttr()),
      operands.getArrayRef());
  if (!origins.empty())
    launch->setAttr(KernelDialect::kOriginAttr,
                    launchBuilder.getStringAttr(llvm::join(origins, "+")));
  for (LaunchOp old : run)
    old->erase();
  return success();
}

/// The argument mapping of `kernel`'s body as launched by `launch`.
static IRMapping mapArguments(FuncOp kernel, LaunchOp launch,
                              llvm::function_ref<Value(Value)> argumentOf) {
  IRMapping mapping;
  for (auto [argument, operand] :
       llvm::zip_equal(kernel.getArguments(), launch->getOperands()))
    mapping.map(argument, argumentOf(operand));
  return mapping;
}

/// Replaces the independent launches of `run` by one kernel whose range is
/// the sum of theirs, one segment each.
static LogicalResult mergeRun(ArrayRef<LaunchOp> run, SymbolTable &symbols,
                              unsigned &nextName) {
  SmallVector<FuncOp> kernels;
  int64_t range = 0;
  for (LaunchOp launch : run) {
    kernels.push_back(symbols.lookup<FuncOp>(launch.getKernel()));
    range += kernels.back().getRange();
  }
  return replaceRun(
      run, kernels, range, symbols, nextName,
      [&](OpBuilder &builder, Location loc,
          llvm::function_ref<Value(Value)> argumentOf) -> LogicalResult {
        IRRewriter rewriter(builder.getContext());
        int64_t offset = 0;
        for (size_t i = 0; i < run.size(); ++i) {
          LaunchOp launch = run[i];
          FuncOp kernel = kernels[i];
          IRMapping mapping = mapArguments(kernel, launch, argumentOf);
          IntegerAttr offsetAttr = builder.getI64IntegerAttr(offset);
          Block &kernelBody = kernel.getBody().front();
          if (kernel.getRange() == 1) {
            // A sequential body is the one iteration of a segment of size 1.
            Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
            Value one = arith::ConstantIndexOp::create(builder, loc, 1);
            auto loop = scf::ParallelOp::create(
                builder, loc, ValueRange{zero}, ValueRange{one},
                ValueRange{one}, [&](OpBuilder &nested, Location, ValueRange) {
                  for (Operation &op : kernelBody.without_terminator())
                    nested.clone(op, mapping);
                });
            loop->setAttr(KernelDialect::kSegmentOffsetAttr, offsetAttr);
            offset += 1;
            continue;
          }
          SmallVector<Operation *> cloned;
          for (Operation &op : kernelBody.without_terminator())
            cloned.push_back(builder.clone(op, mapping));
          // The segment's loops: linalg ops become their parallel loops
          // here, so that each top-level loop can carry the segment's offset.
          for (Operation *op : cloned) {
            if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
              rewriter.setInsertionPoint(op);
              FailureOr<linalg::LinalgLoops> loops =
                  linalg::linalgOpToParallelLoops(rewriter, linalgOp);
              if (failed(loops) || loops->empty())
                return op->emitError("cannot lower to loops for merging");
              loops->front()->setAttr(KernelDialect::kSegmentOffsetAttr,
                                      offsetAttr);
              rewriter.eraseOp(op);
              continue;
            }
            if (isa<scf::ParallelOp>(op))
              op->setAttr(KernelDialect::kSegmentOffsetAttr, offsetAttr);
          }
          offset += kernel.getRange();
        }
        return success();
      });
}

/// Replaces a run of sequential launches (range 1: one iteration, as the
/// scalar steps of a loss or an optimizer schedule), dependent or not, by
/// one sequential kernel running their bodies in order.
static LogicalResult chainRun(ArrayRef<LaunchOp> run, SymbolTable &symbols,
                              unsigned &nextName) {
  SmallVector<FuncOp> kernels;
  for (LaunchOp launch : run)
    kernels.push_back(symbols.lookup<FuncOp>(launch.getKernel()));
  return replaceRun(
      run, kernels, /*range=*/1, symbols, nextName,
      [&](OpBuilder &builder, Location,
          llvm::function_ref<Value(Value)> argumentOf) -> LogicalResult {
        for (size_t i = 0; i < run.size(); ++i) {
          FuncOp kernel = kernels[i];
          IRMapping mapping = mapArguments(kernel, run[i], argumentOf);
          for (Operation &op : kernel.getBody().front().without_terminator())
            builder.clone(op, mapping);
        }
        return success();
      });
}

/// The runs of at least two consecutive scheduled ops of `entry` that
/// `accept` takes, split where `startsNewRun` says so.
static SmallVector<SmallVector<LaunchOp>>
collectRuns(EntryOp entry, llvm::function_ref<bool(LaunchOp)> accept,
            llvm::function_ref<bool(LaunchOp)> startsNewRun,
            llvm::function_ref<void(LaunchOp)> added,
            llvm::function_ref<void()> cleared) {
  SmallVector<SmallVector<LaunchOp>> runs;
  SmallVector<LaunchOp> run;
  auto flush = [&] {
    if (run.size() > 1)
      runs.push_back(run);
    run.clear();
    cleared();
  };
  for (Operation &op : entry.getBody().front()) {
    if (!isScheduledOp(&op))
      continue;
    auto launch = dyn_cast<LaunchOp>(op);
    if (!launch || !accept(launch)) {
      flush();
      continue;
    }
    if (startsNewRun(launch))
      flush();
    run.push_back(launch);
    added(launch);
  }
  flush();
  return runs;
}

/// Transient bytes a sequential launch may keep alive longer by moving
/// down to the next sequential one (a loss's per-row terms).
static constexpr int64_t kMaxSunkTransientBytes = 64 * 1024;

/// The buffers `launch` reads and writes, by root; the status buffer
/// apart (no conflict).
static void collectTouched(LaunchOp launch, BufferAccessAnalysis &access,
                           llvm::DenseSet<Value> &read,
                           llvm::DenseSet<Value> &written) {
  for (auto [operand, operandAccess] : llvm::zip_equal(
           launch->getOperands(), access.getOperandAccess(launch))) {
    Value root = getRootBuffer(operand);
    if (isStatusBuffer(root))
      continue;
    if (reads(operandAccess))
      read.insert(root);
    if (writes(operandAccess))
      written.insert(root);
  }
}

namespace {
/// The entry's live lower bound (BufferLiveness) while launches move down,
/// without a liveness analysis per move. A move of launch L from before
/// op P to just before a later op T changes live bytes only at the
/// scheduled ops from L through T, by at most the bytes of the transients
/// L touches, S: only their live ranges change, within that window (in-
/// place reuses included: a transient is reused only where it dies). So
/// the tracker keeps, per scheduled op, an upper bound of its live bytes
/// (exact after an analysis) and an op where the bound is reached; a move
/// whose window excludes that op and whose window's upper bounds plus 2S
/// (twice the argument's S, as a margin) stay within the bound leaves the
/// bound as it is. Other moves run the analysis, as before, and are undone
/// if the bound rises.
class LiveBoundTracker {
public:
  LiveBoundTracker(EntryOp entry, BufferAccessAnalysis &access)
      : entry(entry), access(access) {}

  /// Moves `launch` to just before `target`, a later scheduled op, unless
  /// that raises the entry's live lower bound.
  void moveUnlessBoundRises(LaunchOp launch, Operation *target) {
    if (!analysis)
      analyze();
    if (movesWithinBound(launch, target))
      return;
    Operation *before = launch->getNextNode();
    int64_t bound = analysis->getLiveLowerBound();
    launch->moveBefore(target);
    BufferLiveness moved(entry, access);
    if (moved.getLiveLowerBound() > bound) {
      launch->moveBefore(before);
      return;
    }
    adopt(std::move(moved));
  }

  /// Forgets what it knows: the entry changed in some other way.
  void invalidate() { analysis.reset(); }

private:
  void analyze() { adopt(BufferLiveness(entry, access)); }

  void adopt(BufferLiveness fresh) {
    analysis.emplace(std::move(fresh));
    upperBytes.clear();
    for (auto [point, op] : llvm::enumerate(analysis->getSchedule()))
      upperBytes[op] = analysis->getLiveBytes()[point].total();
    int64_t peak = analysis->getPeakPoint();
    peakOp = peak >= 0 ? analysis->getSchedule()[peak] : nullptr;
  }

  /// Moves `launch` before `target` if the move provably keeps the bound,
  /// updating the upper bounds; false, with nothing moved, otherwise.
  bool movesWithinBound(LaunchOp launch, Operation *target) {
    // S: the transients `launch` touches, each counted once.
    int64_t touchedBytes = 0;
    llvm::SmallDenseSet<unsigned> touched;
    for (auto [operand, operandAccess] : llvm::zip_equal(
             launch->getOperands(), access.getOperandAccess(launch))) {
      if (operandAccess == BufferAccess::None)
        continue;
      std::optional<unsigned> transient = analysis->lookupTransient(operand);
      if (transient && touched.insert(*transient).second)
        touchedBytes += analysis->getTransients()[*transient].sizeInBytes;
    }
    int64_t bound = analysis->getLiveLowerBound();
    int64_t windowUpper = 0;
    SmallVector<Operation *> window;
    for (Operation *op = launch; op; op = op->getNextNode()) {
      if (isScheduledOp(op)) {
        if (op == peakOp)
          return false;
        windowUpper = std::max(windowUpper, upperBytes.lookup(op));
        window.push_back(op);
      }
      if (op == target)
        break;
    }
    if (windowUpper + 2 * touchedBytes > bound)
      return false;
    launch->moveBefore(target);
    for (Operation *op : window)
      upperBytes[op] = windowUpper + 2 * touchedBytes;
    return true;
  }

  EntryOp entry;
  BufferAccessAnalysis &access;
  /// The last analysis: its bound is the entry's, its transients' sizes
  /// hold; its schedule may be out of date.
  std::optional<BufferLiveness> analysis;
  llvm::DenseMap<Operation *, int64_t> upperBytes;
  /// A scheduled op whose live bytes are the bound (none without live
  /// transients: the bound is 0).
  Operation *peakOp = nullptr;
};
} // namespace

/// Moves launches of `entry` down to where they can join a neighbour, last
/// first (a launch then moves to where the later ones went):
/// - a sequential launch (range 1) to just before the next sequential one,
///   when the transients it reads are small (a small bias-gradient sum
///   then runs with the step count and the schedule);
/// - a parallel launch that has no mergeable neighbour after it to just
///   before the next launch it is independent of and may share a launch
///   with (a bias-gradient sum past the GEMMs to the next layer norm's
///   gradient), unless that raises the entry's live lower bound.
/// No scheduled op in between may write what the launch touches or read
/// what it writes.
static void sinkLaunches(EntryOp entry, SymbolTable &symbols,
                         BufferAccessAnalysis &access) {
  auto kernelOf = [&](Operation *op) {
    auto launch = dyn_cast<LaunchOp>(op);
    return launch ? symbols.lookup<FuncOp>(launch.getKernel()) : FuncOp();
  };
  auto isSequential = [&](Operation *op) {
    FuncOp kernel = kernelOf(op);
    return kernel && kernel.getRange() == 1;
  };
  auto isMergeableLaunch = [&](Operation *op) {
    auto launch = dyn_cast<LaunchOp>(op);
    return launch && isMergeable(launch, kernelOf(op), access);
  };
  SmallVector<LaunchOp> launches(entry.getBody().front().getOps<LaunchOp>());
  LiveBoundTracker liveBound(entry, access);
  for (LaunchOp launch : llvm::reverse(launches)) {
    bool sequential = isSequential(launch);
    if (!sequential && !isMergeableLaunch(launch))
      continue;
    llvm::DenseSet<Value> read, written;
    collectTouched(launch, access, read, written);
    // A launch writing an output stays: the loss's writer marks the end of
    // the forward (activation_bytes, recomputation's budget).
    if (llvm::any_of(written, [](Value root) {
          return getEntryKind(root) == BufferKind::Output;
        }))
      continue;
    if (sequential) {
      int64_t transientBytes = 0;
      for (Value root : read)
        if (root.getDefiningOp<AllocOp>())
          transientBytes +=
              getBufferSizeInBytes(cast<MemRefType>(root.getType()));
      if (transientBytes > kMaxSunkTransientBytes)
        continue;
    }
    auto joins = [&](Operation *op) {
      if (sequential)
        return isSequential(op);
      return isMergeableLaunch(op) &&
             !conflictsWith(op->getOperands(), access.getOperandAccess(op),
                            read, written);
    };
    Operation *next = launch->getNextNode();
    while (next && !isScheduledOp(next))
      next = next->getNextNode();
    if (!next || joins(next))
      continue;
    Operation *target = nullptr;
    for (Operation *op = next; op; op = op->getNextNode()) {
      if (!isScheduledOp(op))
        continue;
      if (joins(op)) {
        target = op;
        break;
      }
      if (conflictsWith(op->getOperands(), access.getOperandAccess(op), read,
                        written))
        break;
    }
    if (!target)
      continue;
    if (sequential) {
      launch->moveBefore(target);
      liveBound.invalidate(); // Unguarded: analyzed when next needed.
      continue;
    }
    liveBound.moveUnlessBoundRises(launch, target);
  }
}

namespace {
struct KernelMergeLaunchesPass
    : kiln::kernel::impl::KernelMergeLaunchesBase<KernelMergeLaunchesPass> {
  using KernelMergeLaunchesBase::KernelMergeLaunchesBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // New kernels are numbered after the existing ones (kN from N = their
    // count; getUniqueKernelName skips any name taken).
    unsigned nextName = llvm::range_size(module.getOps<FuncOp>());
    auto kernelOf = [&](LaunchOp launch) {
      return symbols.lookup<FuncOp>(launch.getKernel());
    };
    // The ops of each kernel's body, counted once (merged kernels copy the
    // bodies of theirs, and their size is what code generation pays for).
    llvm::DenseMap<Operation *, int64_t> opCounts;
    auto opsOf = [&](FuncOp kernel) -> int64_t {
      if (!kernel)
        return 0;
      auto [it, inserted] = opCounts.try_emplace(kernel, 0);
      if (inserted)
        kernel.walk([&](Operation *) { ++it->second; });
      return it->second;
    };
    // Whether a run of `ops` ops that takes `more` would pass max-ops (a
    // run's first launch always joins it).
    auto exceedsMaxOps = [&](int64_t ops, int64_t more) {
      return maxOps > 0 && ops > 0 && ops + more > maxOps;
    };
    // First, sequential kernels move down to the next one where nothing in
    // between depends on them, and chains of sequential kernels become one;
    // then independent neighbours (among them the chains) share a launch.
    BufferAccessAnalysis access(&symbols);
    for (auto entry : module.getOps<EntryOp>()) {
      sinkLaunches(entry, symbols, access);
      int64_t chained = 0;
      SmallVector<SmallVector<LaunchOp>> chains = collectRuns(
          entry,
          [&](LaunchOp launch) {
            FuncOp kernel = kernelOf(launch);
            return kernel && kernel.getRange() == 1;
          },
          [&](LaunchOp launch) {
            return exceedsMaxOps(chained, opsOf(kernelOf(launch)));
          },
          [&](LaunchOp launch) { chained += opsOf(kernelOf(launch)); },
          [&] { chained = 0; });
      for (ArrayRef<LaunchOp> chain : chains)
        if (failed(chainRun(chain, symbols, nextName)))
          return signalPassFailure();
    }
    SmallVector<SmallVector<LaunchOp>> runs;
    for (auto entry : module.getOps<EntryOp>()) {
      LaunchRun run;
      SmallVector<BufferAccess> operandAccess;
      llvm::append_range(
          runs, collectRuns(
                    entry,
                    [&](LaunchOp launch) {
                      return isMergeable(launch, kernelOf(launch), access);
                    },
                    [&](LaunchOp launch) {
                      operandAccess = access.getOperandAccess(launch);
                      return exceedsMaxOps(run.ops, opsOf(kernelOf(launch))) ||
                             !isIndependent(run, launch, operandAccess);
                    },
                    [&](LaunchOp launch) {
                      addToRun(run, launch, operandAccess);
                      run.ops += opsOf(kernelOf(launch));
                    },
                    [&] { run.clear(); }));
    }
    for (ArrayRef<LaunchOp> run : runs)
      if (failed(mergeRun(run, symbols, nextName)))
        return signalPassFailure();
    // Kernels no launch calls any more. Launches live in entries only, so
    // the kernels' bodies, most of the module, need no walk.
    llvm::DenseSet<StringAttr> launched;
    for (auto entry : module.getOps<EntryOp>())
      entry.walk([&](LaunchOp launch) {
        launched.insert(launch.getKernelAttr().getAttr());
      });
    for (auto kernel : llvm::make_early_inc_range(module.getOps<FuncOp>()))
      if (!launched.contains(kernel.getSymNameAttr()))
        kernel.erase();
  }
};
} // namespace
