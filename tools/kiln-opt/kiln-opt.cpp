//===- kiln-opt.cpp - mlir-opt with Kiln registered ------------------------===//
//
// Part of Kiln. Runs pass pipelines over IR files; Kiln's lit tests drive it.
// Kiln's dialects and passes are registered next to every upstream dialect,
// pass and extension (including the GPU-to-LLVM-IR translations).
//
//===----------------------------------------------------------------------===//

#include "kiln/InitKiln.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  kiln::registerKilnPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  kiln::registerKilnDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Kiln optimizer driver\n", registry));
}
