//===- CompileCommand.cpp - kiln compile ----------------------------------===//
//
// Part of Kiln. Compiles a model into an artifact directory
// (`--target=cpu -o OUT.kiln.d`), or stops at a stage and prints it
// (`--emit=graph|kernel|llvm`; `--target=cuda --emit=kernel` prints the
// kernels scheduled for a GPU). Every mode compiles through the one driver
// (kiln/Pipelines/CompilePipeline.h). `--train` adds the training entry points
// (train_step, or accumulate_step and apply_step) built from the train block.
// `--memory-budget` (or the train block's `memory`) makes a step whose
// peak_bytes exceed it an error; `--memory-timeline` draws the step's live
// bytes; `--fit-batch` finds the largest batch that fits the budget.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "FitBatch.h"
#include "ModelLoading.h"

#include "kiln/Artifact/Artifact.h"
#include "kiln/ByteSize.h"
#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Dialect/Graph/Transforms/TrainStep.h"
#include "kiln/Pipelines/CompilePipeline.h"
#include "kiln/Pipelines/CompileProgress.h"
#include "kiln/Pipelines/CompileStats.h"
#include "kiln/Pipelines/MemoryTimelineData.h"
#include "kiln/Plot/MemoryTimeline.h"
#include "kiln/Support/PassVerification.h"
#include "kiln/Target/Cuda/CudaTarget.h"
#include "kiln/Target/Host/HostTarget.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/StringExtras.h"
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
enum class EmitStage { Graph, Kernel, LLVM, Gpu, Nvvm, Ptx };
} // namespace

static cl::opt<std::string> compileModel(cl::Positional, cl::Required,
                                         cl::desc("MODEL.kiln"),
                                         cl::sub(kiln::cli::compileCommand),
                                         cl::cat(kiln::cli::optionCategory));
static cl::opt<EmitStage> emitStage(
    "emit", cl::desc("The stage to print"), cl::init(EmitStage::Graph),
    cl::values(clEnumValN(EmitStage::Graph, "graph",
                          "the forward graph as parsed (graph dialect)"),
               clEnumValN(EmitStage::Kernel, "kernel",
                          "kernels, GEMMs and buffers (kernel dialect)"),
               clEnumValN(EmitStage::LLVM, "llvm",
                          "the cpu kernels as optimized LLVM IR"),
               clEnumValN(EmitStage::Gpu, "gpu",
                          "the cuda kernels on blocks and threads (gpu "
                          "dialect)"),
               clEnumValN(EmitStage::Nvvm, "nvvm",
                          "the cuda kernels in the NVVM and LLVM dialects"),
               clEnumValN(EmitStage::Ptx, "ptx",
                          "the cuda kernels as PTX for --arch")),
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<kiln::TargetKind> compileTarget(
    "target",
    cl::desc("The target kernels are scheduled for; without --emit, write "
             "its artifact into -o DIR"),
    cl::init(kiln::TargetKind::Cpu),
    cl::values(clEnumValN(kiln::TargetKind::Cpu, "cpu",
                          "host code: plan.kpl, kernels.so, model.h"),
               clEnumValN(kiln::TargetKind::Cuda, "cuda",
                          "NVIDIA GPUs (--arch): plan.kpl, kernels.ptx, "
                          "kernels.cubin, kernels.emu.so, model.h")),
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<bool> checkedEmulator(
    "checked-emulator",
    cl::desc("--target=cuda: build the GPU emulator's kernels "
             "(kernels.emu.so) with a bounds check on every access"),
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<std::string>
    gpuArch("arch",
            cl::desc("The GPU architecture of --target=cuda: sm_80 or sm_90 "
                     "(default: the cuda target's, sm_90)"),
            cl::init(""), cl::sub(kiln::cli::compileCommand),
            cl::cat(kiln::cli::optionCategory));
static cl::opt<std::string> hostCpu(
    "cpu",
    cl::desc("The x86-64 CPU kernels.so is built for (default x86-64-v2; "
             "'native' for this machine)"),
    cl::init("x86-64-v2"), cl::sub(kiln::cli::compileCommand),
    cl::cat(kiln::cli::optionCategory));
static cl::opt<std::string> compileOutput("o", cl::desc("Output file"),
                                          cl::value_desc("FILE"), cl::init("-"),
                                          cl::sub(kiln::cli::compileCommand),
                                          cl::cat(kiln::cli::optionCategory));
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
static cl::opt<double> progressAfter(
    "progress-after",
    cl::desc("Print a line per finished stage once the compile has run this "
             "many seconds"),
    cl::value_desc("SECONDS"),
    cl::init(kiln::CompileProgress::kDefaultAfterSeconds), cl::Hidden,
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<bool> printTiming(
    "timing",
    cl::desc("Print where the compile's time goes: loading the model, each "
             "pass (MLIR's pass timing), the plan, code generation and "
             "linking"),
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<bool> noFuse(
    "no-fuse",
    cl::desc("Compile without fusion: no graph.fusion regions (--graph-fuse) "
             "and no merged launches (--kernel-merge-launches)"),
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<std::string> compilePrecision(
    "precision",
    cl::desc("fp32, bf16 or fp16: the precision policy (default: the train "
             "block's precision, else fp32)"),
    cl::value_desc("fp32|bf16|fp16"), cl::sub(kiln::cli::compileCommand),
    cl::cat(kiln::cli::optionCategory));
static cl::opt<bool> compileNoWeightCopies(
    "no-weight-copies",
    cl::desc("Under a 16-bit precision, cast each weight in the forward of "
             "every step instead of reading the copy its optimizer update "
             "writes: the baseline the copies are checked against"),
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<bool> noFusedAttention(
    "no-fused-attention",
    cl::desc("On a target with fused attention kernels (cuda), lower "
             "attention to GEMMs around a row kernel instead, its [B, H, T, "
             "T] scores in memory: the baseline the fused kernels are "
             "measured against"),
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<bool> noRecompute(
    "no-recompute",
    cl::desc("Compile without recomputation: under --memory-budget, no "
             "forward activation is recomputed in the backward, so a step "
             "over the budget is an error"),
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));

static cl::opt<std::string> memoryBudget(
    "memory-budget",
    cl::desc("Fail when the step's peak_bytes (persistent buffers + arena) "
             "exceed SIZE: bytes, or a number with a unit (80GiB, 512MiB, "
             "1.5GB); overrides the train block's `memory`"),
    cl::value_desc("SIZE"), cl::sub(kiln::cli::compileCommand),
    cl::cat(kiln::cli::optionCategory));
static cl::opt<std::string> memoryTimeline(
    "memory-timeline",
    cl::desc("Draw the step's live bytes per op, by kind, with the budget, "
             "as an SVG (the training step; @predict for a model without a "
             "train block)"),
    cl::value_desc("FILE.svg"), cl::sub(kiln::cli::compileCommand),
    cl::cat(kiln::cli::optionCategory));
static cl::opt<bool>
    fitBatch("fit-batch",
             cl::desc("Find the largest batch whose training step fits "
                      "--memory-budget; print it as JSON"),
             cl::sub(kiln::cli::compileCommand),
             cl::cat(kiln::cli::optionCategory));
static cl::opt<int64_t> worldSize(
    "world",
    cl::desc("With --stats: the step of one of N data-parallel ranks (the "
             "batch dim divided by N), and a \"data_parallel\" object: bytes "
             "communicated per step and, with --target=cuda, the predicted "
             "scaling efficiency over NVLink and InfiniBand"),
    cl::value_desc("N"), cl::init(1), cl::sub(kiln::cli::compileCommand),
    cl::cat(kiln::cli::optionCategory));
static cl::opt<int64_t> zeroStage(
    "zero",
    cl::desc("With --stats --world N: 1 compiles rank 0's step under ZeRO-1 "
             "(its part of the optimizer state: optimizer_state_bytes per "
             "rank)"),
    cl::value_desc("STAGE"), cl::init(0), cl::sub(kiln::cli::compileCommand),
    cl::cat(kiln::cli::optionCategory));
static cl::opt<std::string> batchDimName(
    "batch-dim",
    cl::desc("The dim --fit-batch searches (default: the model's batch dim)"),
    cl::value_desc("NAME"), cl::sub(kiln::cli::compileCommand),
    cl::cat(kiln::cli::optionCategory));
static cl::list<std::string>
    dimValues("dim",
              cl::desc("Set a dim of the model: --dim B=64 (repeatable)"),
              cl::value_desc("NAME=N"), cl::sub(kiln::cli::compileCommand),
              cl::cat(kiln::cli::optionCategory));

/// The --dim values; nullopt after an error.
static std::optional<std::vector<kiln::frontend::DimOverride>> parseDims() {
  std::vector<kiln::frontend::DimOverride> dims;
  for (StringRef text : dimValues) {
    auto [name, value] = text.split('=');
    int64_t number = 0;
    if (name.empty() || value.getAsInteger(10, number) || number <= 0) {
      WithColor::error(errs(), "kiln")
          << "--dim wants NAME=N with N a positive integer, got '" << text
          << "'\n";
      return std::nullopt;
    }
    dims.push_back({name.str(), number});
  }
  return dims;
}

/// The budget: --memory-budget, else the train block's `memory`, else 0;
/// nullopt after an error.
static std::optional<int64_t> resolveMemoryBudget(mlir::ModuleOp module) {
  if (memoryBudget.getNumOccurrences()) {
    std::string error;
    std::optional<int64_t> bytes = kiln::parseByteSize(memoryBudget, &error);
    if (!bytes)
      WithColor::error(errs(), "kiln") << "--memory-budget: " << error << "\n";
    return bytes;
  }
  mlir::FailureOr<kiln::graph::TrainSettings> settings =
      kiln::graph::TrainSettings::fromModule(module);
  if (mlir::failed(settings))
    return std::nullopt;
  return settings->memory;
}

/// The compile driver's options as the flags set them; `train` is --train.
static kiln::CompileOptions pipelineOptions(int64_t budget) {
  kiln::CompileOptions options;
  options.target = compileTarget;
  options.arch =
      compileTarget == kiln::TargetKind::Cuda ? gpuArch.getValue() : hostCpu;
  options.train = compileTrain;
  options.fuse = !noFuse;
  options.fusedAttention = !noFusedAttention;
  options.precision = compilePrecision;
  options.weightCopies = !compileNoWeightCopies;
  options.recompute = !noRecompute;
  options.memoryBudget = budget;
  return options;
}

/// --memory-timeline: draws the compiled module's step.
static int writeMemoryTimeline(mlir::ModuleOp module, int64_t budget) {
  mlir::FailureOr<kiln::plot::MemoryTimeline> timeline =
      kiln::buildMemoryTimeline(module, budget);
  if (mlir::failed(timeline))
    return 1;
  std::error_code error;
  ToolOutputFile output(memoryTimeline, error, sys::fs::OF_Text);
  if (error) {
    WithColor::error(errs(), "kiln") << "cannot write '" << memoryTimeline
                                     << "': " << error.message() << "\n";
    return 1;
  }
  kiln::plot::writeMemoryTimelineSvg(*timeline, {}, output.os());
  output.keep();
  return 0;
}

/// Keeps `output` if everything reached it; else reports the write error
/// (a full disk) and lets the partial file go. Returns the exit status.
static int keepOutput(ToolOutputFile &output, StringRef path) {
  output.os().flush();
  if (std::error_code error = output.os().error()) {
    output.os().clear_error();
    std::string where = path == "-" ? std::string("to standard output")
                                    : "'" + path.str() + "'";
    WithColor::error(errs(), "kiln")
        << "cannot write " << where << ": " << error.message() << "\n";
    return 1;
  }
  output.keep();
  return 0;
}

/// The target flags that do not go together, and the cuda stages not built
/// yet; false after an error.
static bool checkTargetFlags() {
  bool cuda = compileTarget == kiln::TargetKind::Cuda;
  if (gpuArch.getNumOccurrences() && !cuda) {
    WithColor::error(errs(), "kiln")
        << "--arch is the GPU architecture of --target=cuda; the cpu "
           "target's CPU is --cpu\n";
    return false;
  }
  if (hostCpu.getNumOccurrences() && cuda) {
    WithColor::error(errs(), "kiln")
        << "--cpu is the CPU of --target=cpu; --target=cuda takes --arch\n";
    return false;
  }
  bool gpuStage = emitStage == EmitStage::Gpu || emitStage == EmitStage::Nvvm ||
                  emitStage == EmitStage::Ptx;
  if (!cuda) {
    if (checkedEmulator) {
      WithColor::error(errs(), "kiln")
          << "--checked-emulator builds the GPU emulator of --target=cuda\n";
      return false;
    }
    if (gpuStage) {
      WithColor::error(errs(), "kiln")
          << "--emit=gpu, nvvm and ptx are stages of --target=cuda\n";
      return false;
    }
    return true;
  }
  std::string error;
  if (!kiln::TargetInfo::create(kiln::TargetKind::Cuda, gpuArch, error)) {
    WithColor::error(errs(), "kiln") << "--arch: " << error << "\n";
    return false;
  }
  if (checkedEmulator && emitStage.getNumOccurrences()) {
    WithColor::error(errs(), "kiln")
        << "--checked-emulator builds the artifact's kernels.emu.so: drop "
           "--emit\n";
    return false;
  }
  if (emitStage.getNumOccurrences() && emitStage == EmitStage::LLVM) {
    WithColor::error(errs(), "kiln")
        << "--emit=llvm is the cpu kernels' LLVM IR; --target=cuda prints "
           "--emit=gpu, nvvm or ptx\n";
    return false;
  }
  return true;
}

int kiln::cli::runCompile() {
  // Both compile the training step their own way and write no artifact.
  if ((fitBatch || memoryTimeline.getNumOccurrences()) &&
      (emitStage.getNumOccurrences() || compileTarget.getNumOccurrences())) {
    WithColor::error(errs(), "kiln")
        << (fitBatch ? "--fit-batch" : "--memory-timeline")
        << " compiles the training step on its own: drop --emit and "
           "--target\n";
    return 1;
  }
  // --timing times the compile of a stage or an artifact; these compile
  // the training step their own way, outside its report.
  if (printTiming &&
      (fitBatch || printStats || memoryTimeline.getNumOccurrences())) {
    WithColor::error(errs(), "kiln")
        << "--timing times a compile with --emit or --target; it does not "
           "time "
        << (fitBatch     ? "--fit-batch"
            : printStats ? "--stats"
                         : "--memory-timeline")
        << "\n";
    return 1;
  }
  if (!checkTargetFlags())
    return 1;
  std::optional<std::vector<kiln::frontend::DimOverride>> dims = parseDims();
  if (!dims)
    return 1;
  // --timing: one report on stderr when the command ends.
  mlir::DefaultTimingManager timingManager;
  timingManager.setEnabled(printTiming);
  mlir::TimingScope timing = timingManager.getRootScope();
  if (worldSize < 1 || (worldSize > 1 && !printStats)) {
    WithColor::error(errs(), "kiln")
        << (worldSize < 1 ? "--world must be at least 1"
                          : "--world applies to --stats (kiln train under "
                            "mpirun compiles each rank's artifact itself)")
        << "\n";
    return 1;
  }
  std::unique_ptr<LoadedModel> model;
  {
    mlir::TimingScope loading = timing.nest("load the model (parse, IR)");
    Expected<RankModel> ranks =
        loadModelForRanks(compileModel, *dims, worldSize);
    if (!ranks) {
      WithColor::error(errs(), "kiln") << toString(ranks.takeError()) << "\n";
      return 1;
    }
    model = std::move(ranks->model);
  }
  if (zeroStage != 0) {
    if (zeroStage != 1 || worldSize < 2) {
      WithColor::error(errs(), "kiln")
          << (zeroStage != 1 ? "--zero: only 1 is built (ZeRO-1)"
                             : "--zero 1 shards the optimizer state over the "
                               "ranks: give --world N (N > 1) with --stats")
          << "\n";
      return 1;
    }
    if (model->module) {
      overrideTrainSetting(*model->module, "zero", 1);
      overrideTrainSetting(*model->module, "rank", 0);
    }
  }
  if (!model->module)
    return 1;
  // Errors from here on point into the model file, with its lines.
  mlir::SourceMgrDiagnosticHandler handler(model->sourceMgr,
                                           model->context.get());
  std::optional<int64_t> budget = resolveMemoryBudget(*model->module);
  if (!budget)
    return 1;
  if (fitBatch) {
    if (!*budget) {
      WithColor::error(errs(), "kiln")
          << "--fit-batch needs a budget: give --memory-budget SIZE (or "
             "`memory` in the train block)\n";
      return 1;
    }
    FitBatchOptions options;
    options.modelPath = compileModel;
    options.batchDim = batchDimName;
    options.budget = *budget;
    options.dims = *dims;
    options.pipeline = pipelineOptions(0);
    return runFitBatch(options);
  }
  // A model without a train block is not trained unless asked (--train,
  // --stats): its timeline is the inference step's (@predict).
  bool trained =
      printStats || compileTrain ||
      (*model->module)->hasAttr(kiln::graph::GraphDialect::kTrainAttr);
  if (memoryTimeline.getNumOccurrences() && !trained) {
    mlir::PassManager pm(model->context.get());
    kiln::buildCompilePipeline(pm, pipelineOptions(*budget));
    if (mlir::failed(pm.run(*model->module)))
      return 1;
    return writeMemoryTimeline(*model->module, *budget);
  }
  if (printStats || memoryTimeline.getNumOccurrences()) {
    FailureOr<json::Object> stats =
        kiln::compileWithStats(*model->module, pipelineOptions(*budget));
    if (failed(stats))
      return 1;
    if (memoryTimeline.getNumOccurrences() &&
        writeMemoryTimeline(*model->module, *budget))
      return 1;
    if (printStats)
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
  kiln::HostTargetOptions host;
  host.cpu = hostCpu;
  kiln::CompileProgress progress(errs(), progressAfter);
  // The driver, whole; or, for the graph stage, its training passes alone
  // (--train prints the training entries as graph functions).
  kiln::CompileOptions compile = pipelineOptions(*budget);
  if (std::string refused = kiln::checkCompileOptions(compile);
      !refused.empty()) {
    WithColor::error(errs(), "kiln") << refused << "\n";
    return 1;
  }
  {
    mlir::PassManager pm(model->context.get());
    mlir::TimingScope passes = timing.nest("passes");
    pm.enableTiming(passes);
    pm.addInstrumentation(progress.instrumentation());
    if (writesArtifact || emitStage != EmitStage::Graph)
      kiln::buildCompilePipeline(pm, compile);
    else
      kiln::addTrainingPasses(pm, compile);
    if (mlir::failed(kiln::runVerifyingOnce(pm, *model->module)))
      return 1;
  }
  if (writesArtifact) {
    mlir::TimingScope writing = timing.nest("write the artifact");
    kiln::ArtifactOptions options;
    options.target = compile.target;
    options.host = host;
    options.checkedEmulator = checkedEmulator;
    if (compile.target == kiln::TargetKind::Cuda) {
      std::string error;
      options.cuda = kiln::getCudaTargetOptions(
          *kiln::TargetInfo::create(compile.target, compile.arch, error));
    }
    options.timing = &writing;
    options.onStageDone = [&](StringRef stage) { progress.finished(stage); };
    kiln::GpuTemplateCounts templates;
    options.templates = &templates;
    if (mlir::failed(
            kiln::writeArtifact(*model->module, compileOutput, options)))
      return 1;
    // The slow path, said: kernels neither template takes run an
    // iteration of their range (or all of it) per thread.
    if (templates.perIteration)
      WithColor::note(errs(), "kiln")
          << templates.perIteration << " of " << templates.kernels
          << " GPU kernels run one thread per iteration of their range (a "
             "scatter, a scalar kernel, or rows the row and column "
             "templates cannot spread): "
          << llvm::join(templates.perIterationNames, ", ")
          << " (--emit=gpu shows them; docs/cuda.md)\n";
    return 0;
  }

  std::error_code error;
  auto output = std::make_unique<ToolOutputFile>(compileOutput, error,
                                                 sys::fs::OF_TextWithCRLF);
  if (error) {
    WithColor::error(errs(), "kiln") << "cannot write '" << compileOutput
                                     << "': " << error.message() << "\n";
    return 1;
  }
  if (emitStage == EmitStage::Gpu || emitStage == EmitStage::Nvvm ||
      emitStage == EmitStage::Ptx) {
    std::string error;
    std::unique_ptr<kiln::TargetInfo> target =
        kiln::TargetInfo::create(compile.target, compile.arch, error);
    kiln::CudaTargetOptions cuda = kiln::getCudaTargetOptions(*target);
    mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>> gpuModule =
        kiln::buildGpuModule(*model->module, cuda);
    if (mlir::failed(gpuModule))
      return 1;
    if (emitStage != EmitStage::Gpu &&
        mlir::failed(kiln::lowerGpuModuleToNvvm(**gpuModule)))
      return 1;
    if (emitStage == EmitStage::Ptx) {
      mlir::FailureOr<std::string> ptx =
          kiln::translateToPtx(**gpuModule, cuda);
      if (mlir::failed(ptx))
        return 1;
      output->os() << *ptx;
    } else {
      (*gpuModule)->print(output->os());
      output->os() << "\n";
    }
    return keepOutput(*output, compileOutput);
  }
  if (emitStage == EmitStage::LLVM) {
    llvm::LLVMContext llvmContext;
    mlir::FailureOr<std::unique_ptr<llvm::Module>> llvmModule =
        kiln::buildHostLLVMModule(*model->module, llvmContext, host);
    if (mlir::failed(llvmModule))
      return 1;
    (*llvmModule)->print(output->os(), nullptr);
    return keepOutput(*output, compileOutput);
  }
  mlir::OpPrintingFlags flags;
  if (printDebugInfo)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  model->module->print(output->os(), flags);
  output->os() << "\n";
  return keepOutput(*output, compileOutput);
}
