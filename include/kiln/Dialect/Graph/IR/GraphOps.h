//===- GraphOps.h - Ops of the graph dialect --------------------*- C++ -*-===//
//
// Part of Kiln. Declares the graph ops and their interfaces.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_GRAPH_IR_GRAPHOPS_H
#define KILN_DIALECT_GRAPH_IR_GRAPHOPS_H

#include "kiln/Dialect/Graph/IR/GraphDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln::graph {
/// Bytes of every operand read plus every result written, for ops whose
/// traffic is just their tensors.
int64_t defaultBytesAccessed(mlir::Operation *op);
} // namespace kiln::graph

#include "kiln/Dialect/Graph/IR/GraphInterfaces.h.inc"

namespace kiln::graph {
/// The trait of the optimizer step's ops (GraphOptimizerOps.td).
template <typename ConcreteType>
class OptimizerOpTrait
    : public mlir::OpTrait::TraitBase<ConcreteType, OptimizerOpTrait> {};

/// Precision policies (GraphInterfaces.td): takes low-precision operands
/// and accumulates in f32; computes in f32 under every policy.
template <typename ConcreteType>
class LowPrecisionCompute
    : public mlir::OpTrait::TraitBase<ConcreteType, LowPrecisionCompute> {};
template <typename ConcreteType>
class FullPrecisionCompute
    : public mlir::OpTrait::TraitBase<ConcreteType, FullPrecisionCompute> {};
} // namespace kiln::graph

#define GET_OP_CLASSES
#include "kiln/Dialect/Graph/IR/GraphOps.h.inc"

namespace kiln::graph {
/// Whether `op` may go into a graph.fusion: it implements
/// FusibleOpInterface and, for a constant, is a splat.
bool isFusible(mlir::Operation *op);

/// From this many FLOPs per element on (a math function), an op is
/// expensive: fusion never recomputes it per element, and its kernel's grain
/// weighs it as such.
constexpr int64_t kExpensiveFlopsPerElement = 4;

/// The arith constant `value` of float type `type`, rounded to nearest even
/// (as the interpreter rounds its constants).
mlir::Value buildFloatConstant(mlir::OpBuilder &builder, mlir::Location loc,
                               mlir::Type type, double value);
} // namespace kiln::graph

#endif // KILN_DIALECT_GRAPH_IR_GRAPHOPS_H
