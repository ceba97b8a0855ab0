//===- GraphEntries.cpp - The persistent names of graph functions ---------===//
//
// Part of Kiln. See GraphEntries.h.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphEntries.h"
#include "kiln/Dialect/Graph/IR/GraphDialect.h"

using namespace mlir;
using namespace kiln;

StringAttr graph::getUpdateTarget(func::FuncOp function, unsigned index) {
  return function.getResultAttrOfType<StringAttr>(index,
                                                  GraphDialect::kUpdateAttr);
}

std::optional<unsigned> graph::findPersistentArgument(func::FuncOp function,
                                                      StringAttr name) {
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
    for (StringRef attr : {GraphDialect::kParamAttr, GraphDialect::kStateAttr})
      if (function.getArgAttrOfType<StringAttr>(i, attr) == name)
        return i;
  return std::nullopt;
}
