//===- PassVerificationTest.cpp - When a compile verifies its IR ----------===//
//
// Part of Kiln. kiln::runVerifyingOnce: a pass that breaks the IR fails
// the run either way; by default the passes after it still run and the
// one verification at the end reports it, with KILN_VERIFY_EACH=1 the run
// stops at the pass that broke it.
//
//===----------------------------------------------------------------------===//

#include "kiln/Support/PassVerification.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace mlir;

namespace {
/// Erases every func.return when `breaks`, leaving blocks without their
/// terminator: IR that does not verify.
struct EraseReturnsPass
    : PassWrapper<EraseReturnsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(EraseReturnsPass)
  explicit EraseReturnsPass(bool breaks) : breaks(breaks) {}
  void runOnOperation() override {
    if (breaks)
      getOperation().walk([](func::ReturnOp op) { op.erase(); });
  }
  bool breaks;
};

/// Counts its runs.
struct CountingPass : PassWrapper<CountingPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CountingPass)
  explicit CountingPass(int &runs) : runs(runs) {}
  void runOnOperation() override { ++runs; }
  int &runs;
};

struct Outcome {
  bool succeeded;
  int laterPassRuns;
  std::string diagnostics;
};

Outcome runPipeline(bool breaks, const char *verifyEach) {
  if (verifyEach)
    setenv("KILN_VERIFY_EACH", verifyEach, /*overwrite=*/1);
  else
    unsetenv("KILN_VERIFY_EACH");
  MLIRContext context;
  context.loadDialect<func::FuncDialect>();
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>("func.func @f() { return }", &context);
  Outcome outcome{false, 0, ""};
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    outcome.diagnostics += diagnostic.str() + "\n";
    return success();
  });
  PassManager pm(&context);
  pm.addPass(std::make_unique<EraseReturnsPass>(breaks));
  pm.addPass(std::make_unique<CountingPass>(outcome.laterPassRuns));
  outcome.succeeded = succeeded(kiln::runVerifyingOnce(pm, *module));
  unsetenv("KILN_VERIFY_EACH");
  return outcome;
}
} // namespace

TEST(PassVerificationTest, ValidIrPassesEitherWay) {
  for (const char *each : {static_cast<const char *>(nullptr), "1"}) {
    Outcome outcome = runPipeline(/*breaks=*/false, each);
    EXPECT_TRUE(outcome.succeeded);
    EXPECT_EQ(outcome.laterPassRuns, 1);
    EXPECT_EQ(outcome.diagnostics, "");
  }
}

TEST(PassVerificationTest, ByDefaultTheEndVerifies) {
  for (const char *each : {static_cast<const char *>(nullptr), "0", ""}) {
    Outcome outcome = runPipeline(/*breaks=*/true, each);
    EXPECT_FALSE(outcome.succeeded);
    // The pass after the broken one ran: no verification between them.
    EXPECT_EQ(outcome.laterPassRuns, 1);
    EXPECT_NE(outcome.diagnostics.find("terminator"), std::string::npos)
        << outcome.diagnostics;
  }
}

TEST(PassVerificationTest, VerifyEachStopsAtTheBrokenPass) {
  Outcome outcome = runPipeline(/*breaks=*/true, "1");
  EXPECT_FALSE(outcome.succeeded);
  EXPECT_EQ(outcome.laterPassRuns, 0);
  EXPECT_NE(outcome.diagnostics.find("terminator"), std::string::npos)
      << outcome.diagnostics;
}
