//===- CompileProgress.h - Progress lines on long compiles ------*- C++ -*-===//
//
// Part of Kiln. A compile that is still running after a few seconds says
// what it has done so far: one line per finished pipeline stage (each
// top-level pass, code generation, linking), with the time since the
// compile began. Short compiles print nothing.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PIPELINES_COMPILEPROGRESS_H
#define KILN_PIPELINES_COMPILEPROGRESS_H

#include "mlir/Pass/PassInstrumentation.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <memory>

namespace kiln {

/// Prints "kiln: compiling: STAGE done (12.3 s)" for each stage that ends
/// once `afterSeconds` have passed since construction.
class CompileProgress {
public:
  /// How long a compile runs before it reports its stages, by default.
  static constexpr double kDefaultAfterSeconds = 5.0;

  CompileProgress(llvm::raw_ostream &os, double afterSeconds);

  /// Reports that `stage` has finished.
  void finished(llvm::StringRef stage);
  /// An instrumentation reporting each top-level pass of a pass manager
  /// (add it with PassManager::addInstrumentation); it refers to this.
  std::unique_ptr<mlir::PassInstrumentation> instrumentation();

private:
  llvm::raw_ostream &os;
  double afterSeconds;
  std::chrono::steady_clock::time_point start;
};

} // namespace kiln

#endif // KILN_PIPELINES_COMPILEPROGRESS_H
