//===- Passes.h - Passes over the graph dialect -----------------*- C++ -*-===//
//
// Part of Kiln. Declarations and registration of the graph-level passes
// (dialects/Graph/Passes.td).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_GRAPH_TRANSFORMS_PASSES_H
#define KILN_DIALECT_GRAPH_TRANSFORMS_PASSES_H

#include "kiln/Dialect/Graph/IR/GraphDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln::graph {

#define GEN_PASS_DECL
#include "kiln/Dialect/Graph/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Dialect/Graph/Transforms/Passes.h.inc"

} // namespace kiln::graph

#endif // KILN_DIALECT_GRAPH_TRANSFORMS_PASSES_H
