//===- ConvertKernelToHostLLVM.cpp - Kernels to exported LLVM functions ---===//
//
// Part of Kiln. The --convert-kernel-to-host-llvm pass: each kernel.func
// becomes a private function over its memrefs and [begin, end), lowered to
// the LLVM dialect with the bare-pointer calling convention, plus the
// exported `kiln_kN(void **buffers, int64_t begin, int64_t end)` that loads
// the buffer pointers and calls it.
//
//===----------------------------------------------------------------------===//

#include "ShareLoopBodies.h"
#include "VectorizeElementwiseLoops.h"
#include "kiln/Conversion/Passes.h"
#include "kiln/KernelSignatures.h"
#include "kiln/Target/RestrictToChunk.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_CONVERTKERNELTOHOSTLLVM
#include "kiln/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

/// The name of the private function holding kernel `symbol`'s body.
static std::string getBodyName(StringRef exported) {
  return (exported + "_body").str();
}

/// Adds `void kiln_kN(void **buffers, i64 begin, i64 end)` calling the
/// lowered body `kiln_kN_body(ptr..., i64 begin, i64 end)`.
static void addExportedWrapper(ModuleOp module, StringRef exported,
                               unsigned numBuffers) {
  MLIRContext *context = module.getContext();
  auto body = module.lookupSymbol<LLVM::LLVMFuncOp>(getBodyName(exported));
  body.setLinkage(LLVM::Linkage::Internal);
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  Location loc = body.getLoc();
  auto ptrType = LLVM::LLVMPointerType::get(context);
  auto i64 = IntegerType::get(context, 64);
  auto wrapperType = LLVM::LLVMFunctionType::get(
      LLVM::LLVMVoidType::get(context), {ptrType, i64, i64});
  auto wrapper = LLVM::LLVMFuncOp::create(builder, loc, exported, wrapperType);
  Block *block = wrapper.addEntryBlock(builder);
  builder.setInsertionPointToStart(block);
  SmallVector<Value> arguments;
  for (unsigned i = 0; i < numBuffers; ++i) {
    Value slot = LLVM::GEPOp::create(
        builder, loc, ptrType, ptrType, block->getArgument(0),
        ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
    arguments.push_back(LLVM::LoadOp::create(builder, loc, ptrType, slot));
  }
  arguments.push_back(block->getArgument(1));
  arguments.push_back(block->getArgument(2));
  LLVM::CallOp::create(builder, loc, body, arguments);
  LLVM::ReturnOp::create(builder, loc, ValueRange{});
}

/// Adds the exported, NUL-terminated `kiln_kernel_signatures` string the
/// runtime checks against the plan (kiln/KernelSignatures.h).
static void addSignatureTable(ModuleOp module, StringRef table) {
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  std::string text = table.str();
  text.push_back('\0');
  auto type = LLVM::LLVMArrayType::get(IntegerType::get(module.getContext(), 8),
                                       text.size());
  LLVM::GlobalOp::create(builder, module.getLoc(), type, /*isConstant=*/true,
                         LLVM::Linkage::External, kKernelSignaturesSymbol,
                         builder.getStringAttr(text));
}

namespace {
struct ConvertKernelToHostLLVMPass
    : kiln::impl::ConvertKernelToHostLLVMBase<ConvertKernelToHostLLVMPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();

    // Entries and their ops are the plan, not code.
    for (Operation &op : llvm::make_early_inc_range(*module.getBody()))
      if (isa<kernel::EntryOp>(op))
        op.erase();

    struct KernelInfo {
      std::string exported;
      unsigned numBuffers;
      int64_t range;
      func::FuncOp body;
      std::vector<int64_t> bufferBytes;
    };
    SmallVector<KernelInfo> kernels;
    for (auto kernel :
         llvm::make_early_inc_range(module.getOps<kernel::FuncOp>())) {
      KernelInfo info{kernel.getExportedSymbol(),
                      static_cast<unsigned>(kernel.getNumArguments()),
                      kernel.getRange(),
                      nullptr,
                      {}};
      for (Type type : kernel.getArgumentTypes())
        info.bufferBytes.push_back(
            kernel::getBufferSizeInBytes(cast<MemRefType>(type)));
      info.body =
          outlineKernelBody(kernel, getBodyName(kernel.getExportedSymbol()));
      kernel.erase();
      kernels.push_back(info);
    }

    // linalg → loops, then the chunk restriction on the loops.
    OpPassManager toLoops(ModuleOp::getOperationName());
    toLoops.addNestedPass<func::FuncOp>(
        createConvertLinalgToParallelLoopsPass());
    if (failed(runPipeline(toLoops, module)))
      return signalPassFailure();
    for (KernelInfo &info : kernels) {
      if (failed(restrictToChunk(info.body, info.range)))
        return signalPassFailure();
      vectorizeElementwiseLoops(info.body);
    }
    // Equal bodies (one per parameter in an optimizer's kernels) become
    // calls of one function each: code generation pays for one.
    SmallVector<std::string> shared = shareLoopBodies(module);

    // f32 tanh (GELU and its gradient) becomes MLIR's rational
    // approximation: arithmetic that the loop vectorizer handles, about ten
    // times faster than libm's tanhf, within a few ulp of it (f64 keeps
    // libm). Its fused multiply-adds become a multiply and an add: the
    // baseline x86-64 has no FMA instruction (libm's fmaf is a slow
    // software path), and contraction stays off everywhere.
    RewritePatternSet approximations(&getContext());
    populatePolynomialApproximateTanhPattern(approximations);
    if (failed(applyPatternsGreedily(module, std::move(approximations))))
      return signalPassFailure();
    module.walk([](math::FmaOp fma) {
      OpBuilder builder(fma);
      Value product =
          arith::MulFOp::create(builder, fma.getLoc(), fma.getA(), fma.getB());
      fma.replaceAllUsesWith(
          arith::AddFOp::create(builder, fma.getLoc(), product, fma.getC())
              .getResult());
      fma.erase();
    });

    // Loops, math, memrefs → LLVM. Math becomes libm calls (sqrt an
    // instruction), bf16 conversions are expanded inline (libgcc here has no
    // __truncsfbf2), and memrefs are passed as bare pointers. The passes
    // that work within a function run nested, on every core.
    OpPassManager toLLVM(ModuleOp::getOperationName());
    addKernelBodyToBranchesPasses(toLLVM.nest<func::FuncOp>());
    toLLVM.addPass(createConvertMathToLibmPass());
    OpPassManager &functionsToLLVM = toLLVM.nest<func::FuncOp>();
    functionsToLLVM.addPass(createConvertMathToLLVMPass());
    functionsToLLVM.addPass(createConvertVectorToLLVMPass());
    toLLVM.addPass(createFinalizeMemRefToLLVMConversionPass());
    ConvertFuncToLLVMPassOptions funcOptions;
    funcOptions.useBarePtrCallConv = true;
    toLLVM.addPass(createConvertFuncToLLVMPass(funcOptions));
    toLLVM.nest<LLVM::LLVMFuncOp>().addPass(createArithToLLVMConversionPass());
    toLLVM.addPass(createConvertControlFlowToLLVMPass());
    OpPassManager &cleanUp = toLLVM.nest<LLVM::LLVMFuncOp>();
    cleanUp.addPass(createConvertIndexToLLVMPass());
    cleanUp.addPass(createReconcileUnrealizedCastsPass());
    cleanUp.addPass(createCanonicalizerPass());
    if (failed(runPipeline(toLLVM, module)))
      return signalPassFailure();

    // Shared bodies are the kernels' own, not kernels.so's interface.
    for (const std::string &name : shared)
      module.lookupSymbol<LLVM::LLVMFuncOp>(name).setLinkage(
          LLVM::Linkage::Internal);

    std::vector<KernelSignature> signatures;
    for (KernelInfo &info : kernels) {
      addExportedWrapper(module, info.exported, info.numBuffers);
      signatures.push_back({info.exported, info.range, info.bufferBytes});
    }
    addSignatureTable(module, formatKernelSignatures(signatures));
  }
};
} // namespace
