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
// not change, whatever the chunking.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/Analysis/BufferAccess.h"
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
  SmallVector<LaunchOp> launches;
  llvm::DenseSet<Value> read, written;
  llvm::DenseMap<Value, SmallVector<Box>> boxes;

  void clear() {
    launches.clear();
    read.clear();
    written.clear();
    boxes.clear();
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
  if (!kernel || kernel.getRange() <= 0)
    return false;
  return access.getElementwiseOperandPairs(launch).empty();
}

/// The box `launch` writes of `operand`, if it declares one and writes
/// only that operand.
static std::optional<Box> getWriteBox(LaunchOp launch, Value operand,
                                      ArrayRef<BufferAccess> operandAccess) {
  auto box = launch->getAttrOfType<DenseI64ArrayAttr>(
      KernelDialect::kWriteBoxAttr);
  auto type = dyn_cast<MemRefType>(operand.getType());
  if (!box || !type || box.size() != 2 * type.getRank() ||
      llvm::count_if(operandAccess, writes) != 1)
    return std::nullopt;
  return box.asArrayRef();
}

/// Whether `launch` touches none of the buffers the run writes and writes
/// none the run reads; disjoint boxes of one buffer are no conflict.
static bool isIndependent(const LaunchRun &run, LaunchOp launch,
                          ArrayRef<BufferAccess> operandAccess) {
  for (auto [operand, access] :
       llvm::zip_equal(launch->getOperands(), operandAccess)) {
    Value root = getRootBuffer(operand);
    if (access == BufferAccess::None)
      continue;
    if (run.written.contains(root))
      return false;
    if (writes(access) && run.read.contains(root))
      return false;
    std::optional<Box> box = getWriteBox(launch, operand, operandAccess);
    for (auto &[written, boxes] : run.boxes) {
      if (getRootBuffer(written) != root)
        continue;
      // Boxes compare only in the coordinates of one buffer value.
      if (reads(access) || !box || written != operand ||
          !llvm::all_of(boxes, [&](Box other) {
            return areDisjoint(*box, other);
          }))
        return false;
    }
  }
  return true;
}

static void addToRun(LaunchRun &run, LaunchOp launch,
                     ArrayRef<BufferAccess> operandAccess) {
  run.launches.push_back(launch);
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

/// Replaces the launches of `run` by one launch of a new kernel, where the
/// last of them was (only allocations and views lie between them).
static LogicalResult mergeRun(ArrayRef<LaunchOp> run, ModuleOp module,
                              SymbolTable &symbols, unsigned &nextName) {
  MLIRContext *context = module.getContext();
  // The merged kernel's arguments: every distinct operand value.
  llvm::SetVector<Value> operands;
  for (LaunchOp launch : run)
    operands.insert(launch->getOperands().begin(), launch->getOperands().end());
  SmallVector<Type> types;
  for (Value operand : operands)
    types.push_back(operand.getType());

  int64_t range = 0, grain = std::numeric_limits<int64_t>::max();
  SmallVector<FuncOp> kernels;
  llvm::SetVector<StringRef> origins;
  SmallVector<Location> locations;
  for (LaunchOp launch : run) {
    auto kernel = symbols.lookup<FuncOp>(launch.getKernel());
    kernels.push_back(kernel);
    range += kernel.getRange();
    grain = std::min<int64_t>(grain, kernel.getGrain());
    if (auto origin =
            launch->getAttrOfType<StringAttr>(KernelDialect::kOriginAttr))
      origins.insert(origin.getValue());
    locations.push_back(launch.getLoc());
  }
  Location loc = FusedLoc::get(context, locations);

  OpBuilder moduleBuilder(kernels.front());
  auto merged =
      FuncOp::create(moduleBuilder, loc, getUniqueKernelName(symbols, nextName),
                     moduleBuilder.getFunctionType(types, {}), range, grain);
  symbols.insert(merged);
  Block *body = moduleBuilder.createBlock(
      &merged.getBody(), {}, types, SmallVector<Location>(types.size(), loc));
  OpBuilder builder = OpBuilder::atBlockEnd(body);
  ReturnOp::create(builder, loc);
  builder.setInsertionPointToStart(body);

  IRRewriter rewriter(context);
  int64_t offset = 0;
  for (auto [launch, kernel] : llvm::zip_equal(run, kernels)) {
    IRMapping mapping;
    for (auto [argument, operand] :
         llvm::zip_equal(kernel.getArguments(), launch->getOperands()))
      mapping.map(argument, body->getArgument(llvm::find(operands, operand) - operands.begin()));
    IntegerAttr offsetAttr = builder.getI64IntegerAttr(offset);
    Block &kernelBody = kernel.getBody().front();
    if (kernel.getRange() == 1) {
      // A sequential body is the one iteration of a segment of size 1.
      Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
      Value one = arith::ConstantIndexOp::create(builder, loc, 1);
      auto loop = scf::ParallelOp::create(
          builder, loc, ValueRange{zero}, ValueRange{one}, ValueRange{one},
          [&](OpBuilder &nested, Location, ValueRange) {
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
    // The segment's loops: linalg ops become their parallel loops here, so
    // that each top-level loop can carry the segment's offset.
    for (Operation *op : cloned) {
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
        rewriter.setInsertionPoint(op);
        FailureOr<linalg::LinalgLoops> loops =
            linalg::linalgOpToParallelLoops(rewriter, linalgOp);
        if (failed(loops) || loops->empty())
          return op->emitError("cannot lower to loops for merging");
        loops->front()->setAttr(KernelDialect::kSegmentOffsetAttr, offsetAttr);
        rewriter.eraseOp(op);
        continue;
      }
      if (isa<scf::ParallelOp>(op))
        op->setAttr(KernelDialect::kSegmentOffsetAttr, offsetAttr);
    }
    offset += kernel.getRange();
  }

  OpBuilder launchBuilder(run.back());
  auto launch = LaunchOp::create(
      launchBuilder, loc, FlatSymbolRefAttr::get(merged.getSymNameAttr()),
      operands.getArrayRef());
  if (!origins.empty())
    launch->setAttr(KernelDialect::kOriginAttr,
                    launchBuilder.getStringAttr(llvm::join(origins, "+")));
  for (LaunchOp old : run)
    old.erase();
  return success();
}

namespace {
struct KernelMergeLaunchesPass
    : kiln::kernel::impl::KernelMergeLaunchesBase<KernelMergeLaunchesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    BufferAccessAnalysis access;
    SmallVector<SmallVector<LaunchOp>> runs;
    for (auto entry : module.getOps<EntryOp>()) {
      LaunchRun run;
      auto flush = [&] {
        if (run.launches.size() > 1)
          runs.push_back(run.launches);
        run.clear();
      };
      for (Operation &op : entry.getBody().front()) {
        if (!isScheduledOp(&op))
          continue;
        auto launch = dyn_cast<LaunchOp>(op);
        FuncOp kernel =
            launch ? symbols.lookup<FuncOp>(launch.getKernel()) : FuncOp();
        if (!launch || !isMergeable(launch, kernel, access)) {
          flush();
          continue;
        }
        SmallVector<BufferAccess> operandAccess =
            access.getOperandAccess(launch);
        if (!isIndependent(run, launch, operandAccess))
          flush();
        addToRun(run, launch, operandAccess);
      }
      flush();
    }
    // New kernels are numbered after the existing ones (kN from N = their
    // count; getUniqueKernelName skips any name taken).
    unsigned nextName = llvm::range_size(module.getOps<FuncOp>());
    for (ArrayRef<LaunchOp> run : runs)
      if (failed(mergeRun(run, module, symbols, nextName)))
        return signalPassFailure();
    // Kernels no launch calls any more.
    SymbolTableCollection collection;
    SymbolUserMap users(collection, module);
    for (auto kernel : llvm::make_early_inc_range(module.getOps<FuncOp>()))
      if (users.getUsers(kernel).empty())
        kernel.erase();
  }
};
} // namespace
