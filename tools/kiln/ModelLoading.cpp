//===- ModelLoading.cpp - Shared model loading for the CLI ----------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "ModelLoading.h"

#include "kiln/Frontend/Frontend.h"
#include "kiln/InitKiln.h"
#include "kiln/Support/UserFile.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
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
