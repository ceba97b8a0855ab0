//===- ConvertGpuToEmulator.cpp - GPU kernels as host kernels -------------===//
//
// Part of Kiln. --convert-gpu-to-emulator (Passes.td): blocks as a parallel
// loop, a block's threads as loops split at barriers and shuffles
// (EmulateBlock.cpp), and the checked build's reports.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Target/Cuda/CudaTarget.h"

#include "AttentionTemplate.h"
#include "EmulateBlock.h"
#include "EmulatorChecks.h"
#include "RowTemplate.h"
#include "ScatterPartition.h"
#include "TransposeTemplate.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
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

GpuTemplateCounts kiln::countGpuTemplates(ModuleOp gpuModule) {
  GpuTemplateCounts counts;
  gpuModule.walk([&](gpu::GPUFuncOp func) {
    if (!func.isKernel())
      return;
    ++counts.kernels;
    if (func->hasAttr(kElementwiseAttr) || func->hasAttr(kRowTemplateAttr) ||
        func->hasAttr(kScatterAttr) || func->hasAttr(kTransposeAttr) ||
        func->hasAttr(kAttentionTemplateAttr))
      return;
    // A scalar kernel (one block, no loop: a step counter) has nothing to
    // spread.
    DenseI32ArrayAttr grid = func.getKnownGridSizeAttr();
    bool loops = false;
    func.walk([&](LoopLikeOpInterface) { loops = true; });
    if (!loops && grid && grid.size() == 3 && grid[0] == 1)
      return;
    ++counts.perIteration;
    counts.perIterationNames.push_back(func.getName().str());
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

/// Why `func` cannot be emulated, or an empty string. Barriers and
/// shuffles are split points (EmulateBlock.cpp); the reductions that MLIR
/// expands into shuffles are expanded before they reach the emulator.
std::string findUnemulatedFeature(gpu::GPUFuncOp func) {
  if (!func.getPrivateAttributions().empty())
    return "private memory";
  if (!func.getBody().hasOneBlock())
    return "unstructured control flow";
  std::string feature;
  func.walk([&](Operation *op) {
    if (isa<gpu::SubgroupReduceOp, gpu::AllReduceOp>(op)) {
      feature = op->getName().getStringRef().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return feature;
}

/// `kernel.func @name` emulating `func` on a grid of `grid` blocks of
/// `block` threads: blocks in parallel, the threads of each as
/// EmulateBlock.cpp schedules them.
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
  auto blocks = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                        ValueRange{gridSize}, ValueRange{one});
  kernel::ReturnOp::create(b, loc);
  OpBuilder inBlock = OpBuilder::atBlockBegin(blocks.getBody());
  // In each block: the kernel's only top-level op is its loop over them.
  if (checked)
    checkAlignedArguments(inBlock, func, entry->getArguments());

  IRMapping mapping;
  for (auto [from, to] : llvm::zip(func.getArguments(), entry->getArguments()))
    mapping.map(from, to);
  // A block's buffers (its shared memory, the values its threads keep)
  // once per call: the blocks of a chunk run one after the other.
  OpBuilder allocator(blocks);
  EmulatedBlock emulated{blocks.getInductionVars()[0], block, grid, checked,
                         &allocator};
  return emulateBlock(func, inBlock, emulated, mapping);
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
    if (checked) {
      // Bounds checks on the kernels' own accesses (memref.load/store and
      // views), before the emulator adds its per-thread buffers; the op's
      // location names the model line.
      OpPassManager verify(ModuleOp::getOperationName());
      verify.addPass(createGenerateRuntimeVerificationPass());
      if (failed(runPipeline(verify, module)))
        return signalPassFailure();
    }
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
    if (checked)
      reportFailedChecksOnStandardError(module);
  }
};
} // namespace
