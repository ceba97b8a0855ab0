//===- InitKiln.h - Register Kiln's dialects and passes ---------*- C++ -*-===//
//
// Part of Kiln. One place that lists what Kiln registers, shared by kiln-opt
// and the kiln CLI.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_INITKILN_H
#define KILN_INITKILN_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace kiln {
/// Adds Kiln's own dialects and the upstream ones its pipelines produce.
void registerKilnDialects(mlir::DialectRegistry &registry);
/// Registers Kiln's passes and pipelines with the global pass registry.
void registerKilnPasses();
} // namespace kiln

#endif // KILN_INITKILN_H
