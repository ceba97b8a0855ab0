//===- ConvertGpuToEmulator.cpp - GPU kernels as host kernels -------------===//
//
// Part of Kiln. --convert-gpu-to-emulator (Passes.td): blocks as a parallel
// loop, a block's threads as a loop, like PoCL's work-item loops for
// kernels without barriers.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Target/Cuda/CudaTarget.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/MapVector.h"

namespace kiln {
#define GEN_PASS_DEF_CONVERTGPUTOEMULATOR
#include "kiln/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

int64_t kiln::getEmulatorGrain(int64_t grid, int64_t block) {
  return std::clamp<int64_t>(4096 / std::max<int64_t>(block, 1), 1,
                             std::max<int64_t>(grid, 1));
}

GpuTemplateCounts kiln::countGpuTemplates(ModuleOp gpuModule) {
  GpuTemplateCounts counts;
  gpuModule.walk([&](gpu::GPUFuncOp func) {
    if (!func.isKernel())
      return;
    ++counts.kernels;
    counts.perIteration += !func->hasAttr(kElementwiseAttr);
  });
  return counts;
}

std::map<std::string, LaunchShape> kiln::getGpuLaunches(ModuleOp gpuModule) {
  std::map<std::string, LaunchShape> launches;
  gpuModule.walk([&](gpu::GPUFuncOp func) {
    DenseI32ArrayAttr grid = func.getKnownGridSizeAttr();
    DenseI32ArrayAttr block = func.getKnownBlockSizeAttr();
    if (func.isKernel() && grid && block && grid.size() == 3 &&
        block.size() == 3)
      launches[func.getName().str()] = {grid[0], block[0]};
  });
  return launches;
}

LogicalResult kiln::convertToEmulator(ModuleOp gpuModule, bool checked) {
  PassManager pm(gpuModule.getContext());
  pm.addPass(createConvertGpuToEmulator({checked}));
  return pm.run(gpuModule);
}

namespace {
/// The launch's x size from a `known_*_size` attribute, when the y and z
/// sizes are 1.
std::optional<int64_t> getOneDimensionalSize(DenseI32ArrayAttr size) {
  if (!size || size.size() != 3 || size[1] != 1 || size[2] != 1 || size[0] < 1)
    return std::nullopt;
  return size[0];
}

/// Why `func` cannot be emulated, or an empty string. Barriers are split
/// points when they are top-level ops of the kernel (every thread of a
/// block reaches them); warp-level operations are not emulated yet.
std::string findUnemulatedFeature(gpu::GPUFuncOp func) {
  if (!func.getPrivateAttributions().empty())
    return "private memory";
  if (!func.getBody().hasOneBlock())
    return "unstructured control flow";
  std::string feature;
  Block *top = &func.getBody().front();
  func.walk([&](Operation *op) {
    if (isa<gpu::ShuffleOp, gpu::SubgroupReduceOp, gpu::AllReduceOp,
            gpu::LaneIdOp, gpu::SubgroupIdOp>(op)) {
      feature = op->getName().getStringRef().str();
      return WalkResult::interrupt();
    }
    if (isa<gpu::BarrierOp>(op) && op->getBlock() != top) {
      feature = "gpu.barrier inside control flow";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return feature;
}

/// The top-level ops of `source` (without its terminator), cut at its
/// barriers: the threads of a block run one segment after the other.
SmallVector<SmallVector<Operation *>> splitAtBarriers(Block &source) {
  SmallVector<SmallVector<Operation *>> segments(1);
  for (Operation &op : source.without_terminator()) {
    if (isa<gpu::BarrierOp>(op))
      segments.emplace_back();
    else
      segments.back().push_back(&op);
  }
  return segments;
}

/// The row-major element index of `indices` into a memref of `type`.
Value linearize(OpBuilder &b, Location loc, MemRefType type,
                ValueRange indices) {
  Value linear = arith::ConstantIndexOp::create(b, loc, 0);
  for (auto [dim, index] : llvm::zip(type.getShape(), indices)) {
    linear = arith::MulIOp::create(b, loc, linear,
                                   arith::ConstantIndexOp::create(b, loc, dim));
    linear = arith::AddIOp::create(b, loc, linear, index);
  }
  return linear;
}

/// Who last wrote and read each word of a block's shared buffer, and in
/// which segment (between which barriers): a race is two threads touching
/// a word in one segment, one of them writing.
struct SharedShadow {
  Value writer, writerSegment, reader, readerSegment;
};

/// Instruments the accesses to shared buffers in `region` (segment
/// `segment`, thread `thread`): a failed check is a cf.assert naming the
/// access's location, turned into a report on stderr later.
void checkSharedAccesses(Region &region, int64_t segment, Value thread,
                         const llvm::DenseMap<Value, SharedShadow> &shadows) {
  region.walk([&](Operation *op) {
    Value memref;
    ValueRange indices;
    bool store = false;
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      memref = load.getMemRef();
      indices = load.getIndices();
    } else if (auto write = dyn_cast<memref::StoreOp>(op)) {
      memref = write.getMemRef();
      indices = write.getIndices();
      store = true;
    } else {
      return;
    }
    auto found = shadows.find(memref);
    if (found == shadows.end())
      return;
    const SharedShadow &shadow = found->second;
    OpBuilder b(op);
    Location loc = op->getLoc();
    Value word = linearize(b, loc, cast<MemRefType>(memref.getType()), indices);
    Value here = arith::ConstantIntOp::create(b, loc, b.getI64Type(), segment);
    Value self = arith::IndexCastOp::create(b, loc, b.getI64Type(), thread);
    auto otherIn = [&](Value who, Value when) {
      Value someone = memref::LoadOp::create(b, loc, who, ValueRange{word});
      Value at = memref::LoadOp::create(b, loc, when, ValueRange{word});
      return arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, at, here),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, someone,
                                self));
    };
    Value race = otherIn(shadow.writer, shadow.writerSegment);
    if (store)
      race = arith::OrIOp::create(b, loc, race,
                                  otherIn(shadow.reader, shadow.readerSegment));
    Value fine = arith::XOrIOp::create(
        b, loc, race, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
    std::string where;
    llvm::raw_string_ostream os(where);
    loc.print(os);
    cf::AssertOp::create(b, loc, fine,
                         "shared-memory race: another thread of the block " +
                             std::string(store ? "reads or writes" : "writes") +
                             " this word between the same barriers (a missing "
                             "gpu.barrier?)\n" +
                             op->getName().getStringRef().str() +
                             "\nLocation: " + where);
    Value who = store ? shadow.writer : shadow.reader;
    Value when = store ? shadow.writerSegment : shadow.readerSegment;
    memref::StoreOp::create(b, loc, self, who, ValueRange{word});
    memref::StoreOp::create(b, loc, here, when, ValueRange{word});
  });
}

/// Maps the launch ids of `op` to the loops' indices and sizes (x) and to
/// those of a one-dimensional launch (y, z); false for any other op.
bool mapLaunchId(Operation &op, IRMapping &mapping, Value blockId,
                 Value threadId, Value blockSize, Value gridSize, Value zero,
                 Value one) {
  auto pick = [&](gpu::Dimension dim, Value x, Value other) {
    return dim == gpu::Dimension::x ? x : other;
  };
  if (auto id = dyn_cast<gpu::BlockIdOp>(op))
    mapping.map(id.getResult(), pick(id.getDimension(), blockId, zero));
  else if (auto id = dyn_cast<gpu::ThreadIdOp>(op))
    mapping.map(id.getResult(), pick(id.getDimension(), threadId, zero));
  else if (auto dim = dyn_cast<gpu::BlockDimOp>(op))
    mapping.map(dim.getResult(), pick(dim.getDimension(), blockSize, one));
  else if (auto dim = dyn_cast<gpu::GridDimOp>(op))
    mapping.map(dim.getResult(), pick(dim.getDimension(), gridSize, one));
  else
    return false;
  return true;
}

/// `kernel.func @name` emulating `func` on a grid of `grid` blocks of
/// `block` threads: blocks in parallel; in a block, its shared buffers,
/// then each segment between barriers as a loop over the threads, the
/// values a later segment uses kept per thread.
LogicalResult buildEmulatedKernel(OpBuilder &builder, gpu::GPUFuncOp func,
                                  StringRef name, int64_t grid, int64_t block,
                                  bool checked) {
  Location loc = func.getLoc();
  FunctionType type = func.getFunctionType();
  auto kernel = kernel::FuncOp::create(builder, loc, name, type, grid);
  kernel.setGrainAttr(builder.getI64IntegerAttr(getEmulatorGrain(grid, block)));
  kernel->setAttr(kernel::KernelDialect::kEmulatorAttr, builder.getUnitAttr());
  Block *entry =
      builder.createBlock(&kernel.getBody(), {}, type.getInputs(),
                          SmallVector<Location>(type.getNumInputs(), loc));
  OpBuilder b = OpBuilder::atBlockEnd(entry);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value gridSize = arith::ConstantIndexOp::create(b, loc, grid);
  Value blockSize = arith::ConstantIndexOp::create(b, loc, block);
  auto blocks = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                        ValueRange{gridSize}, ValueRange{one});
  kernel::ReturnOp::create(b, loc);
  OpBuilder inBlock = OpBuilder::atBlockBegin(blocks.getBody());
  Value blockId = blocks.getInductionVars()[0];

  IRMapping mapping;
  Block &source = func.getBody().front();
  for (auto [from, to] : llvm::zip(func.getArguments(), entry->getArguments()))
    mapping.map(from, to);

  // Shared memory: one buffer per block (and, checked, its shadows).
  llvm::DenseMap<Value, SharedShadow> shadows;
  for (BlockArgument attribution : func.getWorkgroupAttributions()) {
    auto shared = cast<MemRefType>(attribution.getType());
    Value buffer = memref::AllocaOp::create(
        inBlock, loc,
        MemRefType::get(shared.getShape(), shared.getElementType()));
    mapping.map(attribution, buffer);
    if (!checked)
      continue;
    auto shadowType =
        MemRefType::get({shared.getNumElements()}, inBlock.getI64Type());
    Value none =
        arith::ConstantIntOp::create(inBlock, loc, inBlock.getI64Type(), -1);
    SharedShadow shadow;
    for (Value *slot : {&shadow.writer, &shadow.writerSegment, &shadow.reader,
                        &shadow.readerSegment}) {
      *slot = memref::AllocaOp::create(inBlock, loc, shadowType);
      auto fill = scf::ForOp::create(
          inBlock, loc, zero,
          arith::ConstantIndexOp::create(inBlock, loc, shared.getNumElements()),
          one);
      OpBuilder inFill(fill.getBody()->getTerminator());
      memref::StoreOp::create(inFill, loc, none, *slot,
                              ValueRange{fill.getInductionVar()});
    }
    shadows[buffer] = shadow;
  }

  // The segments, and the values each keeps for later ones.
  SmallVector<SmallVector<Operation *>> segments = splitAtBarriers(source);
  llvm::DenseMap<Operation *, unsigned> segmentOf;
  for (auto [index, segment] : llvm::enumerate(segments))
    for (Operation *op : segment)
      segmentOf[op] = index;
  llvm::MapVector<Value, Value> kept; // Value -> its per-thread storage.
  for (auto [index, segment] : llvm::enumerate(segments))
    for (Operation *op : segment)
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers()) {
          Operation *top = source.findAncestorOpInBlock(*user);
          if (!top || segmentOf.lookup(top) == index || kept.count(result))
            continue;
          Type valueType = result.getType();
          if (!valueType.isIntOrIndexOrFloat()) {
            return op->emitError()
                   << "a value of type " << valueType
                   << " is used across a barrier, which the emulator keeps "
                      "only for numbers";
          }
          kept[result] = memref::AllocaOp::create(
              inBlock, loc, MemRefType::get({block}, valueType));
        }

  for (auto [index, segment] : llvm::enumerate(segments)) {
    auto threads = scf::ForOp::create(inBlock, loc, zero, blockSize, one);
    Value threadId = threads.getInductionVar();
    OpBuilder inThread(threads.getBody()->getTerminator());
    // Values of earlier segments, as this thread left them.
    for (auto [value, storage] : kept) {
      Operation *definer = source.findAncestorOpInBlock(*value.getDefiningOp());
      if (segmentOf.lookup(definer) < index)
        mapping.map(value, memref::LoadOp::create(inThread, loc, storage,
                                                  ValueRange{threadId}));
    }
    for (Operation *op : segment)
      if (!mapLaunchId(*op, mapping, blockId, threadId, blockSize, gridSize,
                       zero, one))
        inThread.clone(*op, mapping);
    for (auto [value, storage] : kept)
      if (segmentOf.lookup(value.getDefiningOp()) == index)
        memref::StoreOp::create(inThread, loc, mapping.lookup(value), storage,
                                ValueRange{threadId});
    if (checked && !shadows.empty())
      checkSharedAccesses(threads.getRegion(), index, threadId, shadows);
  }
  // Nested launch-id ops (inside an scf.if) are not expected from the
  // templates: they would be left unmapped.
  WalkResult nested = kernel.walk([&](Operation *op) {
    if (isa<gpu::BlockIdOp, gpu::ThreadIdOp, gpu::BlockDimOp, gpu::GridDimOp>(
            op)) {
      op->emitError() << "launch ids are read only at the top of a kernel "
                         "the emulator runs";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(nested.wasInterrupted());
}

/// Replaces each cf.assert of the runtime checks by a branch that writes
/// "GPU emulator: kernel <name>: <message>" to standard error (unbuffered:
/// the process aborts next) and aborts. The kernels need only libc's write
/// and abort.
void reportFailedChecksOnStandardError(ModuleOp module) {
  MLIRContext *context = module.getContext();
  OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
  Location loc = module.getLoc();
  auto i32 = IntegerType::get(context, 32);
  auto i64 = IntegerType::get(context, 64);
  auto ptr = LLVM::LLVMPointerType::get(context);
  auto write = LLVM::LLVMFuncOp::create(
      top, loc, "write", LLVM::LLVMFunctionType::get(i64, {i32, ptr, i64}));
  auto abort = LLVM::LLVMFuncOp::create(
      top, loc, "abort",
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(context), {}));
  unsigned next = 0;
  for (auto kernel : module.getOps<kernel::FuncOp>()) {
    std::string prefix =
        "GPU emulator: kernel " + kernel.getExportedSymbol() + ": ";
    kernel.walk([&](cf::AssertOp check) {
      std::string text = prefix + check.getMsg().str() + "\n";
      auto type =
          LLVM::LLVMArrayType::get(IntegerType::get(context, 8), text.size());
      auto global = LLVM::GlobalOp::create(
          top, loc, type, /*isConstant=*/true, LLVM::Linkage::Private,
          "kiln_emulator_check_" + std::to_string(next++),
          top.getStringAttr(text));
      OpBuilder b(check);
      Location at = check.getLoc();
      Value failed = arith::XOrIOp::create(
          b, at, check.getArg(),
          arith::ConstantIntOp::create(b, at, b.getI1Type(), 1));
      auto ifOp = scf::IfOp::create(b, at, failed, /*withElseRegion=*/false);
      OpBuilder inside = OpBuilder::atBlockBegin(ifOp.thenBlock());
      Value address = LLVM::AddressOfOp::create(inside, at, global);
      Value fd = LLVM::ConstantOp::create(inside, at, i32,
                                          inside.getI32IntegerAttr(2));
      Value length = LLVM::ConstantOp::create(
          inside, at, i64, inside.getI64IntegerAttr(text.size()));
      LLVM::CallOp::create(inside, at, write, ValueRange{fd, address, length});
      LLVM::CallOp::create(inside, at, abort, ValueRange{});
      check.erase();
    });
  }
}

struct ConvertGpuToEmulatorPass
    : kiln::impl::ConvertGpuToEmulatorBase<ConvertGpuToEmulatorPass> {
  using ConvertGpuToEmulatorBase::ConvertGpuToEmulatorBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    for (auto gpuModule :
         llvm::make_early_inc_range(module.getOps<gpu::GPUModuleOp>())) {
      for (auto func : gpuModule.getOps<gpu::GPUFuncOp>()) {
        if (!func.isKernel())
          continue;
        std::optional<int64_t> grid =
            getOneDimensionalSize(func.getKnownGridSizeAttr());
        std::optional<int64_t> block =
            getOneDimensionalSize(func.getKnownBlockSizeAttr());
        if (!grid || !block) {
          func.emitError() << "the emulator runs kernels with a known "
                              "one-dimensional grid and block";
          return signalPassFailure();
        }
        std::string feature = findUnemulatedFeature(func);
        if (!feature.empty()) {
          func.emitError() << "uses " << feature
                           << ", which the emulator does not run yet";
          return signalPassFailure();
        }
        StringRef name = func.getName();
        if (!name.consume_front("kiln_")) {
          func.emitError() << "kernel names start with 'kiln_'";
          return signalPassFailure();
        }
        if (failed(buildEmulatedKernel(builder, func, name, *grid, *block,
                                       checked)))
          return signalPassFailure();
        builder.setInsertionPointToEnd(module.getBody());
      }
      gpuModule.erase();
    }
    module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
    if (!checked)
      return;
    // Bounds checks on every access (memref.load/store and views), each
    // message naming its kernel; the op's location names the model line.
    OpPassManager verify(ModuleOp::getOperationName());
    verify.addPass(createGenerateRuntimeVerificationPass());
    if (failed(runPipeline(verify, module)))
      return signalPassFailure();
    reportFailedChecksOnStandardError(module);
  }
};
} // namespace
