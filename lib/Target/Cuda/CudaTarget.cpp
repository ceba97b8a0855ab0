//===- CudaTarget.cpp - Kernels to PTX and cubins -------------------------===//
//
// Part of Kiln. The toolchain facts it relies on were measured here
// (../shared/notes/gpu-toolchain.md): the PTX version must be named per
// architecture, libdevice must be named or it is silently not linked, and
// libdevice's sqrt is approximate unless asked otherwise.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/Cuda/CudaTarget.h"
#include "kiln/Conversion/Passes.h"
#include "kiln/Files.h"
#include "kiln/Target/RestrictToChunk.h"
#include "kiln/Target/TargetInfo.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/RuntimeOpVerification.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cstdlib>

using namespace mlir;
using namespace kiln;

CudaTargetOptions kiln::getCudaTargetOptions(const TargetInfo &target) {
  CudaTargetOptions options;
  options.arch = target.getArch().str();
  options.blockSize = target.getElementwiseBlockSize();
  options.vectorBytes = target.getMaxVectorBytes();
  options.warpSize = target.getWarpSize();
  return options;
}

StringRef kiln::getPtxFeatures(StringRef arch) {
  return arch == "sm_80" ? "+ptx70" : "+ptx80";
}

void kiln::registerCudaTranslations(DialectRegistry &registry) {
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  // convert-gpu-to-nvvm lowers the other dialects of a kernel through their
  // ConvertToLLVM interfaces: without them a branch keeps its index
  // operands while its blocks take i64.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  NVVM::registerConvertGpuToNVVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  // The attention template's mma.sync registers (vector<2xf16>, bf16
  // pairs bitcast to i32).
  vector::registerConvertVectorToLLVMInterface(registry);
  // The emulator's checked mode: bounds checks of memref accesses.
  memref::registerRuntimeVerifiableOpInterfaceExternalModels(registry);
}

FailureOr<OwningOpRef<ModuleOp>>
kiln::buildGpuModule(ModuleOp kernelModule, const CudaTargetOptions &options) {
  OwningOpRef<ModuleOp> module = kernelModule.clone();
  PassManager pm(kernelModule.getContext());
  pm.addPass(createConvertKernelToGpu(
      {options.blockSize, options.vectorBytes, options.warpSize}));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (failed(pm.run(*module)))
    return failure();
  return module;
}

/// Square roots as LLVM's intrinsic (sqrt.rn.f32, correctly rounded, as on
/// the host): libdevice's __nv_sqrtf is sqrt.approx.f32 unless
/// __CUDA_PREC_SQRT is reflected, and the NVVM conversion sends math.sqrt
/// there.
static void useCorrectlyRoundedSqrt(ModuleOp module) {
  module.walk([](LLVM::CallOp call) {
    std::optional<StringRef> callee = call.getCallee();
    if (!callee || (*callee != "__nv_sqrtf" && *callee != "__nv_sqrt") ||
        call.getNumOperands() != 1)
      return;
    OpBuilder builder(call);
    Value exact =
        LLVM::SqrtOp::create(builder, call.getLoc(),
                             call.getOperand(0).getType(), call.getOperand(0));
    call.getResult().replaceAllUsesWith(exact);
    call.erase();
  });
}

LogicalResult kiln::lowerGpuModuleToNvvm(ModuleOp gpuModule) {
  PassManager pm(gpuModule.getContext());
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  // As on the host, bf16 and f16 arithmetic through f32 among them.
  addKernelBodyToBranchesPasses(kernels);
  // One pointer per memref (static shapes), 64-bit indices; math through
  // libdevice's __nv_* functions.
  ConvertGpuOpsToNVVMOpsOptions nvvmOptions;
  nvvmOptions.indexBitwidth = 64;
  nvvmOptions.useBarePtrCallConv = true;
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvmOptions));
  kernels.addPass(createReconcileUnrealizedCastsPass());
  if (failed(pm.run(gpuModule)))
    return failure();
  useCorrectlyRoundedSqrt(gpuModule);
  PassManager cleanup(gpuModule.getContext());
  cleanup.nest<gpu::GPUModuleOp>().addPass(createCanonicalizerPass());
  cleanup.nest<gpu::GPUModuleOp>().addPass(createSymbolDCEPass());
  return cleanup.run(gpuModule);
}

std::string kiln::findCudaToolkit() {
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (const char *value = std::getenv(variable); value && *value)
      return value;
  return KILN_CUDA_ROOT;
}

FailureOr<std::string> kiln::translateToPtx(ModuleOp nvvmModule,
                                            const CudaTargetOptions &options) {
  std::string toolkit = findCudaToolkit();
  SmallString<256> libdevice(toolkit);
  llvm::sys::path::append(libdevice, "nvvm", "libdevice", "libdevice.10.bc");
  if (toolkit.empty() || !llvm::sys::fs::exists(libdevice))
    return nvvmModule.emitError()
           << "the CUDA toolkit's libdevice is not found"
           << (toolkit.empty() ? std::string()
                               : " at '" + std::string(libdevice) + "'")
           << ": set CUDA_HOME to the toolkit's directory";
  OwningOpRef<ModuleOp> module = nvvmModule.clone();
  PassManager pm(nvvmModule.getContext());
  GpuNVVMAttachTargetOptions attach;
  attach.chip = options.arch;
  attach.features = getPtxFeatures(options.arch).str();
  attach.optLevel = 3;
  attach.linkLibs.push_back(std::string(libdevice));
  pm.addPass(createGpuNVVMAttachTarget(attach));
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = toolkit;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
  if (failed(pm.run(*module)))
    return failure();
  for (auto binaryOp : module->getOps<gpu::BinaryOp>())
    for (Attribute object : binaryOp.getObjects())
      if (auto objectAttr = dyn_cast<gpu::ObjectAttr>(object))
        return objectAttr.getObject().str();
  return nvvmModule.emitError() << "no PTX came out of the NVPTX backend";
}

FailureOr<std::string> kiln::buildPtx(ModuleOp kernelModule,
                                      const CudaTargetOptions &options) {
  FailureOr<OwningOpRef<ModuleOp>> gpuModule =
      buildGpuModule(kernelModule, options);
  if (failed(gpuModule) || failed(lowerGpuModuleToNvvm(**gpuModule)))
    return failure();
  return translateToPtx(**gpuModule, options);
}

std::string kiln::findPtxas() {
  std::string toolkit = findCudaToolkit();
  if (!toolkit.empty()) {
    SmallString<256> path(toolkit);
    llvm::sys::path::append(path, "bin", "ptxas");
    if (llvm::sys::fs::can_execute(path))
      return std::string(path);
  }
  if (llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName("ptxas"))
    return *found;
  return "";
}

FailureOr<std::string> kiln::runPtxas(StringRef ptx, StringRef arch,
                                      std::string &error) {
  std::string ptxas = findPtxas();
  if (ptxas.empty()) {
    error = "ptxas is not found: set CUDA_HOME to the CUDA toolkit";
    return failure();
  }
  SmallString<128> input, output, log;
  for (auto [path, suffix] :
       {std::pair(&input, "ptx"), std::pair(&output, "cubin"),
        std::pair(&log, "log")})
    if (std::error_code code =
            llvm::sys::fs::createTemporaryFile("kiln-ptxas", suffix, *path)) {
      error = "cannot create a temporary file: " + code.message();
      return failure();
    }
  llvm::FileRemover removeInput(input), removeOutput(output), removeLog(log);
  if (Status written =
          writeFileAtomically(std::string(input), ptx.data(), ptx.size());
      !written.isOk()) {
    error = "cannot write the PTX for ptxas: " + written.message();
    return failure();
  }
  std::string archFlag = ("-arch=" + arch).str();
  // Two threads of ptxas's optimizer, always: its output depends on the
  // count, and an artifact must not depend on the machine's cores (1.45-1.8x
  // faster than one on GPT-2 small's PTX here).
  SmallVector<StringRef> arguments = {ptxas, archFlag, "--split-compile=2",
                                      "-o",  output,   input};
  std::optional<StringRef> redirects[] = {std::nullopt, log.str(), log.str()};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(ptxas, arguments, std::nullopt,
                                         redirects, 0, 0, &message);
  if (status != 0) {
    std::string said;
    (void)readWholeFile(std::string(log), said);
    error = "ptxas -arch=" + arch.str() + " failed" +
            (message.empty() ? "" : ": " + message) + "\n" + said;
    return failure();
  }
  std::string cubin;
  if (Status read = readWholeFile(std::string(output), cubin); !read.isOk()) {
    error = "cannot read ptxas's cubin: " + read.message();
    return failure();
  }
  return cubin;
}
