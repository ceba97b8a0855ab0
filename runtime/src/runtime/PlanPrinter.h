//===- PlanPrinter.h - The plan as text, for `kiln inspect` ----*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_PLANPRINTER_H
#define KILN_RUNTIME_PLANPRINTER_H

#include "Artifact.h"

#include <string>

namespace kiln {
namespace runtime {

/// Renders the plan readably: a header (model, target, schema, compiler),
/// every buffer with its kind, type, size, arena offset or initializer, and
/// each entry's ops with their calls, graph op names and model locations.
std::string printPlan(const Artifact &artifact);

} // namespace runtime
} // namespace kiln

#endif // KILN_RUNTIME_PLANPRINTER_H
