//===- Frontend.h - From a .kiln file to graph IR ---------------*- C++ -*-===//
//
// Part of Kiln. The front end's entry point: parse a model file and emit the
// graph dialect's `func.func @forward`, with locations into the file.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTEND_FRONTEND_H
#define KILN_FRONTEND_FRONTEND_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <string>

namespace llvm {
class SourceMgr;
class raw_ostream;
} // namespace llvm

namespace kiln::frontend {

/// A value that replaces a dim's in the model (`kiln compile --dim B=64`):
/// the dim is declared as written but takes `value`, and every dim, type and
/// loop bound computed from it follows. Naming a dim the model does not
/// declare is an error.
struct DimOverride {
  std::string name;
  int64_t value;
};

/// Parses the main buffer of `sourceMgr` as a model file and lowers it to a
/// verified graph-dialect module. Errors are printed to `errs` as
/// `file:line:col: error: ...` with the source line and a caret; on error the
/// result is null. The context must have the graph and func dialects loaded.
/// `dims` replace the values of the model's dims of those names.
mlir::OwningOpRef<mlir::ModuleOp>
loadModel(llvm::SourceMgr &sourceMgr, mlir::MLIRContext &context,
          llvm::raw_ostream &errs, llvm::ArrayRef<DimOverride> dims = {});

/// Reads `path` into `sourceMgr` and calls loadModel. A missing or
/// unreadable file is reported as an error, not a crash.
mlir::OwningOpRef<mlir::ModuleOp>
loadModelFile(llvm::StringRef path, llvm::SourceMgr &sourceMgr,
              mlir::MLIRContext &context, llvm::raw_ostream &errs,
              llvm::ArrayRef<DimOverride> dims = {});

} // namespace kiln::frontend

#endif // KILN_FRONTEND_FRONTEND_H
