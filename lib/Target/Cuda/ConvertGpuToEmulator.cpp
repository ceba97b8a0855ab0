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
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

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

/// Why `func` cannot be emulated by running a block's threads one after the
/// other, or an empty string.
std::string findUnemulatedFeature(gpu::GPUFuncOp func) {
  if (!func.getWorkgroupAttributions().empty() ||
      !func.getPrivateAttributions().empty())
    return "shared or private memory";
  if (!func.getBody().hasOneBlock())
    return "unstructured control flow";
  std::string feature;
  func.walk([&](Operation *op) {
    if (isa<gpu::BarrierOp, gpu::ShuffleOp, gpu::SubgroupReduceOp,
            gpu::AllReduceOp, gpu::LaneIdOp, gpu::SubgroupIdOp>(op)) {
      feature = op->getName().getStringRef().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return feature;
}

/// `kernel.func @name` emulating `func` on a grid of `grid` blocks of
/// `block` threads.
LogicalResult buildEmulatedKernel(OpBuilder &builder, gpu::GPUFuncOp func,
                                  StringRef name, int64_t grid, int64_t block) {
  Location loc = func.getLoc();
  FunctionType type = func.getFunctionType();
  auto kernel = kernel::FuncOp::create(builder, loc, name, type, grid);
  kernel.setGrainAttr(builder.getI64IntegerAttr(getEmulatorGrain(grid, block)));
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
  auto threads = scf::ForOp::create(inBlock, loc, zero, blockSize, one);
  Value threadId = threads.getInductionVar();
  OpBuilder inThread = OpBuilder::atBlockBegin(threads.getBody());
  inThread.setInsertionPoint(threads.getBody()->getTerminator());

  IRMapping mapping;
  Block &source = func.getBody().front();
  for (auto [from, to] :
       llvm::zip(source.getArguments(), entry->getArguments()))
    mapping.map(from, to);
  for (Operation &op : source.without_terminator()) {
    // Launch ids and sizes: x from the loops, y and z of a 1-d launch.
    auto dimensionValue = [&](gpu::Dimension dim, Value x, Value other) {
      return dim == gpu::Dimension::x ? x : other;
    };
    if (auto id = dyn_cast<gpu::BlockIdOp>(op)) {
      mapping.map(id.getResult(),
                  dimensionValue(id.getDimension(), blockId, zero));
      continue;
    }
    if (auto id = dyn_cast<gpu::ThreadIdOp>(op)) {
      mapping.map(id.getResult(),
                  dimensionValue(id.getDimension(), threadId, zero));
      continue;
    }
    if (auto dim = dyn_cast<gpu::BlockDimOp>(op)) {
      mapping.map(dim.getResult(),
                  dimensionValue(dim.getDimension(), blockSize, one));
      continue;
    }
    if (auto dim = dyn_cast<gpu::GridDimOp>(op)) {
      mapping.map(dim.getResult(),
                  dimensionValue(dim.getDimension(), gridSize, one));
      continue;
    }
    inThread.clone(op, mapping);
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
        if (failed(buildEmulatedKernel(builder, func, name, *grid, *block)))
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
