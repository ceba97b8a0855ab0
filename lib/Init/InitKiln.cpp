//===- InitKiln.cpp - Register Kiln's dialects and passes ------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/InitKiln.h"
#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Dialect/Graph/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"

void kiln::registerKilnDialects(mlir::DialectRegistry &registry) {
  registry.insert<kiln::graph::GraphDialect, mlir::func::FuncDialect>();
}

void kiln::registerKilnPasses() { kiln::graph::registerGraphPasses(); }
