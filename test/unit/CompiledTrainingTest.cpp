//===- CompiledTrainingTest.cpp - Compiled training steps, end to end -----===//
//
// Part of Kiln. The training entries of examples/mlp.kiln, the 2-layer GPT
// test/oracle/gpt2l.kiln and the 2-layer LLaMA test/oracle/llama2l.kiln
// compiled for the cpu (buildTrainFunctions, the
// kernel pipeline, the artifact writer) and run through libkiln_runtime's C
// API on the oracle's weights and batch (test/oracle/README.md), against:
// - the reference interpreter running the same @train_step: the loss of each
//   step, and every parameter and optimizer state after the first step and
//   after ten, as ‖Δ‖/‖ref‖ per tensor: f32 ≤ 1e-5 at step 1 and ≤ 1e-4
//   after 10 steps, f64 ≤ 1e-10;
// - the JAX goldens of test/oracle, at OracleTest's bounds: each step's loss
//   (f32 ≤ 1e-5, f64 ≤ 1e-10) and the parameters after ten AdamW steps
//   (f32 ≤ 1e-4, f64 ≤ 1e-10).
// And: the same steps on 1 and 3 threads give identical bytes; and
// gradient accumulation (@accumulate_step twice, then @apply_step) compiled
// against the interpreter.
//
//===----------------------------------------------------------------------===//

#include "kiln/Artifact/Artifact.h"
#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Dialect/Graph/Transforms/Passes.h"
#include "kiln/Dialect/Graph/Transforms/TrainStep.h"
#include "kiln/Frontend/Frontend.h"
#include "kiln/InitKiln.h"
#include "kiln/Interpreter/Interpreter.h"
#include "kiln/Npy.h"
#include "kiln/Pipelines/CompilePipeline.h"
#include "kiln/Safetensors.h"
#include "kiln/Target/TargetInfo.h"
#include "kiln/runtime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace mlir;
using namespace kiln;
using interp::ElementType;
using interp::Tensor;

namespace {

constexpr double kF64Tolerance = 1e-10;
constexpr double kF32StepOneTolerance = 1e-5;
constexpr double kF32TrainedTolerance = 1e-4;
constexpr int kNumSteps = 10;

/// Parameters, optimizer state and inputs by their buffer names.
using NamedTensors = std::map<std::string, Tensor>;

std::string sourcePath(const std::string &relative) {
  return std::string(KILN_SOURCE_DIR) + "/" + relative;
}

/// The name and role of argument `index` of a graph function.
std::pair<std::string, llvm::StringRef> argumentName(func::FuncOp function,
                                                     unsigned index) {
  for (llvm::StringRef role :
       {graph::GraphDialect::kParamAttr, graph::GraphDialect::kStateAttr,
        graph::GraphDialect::kInputAttr})
    if (auto name = function.getArgAttrOfType<StringAttr>(index, role))
      return {name.str(), role};
  return {"", ""};
}

/// The raw bytes of a tensor.
std::vector<uint8_t> bytesOf(const Tensor &tensor) {
  auto copy = [](auto values) {
    const auto *begin = reinterpret_cast<const uint8_t *>(values.data());
    return std::vector<uint8_t>(begin,
                                begin + values.size() * sizeof(values[0]));
  };
  switch (tensor.getElementType()) {
  case ElementType::F64:
    return copy(tensor.data<double>());
  case ElementType::I32:
    return copy(tensor.data<int32_t>());
  case ElementType::I64:
    return copy(tensor.data<int64_t>());
  default:
    return copy(tensor.data<float>());
  }
}

kiln_dtype dtypeOf(const Tensor &tensor) {
  switch (tensor.getElementType()) {
  case ElementType::F64:
    return KILN_F64;
  case ElementType::I32:
    return KILN_I32;
  case ElementType::I64:
    return KILN_I64;
  default:
    return KILN_F32;
  }
}

/// The bytes of a float tensor (f32 or f64), widened to doubles.
std::vector<double> floatsOf(const std::vector<uint8_t> &bytes,
                             ElementType type) {
  std::vector<double> values;
  if (type == ElementType::F64) {
    values.resize(bytes.size() / 8);
    std::memcpy(values.data(), bytes.data(), bytes.size());
  } else {
    std::vector<float> floats(bytes.size() / 4);
    std::memcpy(floats.data(), bytes.data(), bytes.size());
    values.assign(floats.begin(), floats.end());
  }
  return values;
}

/// ‖a - ref‖ / ‖ref‖ (0 when both are zero).
double relativeError(const std::vector<double> &a,
                     const std::vector<double> &ref) {
  EXPECT_EQ(a.size(), ref.size());
  if (a.size() != ref.size())
    return INFINITY;
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - ref[i]) * (a[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  if (norm == 0)
    return diff == 0 ? 0 : INFINITY;
  return std::sqrt(diff / norm);
}

std::vector<double> doublesOf(const Tensor &tensor) {
  std::vector<double> values(tensor.getNumElements());
  for (int64_t i = 0; i < tensor.getNumElements(); ++i)
    values[i] = tensor.getDouble(i);
  return values;
}

/// A compiled artifact opened in a runtime session.
class CompiledSession {
public:
  CompiledSession(const std::string &directory, int threads,
                  const char *device = "cpu") {
    EXPECT_EQ(kiln_artifact_open(directory.c_str(), &artifact), KILN_OK)
        << kiln_last_error();
    if (artifact)
      EXPECT_EQ(kiln_session_create(artifact, device, threads, &session),
                KILN_OK)
          << kiln_last_error();
    if (session)
      EXPECT_EQ(kiln_session_initialize(session, 0), KILN_OK);
  }
  ~CompiledSession() {
    kiln_session_destroy(session);
    kiln_artifact_close(artifact);
  }
  bool ok() const { return session != nullptr; }

  /// Sets every persistent buffer of `values` and binds every input.
  void load(const NamedTensors &values, const std::set<std::string> &inputs) {
    for (const auto &[name, tensor] : values) {
      std::vector<uint8_t> bytes = bytesOf(tensor);
      if (inputs.count(name)) {
        std::vector<int64_t> shape(tensor.getShape().begin(),
                                   tensor.getShape().end());
        EXPECT_EQ(kiln_session_bind_input(session, name.c_str(), bytes.data(),
                                          dtypeOf(tensor), shape.data(),
                                          static_cast<int32_t>(shape.size())),
                  KILN_OK)
            << name << ": " << kiln_session_last_error(session);
      } else {
        EXPECT_EQ(kiln_session_set_buffer(session, name.c_str(), bytes.data(),
                                          bytes.size()),
                  KILN_OK)
            << name << ": " << kiln_session_last_error(session);
      }
    }
  }

  bool run(const char *entry) {
    kiln_status status = kiln_session_run(session, entry);
    EXPECT_EQ(status, KILN_OK) << kiln_session_last_error(session);
    return status == KILN_OK;
  }

  /// Output `name` of the last run, of `like`'s type and size.
  std::vector<uint8_t> output(const std::string &name, const Tensor &like) {
    std::vector<uint8_t> bytes(bytesOf(like).size());
    EXPECT_EQ(kiln_session_read_output(session, name.c_str(), dtypeOf(like),
                                       bytes.data(), bytes.size()),
              KILN_OK)
        << name << ": " << kiln_session_last_error(session);
    return bytes;
  }

  /// A persistent buffer of `like`'s size.
  std::vector<uint8_t> get(const std::string &name, const Tensor &like) {
    std::vector<uint8_t> bytes(bytesOf(like).size());
    EXPECT_EQ(kiln_session_get_buffer(session, name.c_str(), bytes.data(),
                                      bytes.size()),
              KILN_OK)
        << name << ": " << kiln_session_last_error(session);
    return bytes;
  }

private:
  kiln_artifact *artifact = nullptr;
  kiln_session *session = nullptr;
};

/// Runs `function` in the interpreter on `values` (by name), writes its
/// graph.update results back into `values` and returns its outputs by name.
NamedTensors runInterpreted(func::FuncOp function, NamedTensors &values) {
  SmallVector<Tensor> arguments;
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    auto it = values.find(argumentName(function, i).first);
    EXPECT_NE(it, values.end()) << "no value for argument " << i;
    if (it == values.end())
      return {};
    arguments.push_back(it->second);
  }
  auto results = interp::runFunction(function, arguments);
  EXPECT_TRUE(bool(results)) << llvm::toString(results.takeError());
  if (!results)
    return {};
  NamedTensors outputs;
  for (unsigned i = 0; i < function.getNumResults(); ++i) {
    if (auto target = function.getResultAttrOfType<StringAttr>(
            i, graph::GraphDialect::kUpdateAttr)) {
      values[target.str()] = (*results)[i];
      continue;
    }
    auto output = function.getResultAttrOfType<StringAttr>(
        i, graph::GraphDialect::kOutputAttr);
    outputs[output ? output.str() : "loss"] = (*results)[i];
  }
  return outputs;
}

/// A model of the oracle and its files.
struct TrainingCase {
  const char *name;
  const char *model;
  bool f64;
  /// Dims set in place of the model's (`kiln compile --dim`).
  std::vector<frontend::DimOverride> dims = {};
};

void PrintTo(const TrainingCase &c, std::ostream *os) { *os << c.name; }

class CompiledTrainingTest : public ::testing::TestWithParam<TrainingCase> {
protected:
  CompiledTrainingTest() {
    DialectRegistry registry;
    registerKilnDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }
  ~CompiledTrainingTest() override {
    for (const std::string &directory : directories)
      llvm::sys::fs::remove_directories(directory);
  }

  /// The model with its training entries (accumulate > 0 overrides the
  /// train block's).
  /// The model's training entry points, built as `kiln compile --train`
  /// builds them for `target`: a cuda step's cross-entropy classes are
  /// padded first (--graph-pad-logits), so that autodiff derives the padded
  /// backward.
  OwningOpRef<ModuleOp>
  loadTraining(const std::string &relative, int64_t accumulate = 0,
               ArrayRef<frontend::DimOverride> dims = {},
               TargetKind target = TargetKind::Cpu) {
    std::string errors;
    llvm::raw_string_ostream os(errors);
    OwningOpRef<ModuleOp> module = frontend::loadModelFile(
        sourcePath(relative), sourceMgr, context, os, dims);
    EXPECT_TRUE(module) << errors;
    if (!module)
      return nullptr;
    auto settings = graph::TrainSettings::fromModule(*module);
    EXPECT_TRUE(succeeded(settings));
    if (failed(settings))
      return nullptr;
    if (accumulate)
      settings->accumulate = accumulate;
    std::string error;
    std::unique_ptr<TargetInfo> info = TargetInfo::create(target, "", error);
    EXPECT_TRUE(info) << error;
    if (!info)
      return nullptr;
    PassManager pm(&context);
    pm.addPass(graph::createGraphFoldTransposes());
    pm.addPass(graph::createGraphPadLogits({info->getLogitsAlignment()}));
    EXPECT_TRUE(succeeded(pm.run(*module)));
    EXPECT_TRUE(succeeded(graph::buildTrainFunctions(*module, *settings)));
    return module;
  }

  /// Compiles a copy of `module` into a temporary artifact directory, for
  /// `target` (cuda: sm_90, with its GPU emulator).
  std::string compile(ModuleOp module, TargetKind target = TargetKind::Cpu,
                      bool checkedEmulator = false) {
    OwningOpRef<ModuleOp> copy = cast<ModuleOp>(module->clone());
    PassManager pm(&context);
    CompileOptions options;
    options.target = target;
    buildCompilePipeline(pm, options);
    EXPECT_TRUE(succeeded(pm.run(*copy))) << "the kernel pipeline failed";
    llvm::SmallString<128> directory;
    EXPECT_FALSE(
        llvm::sys::fs::createUniqueDirectory("kiln-training-test", directory));
    directories.push_back(std::string(directory));
    ArtifactOptions artifactOptions;
    artifactOptions.target = target;
    artifactOptions.checkedEmulator = checkedEmulator;
    EXPECT_TRUE(succeeded(writeArtifact(*copy, directory, artifactOptions)));
    return std::string(directory);
  }

  /// The oracle's initial values of every argument of `functions`:
  /// parameters from its weights, inputs from its batch, state from its
  /// initializer (zero for optimizer state); each
  /// converted exactly to the argument's element type.
  NamedTensors initialValues(const std::string &oracle,
                             ArrayRef<func::FuncOp> functions,
                             std::set<std::string> &inputs) {
    safetensors::TensorFile weights;
    Status status = safetensors::readSafetensors(
        sourcePath("test/oracle/" + oracle + ".weights.safetensors"), weights);
    EXPECT_TRUE(status.isOk()) << status.message();
    NamedTensors values;
    for (func::FuncOp function : functions) {
      // Optimizer state from zero, a buffer from its initializer (batch
      // norm's running variance: ones), as the runtime starts them.
      auto states = interp::initializeBuffers(function, /*seed=*/0);
      EXPECT_TRUE(bool(states)) << llvm::toString(states.takeError());
      if (states)
        for (interp::InitializedParameter &state : *states)
          values.try_emplace(state.name, std::move(state.value));
      for (unsigned i = 0; i < function.getNumArguments(); ++i) {
        auto [name, role] = argumentName(function, i);
        if (values.count(name))
          continue;
        auto type = cast<RankedTensorType>(function.getArgumentTypes()[i]);
        ElementType element = *interp::getElementType(type.getElementType());
        std::vector<int64_t> shape(type.getShape());
        // (A weight's 16-bit copy, left out above, starts at zero.)
        if (role == graph::GraphDialect::kStateAttr) {
          values[name] = Tensor(element, shape);
          continue;
        }
        std::vector<double> numbers;
        if (role == graph::GraphDialect::kParamAttr) {
          const safetensors::Tensor *w = weights.find(name);
          EXPECT_TRUE(w) << "no weights for " << name;
          if (!w)
            continue;
          numbers = floatsOf(w->data, ElementType::F32);
        } else {
          inputs.insert(name);
          npy::Array array;
          Status read = npy::readNpy(
              sourcePath("test/oracle/" + oracle + "." + name + ".npy"), array);
          EXPECT_TRUE(read.isOk()) << read.message();
          for (int64_t e = 0; e < array.numElements(); ++e)
            numbers.push_back(array.dtype == npy::DType::Int32
                                  ? array.as<int32_t>()[e]
                                  : array.as<float>()[e]);
        }
        if (interp::isFloat(element)) {
          values[name] = Tensor::fromDoubles(element, shape, numbers);
        } else {
          std::vector<int64_t> ints(numbers.begin(), numbers.end());
          values[name] = Tensor::fromInts(element, shape, ints);
        }
      }
    }
    return values;
  }

  /// Compares every parameter and state of `reference` with the session's.
  double worstPersistentError(CompiledSession &session,
                              const NamedTensors &reference,
                              const std::set<std::string> &inputs,
                              std::string &worstName) {
    double worst = 0;
    for (const auto &[name, tensor] : reference) {
      if (inputs.count(name))
        continue;
      double error = relativeError(
          floatsOf(session.get(name, tensor), tensor.getElementType()),
          doublesOf(tensor));
      if (error > worst) {
        worst = error;
        worstName = name;
      }
    }
    return worst;
  }

  MLIRContext context;
  llvm::SourceMgr sourceMgr;
  std::vector<std::string> directories;
};

} // namespace

/// Ten steps of the compiled @train_step against the interpreter's and the
/// JAX goldens.
TEST_P(CompiledTrainingTest, TrainStepMatchesInterpreterAndGoldens) {
  const TrainingCase &c = GetParam();
  OwningOpRef<ModuleOp> module = loadTraining(c.model);
  ASSERT_TRUE(module);
  auto trainStep = module->lookupSymbol<func::FuncOp>("train_step");
  ASSERT_TRUE(trainStep);
  std::string directory = compile(*module);
  ASSERT_FALSE(HasFailure());

  std::set<std::string> inputs;
  NamedTensors reference = initialValues(c.name, {trainStep}, inputs);
  ASSERT_FALSE(HasFailure());
  CompiledSession session(directory, 2);
  ASSERT_TRUE(session.ok());
  session.load(reference, inputs);

  std::string prefix = c.f64 ? "f64/" : "f32/";
  safetensors::TensorFile golden;
  Status status = safetensors::readSafetensors(
      sourcePath("test/oracle/" + std::string(c.name) + ".golden.safetensors"),
      golden);
  ASSERT_TRUE(status.isOk()) << status.message();
  const safetensors::Tensor *losses = golden.find(prefix + "losses");
  ASSERT_TRUE(losses && losses->numElements() == kNumSteps);
  std::vector<double> goldenLosses = floatsOf(
      losses->data, c.f64 ? ElementType::F64 : ElementType::F32);

  double worstLoss = 0, worstGoldenLoss = 0;
  for (int t = 1; t <= kNumSteps; ++t) {
    NamedTensors outputs = runInterpreted(trainStep, reference);
    ASSERT_FALSE(HasFailure());
    ASSERT_TRUE(session.run("train_step"));
    const Tensor &loss = outputs.at("loss");
    double compiled =
        floatsOf(session.output("loss", loss), loss.getElementType())[0];
    double lossError = std::fabs(compiled - loss.getDouble(0)) /
                       std::fabs(loss.getDouble(0));
    double goldenError = std::fabs(compiled - goldenLosses[t - 1]) /
                         std::fabs(goldenLosses[t - 1]);
    double tolerance = c.f64 ? kF64Tolerance
                       : t == 1 ? kF32StepOneTolerance
                                : kF32TrainedTolerance;
    EXPECT_LE(lossError, tolerance) << "loss of step " << t;
    EXPECT_LE(goldenError, c.f64 ? kF64Tolerance : kF32StepOneTolerance)
        << "loss of step " << t << " against the golden";
    worstLoss = std::max(worstLoss, lossError);
    worstGoldenLoss = std::max(worstGoldenLoss, goldenError);
    if (t == 1 || t == kNumSteps) {
      std::string worstName;
      double worst =
          worstPersistentError(session, reference, inputs, worstName);
      EXPECT_LE(worst, c.f64 ? kF64Tolerance
                       : t == 1 ? kF32StepOneTolerance
                                : kF32TrainedTolerance)
          << worstName << " after step " << t;
      std::printf("[ train ] %-10s step %2d: worst |d|/|ref| vs interpreter "
                  "%.3g (%s)\n",
                  c.name, t, worst, worstName.c_str());
    }
  }

  // The parameters after ten steps, against the oracle's.
  double worstGolden = 0;
  unsigned compared = 0;
  for (const safetensors::Tensor &tensor : golden.tensors) {
    llvm::StringRef name(tensor.name);
    if (!name.consume_front(prefix + "step10/"))
      continue;
    const Tensor &like = reference.at(name.str());
    double error = relativeError(
        floatsOf(session.get(name.str(), like), like.getElementType()),
        floatsOf(tensor.data,
                 c.f64 ? ElementType::F64 : ElementType::F32));
    EXPECT_LE(error, c.f64 ? kF64Tolerance : kF32TrainedTolerance)
        << name.str() << " after " << kNumSteps << " steps vs the golden";
    worstGolden = std::max(worstGolden, error);
    ++compared;
  }
  EXPECT_GT(compared, 0u);
  std::printf("[ train ] %-10s losses: vs interpreter %.3g, vs JAX %.3g; "
              "parameters after %d steps vs JAX %.3g\n",
              c.name, worstLoss, worstGoldenLoss, kNumSteps, worstGolden);
}

/// The same steps on 1 and on 3 threads give the same bytes.
TEST_P(CompiledTrainingTest, ThreadCountDoesNotChangeABit) {
  const TrainingCase &c = GetParam();
  OwningOpRef<ModuleOp> module = loadTraining(c.model);
  ASSERT_TRUE(module);
  auto trainStep = module->lookupSymbol<func::FuncOp>("train_step");
  std::string directory = compile(*module);
  std::set<std::string> inputs;
  NamedTensors values = initialValues(c.name, {trainStep}, inputs);
  ASSERT_FALSE(HasFailure());
  std::vector<std::vector<uint8_t>> results[2];
  for (int run = 0; run < 2; ++run) {
    CompiledSession session(directory, run == 0 ? 1 : 3);
    ASSERT_TRUE(session.ok());
    session.load(values, inputs);
    for (int t = 0; t < 3; ++t)
      ASSERT_TRUE(session.run("train_step"));
    for (const auto &[name, tensor] : values)
      if (!inputs.count(name))
        results[run].push_back(session.get(name, tensor));
  }
  EXPECT_TRUE(results[0] == results[1]);
}

/// Two micro-batches accumulated, then the update, for three optimizer
/// steps: compiled against the interpreter.
TEST_P(CompiledTrainingTest, AccumulateAndApplyMatchInterpreter) {
  const TrainingCase &c = GetParam();
  OwningOpRef<ModuleOp> module = loadTraining(c.model, /*accumulate=*/2);
  ASSERT_TRUE(module);
  auto accumulate = module->lookupSymbol<func::FuncOp>("accumulate_step");
  auto apply = module->lookupSymbol<func::FuncOp>("apply_step");
  ASSERT_TRUE(accumulate && apply);
  std::string directory = compile(*module);
  std::set<std::string> inputs;
  NamedTensors reference = initialValues(c.name, {accumulate, apply}, inputs);
  ASSERT_FALSE(HasFailure());
  // The second micro-batch: the oracle's with its rows reversed.
  NamedTensors batches[2] = {{}, {}};
  for (const std::string &input : inputs) {
    const Tensor &first = reference.at(input);
    batches[0][input] = first;
    int64_t rows = first.getShape()[0];
    int64_t width = first.getNumElements() / rows;
    std::vector<double> reversed(first.getNumElements());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < width; ++i)
        reversed[r * width + i] = first.getDouble((rows - 1 - r) * width + i);
    std::vector<int64_t> shape(first.getShape().begin(),
                               first.getShape().end());
    if (interp::isFloat(first.getElementType())) {
      batches[1][input] =
          Tensor::fromDoubles(first.getElementType(), shape, reversed);
    } else {
      std::vector<int64_t> ints(reversed.begin(), reversed.end());
      batches[1][input] = Tensor::fromInts(first.getElementType(), shape, ints);
    }
  }
  CompiledSession session(directory, 2);
  ASSERT_TRUE(session.ok());
  session.load(reference, inputs);
  double worstLoss = 0;
  for (int step = 0; step < 3; ++step) {
    for (const NamedTensors &batch : batches) {
      for (const auto &[name, tensor] : batch)
        reference[name] = tensor;
      session.load(batch, inputs);
      NamedTensors outputs = runInterpreted(accumulate, reference);
      ASSERT_FALSE(HasFailure());
      ASSERT_TRUE(session.run("accumulate_step"));
      const Tensor &loss = outputs.at("loss");
      double compiled =
          floatsOf(session.output("loss", loss), loss.getElementType())[0];
      worstLoss = std::max(worstLoss, std::fabs(compiled - loss.getDouble(0)) /
                                          std::fabs(loss.getDouble(0)));
    }
    runInterpreted(apply, reference);
    ASSERT_FALSE(HasFailure());
    ASSERT_TRUE(session.run("apply_step"));
  }
  double tolerance = c.f64 ? kF64Tolerance : kF32TrainedTolerance;
  EXPECT_LE(worstLoss, tolerance);
  std::string worstName;
  double worst = worstPersistentError(session, reference, inputs, worstName);
  EXPECT_LE(worst, tolerance) << worstName;
  std::printf("[ train ] %-10s accumulate 2 x 3 steps: loss %.3g, worst "
              "|d|/|ref| %.3g (%s)\n",
              c.name, worstLoss, worst, worstName.c_str());
}

/// The persistent buffers (parameters, state) and inputs of `function`,
/// parameters from `seed`'s initializers through the cpu session, inputs a
/// fixed pattern (ids below 10, valid for every example's vocabulary and
/// classes), state zero.
NamedTensors syntheticValues(func::FuncOp function,
                             std::set<std::string> &inputs) {
  NamedTensors values;
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    auto [name, role] = argumentName(function, i);
    auto type = cast<RankedTensorType>(function.getArgumentTypes()[i]);
    ElementType element = *interp::getElementType(type.getElementType());
    std::vector<int64_t> shape(type.getShape());
    if (role != graph::GraphDialect::kInputAttr) {
      values[name] = Tensor(element, shape);
      continue;
    }
    inputs.insert(name);
    int64_t count = type.getNumElements();
    if (interp::isFloat(element)) {
      std::vector<double> numbers(count);
      for (int64_t e = 0; e < count; ++e)
        numbers[e] = std::sin(0.37 * double(e));
      values[name] = Tensor::fromDoubles(element, shape, numbers);
    } else {
      std::vector<int64_t> ints(count);
      for (int64_t e = 0; e < count; ++e)
        ints[e] = (e * 7 + e / 13) % 10;
      values[name] = Tensor::fromInts(element, shape, ints);
    }
  }
  return values;
}

/// The examples' kernels for cuda, run by the GPU emulator (kernels.emu.so,
/// the reference GEMM), against the cpu target from the same parameters
/// and batch: the gradients of one step (accumulate_step's accumulators,
/// through the checked emulator) per tensor within 1e-5, every parameter and
/// state after ten AdamW steps within 1e-4, each step's loss within 1e-5
/// (relative), and eval_step's and predict's outputs within 1e-5. A parameter's
/// elements whose step-0 gradient is below f32 rounding of its largest (the key
/// bias of attention: softmax ignores a shift of the keys, so that gradient is
/// exactly zero and both targets compute rounding noise, ~1e-10, in different
/// orders) are left out of the comparison after ten steps, and counted.
class CudaEmulatorTest : public CompiledTrainingTest {};

/// Per element of `gradient`: whether it is at the rounding noise of the
/// tensor's largest element.
std::vector<bool> findNoiseElements(const std::vector<double> &gradient) {
  double largest = 0;
  for (double value : gradient)
    largest = std::max(largest, std::fabs(value));
  std::vector<bool> noise(gradient.size());
  for (size_t i = 0; i < gradient.size(); ++i)
    noise[i] = std::fabs(gradient[i]) <=
               std::numeric_limits<float>::epsilon() * largest;
  return noise;
}

/// `values` without the elements `noise` marks.
std::vector<double> withoutNoise(const std::vector<double> &values,
                                 const std::vector<bool> &noise) {
  std::vector<double> kept;
  for (size_t i = 0; i < values.size(); ++i)
    if (i >= noise.size() || !noise[i])
      kept.push_back(values[i]);
  return kept;
}

TEST_P(CudaEmulatorTest, TrainingMatchesCpu) {
  const TrainingCase &c = GetParam();
  // Per parameter, from the gradient step: its noise elements.
  std::map<std::string, std::vector<bool>> noise;
  for (int64_t accumulate : {int64_t(2), int64_t(0)}) {
    SCOPED_TRACE(accumulate ? "accumulate_step" : "train_step");
    OwningOpRef<ModuleOp> module = loadTraining(c.model, accumulate);
    OwningOpRef<ModuleOp> cudaModule =
        loadTraining(c.model, accumulate, {}, TargetKind::Cuda);
    ASSERT_TRUE(module && cudaModule);
    auto step = module->lookupSymbol<func::FuncOp>(
        accumulate ? "accumulate_step" : "train_step");
    ASSERT_TRUE(step);
    std::set<std::string> inputs;
    NamedTensors values = syntheticValues(step, inputs);
    std::string cpuDirectory = compile(*module);
    // The gradient step runs the checked build: a race, a divergent
    // barrier or shuffle, or an access outside a buffer stops the test.
    std::string cudaDirectory = compile(*cudaModule, TargetKind::Cuda,
                                        /*checkedEmulator=*/accumulate != 0);
    ASSERT_FALSE(HasFailure());
    CompiledSession cpu(cpuDirectory, 2);
    CompiledSession emulated(cudaDirectory, 2, "cuda-emulator");
    ASSERT_TRUE(cpu.ok() && emulated.ok());
    // The same inputs; the parameters are both sessions' seed-0 values.
    NamedTensors batch;
    for (const std::string &input : inputs)
      batch[input] = values.at(input);
    cpu.load(batch, inputs);
    emulated.load(batch, inputs);

    // From the same parameters, eval_step's and predict's outputs agree
    // too (the artifact holds both, built from `forward`: eval_step returns
    // its results, predict those that are not a loss). predict runs first,
    // so that no output it reads can be left from another entry's run.
    auto forward = module->lookupSymbol<func::FuncOp>("forward");
    // predict exists only for a model with an output beside its loss.
    bool predicts =
        forward && llvm::any_of(llvm::seq(forward.getNumResults()),
                                [&](unsigned i) {
                                  return !forward.getResultAttr(
                                      i, graph::GraphDialect::kLossAttr);
                                });
    if (!accumulate && forward)
      for (const char *evaluation : {"predict", "eval_step"}) {
        if (!predicts && llvm::StringRef(evaluation) == "predict")
          continue;
        SCOPED_TRACE(evaluation);
        ASSERT_TRUE(cpu.run(evaluation));
        ASSERT_TRUE(emulated.run(evaluation));
        for (unsigned i = 0; i < forward.getNumResults(); ++i) {
          auto output = forward.getResultAttrOfType<StringAttr>(
              i, graph::GraphDialect::kOutputAttr);
          if (forward.getResultAttr(i, graph::GraphDialect::kLossAttr) &&
              llvm::StringRef(evaluation) == "predict")
            continue;
          auto type = cast<RankedTensorType>(forward.getResultTypes()[i]);
          std::string name = output ? output.str() : "loss";
          // Integer outputs (argmax's indices) are equal or wrong.
          bool integer = type.getElementType().isInteger(32);
          Tensor like(integer ? ElementType::I32 : ElementType::F32,
                      std::vector<int64_t>(type.getShape()));
          double error =
              integer ? double(emulated.output(name, like) !=
                               cpu.output(name, like))
                      : relativeError(
                            floatsOf(emulated.output(name, like),
                                     ElementType::F32),
                            floatsOf(cpu.output(name, like), ElementType::F32));
          EXPECT_LE(error, kF32StepOneTolerance) << evaluation << " " << name;
          std::printf("[ emulator ] %-8s %-15s output %s: |d|/|ref| %.3g\n",
                      c.name, evaluation, name.c_str(), error);
        }
      }

    const char *entry = accumulate ? "accumulate_step" : "train_step";
    int steps = accumulate ? 1 : kNumSteps;
    Tensor lossLike(ElementType::F32, {});
    double worstLoss = 0;
    for (int s = 0; s < steps; ++s) {
      ASSERT_TRUE(cpu.run(entry));
      ASSERT_TRUE(emulated.run(entry));
      double reference =
          floatsOf(cpu.output("loss", lossLike), ElementType::F32)[0];
      double loss =
          floatsOf(emulated.output("loss", lossLike), ElementType::F32)[0];
      worstLoss = std::max(worstLoss,
                           std::fabs(loss - reference) / std::fabs(reference));
    }
    EXPECT_LE(worstLoss, kF32StepOneTolerance);
    // After one accumulate_step the accumulators hold the gradients.
    double tolerance = accumulate ? kF32StepOneTolerance : kF32TrainedTolerance;
    double worst = 0;
    std::string worstName;
    size_t compared = 0;
    int64_t leftOut = 0;
    for (const auto &[name, like] : values) {
      if (inputs.count(name))
        continue;
      if (accumulate && !llvm::StringRef(name).ends_with(".grad_acc"))
        continue;
      std::vector<double> got =
          floatsOf(emulated.get(name, like), ElementType::F32);
      std::vector<double> want =
          floatsOf(cpu.get(name, like), ElementType::F32);
      llvm::StringRef parameter = name;
      if (accumulate) {
        std::vector<bool> &marked =
            noise[parameter.drop_back(llvm::StringRef(".grad_acc").size())
                      .str()];
        marked = findNoiseElements(want);
        leftOut += llvm::count(marked, true);
      } else {
        (void)(parameter.consume_back(".adam_m") ||
               parameter.consume_back(".adam_v"));
        if (auto marked = noise.find(parameter.str()); marked != noise.end()) {
          got = withoutNoise(got, marked->second);
          want = withoutNoise(want, marked->second);
        }
      }
      double error = relativeError(got, want);
      EXPECT_LE(error, tolerance) << name;
      if (error > worst) {
        worst = error;
        worstName = name;
      }
      ++compared;
    }
    EXPECT_GT(compared, 0u);
    std::printf("[ emulator ] %-8s %-15s %d step(s): loss %.3g, worst "
                "|d|/|ref| %.3g (%s) over %zu tensors",
                c.name, entry, steps, worstLoss, worst, worstName.c_str(),
                compared);
    if (accumulate)
      std::printf("; %lld gradient elements at f32 noise, left out after "
                  "ten steps\n",
                  static_cast<long long>(leftOut));
    else
      std::printf("\n");
  }
}

/// The fused attention of the cuda target (AttentionTemplate.cpp: the
/// forward, the key/value and the query gradients, no [T, T] buffer), causal
/// and not in one model, through the checked emulator against the
/// interpreter from the same parameters and batch: the loss and every
/// parameter's step-0 gradient per tensor within 1e-5.
class FusedAttentionTest : public CompiledTrainingTest {};

TEST_P(FusedAttentionTest, GradientsMatchInterpreter) {
  const TrainingCase &c = GetParam();
  OwningOpRef<ModuleOp> module =
      loadTraining(c.model, 2, c.dims, TargetKind::Cuda);
  ASSERT_TRUE(module);
  auto step = module->lookupSymbol<func::FuncOp>("accumulate_step");
  ASSERT_TRUE(step);
  std::set<std::string> inputs;
  NamedTensors values = syntheticValues(step, inputs);
  std::string directory =
      compile(*module, TargetKind::Cuda, /*checkedEmulator=*/true);
  ASSERT_FALSE(HasFailure());
  CompiledSession emulated(directory, 2, "cuda-emulator");
  ASSERT_TRUE(emulated.ok());
  NamedTensors batch;
  for (const std::string &input : inputs)
    batch[input] = values.at(input);
  emulated.load(batch, inputs);
  // The interpreter starts from the session's seed-0 parameters.
  for (auto &[name, tensor] : values)
    if (!inputs.count(name))
      tensor = Tensor::fromDoubles(
          ElementType::F32,
          std::vector<int64_t>(tensor.getShape().begin(),
                               tensor.getShape().end()),
          floatsOf(emulated.get(name, tensor), ElementType::F32));
  NamedTensors reference = values;
  NamedTensors outputs = runInterpreted(step, reference);
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(emulated.run("accumulate_step"));

  Tensor lossLike(ElementType::F32, {});
  double want = outputs.at("loss").getDouble(0);
  double lossError =
      std::fabs(floatsOf(emulated.output("loss", lossLike),
                         ElementType::F32)[0] -
                want) /
      std::fabs(want);
  EXPECT_LE(lossError, kF32StepOneTolerance);
  // A gradient that is exactly zero (with one key, softmax is 1 whatever
  // the query and key) is held to the largest gradient's norm instead: both
  // sides compute rounding noise there, in different orders.
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>>
      gradients;
  double largest = 0;
  for (const auto &[name, tensor] : reference) {
    if (!llvm::StringRef(name).ends_with(".grad_acc"))
      continue;
    std::vector<double> expected;
    double norm = 0;
    for (int64_t e = 0; e < tensor.getNumElements(); ++e) {
      expected.push_back(tensor.getDouble(e));
      norm += expected.back() * expected.back();
    }
    largest = std::max(largest, std::sqrt(norm));
    gradients[name] = {floatsOf(emulated.get(name, tensor), ElementType::F32),
                       expected};
  }
  EXPECT_GT(largest, 0) << "no gradient to compare";
  double worst = 0;
  std::string worstName;
  for (const auto &[name, pair] : gradients) {
    const auto &[got, expected] = pair;
    double error = relativeError(got, expected);
    if (std::isinf(error)) {
      double diff = 0;
      for (double value : got)
        diff += value * value;
      error = std::sqrt(diff) / largest;
    }
    EXPECT_LE(error, kF32StepOneTolerance) << name;
    if (error >= worst) {
      worst = error;
      worstName = name;
    }
  }
  size_t compared = gradients.size();
  EXPECT_EQ(compared, 4u) << "a gradient per projection";
  std::printf("[ attention ] %-12s loss %.3g, worst gradient |d|/|ref| %.3g "
              "(%s)\n",
              c.name, lossError, worst, worstName.c_str());
}

/// Rows: one, a tile less one, a tile (32 keys) twice, past it; many tiles.
/// Head dims 32, 64 and 128: 4, 8 and 16 lanes per row.
INSTANTIATE_TEST_SUITE_P(
    Shapes, FusedAttentionTest,
    ::testing::Values(
        TrainingCase{"t1_e64", "test/Target/Cuda/Inputs/attention.kiln", false,
                     {{"T", 1}, {"E", 64}}},
        TrainingCase{"t63_e32", "test/Target/Cuda/Inputs/attention.kiln",
                     false, {{"T", 63}, {"E", 32}}},
        TrainingCase{"t64_e64", "test/Target/Cuda/Inputs/attention.kiln",
                     false, {{"T", 64}, {"E", 64}}},
        TrainingCase{"t65_e128", "test/Target/Cuda/Inputs/attention.kiln",
                     false, {{"T", 65}, {"E", 128}}},
        TrainingCase{"t65_e32", "test/Target/Cuda/Inputs/attention.kiln",
                     false, {{"T", 65}, {"E", 32}}},
        TrainingCase{"t1000_e64", "test/Target/Cuda/Inputs/attention.kiln",
                     false, {{"T", 1000}, {"E", 64}, {"B", 1}, {"H", 1}}},
        TrainingCase{"t1000_e128", "test/Target/Cuda/Inputs/attention.kiln",
                     false, {{"T", 1000}, {"E", 128}, {"B", 1}, {"H", 1}}},
        TrainingCase{"t1_e32", "test/Target/Cuda/Inputs/attention.kiln", false,
                     {{"T", 1}, {"E", 32}}},
        // Additive masks read in place: a [T, T] bias (causal), a key
        // padding that hides batch 0's first key, a [B, 1, T, T] bias.
        TrainingCase{"masked_t3_e32",
                     "test/Target/Cuda/Inputs/attention-masked.kiln", false,
                     {{"T", 3}, {"E", 32}}},
        TrainingCase{"masked_t65_e64",
                     "test/Target/Cuda/Inputs/attention-masked.kiln", false,
                     {{"T", 65}, {"E", 64}}},
        TrainingCase{"masked_t40_e128",
                     "test/Target/Cuda/Inputs/attention-masked.kiln", false,
                     {{"T", 40}, {"E", 128}}}),
    [](const ::testing::TestParamInfo<TrainingCase> &info) {
      return std::string(info.param.name);
    });

INSTANTIATE_TEST_SUITE_P(
    Examples, CudaEmulatorTest,
    ::testing::Values(TrainingCase{"mlp", "examples/mlp.kiln", false},
                      TrainingCase{"gpt", "examples/gpt.kiln", false},
                      // rms_norm, rotary (constant tables, slices, a
                      // concat), SwiGLU, an untied head.
                      TrainingCase{"llama", "examples/llama.kiln", false},
                      // conv2d, max pooling, batch norm and its buffers.
                      TrainingCase{"cnn", "examples/cnn.kiln", false},
                      // The transpose template's kernels, forward and backward.
                      TrainingCase{"transposes",
                                   "test/Target/Cuda/Inputs/transposes.kiln",
                                   false},
                      // Online softmax rows of a block each: the (maximum,
                      // exp-sum) pairs through shared memory.
                      TrainingCase{"long_rows",
                                   "test/Target/Cuda/Inputs/long-rows.kiln",
                                   false},
                      // An odd vocabulary, its logits padded on cuda only
                      // (--graph-pad-logits) and masked out of the loss.
                      TrainingCase{"odd_vocab",
                                   "test/Target/Cuda/Inputs/odd-vocab.kiln",
                                   false},
                      // sigmoid and silu (a SwiGLU MLP), both directions.
                      TrainingCase{"swiglu",
                                   "test/Target/Cuda/Inputs/swiglu.kiln",
                                   false},
                      // rms_norm and mse (composites of graph ops).
                      TrainingCase{"norms",
                                   "test/Target/Cuda/Inputs/norms.kiln",
                                   false}),
    [](const ::testing::TestParamInfo<TrainingCase> &info) {
      return std::string(info.param.name);
    });

INSTANTIATE_TEST_SUITE_P(
    Models, CompiledTrainingTest,
    ::testing::Values(TrainingCase{"mlp", "examples/mlp.kiln", false},
                      TrainingCase{"gpt2l", "test/oracle/gpt2l.kiln", false},
                      TrainingCase{"mlp", "test/oracle/mlp_f64.kiln", true},
                      TrainingCase{"gpt2l", "test/oracle/gpt2l_f64.kiln",
                                   true},
                      TrainingCase{"llama2l", "test/oracle/llama2l.kiln",
                                   false},
                      TrainingCase{"llama2l", "test/oracle/llama2l_f64.kiln",
                                   true},
                      TrainingCase{"cnn", "test/oracle/cnn.kiln", false},
                      TrainingCase{"cnn", "test/oracle/cnn_f64.kiln", true}),
    [](const ::testing::TestParamInfo<TrainingCase> &info) {
      return std::string(info.param.name) + (info.param.f64 ? "_f64" : "_f32");
    });
