//===- ModelLoading.cpp - Shared model loading for the CLI ----------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "ModelLoading.h"

#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Frontend/Frontend.h"
#include "kiln/InitKiln.h"
#include "kiln/Support/UserFile.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace kiln;
using namespace kiln::cli;

std::unique_ptr<LoadedModel>
kiln::cli::loadModelForCLI(llvm::StringRef path,
                           llvm::ArrayRef<frontend::DimOverride> dims) {
  auto loaded = std::make_unique<LoadedModel>();
  mlir::DialectRegistry registry;
  registerKilnDialects(registry);
  loaded->context = std::make_unique<mlir::MLIRContext>(registry);
  loaded->context->loadAllAvailableDialects();
  // Errors point at the model line; an IR dump under them helps no user.
  loaded->context->printOpOnDiagnostic(false);

  if (!path.ends_with(".mlir")) {
    loaded->module = frontend::loadModelFile(
        path, loaded->sourceMgr, *loaded->context, llvm::errs(), dims);
    return loaded;
  }
  if (!dims.empty()) {
    llvm::WithColor::error(llvm::errs(), "kiln")
        << "dims can be set only in a .kiln model, not in graph IR ('" << path
        << "')\n";
    return loaded;
  }

  // Graph IR written by hand or by `kiln compile --emit=graph`.
  auto buffer = readUserFile(path);
  if (!buffer) {
    llvm::WithColor::error(llvm::errs(), "kiln")
        << llvm::toString(buffer.takeError()) << "\n";
    return loaded;
  }
  loaded->sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler handler(loaded->sourceMgr,
                                           loaded->context.get());
  loaded->module = mlir::parseSourceFile<mlir::ModuleOp>(loaded->sourceMgr,
                                                         loaded->context.get());
  return loaded;
}

void kiln::cli::overrideTrainSetting(mlir::ModuleOp module, llvm::StringRef key,
                                     int64_t value) {
  mlir::Builder builder(module.getContext());
  auto train = module->getAttrOfType<mlir::DictionaryAttr>(
      graph::GraphDialect::kTrainAttr);
  mlir::NamedAttrList entries(train ? train.getValue()
                                    : llvm::ArrayRef<mlir::NamedAttribute>());
  entries.set(key, builder.getI64IntegerAttr(value));
  module->setAttr(graph::GraphDialect::kTrainAttr,
                  entries.getDictionary(module.getContext()));
}

llvm::Expected<RankModel>
kiln::cli::loadModelForRanks(llvm::StringRef path,
                             llvm::ArrayRef<frontend::DimOverride> dims,
                             int64_t world) {
  RankModel ranks;
  ranks.model = loadModelForCLI(path, dims);
  if (!ranks.model->module || world <= 1)
    return std::move(ranks);
  mlir::ModuleOp parsed = *ranks.model->module;
  auto name = parsed->getAttrOfType<mlir::StringAttr>(
      graph::GraphDialect::kBatchDimAttr);
  auto values = parsed->getAttrOfType<mlir::DictionaryAttr>(
      graph::GraphDialect::kDimsAttr);
  auto value = name && values ? values.getAs<mlir::IntegerAttr>(name) : nullptr;
  if (!value)
    return llvm::createStringError(
        "data-parallel training splits the model's batch dim among the "
        "ranks, and this model has none (declare it with `batch NAME` or "
        "name it B)");
  ranks.batchDim = name.getValue().str();
  ranks.globalBatch = value.getInt();
  if (ranks.globalBatch % world != 0)
    return llvm::createStringError(llvm::formatv(
        "the batch dim {0} = {1} does not split evenly among {2} ranks: "
        "each rank takes an equal, contiguous slice of every batch",
        ranks.batchDim, ranks.globalBatch, world));
  ranks.rankBatch = ranks.globalBatch / world;
  std::vector<frontend::DimOverride> perRank;
  for (const frontend::DimOverride &dim : dims)
    if (dim.name != ranks.batchDim)
      perRank.push_back(dim);
  perRank.push_back({ranks.batchDim, ranks.rankBatch});
  ranks.model = loadModelForCLI(path, perRank);
  if (ranks.model->module)
    overrideTrainSetting(*ranks.model->module, "world", world);
  return std::move(ranks);
}
