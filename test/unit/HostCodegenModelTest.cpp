//===- HostCodegenModelTest.cpp - Whole models and bad input on the cpu ----===//
//
// Part of Kiln. The forward of both example models compiled to kernels.so
// and compared with the reference interpreter (eval_step: loss and outputs;
// parameters from their initializers), and a bad embedding id reported
// through the status buffer instead of a crash.
//
//===----------------------------------------------------------------------===//

#include "HostCodegenTestUtil.h"

#include "kiln/Artifact/Artifact.h"
#include "kiln/Frontend/Frontend.h"
#include "kiln/InitKiln.h"
#include "kiln/Pipelines/CompilePipeline.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace mlir;
using namespace kiln;
using namespace kiln::test;

namespace {
class HostCodegenModelTest : public ::testing::Test {
protected:
  HostCodegenModelTest() {
    DialectRegistry registry;
    registerKilnDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  OwningOpRef<ModuleOp> loadExample(StringRef name) {
    std::string path = std::string(KILN_SOURCE_DIR) + "/examples/" + name.str();
    return frontend::loadModelFile(path, sourceMgr, context, llvm::errs());
  }

  MLIRContext context;
  llvm::SourceMgr sourceMgr;
};
} // namespace

TEST_F(HostCodegenModelTest, MlpForwardMatchesInterpreter) {
  OwningOpRef<ModuleOp> module = loadExample("mlp.kiln");
  ASSERT_TRUE(module);
  Comparison result = compileAndCompare(
      *module, "forward", "eval_step", {{"x", {0.0, 1.0}}, {"y", {0, 10}}},
      {}, /*initializeParams=*/true);
  EXPECT_LE(result.worstRelativeError, 1e-5);
  EXPECT_TRUE(result.chunkingIndependent);
  std::printf("[ host ] mlp forward f32  max |d|/|ref| = %.3g\n",
              result.worstRelativeError);
}

TEST_F(HostCodegenModelTest, GptForwardMatchesInterpreter) {
  OwningOpRef<ModuleOp> module = loadExample("gpt.kiln");
  ASSERT_TRUE(module);
  Comparison result = compileAndCompare(
      *module, "forward", "eval_step",
      {{"tokens", {0, 256}}, {"targets", {0, 256}}}, {},
      /*initializeParams=*/true);
  EXPECT_LE(result.worstRelativeError, 1e-5);
  EXPECT_TRUE(result.chunkingIndependent);
  std::printf("[ host ] gpt forward f32  max |d|/|ref| = %.3g\n",
              result.worstRelativeError);
}

/// An id outside [0, V) is recorded as status code 1 with the id, and the
/// run completes.
TEST_F(HostCodegenModelTest, BadEmbeddingIdIsReportedInStatus) {
  const char *source = R"mlir(
    func.func @forward(%t: tensor<4x3xf32> {graph.input = "t"},
                       %i: tensor<5xi32> {graph.input = "i"})
        -> (tensor<5x3xf32> {graph.output = "e"}) {
      %e = graph.embedding %t, %i : tensor<4x3xf32>, tensor<5xi32> -> tensor<5x3xf32>
      return %e : tensor<5x3xf32>
    })mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module);
  PassManager pm(&context);
  buildCompilePipeline(pm, {});
  ASSERT_TRUE(succeeded(pm.run(*module)));
  llvm::SmallString<128> directory;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("kiln-status", directory));
  ASSERT_TRUE(succeeded(writeArtifact(*module, directory, {})));
  {
    PlanRunner runner{std::string(directory)};
    ASSERT_TRUE(runner.ok());
    int32_t ids[5] = {0, 3, 17, 1, 2};
    std::vector<uint8_t> *idBuffer = runner.find("i", plan::BufferKind::Input);
    ASSERT_TRUE(idBuffer);
    std::memcpy(idBuffer->data(), ids, sizeof(ids));
    ASSERT_TRUE(runner.run("eval_step", {}));
    EXPECT_EQ(runner.getStatus(), (std::pair<int64_t, int64_t>(1, 17)));

    ids[2] = 2;
    std::memcpy(idBuffer->data(), ids, sizeof(ids));
    ASSERT_TRUE(runner.run("eval_step", {}));
    EXPECT_EQ(runner.getStatus(), (std::pair<int64_t, int64_t>(0, 0)));
  }
  llvm::sys::fs::remove_directories(directory);
}
