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
#include "llvm/Support/SourceMgr.h"

#include <memory>

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

} // namespace kiln::cli

#endif // KILN_TOOLS_KILN_MODELLOADING_H
