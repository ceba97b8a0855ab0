//===- GraphDialect.h - The graph dialect -----------------------*- C++ -*-===//
//
// Part of Kiln. Declares the graph dialect and its enums.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_GRAPH_IR_GRAPHDIALECT_H
#define KILN_DIALECT_GRAPH_IR_GRAPHDIALECT_H

#include "mlir/IR/Dialect.h"

#include "kiln/Dialect/Graph/IR/GraphDialect.h.inc"
#include "kiln/Dialect/Graph/IR/GraphEnums.h.inc"

#endif // KILN_DIALECT_GRAPH_IR_GRAPHDIALECT_H
