//===- ModelSummary.h - What a model holds and costs ------------*- C++ -*-===//
//
// Part of Kiln. The figures `kiln check` prints: parameters, inputs, outputs,
// ops and the FLOPs of one forward pass, read off the graph IR.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_GRAPH_ANALYSIS_MODELSUMMARY_H
#define KILN_DIALECT_GRAPH_ANALYSIS_MODELSUMMARY_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <string>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace kiln::graph {

/// A named tensor of the model's interface: a parameter, input or output.
struct NamedTensor {
  std::string name;
  mlir::RankedTensorType type;
  int64_t elements = 0;
  int64_t bytes = 0;
};

/// The summary of a model's `@forward` function.
struct ModelSummary {
  std::string modelName;
  llvm::SmallVector<NamedTensor> params, inputs, outputs;
  /// Non-trainable state the model reads and the train step updates
  /// (`buffer` declarations: batch_norm's running statistics).
  llvm::SmallVector<NamedTensor> buffers;
  /// The output holding the loss, if the model returns one.
  std::string lossName;
  int64_t paramCount = 0;
  int64_t paramBytes = 0;
  int64_t opCount = 0;
  /// Ops per kind (`graph.matmul` -> 13), sorted by name.
  std::map<std::string, int64_t> opsByName;
  int64_t forwardFlops = 0;

  /// Prints the summary as a few aligned lines for people.
  void print(llvm::raw_ostream &os) const;
  /// The same figures as one JSON object, for scripts.
  llvm::json::Value toJSON() const;
};

/// Bytes of one tensor of `type` (element widths rounded up to bytes).
int64_t getTensorBytes(mlir::RankedTensorType type);

/// Summarizes the `@forward` function of `module`; fails with an error on the
/// module if it has none.
mlir::FailureOr<ModelSummary> summarizeModel(mlir::ModuleOp module);

/// The model's `@forward` function, or null.
mlir::func::FuncOp getForwardFunction(mlir::ModuleOp module);

} // namespace kiln::graph

#endif // KILN_DIALECT_GRAPH_ANALYSIS_MODELSUMMARY_H
