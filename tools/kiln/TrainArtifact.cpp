//===- TrainArtifact.cpp - Compiling a model for training, cached ---------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "TrainArtifact.h"
#include "ModelLoading.h"

#include "kiln/Artifact/Artifact.h"
#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Dialect/Graph/Transforms/TrainStep.h"
#include "kiln/Pipelines/CompilePipeline.h"
#include "kiln/Pipelines/CompileProgress.h"
#include "kiln/Support/PassVerification.h"
#include "kiln/Support/UserFile.h"
#include "kiln/Target/Host/HostTarget.h"
#include "kiln/runtime.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/xxhash.h"

#include <chrono>
#include <cmath>

using namespace llvm;
using namespace kiln;
using namespace kiln::cli;

static constexpr StringLiteral kCompilerVersion = "kiln 0.1.0";

/// What identifies this compiler build: its version and a hash of the
/// executable itself, so that any change to the compiler invalidates the
/// artifacts an older build cached, without anyone remembering to bump a
/// number.
static std::string getCompilerIdentity() {
  static const std::string identity = [] {
    std::string path = sys::fs::getMainExecutable(nullptr, nullptr);
    auto binary = MemoryBuffer::getFile(path, /*IsText=*/false,
                                        /*RequiresNullTerminator=*/false);
    uint64_t hash =
        binary ? xxh3_64bits(arrayRefFromStringRef((*binary)->getBuffer())) : 0;
    return formatv("{0} (LLVM {1}, build {2:x-16})", kCompilerVersion,
                   LLVM_VERSION_STRING, hash)
        .str();
  }();
  return identity;
}

std::string kiln::cli::getCacheDirectory() {
  if (std::optional<std::string> dir = sys::Process::GetEnv("KILN_CACHE_DIR"))
    return *dir;
  SmallString<128> path;
  if (std::optional<std::string> xdg = sys::Process::GetEnv("XDG_CACHE_HOME")) {
    path = *xdg;
  } else if (!sys::path::home_directory(path)) {
    path = "/tmp";
  } else {
    sys::path::append(path, ".cache");
  }
  sys::path::append(path, "kiln");
  return std::string(path);
}

/// Sets `key` of the module's graph.train dictionary.
static std::optional<int64_t> readTrainSetting(mlir::ModuleOp module,
                                               StringRef key) {
  auto train = module->getAttrOfType<mlir::DictionaryAttr>(
      graph::GraphDialect::kTrainAttr);
  if (!train)
    return std::nullopt;
  if (auto value = train.getAs<mlir::IntegerAttr>(key))
    return value.getInt();
  return std::nullopt;
}

/// The warmup of the train block's schedule when it decays afterwards
/// (linear, cosine); 0 for a constant rate or no schedule.
static int64_t getDecayingWarmup(mlir::ModuleOp module) {
  auto train = module->getAttrOfType<mlir::DictionaryAttr>(
      graph::GraphDialect::kTrainAttr);
  auto schedule =
      train ? train.getAs<mlir::DictionaryAttr>("schedule") : nullptr;
  if (!schedule)
    return 0;
  auto name = schedule.getAs<mlir::StringAttr>("name");
  auto warmup = schedule.getAs<mlir::IntegerAttr>("warmup");
  if (!name || name.getValue() == "constant" || !warmup)
    return 0;
  return warmup.getInt();
}

Expected<TrainArtifact>
kiln::cli::compileForTraining(StringRef modelPath,
                              const TrainCompileOptions &options) {
  auto start = std::chrono::steady_clock::now();
  // Data parallelism: the same model with the batch dim divided among the
  // ranks (every shape, kernel and arena follows it).
  Expected<RankModel> ranks = loadModelForRanks(
      modelPath, {}, options.inferenceOnly ? 1 : options.world);
  if (!ranks)
    return ranks.takeError();
  std::unique_ptr<LoadedModel> model = std::move(ranks->model);
  if (!model->module)
    return createStringError("the model has errors (see above)");
  mlir::ModuleOp module = *model->module;
  // Later errors point into the model file too, with its source lines.
  mlir::SourceMgrDiagnosticHandler handler(model->sourceMgr,
                                           model->context.get());
  // --steps sets the schedule's length. A run no longer than the warmup of
  // a decaying schedule has nothing to decay: it takes the first steps of
  // the train block's own schedule (the warmup's rates do not depend on the
  // length) instead of failing the schedule's check (total > warmup).
  std::optional<int64_t> stopAfter;
  if (options.steps) {
    if (*options.steps <= getDecayingWarmup(module))
      stopAfter = *options.steps;
    else
      overrideTrainSetting(module, "steps", *options.steps);
  }
  if (options.accumulate)
    overrideTrainSetting(module, "accumulate", *options.accumulate);
  if (options.zero && !options.inferenceOnly) {
    overrideTrainSetting(module, "zero", options.zero);
    overrideTrainSetting(module, "rank", options.rank);
  }

  mlir::FailureOr<graph::TrainSettings> settings =
      graph::TrainSettings::fromModule(module);
  if (failed(settings))
    return createStringError("invalid train block");
  TrainArtifact artifact;
  artifact.steps = settings->steps;
  artifact.stopAfter = stopAfter;
  artifact.accumulate = settings->accumulate;
  artifact.batchDim = ranks->batchDim;
  artifact.globalBatch = ranks->globalBatch;
  artifact.rankBatch = ranks->rankBatch;
  artifact.batchSeed = readTrainSetting(module, "batch_seed");
  artifact.evalEvery = readTrainSetting(module, "eval_every");
  artifact.seed = readTrainSetting(module, "seed");
  // The budget holds the training step; sampling compiles less.
  int64_t budget = options.inferenceOnly
                       ? 0
                       : options.memoryBudget.value_or(settings->memory);

  // The key: the model text, the overrides, the device, the compiler.
  auto buffer = readUserFile(modelPath);
  if (!buffer)
    return buffer.takeError();
  std::string keyText =
      formatv("{0}\n{1}\nsteps={2}\naccumulate={3}\ndevice={4}\n"
              "inference={5}\ncpu={6}\nmemory_budget={7}\nfuse={8}\n"
              "precision={9}\nweight_copies={10}\nworld={11}\nzero={12}\n"
              "rank={13}\nbucket_bytes={14}\noverlap={15}\n",
              getCompilerIdentity(), (*buffer)->getBuffer(), artifact.steps,
              artifact.accumulate, options.device, options.inferenceOnly,
              describeHostCpu(options.cpu), budget, options.fuse,
              options.precision, options.weightCopies, options.world,
              options.zero, options.zero ? options.rank : 0,
              options.world > 1 ? options.bucketBytes : 0,
              options.world > 1 && options.overlapCollectives)
          .str();
  std::string key = formatv("{0:x-16}", xxh3_64bits(keyText)).str();
  SmallString<256> directory(getCacheDirectory());
  sys::path::append(directory, sys::path::stem(modelPath) +
                                   (options.inferenceOnly ? "-predict-" : "-") +
                                   key + ".kiln.d");
  artifact.directory = std::string(directory);

  // A cache entry is used only if it opens (the plan verifies, kernels.so
  // matches its hash and signatures); anything else is a miss, replaced.
  std::string cacheDirectory = getCacheDirectory();
  removeStaleTemporariesIn(cacheDirectory);
  if (sys::fs::is_directory(directory)) {
    kiln_artifact *cached = nullptr;
    if (kiln_artifact_open(artifact.directory.c_str(), &cached) == KILN_OK) {
      artifact.opened.reset(cached);
      artifact.fromCache = true;
      return artifact;
    }
    // Not dropped by --quiet: a damaged cache entry is news.
    WithColor::warning(errs(), "kiln")
        << "the cached artifact is invalid; compiling it again: "
        << kiln_last_error() << "\n";
  }

  // Compile (the driver: training entries, kernels), then the artifact,
  // which writeArtifact puts in place whole (over an invalid entry, too).
  mlir::PassManager pm(model->context.get());
  // The GPU and its emulator run the cuda target's kernels (its default
  // arch).
  bool cuda = options.device == "cuda-emulator" || options.device == "cuda";
  CompileOptions pipeline;
  pipeline.target = cuda ? TargetKind::Cuda : TargetKind::Cpu;
  pipeline.arch = cuda ? "" : options.cpu;
  pipeline.train = !options.inferenceOnly;
  pipeline.memoryBudget = budget;
  pipeline.fuse = options.fuse;
  pipeline.precision = options.precision;
  pipeline.weightCopies = options.weightCopies;
  pipeline.bucketBytes = options.bucketBytes;
  pipeline.overlapCollectives = options.overlapCollectives;
  if (std::string refused = checkCompileOptions(pipeline); !refused.empty())
    return createStringError(refused);
  buildCompilePipeline(pm, pipeline);
  // Past a few seconds, a line per stage: a long compile is not a hang.
  CompileProgress progress(
      errs(), options.quiet ? HUGE_VAL : CompileProgress::kDefaultAfterSeconds);
  pm.addInstrumentation(progress.instrumentation());
  if (failed(runVerifyingOnce(pm, module)))
    return createStringError("compilation failed (see above)");

  if (std::error_code error = sys::fs::create_directories(cacheDirectory))
    return createStringError("cannot create the cache directory '" +
                             cacheDirectory + "': " + error.message());
  ArtifactOptions artifactOptions;
  artifactOptions.compilerVersion = getCompilerIdentity();
  artifactOptions.target = pipeline.target;
  artifactOptions.host.cpu = options.cpu;
  if (cuda) {
    std::string error;
    artifactOptions.cuda = getCudaTargetOptions(
        *TargetInfo::create(pipeline.target, pipeline.arch, error));
  }
  artifactOptions.onStageDone = [&](StringRef stage) {
    progress.finished(stage);
  };
  if (failed(writeArtifact(module, directory, artifactOptions)))
    return createStringError("cannot write the artifact (see above)");
  kiln_artifact *written = nullptr;
  if (kiln_artifact_open(artifact.directory.c_str(), &written) != KILN_OK)
    return createStringError(Twine("cannot open the artifact just written: ") +
                             kiln_last_error());
  artifact.opened.reset(written);
  artifact.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return artifact;
}
