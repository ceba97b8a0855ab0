//===- CompileCommand.cpp - kiln compile -----------------------------------===//
//
// Part of Kiln. Compiles a model into an artifact directory
// (`--target=cpu -o OUT.kiln.d`), or stops at a stage and prints it
// (`--emit=graph|kernel|llvm`). `--train` adds the training entry points
// (train_step, or accumulate_step and apply_step) built from the train block.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "ModelLoading.h"

#include "kiln/Artifact/Artifact.h"
#include "kiln/Dialect/Graph/Transforms/TrainStep.h"
#include "kiln/Pipelines/CompileStats.h"
#include "kiln/Pipelines/KernelPipeline.h"
#include "kiln/Target/Host/HostTarget.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

cl::SubCommand kiln::cli::compileCommand(
    "compile", "Compile a model, stopping at a stage with --emit");

namespace {
enum class EmitStage { Graph, Kernel, LLVM };
enum class CompileTarget { CPU };
} // namespace

static cl::opt<std::string> compileModel(cl::Positional, cl::Required,
                                         cl::desc("MODEL.kiln"),
                                         cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<EmitStage> emitStage(
    "emit", cl::desc("The stage to print"), cl::init(EmitStage::Graph),
    cl::values(clEnumValN(EmitStage::Graph, "graph",
                          "the forward graph as parsed (graph dialect)"),
               clEnumValN(EmitStage::Kernel, "kernel",
                          "kernels, GEMMs and buffers (kernel dialect)"),
               clEnumValN(EmitStage::LLVM, "llvm",
                          "the cpu kernels as optimized LLVM IR")),
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<CompileTarget> compileTarget(
    "target", cl::desc("Write the artifact for this target into -o DIR"),
    cl::values(clEnumValN(CompileTarget::CPU, "cpu",
                          "host code: plan.kpl, kernels.so, model.h")),
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<std::string> hostCpu(
    "cpu",
    cl::desc("The x86-64 CPU kernels.so is built for (default x86-64-v2; "
             "'native' for this machine)"),
    cl::init("x86-64-v2"), cl::sub(kiln::cli::compileCommand),
    cl::cat(kiln::cli::optionCategory));
static cl::opt<std::string> compileOutput("o", cl::desc("Output file"),
                                          cl::value_desc("FILE"),
                                          cl::init("-"),
                                          cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<bool> compileTrain(
    "train",
    cl::desc("Also compile the training entry points (train_step, or "
             "accumulate_step and apply_step) from the train block"),
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<bool> printDebugInfo(
    "print-locations", cl::desc("Print each op's location in the model file"),
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<bool> printStats(
    "stats",
    cl::desc("Compile the training step and print its figures as one JSON "
             "object: params, FLOPs, kernels per step, the arena against its "
             "live lower bound, peak and activation bytes"),
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
// Accepted so that scripts can ask for the comparison already; the passes
// they switch off do not exist yet.
static cl::opt<bool> noFuse(
    "no-fuse", cl::desc("Compile without fusion (a no-op: no fusion pass yet)"),
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<bool> noRecompute(
    "no-recompute",
    cl::desc("Compile without recomputation (a no-op: no recomputation pass "
             "yet)"),
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));

int kiln::cli::runCompile() {
  std::unique_ptr<LoadedModel> model = loadModelForCLI(compileModel);
  if (!model->module)
    return 1;
  if (printStats) {
    // Errors of the later passes point into the model file too.
    mlir::SourceMgrDiagnosticHandler handler(model->sourceMgr,
                                             model->context.get());
    FailureOr<json::Object> stats =
        kiln::compileWithStats(*model->module, {});
    if (failed(stats))
      return 1;
    outs() << formatv("{0:2}", json::Value(std::move(*stats))) << "\n";
    return 0;
  }

  // Without --emit, --target writes the artifact; with neither, the graph
  // is printed as before.
  bool writesArtifact =
      compileTarget.getNumOccurrences() && !emitStage.getNumOccurrences();
  if (writesArtifact && compileOutput == "-") {
    WithColor::error(errs(), "kiln")
        << "--target=cpu writes a directory: give it with -o OUT.kiln.d\n";
    return 1;
  }
  // The training entries are graph functions: build them before any stage
  // is printed or lowered, exactly as `kiln train` does.
  if (compileTrain) {
    mlir::FailureOr<kiln::graph::TrainSettings> settings =
        kiln::graph::TrainSettings::fromModule(*model->module);
    if (mlir::failed(settings) ||
        mlir::failed(
            kiln::graph::buildTrainFunctions(*model->module, *settings)))
      return 1;
  }
  kiln::HostTargetOptions host;
  host.cpu = hostCpu;
  if (writesArtifact || emitStage != EmitStage::Graph) {
    mlir::PassManager pm(model->context.get());
    kiln::buildKernelPipeline(pm, {});
    if (mlir::failed(pm.run(*model->module)))
      return 1;
  }
  if (writesArtifact) {
    kiln::ArtifactOptions options;
    options.host = host;
    return mlir::failed(
        kiln::writeArtifact(*model->module, compileOutput, options));
  }

  std::error_code error;
  auto output = std::make_unique<ToolOutputFile>(compileOutput, error,
                                                 sys::fs::OF_TextWithCRLF);
  if (error) {
    WithColor::error(errs(), "kiln")
        << "cannot write '" << compileOutput << "': " << error.message() << "\n";
    return 1;
  }
  if (emitStage == EmitStage::LLVM) {
    llvm::LLVMContext llvmContext;
    mlir::FailureOr<std::unique_ptr<llvm::Module>> llvmModule =
        kiln::buildHostLLVMModule(*model->module, llvmContext, host);
    if (mlir::failed(llvmModule))
      return 1;
    (*llvmModule)->print(output->os(), nullptr);
    output->keep();
    return 0;
  }
  mlir::OpPrintingFlags flags;
  if (printDebugInfo)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  model->module->print(output->os(), flags);
  output->os() << "\n";
  output->keep();
  return 0;
}
