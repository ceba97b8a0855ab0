//===- DataParallelOptions.cpp - kiln train's data-parallel options -------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "DataParallelOptions.h"
#include "Commands.h"

#include "kiln/ByteSize.h"

#include "llvm/Support/CommandLine.h"

using namespace kiln::cli;
using namespace llvm;

#define TRAIN_OPTION                                                           \
  cl::sub(kiln::cli::trainCommand()), cl::cat(kiln::cli::optionCategory)

static cl::opt<double> collectiveTimeout(
    "collective-timeout",
    cl::desc("Data-parallel runs: seconds a rank waits for the others at a "
             "step before it names those that did not answer and ends every "
             "rank (0: wait forever; default 600)"),
    cl::init(600.0), TRAIN_OPTION);
static cl::opt<std::string> bucketSize(
    "bucket-size",
    cl::desc("Data-parallel runs: the gradient sums start "
             "during the backward, in buckets of at least this many bytes "
             "(1MiB, 256KiB, ...; default 1MiB)"),
    cl::init("1MiB"), TRAIN_OPTION);
static cl::opt<bool>
    noOverlap("no-overlap",
              cl::desc("Data-parallel runs: sum the gradients after "
                       "the backward instead of during it"),
              TRAIN_OPTION);
static cl::opt<int> zeroStage(
    "zero",
    cl::desc("Data-parallel runs: 1 shards the optimizer "
             "state over the ranks (ZeRO-1): gradients reduce-scattered, each "
             "rank updating its part of every parameter, parameters "
             "all-gathered"),
    cl::value_desc("STAGE"), cl::init(0), TRAIN_OPTION);

/// `option` applies only to several ranks.
static std::string onlyForRanks(const cl::Option &option) {
  return "--" + option.ArgStr.str() +
         " applies to data-parallel runs (mpirun -np N kiln train ...); this "
         "process is the only rank";
}

Expected<DataParallelOptions> DataParallelOptions::read(bool parallel) {
  DataParallelOptions options;
  if (!(collectiveTimeout >= 0))
    return createStringError(
        "--collective-timeout must not be negative (0: wait forever)");
  if (collectiveTimeout.getNumOccurrences() && !parallel)
    return createStringError(onlyForRanks(collectiveTimeout));
  options.timeoutSeconds = collectiveTimeout;
  for (cl::Option *option : {static_cast<cl::Option *>(&bucketSize),
                             static_cast<cl::Option *>(&noOverlap)})
    if (option->getNumOccurrences() && !parallel)
      return createStringError(onlyForRanks(*option));
  if (bucketSize.getNumOccurrences() && noOverlap)
    return createStringError("--bucket-size has no effect with --no-overlap "
                             "(the gradients are summed whole, in one "
                             "bucket, after the backward)");
  if (zeroStage != 0 && zeroStage != 1)
    return createStringError(
        "--zero " + std::to_string(zeroStage) +
        ": only 1 is built (ZeRO-1 shards the optimizer state; stages 2 and "
        "3, which shard gradients and parameters, are not)");
  options.zero = zeroStage == 1;
  if (options.zero && !parallel)
    return createStringError(
        "--zero 1 shards the optimizer state over the ranks of a "
        "data-parallel run (mpirun -np N kiln train ...); this process is the "
        "only rank");
  std::string bucketError;
  std::optional<int64_t> bucketBytes =
      kiln::parseByteSize(bucketSize, &bucketError);
  if (!bucketBytes)
    return createStringError("--bucket-size: " + bucketError);
  options.bucketBytes = uint64_t(*bucketBytes);
  options.overlap = !noOverlap;
  return options;
}
