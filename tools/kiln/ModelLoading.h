//===- ModelLoading.h - Shared model loading for the CLI --------*- C++ -*-===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_MODELLOADING_H
#define KILN_TOOLS_KILN_MODELLOADING_H

#include "kiln/Frontend/Frontend.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <string>

namespace kiln::cli {

/// A model file loaded into graph IR, with the context and source manager
/// that its locations and diagnostics refer to.
struct LoadedModel {
  std::unique_ptr<mlir::MLIRContext> context;
  llvm::SourceMgr sourceMgr;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// Loads a `.kiln` model (or, for `.mlir` files, graph IR) with diagnostics
/// printed to stderr; null module on error. `dims` replace the values of the
/// model's dims of those names (`--dim B=64`; `.kiln` models only).
std::unique_ptr<LoadedModel>
loadModelForCLI(llvm::StringRef path,
                llvm::ArrayRef<frontend::DimOverride> dims = {});

/// The model as each of `world` data-parallel ranks compiles it: its batch
/// dim divided among the ranks (with the other `dims`) and `world` in its
/// train settings. Fails, with a message, when the model has no batch dim
/// or it does not divide evenly; a model with errors (printed) comes back
/// with a null module, as from loadModelForCLI.
struct RankModel {
  std::unique_ptr<LoadedModel> model;
  /// The batch dim, the model's value (the global batch) and each rank's.
  std::string batchDim;
  int64_t globalBatch = 0, rankBatch = 0;
};
llvm::Expected<RankModel>
loadModelForRanks(llvm::StringRef path,
                  llvm::ArrayRef<frontend::DimOverride> dims, int64_t world);

/// Sets integer `key` of the module's train settings (graph.train).
void overrideTrainSetting(mlir::ModuleOp module, llvm::StringRef key,
                          int64_t value);

} // namespace kiln::cli

#endif // KILN_TOOLS_KILN_MODELLOADING_H
