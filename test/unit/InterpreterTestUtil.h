//===- InterpreterTestUtil.h - Helpers for interpreter tests ----*- C++ -*-===//
//
// Part of Kiln. Parses a small module, runs its @forward (or a named
// function) with the reference interpreter, and compares tensors.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_INTERPRETERTESTUTIL_H
#define KILN_TEST_UNIT_INTERPRETERTESTUTIL_H

#include "kiln/InitKiln.h"
#include "kiln/Interpreter/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace kiln::interp::test {

/// Owns a context with Kiln's dialects and the modules parsed into it.
class InterpreterFixture : public ::testing::Test {
protected:
  InterpreterFixture() {
    mlir::DialectRegistry registry;
    kiln::registerKilnDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Parses `source`; fails the test (and returns null) if it does not parse.
  /// `verify` false skips the verifiers, to reach the interpreter's own
  /// checks with IR that a verifier would reject.
  mlir::func::FuncOp parse(const std::string &source,
                           llvm::StringRef function = "forward",
                           bool verify = true) {
    mlir::ParserConfig config(&context, /*verifyAfterParse=*/verify);
    modules.push_back(mlir::parseSourceString<mlir::ModuleOp>(source, config));
    if (!modules.back()) {
      ADD_FAILURE() << "cannot parse:\n" << source;
      return nullptr;
    }
    auto fn = modules.back()->lookupSymbol<mlir::func::FuncOp>(function);
    EXPECT_TRUE(fn) << "no function @" << function.str();
    return fn;
  }

  /// Runs `function` of `source` on `arguments`; the test fails on error.
  std::vector<Tensor> run(const std::string &source,
                          std::vector<Tensor> arguments,
                          const RunOptions &options = {}) {
    mlir::func::FuncOp fn = parse(source);
    if (!fn)
      return {};
    llvm::Expected<llvm::SmallVector<Tensor>> results =
        runFunction(fn, arguments, options);
    if (!results) {
      ADD_FAILURE() << "interpreter error: "
                    << llvm::toString(results.takeError());
      return {};
    }
    return std::vector<Tensor>(results->begin(), results->end());
  }

  /// Runs and expects an error whose text contains every fragment.
  void expectError(const std::string &source, std::vector<Tensor> arguments,
                   std::vector<std::string> fragments,
                   const RunOptions &options = {}, bool verify = true) {
    mlir::func::FuncOp fn = parse(source, "forward", verify);
    if (!fn)
      return;
    llvm::Expected<llvm::SmallVector<Tensor>> results =
        runFunction(fn, arguments, options);
    ASSERT_FALSE(static_cast<bool>(results)) << "expected an error";
    std::string message = llvm::toString(results.takeError());
    for (const std::string &fragment : fragments)
      EXPECT_NE(message.find(fragment), std::string::npos)
          << "'" << fragment << "' not in: " << message;
  }

  mlir::MLIRContext context;
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
};

/// An f32 or f64 tensor from values.
inline Tensor f32(llvm::ArrayRef<int64_t> shape,
                  llvm::ArrayRef<double> values) {
  return Tensor::fromDoubles(ElementType::F32, shape, values);
}
inline Tensor f64(llvm::ArrayRef<int64_t> shape,
                  llvm::ArrayRef<double> values) {
  return Tensor::fromDoubles(ElementType::F64, shape, values);
}
inline Tensor i32(llvm::ArrayRef<int64_t> shape,
                  llvm::ArrayRef<int64_t> values) {
  return Tensor::fromInts(ElementType::I32, shape, values);
}
inline Tensor i64(llvm::ArrayRef<int64_t> shape,
                  llvm::ArrayRef<int64_t> values) {
  return Tensor::fromInts(ElementType::I64, shape, values);
}

/// A tensor filled with a fixed, irregular pattern (no randomness needed):
/// element i is sin(1.7 i + phase) * scale.
inline Tensor pattern(ElementType type, llvm::ArrayRef<int64_t> shape,
                      double phase, double scale = 1.0) {
  std::vector<double> values(computeNumElements(shape));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = std::sin(1.7 * i + phase) * scale;
  return Tensor::fromDoubles(type, shape, values);
}

/// All elements of a tensor as doubles.
inline std::vector<double> values(const Tensor &tensor) {
  std::vector<double> out;
  for (int64_t i = 0; i < tensor.getNumElements(); ++i)
    out.push_back(tensor.getDouble(i));
  return out;
}

/// Expects `actual` to have `shape` and elements within `tolerance`
/// (absolute, plus the same relative to the expected magnitude).
inline void expectTensorNear(const Tensor &actual,
                             llvm::ArrayRef<int64_t> shape,
                             llvm::ArrayRef<double> expected,
                             double tolerance) {
  ASSERT_EQ(actual.getShape(), shape);
  ASSERT_EQ(actual.getNumElements(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(actual.getDouble(i), expected[i],
                tolerance * (1 + std::fabs(expected[i])))
        << "element " << i;
}

} // namespace kiln::interp::test

#endif // KILN_TEST_UNIT_INTERPRETERTESTUTIL_H
