//===- HostCodegenTestUtil.h - Running compiled kernels in tests -*- C++ -*-=//
//
// Part of Kiln. A minimal test-side executor of an artifact (plan.kpl +
// kernels.so): buffers from the plan, kernel launches chunked as a test asks
// (whole range, small chunks, in reverse order), GEMMs through CBLAS, copies
// and zeroing. And the harness that compiles a graph function to an
// artifact, runs it, and compares it with the reference interpreter.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_HOSTCODEGENTESTUTIL_H
#define KILN_TEST_UNIT_HOSTCODEGENTESTUTIL_H

#include "kiln/Interpreter/Interpreter.h"
#include "kiln/plan_generated.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::test {

/// How a kernel's range is split into calls.
struct Chunking {
  /// Iterations per call; 0 runs the whole range in one call.
  int64_t size = 0;
  /// Call the chunks from the last to the first.
  bool reverse = false;
};

/// Runs the entries of one artifact directory on host buffers.
class PlanRunner {
public:
  /// Loads `directory`/plan.kpl and dlopens its kernels.so; test failures
  /// on error (check ok()).
  explicit PlanRunner(const std::string &directory);
  ~PlanRunner();
  PlanRunner(const PlanRunner &) = delete;
  PlanRunner &operator=(const PlanRunner &) = delete;

  bool ok() const { return plan != nullptr && library != nullptr; }
  const plan::Plan &getPlan() const { return *plan; }

  /// The bytes of the buffer named `name` of `kind`, or null.
  std::vector<uint8_t> *find(const std::string &name, plan::BufferKind kind);
  /// Sets the rng_state buffer, if the plan has one.
  void setRng(uint64_t seed, uint32_t step, uint32_t microBatch = 0);
  /// Runs entry `name`; returns false (after a test failure) on error.
  bool run(const std::string &name, Chunking chunking);
  /// The status buffer's [code, value] after the last run (0, 0 without one).
  std::pair<int64_t, int64_t> getStatus();

private:
  void *address(uint32_t buffer);
  bool runGemm(const plan::GemmCall &gemm);

  std::vector<uint8_t> file;
  const plan::Plan *plan = nullptr;
  void *library = nullptr;
  std::vector<std::vector<uint8_t>> storage;
  std::vector<uint8_t> arena;
};

/// An input to generate: uniform floats in [low, high), or for integer
/// arguments, uniform integers in [low, high).
struct InputRange {
  double low = -2.0, high = 2.0;
};

/// The largest relative error of the compiled outputs against the
/// interpreter's, ‖Δ‖/‖ref‖ per tensor.
struct Comparison {
  double worstRelativeError = 0.0;
  bool chunkingIndependent = true;
};

/// Compiles `function` (a graph function of `module`, whose arguments carry
/// graph.param/graph.input/graph.state names) to an artifact, runs the
/// entry `entry` on random inputs drawn from `ranges` (by argument name;
/// default [-2, 2)), runs the interpreter on the same inputs, and compares
/// every result: outputs, and the parameter or state buffer that a
/// `graph.update` result writes. The run is repeated with chunk sizes 1 and 3 in reverse order,
/// which must give identical bytes. Parameters take their graph.init values
/// when `initializeParams` is set.
Comparison compileAndCompare(mlir::ModuleOp module, llvm::StringRef function,
                             llvm::StringRef entry,
                             const std::map<std::string, InputRange> &ranges,
                             const interp::RunOptions &options = {},
                             bool initializeParams = false);

/// The raw bytes of an interpreter tensor, in its element type.
std::vector<uint8_t> bytesOf(const interp::Tensor &tensor);

/// ‖computed - reference‖ / ‖reference‖ over the elements of `reference`
/// (`computed` holds them in its element type); 0 when both are zero.
double relativeError(const interp::Tensor &reference,
                     const std::vector<uint8_t> &computed);

/// `source` with every `$T` replaced by the element type `type` ("f32"), so
/// one IR text serves every precision.
std::string instantiate(const char *source, llvm::StringRef type);

} // namespace kiln::test

#endif // KILN_TEST_UNIT_HOSTCODEGENTESTUTIL_H
