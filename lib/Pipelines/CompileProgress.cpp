//===- CompileProgress.cpp - Progress lines on long compiles --------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Pipelines/CompileProgress.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/FormatVariadic.h"

using namespace kiln;

CompileProgress::CompileProgress(llvm::raw_ostream &os, double afterSeconds)
    : os(os), afterSeconds(afterSeconds),
      start(std::chrono::steady_clock::now()) {}

void CompileProgress::finished(llvm::StringRef stage) {
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (seconds < afterSeconds)
    return;
  os << llvm::formatv("kiln: compiling: {0} done ({1:f1} s)\n", stage, seconds);
  os.flush();
}

namespace {
/// Reports each pass that ran on the module itself (not the nested ones).
class ProgressInstrumentation : public mlir::PassInstrumentation {
public:
  explicit ProgressInstrumentation(CompileProgress &progress)
      : progress(progress) {}

  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override {
    if (mlir::isa<mlir::ModuleOp>(op) && !op->getParentOp())
      progress.finished(pass->getName());
  }

private:
  CompileProgress &progress;
};
} // namespace

std::unique_ptr<mlir::PassInstrumentation> CompileProgress::instrumentation() {
  return std::make_unique<ProgressInstrumentation>(*this);
}
