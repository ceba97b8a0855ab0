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

namespace llvm {
class SourceMgr;
class raw_ostream;
} // namespace llvm

namespace kiln::frontend {

/// Parses the main buffer of `sourceMgr` as a model file and lowers it to a
/// verified graph-dialect module. Errors are printed to `errs` as
/// `file:line:col: error: ...` with the source line and a caret; on error the
/// result is null. The context must have the graph and func dialects loaded.
mlir::OwningOpRef<mlir::ModuleOp> loadModel(llvm::SourceMgr &sourceMgr,
                                            mlir::MLIRContext &context,
                                            llvm::raw_ostream &errs);

/// Reads `path` into `sourceMgr` and calls loadModel. A missing or
/// unreadable file is reported as an error, not a crash.
mlir::OwningOpRef<mlir::ModuleOp> loadModelFile(llvm::StringRef path,
                                                llvm::SourceMgr &sourceMgr,
                                                mlir::MLIRContext &context,
                                                llvm::raw_ostream &errs);

} // namespace kiln::frontend

#endif // KILN_FRONTEND_FRONTEND_H
