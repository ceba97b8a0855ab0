//===- TrainCommand.cpp - kiln train --------------------------------------===//
//
// Part of Kiln. Compiles a model for training (cached), then runs its
// training step on batches from .npy arrays or a token file, with progress,
// evaluation, JSON-lines metrics and atomic, resumable checkpoints.
//
//===----------------------------------------------------------------------===//

#include "CheckpointMetadata.h"
#include "Commands.h"
#include "DataParallelOptions.h"
#include "Distributed.h"
#include "GradientSums.h"
#include "ShardedOptimizer.h"
#include "StopSignals.h"
#include "TrainArtifact.h"
#include "TrainProgress.h"
#include "TrainSession.h"

#include "kiln/ByteSize.h"
#include "kiln/Files.h"
#include "kiln/runtime.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <limits>

using namespace llvm;
using namespace kiln;
using namespace kiln::cli;

cl::SubCommand &kiln::cli::trainCommand() {
  static cl::SubCommand command(
      "train", "Train a model on the CPU from .npy arrays or a token file");
  return command;
}

static cl::OptionCategory &category = kiln::cli::optionCategory;

/// `65536`, `1.25e+29`: a number as people write it.
static std::string shortNumber(double value) {
  std::string text;
  raw_string_ostream(text) << format("%g", value);
  return text;
}
#define TRAIN_OPTION cl::sub(kiln::cli::trainCommand()), cl::cat(category)

static cl::opt<std::string> trainModel(cl::Positional, cl::Required,
                                       cl::desc("MODEL.kiln"), TRAIN_OPTION);
static cl::list<std::string>
    dataFiles("data", cl::desc("Training data for an input, as .npy"),
              cl::value_desc("NAME=FILE.npy"), TRAIN_OPTION);
static cl::opt<std::string>
    tokenFile("tokens",
              cl::desc("A token file (.txt/.bin bytes, or KILNTOK1 uint16) "
                       "feeding windows of T+1 tokens to `tokens`/`targets`"),
              cl::value_desc("FILE"), TRAIN_OPTION);
static cl::list<std::string>
    evalFiles("eval", cl::desc("Evaluation data for an input, as .npy"),
              cl::value_desc("NAME=FILE.npy"), TRAIN_OPTION);
static cl::opt<std::string> evalTokenFile("eval-tokens",
                                          cl::desc("A held-out token file"),
                                          cl::value_desc("FILE"), TRAIN_OPTION);
static cl::opt<int64_t> stepsOption("steps",
                                    cl::desc("Optimizer steps (default: the "
                                             "train block's; 0 with --save "
                                             "writes the initial weights)"),
                                    TRAIN_OPTION);
static cl::opt<std::string> trainMemoryBudget(
    "memory-budget",
    cl::desc("Fail to compile when the training step's peak_bytes exceed "
             "SIZE (80GiB, 512MiB, 1.5GB or bytes; default: the train "
             "block's `memory`)"),
    cl::value_desc("SIZE"), TRAIN_OPTION);
static cl::opt<std::string> trainPrecision(
    "precision",
    cl::desc("fp32, bf16 or fp16: the precision policy (default: the train "
             "block's precision, else fp32)"),
    cl::value_desc("fp32|bf16|fp16"), TRAIN_OPTION);
static cl::opt<bool>
    trainNoFuse("no-fuse",
                cl::desc("Compile without fusion (one kernel per op, no merged "
                         "launches), to measure what fusion buys"),
                TRAIN_OPTION);
static cl::opt<bool> trainNoWeightCopies(
    "no-weight-copies",
    cl::desc("Under a 16-bit precision, cast each weight in the forward of "
             "every step instead of reading the copy its optimizer update "
             "writes: the baseline the copies are checked against"),
    TRAIN_OPTION);
static cl::opt<int64_t>
    untilStep("until",
              cl::desc("Stop after this step; the schedule still spans "
                       "--steps (to save a checkpoint mid-run and --resume)"),
              TRAIN_OPTION);
static cl::opt<uint64_t> batchSeed("batch-seed",
                                   cl::desc("Seed of the data order (default: "
                                            "the train block's batch_seed, "
                                            "else 0)"),
                                   TRAIN_OPTION);
static cl::opt<uint64_t> seed("seed",
                              cl::desc("Seed of the initializers and dropout "
                                       "(default: the train block's seed, "
                                       "else 0)"),
                              cl::init(0), TRAIN_OPTION);
static cl::opt<int64_t> evalEvery("eval-every",
                                  cl::desc("Evaluate every N steps (default: "
                                           "the train block's eval_every, "
                                           "else steps / 10); also at the end"),
                                  TRAIN_OPTION);
static cl::opt<int64_t>
    evalBatches("eval-batches",
                cl::desc("Windows of eval tokens per evaluation, in batches "
                         "(0: as many as the file holds)"),
                cl::init(0), TRAIN_OPTION);
static cl::opt<std::string>
    initFrom("init-from",
             cl::desc("Initial parameters from a .safetensors file"),
             cl::value_desc("WEIGHTS.safetensors"), TRAIN_OPTION);
static cl::opt<std::string> metricsFile("metrics",
                                        cl::desc("Write metrics as JSON lines"),
                                        cl::value_desc("FILE.jsonl"),
                                        TRAIN_OPTION);
static cl::opt<std::string>
    saveFile("save",
             cl::desc("Save a checkpoint here at the end (and with "
                      "--save-every)"),
             cl::value_desc("CKPT.safetensors"), TRAIN_OPTION);
static cl::opt<int64_t> saveEvery("save-every",
                                  cl::desc("Also save every N steps"),
                                  cl::init(0), TRAIN_OPTION);
static cl::opt<std::string>
    resumeFile("resume",
               cl::desc("Continue bit-exactly from a checkpoint: parameters, "
                        "optimizer state, step and data position"),
               cl::value_desc("CKPT.safetensors"), TRAIN_OPTION);
static cl::opt<std::string>
    device("device",
           cl::desc("cpu; cuda (an NVIDIA GPU, through its driver and "
                    "cuBLASLt); or cuda-emulator: the cuda target's kernels "
                    "run by the GPU emulator on this machine (GEMMs through "
                    "the reference GEMM)"),
           cl::init("cpu"), TRAIN_OPTION);
static cl::opt<int32_t> threads("threads",
                                cl::desc("Worker threads (0: all cores)"),
                                cl::init(0), TRAIN_OPTION);
static cl::opt<bool> deterministic(
    "deterministic",
    cl::desc("The same bytes from run to run: on cuda each GEMM takes "
             "cuBLASLt's heuristic's first algorithm instead of the fastest "
             "one timed at start (the cpu devices always are)"),
    TRAIN_OPTION);
static cl::opt<bool> checkNumerics(
    "check-numerics",
    cl::desc("Stop at the first NaN or infinity, naming the model line"),
    TRAIN_OPTION);
static cl::opt<bool>
    profile("profile",
            cl::desc("Time every op and print the most expensive ones, with "
                     "the model line each came from"),
            TRAIN_OPTION);
static cl::opt<bool> quiet("quiet", cl::desc("Print only the summary"),
                           TRAIN_OPTION);


static int fail(const Twine &message) {
  WithColor::error(errs(), "kiln train") << message << "\n";
  return 1;
}

static int fail(Error error) {
  std::string message = toString(std::move(error));
  return fail(message);
}

static int train(Communicator &ranks);

/// Set when every rank stops after the same step for a stop signal.
static bool stoppedTogether = false;

int kiln::cli::runTrain() {
  // The ranks of a data-parallel run (mpirun -np N kiln train ...): each
  // takes its slice of every batch; rank 0 alone prints, evaluates, writes
  // metrics and checkpoints. A rank that fails ends them all.
  Expected<Communicator> joined = Communicator::join();
  if (!joined)
    return fail(joined.takeError());
  int code = train(*joined);
  // A stop signal the ranks agreed on ends each normally, after the same
  // step and its checkpoint: no abort, which could cut rank 0's save.
  if (code != 0 && !stoppedTogether)
    joined->abortAll(code);
  return code;
}

static int train(Communicator &ranks) {
  auto startTime = std::chrono::steady_clock::now();
  if (dataFiles.empty() == tokenFile.empty())
    return fail("give the training data with --data NAME=FILE.npy ... or "
                "with --tokens FILE (one of the two)");
  if (!evalFiles.empty() && !evalTokenFile.empty())
    return fail("give evaluation data with --eval or with --eval-tokens, "
                "not both");
  if (!initFrom.empty() && !resumeFile.empty())
    return fail("--init-from and --resume exclude each other");
  // The device first: a compile for one that cannot run is lost time. No
  // driver or no GPU is exit code 2, as a missing input file.
  if (device != "cpu" && device != "cuda" && device != "cuda-emulator")
    return fail("unknown --device '" + device +
                "' (expected cpu, cuda or cuda-emulator)");
  if (kiln_status status = kiln_device_check(device.c_str());
      status != KILN_OK) {
    fail("--device " + device + ": " + kiln_last_error());
    return status == KILN_ERROR_DEVICE ? 2 : 1;
  }
  // --steps 0 --save writes the initial weights (and state) and trains
  // nothing: the schedule keeps the train block's length.
  bool initialOnly = stepsOption.getNumOccurrences() && stepsOption == 0;
  if (stepsOption.getNumOccurrences() && stepsOption < 0)
    return fail("--steps must not be negative");
  if (initialOnly && (saveFile.empty() || !resumeFile.empty()))
    return fail("--steps 0 writes the initial weights: it needs --save "
                "and no --resume");
  if (untilStep.getNumOccurrences() && untilStep < 1)
    return fail("--until must be at least 1");
  if (evalEvery.getNumOccurrences() && evalEvery < 1)
    return fail("--eval-every must be at least 1 (it is " +
                Twine(int64_t(evalEvery)) + ")");
  if (evalBatches < 0)
    return fail("--eval-batches must not be negative (0: every window of the "
                "eval file)");
  if (saveEvery < 0)
    return fail("--save-every must not be negative (0: only at the end)");
  if (saveEvery > 0 && saveFile.empty())
    return fail("--save-every needs --save PATH");
  if (threads < 0)
    return fail("--threads must not be negative (0: every core)");
  if (device == "cuda" && threads.getNumOccurrences())
    return fail("--threads has no effect on --device cuda, whose ops all run "
                "on the GPU");
  for (const cl::opt<std::string> *path :
       {&saveFile, &metricsFile, &resumeFile, &initFrom, &tokenFile,
        &evalTokenFile})
    if (path->getNumOccurrences() && path->empty())
      return fail("--" + path->ArgStr + " needs a file name, not ''");

  // A checkpoint that could not be written is found now, not after the run.
  if (!saveFile.empty()) {
    if (Status status = checkReplaceable(saveFile); !status)
      return fail("--save: " + status.message());
    StringRef parent = sys::path::parent_path(saveFile);
    if (!parent.empty() && !sys::fs::is_directory(parent))
      return fail("--save: the directory '" + parent + "' does not exist");
  }

  DataSource trainData, evalData;
  auto trainArrays = parseNamedFiles(dataFiles, "data");
  if (!trainArrays)
    return fail(trainArrays.takeError());
  trainData.arrays = std::move(*trainArrays);
  trainData.tokenFile = tokenFile;
  auto evalArrays = parseNamedFiles(evalFiles, "eval");
  if (!evalArrays)
    return fail(evalArrays.takeError());
  evalData.arrays = std::move(*evalArrays);
  evalData.tokenFile = evalTokenFile;

  bool leader = ranks.isLeader();
  bool parallel = ranks.world() > 1;
  bool silent = quiet || !leader;
  Expected<DataParallelOptions> dataParallel =
      DataParallelOptions::read(parallel);
  if (!dataParallel)
    return fail(dataParallel.takeError());
  ranks.setTimeout(dataParallel->timeoutSeconds);
  bool zero = dataParallel->zero;
  // Under ZeRO-1 every rank sends its part of the state to a checkpoint.
  if (!leader) {
    if (!zero)
      saveFile.setValue("");
    metricsFile.setValue("");
  }

  // Compile (or reuse the cached artifact).
  TrainCompileOptions compileOptions;
  compileOptions.world = ranks.world();
  if (stepsOption.getNumOccurrences() && !initialOnly)
    compileOptions.steps = stepsOption;
  compileOptions.device = device;
  compileOptions.fuse = !trainNoFuse;
  compileOptions.precision = trainPrecision;
  compileOptions.weightCopies = !trainNoWeightCopies;
  compileOptions.zero = zero ? 1 : 0;
  compileOptions.rank = ranks.rank();
  // --no-overlap: one bucket of every accumulator, after the backward.
  compileOptions.bucketBytes = dataParallel->overlap
                                   ? int64_t(dataParallel->bucketBytes)
                                   : std::numeric_limits<int64_t>::max();
  compileOptions.overlapCollectives = dataParallel->overlap;
  compileOptions.quiet = silent;
  if (trainMemoryBudget.getNumOccurrences()) {
    std::string error;
    std::optional<int64_t> budget =
        kiln::parseByteSize(trainMemoryBudget, &error);
    if (!budget)
      return fail("--memory-budget: " + error);
    compileOptions.memoryBudget = budget;
  }
  // Rank 0 compiles; the others then find its artifact in the cache (under
  // ZeRO-1 all compile at once, each its own: the parts differ).
  bool compilesFirst = leader || zero;
  std::optional<Expected<TrainArtifact>> compiled;
  if (compilesFirst)
    compiled.emplace(compileForTraining(trainModel, compileOptions));
  if (compilesFirst && !*compiled)
    return fail(compiled->takeError());
  if (Error error = ranks.barrier())
    return fail(std::move(error));
  if (!compiled)
    compiled.emplace(compileForTraining(trainModel, compileOptions));
  Expected<TrainArtifact> &artifact = *compiled;
  if (!artifact)
    return fail(artifact.takeError());
  // The steps of this run: --steps within the warmup stops early.
  int64_t runSteps = artifact->stopAfter.value_or(artifact->steps);
  Progress progress(runSteps, silent);
  if (artifact->fromCache)
    progress.message("using the compiled artifact " + artifact->directory);
  else
    progress.message(formatv("compiled in {0:f1} s: {1}",
                             artifact->compileSeconds, artifact->directory));
  if (artifact->stopAfter)
    progress.message(formatv("--steps {0} lies within the schedule's warmup: "
                             "training the first {0} steps of its {1}-step "
                             "schedule",
                             *artifact->stopAfter, artifact->steps));

  Expected<std::unique_ptr<TrainSession>> opened =
      TrainSession::open(std::move(artifact->opened), device, threads,
                         deterministic, device == "cuda" ? ranks.gpu() : 0);
  if (!opened && parallel && device == "cuda")
    return fail(toString(opened.takeError()) +
                formatv(" (rank {0} binds GPU {1}: its index among this "
                        "machine's ranks, or 0 when CUDA_VISIBLE_DEVICES "
                        "names one GPU)",
                        ranks.rank(), ranks.gpu()));
  if (!opened)
    return fail(opened.takeError());
  TrainSession &session = **opened;
  if (parallel) {
    if (Error error = session.setDataParallel(ranks))
      return fail(std::move(error));
    progress.message(formatv("data parallel: {0} ranks ({1}); {2} = {3} "
                             "rows a batch, {4} per rank",
                             ranks.world(), session.describeCollectives(),
                             artifact->batchDim, artifact->globalBatch,
                             artifact->rankBatch));
  }
  std::optional<ShardedOptimizer> sharded;
  if (zero) {
    if (Error error = ShardedOptimizer::create(ranks, session, sharded))
      return fail(std::move(error));
    progress.message(sharded->describe());
  }
  {
    std::string warning;
    progress.message(device + ": " + session.describeDevice(warning));
    // Not dropped by --quiet: a slow GEMM library costs the whole run.
    if (!warning.empty() && leader)
      errs() << "kiln train: warning: " << warning << "\n";
  }

  // Parameters: fresh, from weights, or from a checkpoint with the data
  // order (its batch seed, unless --batch-seed overrides it) and position,
  // so that a resumed run sees the batches an uninterrupted one would.
  uint64_t dataSeed = batchSeed.getNumOccurrences()
                          ? uint64_t(batchSeed)
                          : uint64_t(artifact->batchSeed.value_or(0));
  uint64_t initSeed = seed.getNumOccurrences()
                          ? uint64_t(seed)
                          : uint64_t(artifact->seed.value_or(0));
  std::optional<data::DataPosition> resumePosition;
  if (!resumeFile.empty()) {
    Expected<std::string> metadata = session.resume(resumeFile);
    if (!metadata)
      return fail(metadata.takeError());
    Expected<CheckpointMetadata> saved =
        CheckpointMetadata::parse(*metadata, resumeFile);
    if (!saved)
      return fail(saved.takeError());
    resumePosition = saved->position;
    if (saved->batchSeed && !batchSeed.getNumOccurrences())
      dataSeed = *saved->batchSeed;
  } else {
    if (Error error = session.initialize(initSeed))
      return fail(std::move(error));
    if (!initFrom.empty())
      if (Error error = session.loadParameters(initFrom))
        return fail(std::move(error));
  }

  auto trainSet = session.openDataset(trainData, /*training=*/true, dataSeed);
  if (!trainSet)
    return fail(trainSet.takeError());
  std::unique_ptr<data::Dataset> evalSet;
  if (!evalData.empty() && leader) {
    auto opened =
        session.openDataset(evalData, /*training=*/false, 0, evalBatches);
    if (!opened)
      return fail(opened.takeError());
    evalSet = std::move(*opened);
  }
  if (resumePosition) {
    if (Status status = (*trainSet)->seek(*resumePosition); !status)
      return fail(status.message());
    progress.message(
        formatv("resumed at step {0} from {1}", session.step(), resumeFile));
  }
  if (checkNumerics)
    if (Error error = session.setCheckNumerics(true))
      return fail(std::move(error));
  if (profile)
    if (Error error = session.enableProfiling())
      return fail(std::move(error));

  std::unique_ptr<raw_fd_ostream> metrics;
  if (!metricsFile.empty()) {
    std::error_code error;
    metrics = std::make_unique<raw_fd_ostream>(
        metricsFile, error,
        resumeFile.empty() ? sys::fs::OF_Text : sys::fs::OF_Append);
    if (error)
      return fail("cannot write '" + metricsFile + "': " + error.message());
  }
  // A metrics line that cannot be written stops the run (a full disk
  // would lose every later line too); the stream's error is taken here so
  // that it never aborts at exit.
  auto writeMetrics = [&](json::Object object) -> Error {
    if (!metrics)
      return Error::success();
    *metrics << formatv("{0}", json::Value(std::move(object))) << "\n";
    metrics->flush();
    if (std::error_code error = metrics->error()) {
      metrics->clear_error();
      return createStringError("cannot write '" + metricsFile +
                               "': " + error.message());
    }
    return Error::success();
  };

  // A data-parallel artifact always accumulates: the ranks' gradients are
  // summed between accumulate_step and apply_step.
  bool accumulating = artifact->accumulate > 1 || parallel;
  int64_t steps = runSteps;
  int64_t lastStep = untilStep.getNumOccurrences()
                         ? std::min<int64_t>(untilStep, steps)
                         : steps;
  // Compared unsigned: a checkpoint may hold any step.
  if (!resumeFile.empty() && session.step() >= uint64_t(lastStep))
    return fail(formatv("'{0}' is at step {1}, and this run ends at step {2}: "
                        "there is nothing to train (give --steps beyond {1} "
                        "to continue it)",
                        resumeFile, session.step(), lastStep));
  int64_t every =
      evalEvery.getNumOccurrences()
          ? int64_t(evalEvery)
          : artifact->evalEvery.value_or(std::max<int64_t>(1, steps / 10));
  bool isTokens = !tokenFile.empty();
  int64_t batchItems = (*trainSet)->batchSize();
  if (isTokens)
    for (const PlanInput &input : session.inputs())
      if (input.name == "tokens")
        batchItems = input.shape[0] * input.shape[1] * ranks.world();
  StringRef itemName = isTokens ? "tokens" : "samples";

  auto evaluate = [&](int64_t step) -> Error {
    if (!evalSet)
      return Error::success();
    Expected<EvalResult> result = session.evaluate(*evalSet);
    if (!result)
      return result.takeError();
    json::Object object{{"step", step}, {"eval_loss", result->loss}};
    std::string line =
        formatv("eval at step {0}: loss {1:f4}", step, result->loss).str();
    if (result->accuracy) {
      object["eval_accuracy"] = *result->accuracy;
      line += formatv(", accuracy {0:f2}%", *result->accuracy * 100).str();
    }
    progress.message(line);
    return writeMetrics(std::move(object));
  };

  // The next batch is fetched and bound while the device runs a step,
  // where the next thing run is a train step: not before an evaluation
  // (which binds its own batches) nor after the last step. A checkpoint
  // then resumes at the batch bound and not yet run.
  bool prefetched = false;
  data::DataPosition prefetchedAt;
  auto prefetch = [&]() -> Error {
    prefetchedAt = (*trainSet)->position();
    data::Batch batch;
    if (Status status = (*trainSet)->next(batch); !status)
      return createStringError(status.message());
    prefetched = true;
    return session.bind(batch);
  };
  auto saveCheckpoint = [&]() -> Error {
    data::DataPosition resumeAt =
        prefetched ? prefetchedAt : (*trainSet)->position();
    std::string metadata = CheckpointMetadata{resumeAt, dataSeed}.toJson();
    if (sharded)
      return session.saveGathered(saveFile, metadata, ranks);
    return session.save(saveFile, metadata);
  };

  if (initialOnly) {
    if (!leader && !sharded)
      return 0;
    if (Error error = saveCheckpoint())
      return fail(std::move(error));
    if (!leader)
      return 0;
    outs() << "initial weights of " << trainModel << " (seed " << initSeed
           << "): " << saveFile << "\n";
    return 0;
  }

  double lastLoss = NAN;
  // fp16's loss scaling: the steps it skipped on overflow.
  int64_t skippedSteps = 0;
  // From here a signal stops the run after its step, saved (StopSignals.h).
  StopSignalScope stopSignals;
  GradientSums gradientSums(ranks, session);
  // A stop signal on any rank stops every rank after the same step.
  bool ranksStop = false;
  for (int64_t step = int64_t(session.step()) + 1; step <= lastStep; ++step) {
    auto stepStart = std::chrono::steady_clock::now();
    std::optional<double> loss;
    int64_t microBatches = accumulating ? artifact->accumulate : 1;
    double lossSum = 0;
    bool evaluatesAfter = evalSet && (step % every == 0 || step == lastStep);
    for (int64_t micro = 0; micro < microBatches; ++micro) {
      if (!prefetched) {
        data::Batch batch;
        if (Status status = (*trainSet)->next(batch); !status)
          return fail(status.message());
        if (Error error = session.bind(batch))
          return fail(std::move(error));
      }
      prefetched = false;
      const char *entry = accumulating ? "accumulate_step" : "train_step";
      bool lastMicro = micro + 1 == microBatches;
      if (parallel && lastMicro)
        if (Error error = gradientSums.beforeLastMicroBatch(step))
          return fail(std::move(error));
      if (Error error = session.run(entry))
        return fail(std::move(error));
      if (!lastMicro || (step < lastStep && !evaluatesAfter))
        if (Error error = prefetch())
          return fail(std::move(error));
      if (Error error = session.finish(entry))
        return fail(std::move(error));
      loss = session.readScalar("loss");
      lossSum += loss.value_or(NAN);
    }
    if (parallel) {
      gradientSums.afterMicroBatches();
      if (sharded)
        if (Error error = sharded->beforeApply())
          return fail(std::move(error));
      // The step's loss: the mean over every rank's micro-batches; whether
      // a rank was asked to stop.
      double agreed[2] = {lossSum, StopSignalScope::pendingSignal() ? 1.0 : 0};
      if (Error error = ranks.sumInPlace(agreed, 2))
        return fail(std::move(error));
      lossSum = agreed[0] / double(ranks.world());
      ranksStop = agreed[1] > 0;
    }
    if (accumulating)
      if (Error error = session.run("apply_step"))
        return fail(std::move(error));
    if (sharded)
      if (Error error = sharded->afterApply())
        return fail(std::move(error));
    double stepMs = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - stepStart)
                        .count();
    lastLoss = lossSum / double(microBatches);
    double lr = session.readScalar("lr").value_or(NAN);
    double itemsPerSecond = double(batchItems * microBatches) / (stepMs / 1e3);
    progress.step(step, lastLoss, lr, stepMs, itemsPerSecond, itemName);
    json::Object record{
        {"step", step},
        {"loss", lastLoss},
        {"lr", lr},
        {"step_ms", stepMs},
        {isTokens ? "tokens_per_s" : "samples_per_s", itemsPerSecond}};
    // JSON has no inf or NaN: a non-finite norm (a step loss scaling
    // skipped) is written as null.
    if (std::optional<double> norm = session.readScalar("grad_norm"))
      record["grad_norm"] =
          std::isfinite(*norm) ? json::Value(*norm) : json::Value(nullptr);
    // A step that loss scaling skipped overflowed in fp16 on purpose: its
    // loss may be infinite and the parameters did not move.
    bool skipped = session.readScalar("skipped").value_or(0.0) != 0.0;
    std::optional<double> lossScale = session.readScalar("loss_scale");
    if (lossScale) {
      record["loss_scale"] = *lossScale;
      record["skipped"] = skipped;
    }
    if (Error error = writeMetrics(std::move(record)))
      return fail(std::move(error));
    skippedSteps += skipped;
    // Below fp16's smallest subnormal every gradient would flush to zero:
    // the overflow is not the scale's (the forward leaves fp16's range).
    if (skipped && lossScale && *lossScale < 0x1p-24)
      return fail(formatv(
          "loss scaling skipped step {0} with the scale down to {1}: the "
          "fp16 step overflows whatever the scale, as when the forward "
          "itself leaves fp16's range; train in bf16 or fp32, or rerun with "
          "--check-numerics to find the op",
          step, shortNumber(*lossScale)));
    if (!std::isfinite(lastLoss) && !skipped)
      return fail(formatv("the loss is {0} at step {1}; rerun with "
                          "--check-numerics to find the op that made it",
                          lastLoss, step));

    if (step % every == 0 || step == lastStep)
      if (Error error = evaluate(step))
        return fail(std::move(error));
    // Data-parallel ranks stop together, after the step at which any was
    // signaled (mpirun forwards a signal to each, not at one instant).
    int stopSignal = StopSignalScope::pendingSignal();
    if (parallel)
      stopSignal = ranksStop ? (stopSignal ? stopSignal : SIGTERM) : 0;
    if (!saveFile.empty() && ((saveEvery > 0 && step % saveEvery == 0) ||
                              step == lastStep || stopSignal))
      if (Error error = saveCheckpoint())
        return fail(std::move(error));
    if (stopSignal && step < lastStep) {
      // Not dropped by --quiet: the run did not finish (rank 0 says it).
      progress.clearLine();
      if (leader)
        errs() << formatv("kiln train: stopped by {0} after step {1}{2}\n",
                          StopSignalScope::signalName(stopSignal), step,
                          saveFile.empty()
                              ? std::string(" (no --save: nothing kept)")
                              : "; checkpoint: " + saveFile);
      // Every rank has saved (or sent its parts) before any leaves.
      if (Error error = ranks.barrier())
        return fail(std::move(error));
      stoppedTogether = true;
      return 128 + stopSignal;
    }
  }

  // The overlap's figures take every rank (a standalone all-reduce).
  std::string overlapReport;
  raw_string_ostream overlapStream(overlapReport);
  if (profile)
    if (Error error = gradientSums.report(overlapStream))
      return fail(std::move(error));
  if (!leader)
    return 0;
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - startTime)
                       .count();
  outs() << formatv("trained {0} to step {1} in {2}: final loss {3:f4}\n",
                    trainModel, session.step(),
                    Progress::formatDuration(seconds), lastLoss);
  if (skippedSteps > 0)
    outs() << formatv(
        "loss scaling skipped {0} of the steps (fp16 "
        "overflow); the scale is now {1}\n",
        skippedSteps,
        shortNumber(session.readScalar("loss_scale").value_or(NAN)));
  if (!saveFile.empty())
    outs() << "checkpoint: " << saveFile << "\n";
  if (profile) {
    session.printProfile(outs(), /*limit=*/25);
    outs() << overlapReport;
  }
  return 0;
}
