//===- FitBatch.cpp - The largest batch that fits a memory budget ---------===//
//
// Part of Kiln. Each candidate is a full recompile from the model file with
// the batch dim set (`frontend::DimOverride`), so that every shape, kernel
// and arena follows it exactly; peak_bytes is compileWithStats's. The search
// assumes that the peak grows with the batch: exponential steps up from a
// batch that fits, then bisection between the last that fits and the first
// that does not.
//
// Without recomputation, each candidate compiles with no budget and its peak
// is compared with the budget. With recomputation, each compiles with the
// budget, so that --graph-recompute trims it to fit where it can, and the
// planner's budget check (--kernel-check-memory-budget) decides.
//
//===----------------------------------------------------------------------===//

#include "FitBatch.h"
#include "ModelLoading.h"

#include "kiln/ByteSize.h"
#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Pipelines/CompileStats.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace kiln;
using namespace kiln::cli;

/// The largest batch tried; a peak that still fits there does not grow with
/// the dim.
static constexpr int64_t kMaxBatch = int64_t(1) << 40;

namespace {
/// The outcome of compiling one candidate.
struct Probe {
  enum Result { Fits, Over, Error } result = Error;
  /// peak_bytes; 0 when the compile failed.
  int64_t peak = 0;
};

class BatchSearch {
public:
  BatchSearch(const FitBatchOptions &options, std::string dim)
      : options(options), dim(std::move(dim)) {}

  Probe probe(int64_t batch, bool recompute);
  /// The largest batch that fits, from `fitting` (known to fit, with
  /// `peak`) and `next` (> fitting, the first to try); nullopt after an
  /// error.
  std::optional<std::pair<int64_t, int64_t>>
  searchUp(int64_t fitting, int64_t peak, int64_t next, bool recompute);

private:
  const FitBatchOptions &options;
  std::string dim;
};
} // namespace

Probe BatchSearch::probe(int64_t batch, bool recompute) {
  std::vector<frontend::DimOverride> dims = options.dims;
  dims.push_back({dim, batch});
  std::unique_ptr<LoadedModel> model =
      loadModelForCLI(options.modelPath, dims);
  if (!model->module)
    return {};
  CompileOptions pipeline = options.pipeline;
  pipeline.recompute = recompute;
  pipeline.memoryBudget = recompute ? options.budget : 0;

  // Under a budget, an error is an answer, not a failure: recomputation or
  // the planner's check saying that this batch does not fit. (Candidates
  // are only compiled so above a batch that compiled without a budget.)
  // Without one, the diagnostics are printed when compilation fails.
  std::string messages;
  mlir::ScopedDiagnosticHandler handler(
      model->context.get(), [&](mlir::Diagnostic &diagnostic) {
        messages += diagnostic.str() + "\n";
        return mlir::success();
      });
  FailureOr<json::Object> stats = compileWithStats(*model->module, pipeline);
  Probe result;
  if (failed(stats)) {
    if (pipeline.memoryBudget > 0) {
      result.result = Probe::Over;
    } else {
      WithColor::error(errs(), "kiln")
          << "compiling with " << dim << "=" << batch << " failed:\n"
          << messages;
    }
  } else {
    result.peak = stats->getInteger("peak_bytes").value_or(0);
    result.result = result.peak <= options.budget ? Probe::Fits : Probe::Over;
  }

  errs() << formatv("kiln: fit-batch{0}: {1}={2}: ",
                    recompute ? " (recompute)" : "", dim, batch);
  if (result.result == Probe::Error)
    errs() << "error\n";
  else if (result.peak)
    errs() << formatv("peak {0} ({1} bytes), {2}\n",
                      formatByteSize(result.peak), result.peak,
                      result.result == Probe::Fits ? "fits" : "over budget");
  else
    errs() << "over budget\n";
  return result;
}

std::optional<std::pair<int64_t, int64_t>>
BatchSearch::searchUp(int64_t fitting, int64_t peak, int64_t next,
                      bool recompute) {
  // Exponential steps until a candidate does not fit.
  int64_t over = 0;
  while (next <= kMaxBatch) {
    Probe result = probe(next, recompute);
    if (result.result == Probe::Error)
      return std::nullopt;
    if (result.result == Probe::Over) {
      over = next;
      break;
    }
    fitting = next;
    peak = result.peak;
    next *= 2;
  }
  if (!over) {
    WithColor::warning(errs(), "kiln")
        << formatv("{0}={1} still fits; the peak does not seem to grow with "
                   "{0}\n",
                   dim, fitting);
    return std::make_pair(fitting, peak);
  }
  // Bisection: `fitting` fits, `over` does not.
  while (over - fitting > 1) {
    int64_t middle = fitting + (over - fitting) / 2;
    Probe result = probe(middle, recompute);
    if (result.result == Probe::Error)
      return std::nullopt;
    if (result.result == Probe::Fits) {
      fitting = middle;
      peak = result.peak;
    } else {
      over = middle;
    }
  }
  return std::make_pair(fitting, peak);
}

/// Whether `recompute` changes the kernel pipeline under a budget: false
/// until a recomputation pass exists.
static bool pipelineRecomputes(CompileOptions pipeline, int64_t budget) {
  auto describe = [&](bool recompute) {
    pipeline.recompute = recompute;
    pipeline.memoryBudget = budget;
    mlir::OpPassManager pm(mlir::ModuleOp::getOperationName());
    buildCompilePipeline(pm, pipeline);
    std::string text;
    raw_string_ostream os(text);
    pm.printAsTextualPipeline(os);
    return text;
  };
  return describe(true) != describe(false);
}

int kiln::cli::runFitBatch(const FitBatchOptions &options) {
  // The dim to search, from the model as written (with the other --dim
  // values, which may change what it computes from them).
  std::unique_ptr<LoadedModel> model =
      loadModelForCLI(options.modelPath, options.dims);
  if (!model->module)
    return 1;
  mlir::ModuleOp module = *model->module;
  std::string dim = options.batchDim;
  if (dim.empty()) {
    auto batchDim = module->getAttrOfType<mlir::StringAttr>(
        graph::GraphDialect::kBatchDimAttr);
    if (!batchDim) {
      WithColor::error(errs(), "kiln")
          << "the model has no batch dim (no `batch NAME` and no dim B): "
             "name the dim to search with --batch-dim NAME\n";
      return 1;
    }
    dim = batchDim.getValue().str();
  }
  auto dims =
      module->getAttrOfType<mlir::DictionaryAttr>(graph::GraphDialect::kDimsAttr);
  if (!dims || !dims.get(dim)) {
    WithColor::error(errs(), "kiln")
        << "--batch-dim: the model has no dim '" << dim << "'\n";
    return 1;
  }
  for (const frontend::DimOverride &other : options.dims)
    if (other.name == dim) {
      WithColor::error(errs(), "kiln")
          << "--fit-batch searches " << dim << ": do not also set it with "
          << "--dim\n";
      return 1;
    }

  BatchSearch search(options, dim);
  json::Object result{{"batch_dim", dim}, {"budget_bytes", options.budget}};
  Probe one = search.probe(1, /*recompute=*/false);
  if (one.result == Probe::Error)
    return 1;
  bool recomputes =
      options.pipeline.recompute &&
      pipelineRecomputes(options.pipeline, options.budget);
  std::optional<std::pair<int64_t, int64_t>> plain;
  if (one.result == Probe::Fits) {
    plain = search.searchUp(1, one.peak, 2, /*recompute=*/false);
    if (!plain)
      return 1;
  }

  std::optional<int64_t> withRecompute;
  if (recomputes) {
    // Recomputation only lowers the peak: search up from what fits
    // without it.
    int64_t start = plain ? plain->first : 0;
    Probe first = search.probe(start + 1, /*recompute=*/true);
    if (first.result == Probe::Error)
      return 1;
    if (first.result == Probe::Over) {
      if (start > 0)
        withRecompute = start;
    } else {
      auto found = search.searchUp(start + 1, first.peak, 2 * (start + 1),
                                   /*recompute=*/true);
      if (!found)
        return 1;
      withRecompute = found->first;
    }
  }

  result["max_batch"] = plain ? json::Value(plain->first) : json::Value(nullptr);
  result["peak_bytes_at_max"] =
      plain ? json::Value(plain->second) : json::Value(nullptr);
  result["max_batch_with_recompute"] =
      withRecompute ? json::Value(*withRecompute) : json::Value(nullptr);
  outs() << formatv("{0:2}", json::Value(std::move(result))) << "\n";

  if (!plain && !withRecompute) {
    WithColor::error(errs(), "kiln")
        << formatv("not even {0}=1 fits the memory budget of {1} ({2} "
                   "bytes): its peak is {3} ({4} bytes)\n",
                   dim, formatByteSize(options.budget), options.budget,
                   formatByteSize(one.peak), one.peak);
    return 1;
  }
  return 0;
}
