//===- OracleTest.cpp - Whole models against an independent framework -----===//
//
// Part of Kiln. Checks whole-model losses and gradients against goldens that
// test/oracle/make_goldens.py computed with JAX from the op documentation
// (test/oracle/README.md), for examples/mlp.kiln, the 2-layer GPT
// test/oracle/gpt2l.kiln and the 2-layer LLaMA-style LM
// test/oracle/llama2l.kiln, in f64 (the f64 twins test/oracle/*_f64.kiln)
// and in f32.
//
// Each case loads the model with the front end, runs --graph-autodiff,
// evaluates @grad_step in the reference interpreter on the oracle's weights
// (.safetensors) and batch (.npy), and compares the loss and each
// parameter's gradient as a tensor, ||kiln - golden|| / ||golden||:
//   f64: <= 1e-10 (both sides carry rounding errors near 1e-15 relative, so
//        any difference in semantics shows up many orders above it);
//   f32: <= 1e-5 at step 0, against the oracle's float32 run (float32
//        rounding is ~1e-7 relative per op on each side).
// Then ten AdamW steps on the same batch, with the model's train block, two
// ways: --graph-train-step's @train_step, and @grad_step followed by an
// update function built here from the graph dialect's optimizer ops
// (lr_schedule, global_norm, clip_scale, adamw_update), which tells a bug in
// the train-step pass from one in the ops. Each step's loss (and, in f64,
// the gradients' norm) and the parameters after the ten steps are compared,
// f64 to 1e-10 and f32 to 1e-4 (Adam turns rounding-level differences of
// tiny gradients into steps of up to lr; test/oracle/README.md, "Limits").
// The bounds come from the training issue; they are never loosened to pass.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Dialect/Graph/IR/GraphEntries.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/Transforms/Passes.h"
#include "kiln/Frontend/Frontend.h"
#include "kiln/InitKiln.h"
#include "kiln/Interpreter/Interpreter.h"
#include "kiln/Npy.h"
#include "kiln/Safetensors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <list>
#include <optional>
#include <string>
#include <vector>

using namespace mlir;
using namespace kiln;
using namespace kiln::interp;

namespace {

/// ||kiln - golden|| / ||golden|| bounds, per tensor (and for the loss).
constexpr double kF64Tolerance = 1e-10;
constexpr double kF32StepZeroTolerance = 1e-5;
constexpr double kF32TrainedTolerance = 1e-4;
/// The AdamW steps of the training goldens (make_goldens.py's NUM_STEPS).
constexpr int kNumSteps = 10;

/// A model of the oracle tests and its files under test/oracle/.
struct OracleModel {
  /// The prefix of the oracle's files: `<name>.weights.safetensors`, ...
  std::string name;
  /// The f32 model and its f64 twin, relative to the source tree.
  std::string f32Path;
  std::string f64Path;
};

/// The precision a case runs in.
enum class Precision { F32, F64 };

struct OracleCase {
  OracleModel model;
  Precision precision;
};

std::string tag(Precision precision) {
  return precision == Precision::F64 ? "f64" : "f32";
}

void PrintTo(const OracleModel &m, std::ostream *os) { *os << m.name; }

void PrintTo(const OracleCase &c, std::ostream *os) {
  *os << c.model.name << "_" << tag(c.precision);
}

std::string sourcePath(const std::string &relative) {
  return std::string(KILN_SOURCE_DIR) + "/" + relative;
}

std::string oraclePath(const std::string &file) {
  return sourcePath("test/oracle/" + file);
}

/// Values of a .safetensors tensor or .npy array, widened to double.
std::vector<double> toDoubles(safetensors::DType dtype, const uint8_t *bytes,
                              int64_t count) {
  std::vector<double> values(count);
  for (int64_t i = 0; i < count; ++i) {
    switch (dtype) {
    case safetensors::DType::F32:
      values[i] = reinterpret_cast<const float *>(bytes)[i];
      break;
    case safetensors::DType::F64:
      values[i] = reinterpret_cast<const double *>(bytes)[i];
      break;
    case safetensors::DType::I32:
      values[i] = reinterpret_cast<const int32_t *>(bytes)[i];
      break;
    default:
      ADD_FAILURE() << "unexpected dtype " << safetensors::dtypeName(dtype);
      return {};
    }
  }
  return values;
}

/// ||a - ref|| / ||ref||, accumulated in double.
double relativeError(const Tensor &a, const safetensors::Tensor &ref) {
  std::vector<double> expected =
      toDoubles(ref.dtype, ref.data.data(), ref.numElements());
  EXPECT_EQ(a.getNumElements(), static_cast<int64_t>(expected.size()));
  if (a.getNumElements() != static_cast<int64_t>(expected.size()))
    return INFINITY;
  double diff = 0, norm = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    double d = a.getDouble(i) - expected[i];
    diff += d * d;
    norm += expected[i] * expected[i];
  }
  EXPECT_GT(norm, 0) << ref.name << " is zero: the comparison checks nothing";
  return std::sqrt(diff / norm);
}

/// The module of a .kiln file, printed without locations, with every element
/// type spelling `f64` made `f32`: equal for a model and its f64 twin.
std::string printedAsF32(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  // (Verified when loaded; roundConstantsToF32 leaves the twin's constants
  // typed apart from their results, which would print it generically.)
  module.print(
      os, OpPrintingFlags().elideLargeElementsAttrs(16).assumeVerified());
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 3, "f64") == 0) {
      out += "f32";
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

/// Rounds the f64 twin's float constants (rms_norm's eps, rotary's tables)
/// to f32, as the f32 model holds them, so that printedAsF32 compares their
/// values rather than their f32 and f64 spellings.
void roundConstantsToF32(ModuleOp module) {
  module.walk([](graph::ConstantOp op) {
    auto dense = dyn_cast<DenseFPElementsAttr>(op.getValue());
    if (!dense || !dense.getElementType().isF64())
      return;
    op.setValueAttr(dense.mapValues(
        Float32Type::get(op.getContext()), [](const APFloat &value) {
          APFloat rounded = value;
          bool losesInfo = false;
          rounded.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven,
                          &losesInfo);
          return rounded.bitcastToAPInt();
        }));
  });
}

/// A context with Kiln's dialects and the front end's loader.
/// A double as an MLIR f64 attribute, exactly (17 significant digits).
std::string f64Attr(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.17e : f64", value);
  return text;
}

/// The attribute `key` of a dictionary attribute as a double (NAN if
/// absent), for the train block.
double getNumber(DictionaryAttr dict, StringRef key) {
  auto attr = dict ? dict.getAs<FloatAttr>(key) : FloatAttr();
  return attr ? attr.getValueAsDouble() : NAN;
}

/// The source of `func.func @update`, one optimizer step as the train block
/// `train` says, over parameters of `types` (with their ranks):
///   (%t, %p0, %g0, %m0, %v0, %p1, ...) -> (%p0', %m0', %v0', %p1', ...)
/// built from the graph dialect's optimizer ops only.
std::string buildUpdateFunction(DictionaryAttr train,
                                ArrayRef<RankedTensorType> types,
                                StringRef element) {
  auto optimizer = train.getAs<DictionaryAttr>("optimizer");
  auto schedule = train.getAs<DictionaryAttr>("schedule");
  auto betas = optimizer.getAs<ArrayAttr>("betas");
  bool decayAll = optimizer.getAs<BoolAttr>("decay_all").getValue();
  double clip = getNumber(optimizer, "clip");
  std::string scalar = "tensor<" + element.str() + ">";
  auto typeOf = [](RankedTensorType type) {
    std::string text;
    llvm::raw_string_ostream os(text);
    type.print(os);
    return text;
  };

  std::string args = "%t: " + scalar, resultTypes, returned, body, grads,
              gradTypes;
  for (size_t i = 0; i < types.size(); ++i) {
    std::string n = std::to_string(i), type = typeOf(types[i]);
    for (const char *role : {"p", "g", "m", "v"})
      args += ", %" + std::string(role) + n + ": " + type;
    for (int k = 0; k < 3; ++k) {
      resultTypes += (resultTypes.empty() ? "" : ", ") + type;
      returned += (returned.empty() ? "" : ", ") + std::string("%u") + n + "#" +
                  std::to_string(k);
    }
    grads += (grads.empty() ? "%g" : ", %g") + n;
    gradTypes += (gradTypes.empty() ? "" : ", ") + type;
  }
  // No schedule is a constant rate without warmup.
  body +=
      "  %lr = graph.lr_schedule " +
      (schedule ? schedule.getAs<StringAttr>("name").str() : "constant") +
      " %t {lr = " + f64Attr(getNumber(optimizer, "lr")) + ", warmup = " +
      std::to_string(schedule ? schedule.getAs<IntegerAttr>("warmup").getInt()
                              : 0) +
      " : i64, total = " +
      std::to_string(train.getAs<IntegerAttr>("steps").getInt()) +
      " : i64, final = " +
      f64Attr(schedule && schedule.get("final") ? getNumber(schedule, "final")
                                                : 0.0) +
      "} : " + scalar + "\n";
  // clip = 0 means no clipping: a scale of 1.
  if (clip > 0)
    body += "  %norm = graph.global_norm " + grads + " : (" + gradTypes +
            ") -> " + scalar +
            "\n  %s = graph.clip_scale %norm {max_norm = " + f64Attr(clip) +
            "} : " + scalar + "\n";
  else
    body += "  %s = graph.constant dense<1.0> : " + scalar + "\n";
  for (size_t i = 0; i < types.size(); ++i) {
    std::string n = std::to_string(i);
    // Weight decay for matrices and embeddings, not gains and biases.
    double decay = decayAll || types[i].getRank() >= 2
                       ? getNumber(optimizer, "weight_decay")
                       : 0.0;
    body +=
        "  %u" + n + ":3 = graph.adamw_update %p" + n + ", %g" + n + ", %m" +
        n + ", %v" + n + ", %lr, %t, %s {beta1 = " +
        f64Attr(cast<FloatAttr>(betas[0]).getValueAsDouble()) +
        ", beta2 = " + f64Attr(cast<FloatAttr>(betas[1]).getValueAsDouble()) +
        ", eps = " + f64Attr(getNumber(optimizer, "eps")) +
        ", weight_decay = " + f64Attr(decay) + "} : " + typeOf(types[i]) +
        ", " + scalar + "\n";
  }
  return "func.func @update(" + args + ") -> (" + resultTypes + ") {\n" + body +
         "  return " + returned + " : " + resultTypes + "\n}\n";
}

class ModelLoader {
protected:
  ModelLoader() {
    DialectRegistry registry;
    registerKilnDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Loads a model file (relative to the source tree) with the front end.
  OwningOpRef<ModuleOp> load(const std::string &relative) {
    std::string errors;
    llvm::raw_string_ostream os(errors);
    OwningOpRef<ModuleOp> module = frontend::loadModelFile(
        sourcePath(relative), sourceMgrs.emplace_back(), context, os);
    EXPECT_TRUE(module) << errors;
    return module;
  }

  MLIRContext context;
  /// One per loaded file (a list: a SourceMgr must not move).
  std::list<llvm::SourceMgr> sourceMgrs;
};

/// The checks of a model that do not depend on the precision.
class OracleModelTest : public ModelLoader,
                        public ::testing::TestWithParam<OracleModel> {};

/// A model in one precision against the goldens.
class OracleTest : public ModelLoader,
                   public ::testing::TestWithParam<OracleCase> {
protected:
  /// The model of this case's precision.
  OwningOpRef<ModuleOp> loadCaseModel() {
    const OracleCase &c = GetParam();
    return load(c.precision == Precision::F64 ? c.model.f64Path
                                              : c.model.f32Path);
  }

  /// Runs --graph-autodiff, which adds @grad_step.
  bool differentiate(ModuleOp module) {
    PassManager pm(&context);
    pm.addPass(graph::createGraphAutodiff());
    return succeeded(pm.run(module));
  }

  /// The tolerance of a tensor compared after the training steps.
  double trainedTolerance() const {
    return GetParam().precision == Precision::F64 ? kF64Tolerance
                                                  : kF32TrainedTolerance;
  }

  /// Reads a .safetensors file of test/oracle/; fails the test on error.
  safetensors::TensorFile readTensors(const std::string &file) {
    safetensors::TensorFile tensors;
    Status status = safetensors::readSafetensors(oraclePath(file), tensors);
    EXPECT_TRUE(status.isOk()) << status.message();
    return tensors;
  }

  /// The arguments of `forward` (or a training entry): each parameter from
  /// the oracle's weights and each input from its .npy, converted (exactly:
  /// f32 values, i32 ids) to the argument's element type; optimizer state
  /// starts at zero.
  SmallVector<Tensor> oracleArguments(func::FuncOp forward) {
    const OracleModel &model = GetParam().model;
    safetensors::TensorFile weights =
        readTensors(model.name + ".weights.safetensors");
    SmallVector<Tensor> arguments(forward.getNumArguments());
    unsigned numParams = 0;
    for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
      auto type = cast<RankedTensorType>(forward.getArgumentTypes()[i]);
      ElementType element = *getElementType(type.getElementType());
      std::vector<int64_t> shape(type.getShape());
      std::vector<double> values;
      // State: zeros here, its initializer below.
      if (forward.getArgAttr(i, graph::GraphDialect::kStateAttr)) {
        arguments[i] = Tensor(element, shape);
        continue;
      }
      if (auto param = forward.getArgAttrOfType<StringAttr>(
              i, graph::GraphDialect::kParamAttr)) {
        ++numParams;
        const safetensors::Tensor *w = weights.find(param.str());
        if (!w) {
          ADD_FAILURE() << "no weights for parameter " << param.str();
          continue;
        }
        EXPECT_EQ(w->shape, shape) << param.str();
        values = toDoubles(w->dtype, w->data.data(), w->numElements());
      } else {
        auto input = forward.getArgAttrOfType<StringAttr>(
            i, graph::GraphDialect::kInputAttr);
        npy::Array array;
        std::string path = oraclePath(model.name + "." + input.str() + ".npy");
        Status status = npy::readNpy(path, array);
        if (!status.isOk()) {
          ADD_FAILURE() << status.message();
          continue;
        }
        EXPECT_EQ(array.shape, shape) << path;
        values = toDoubles(safetensors::fromNpyDType(array.dtype),
                           array.data.data(), array.numElements());
      }
      if (values.size() != static_cast<size_t>(type.getNumElements()))
        continue;
      if (isFloat(element)) {
        arguments[i] = Tensor::fromDoubles(element, shape, values);
      } else {
        std::vector<int64_t> ints(values.begin(), values.end());
        arguments[i] = Tensor::fromInts(element, shape, ints);
      }
    }
    // Every weight the oracle drew is a parameter of the model.
    EXPECT_EQ(numParams, weights.tensors.size());
    // Optimizer state from zero, a buffer from its initializer (batch
    // norm's running variance: ones).
    auto states = interp::initializeBuffers(forward, /*seed=*/0);
    if (!states)
      ADD_FAILURE() << llvm::toString(states.takeError());
    else
      for (interp::InitializedParameter &state : *states)
        arguments[state.argumentIndex] = std::move(state.value);
    return arguments;
  }

  /// The golden loss of each training step.
  std::vector<double> goldenLosses(const safetensors::TensorFile &golden) {
    const safetensors::Tensor *losses =
        golden.find(tag(GetParam().precision) + "/losses");
    EXPECT_TRUE(losses && losses->numElements() == kNumSteps);
    if (!losses || losses->numElements() != kNumSteps)
      return std::vector<double>(kNumSteps, NAN);
    return toDoubles(losses->dtype, losses->data.data(), kNumSteps);
  }

  /// Checks the loss of training step `t` (1-based); returns its error.
  double checkLoss(int t, double loss, ArrayRef<double> golden) {
    double error = std::fabs(loss - golden[t - 1]) / std::fabs(golden[t - 1]);
    double tolerance = GetParam().precision == Precision::F64
                           ? kF64Tolerance
                           : kF32StepZeroTolerance;
    EXPECT_LE(error, tolerance) << "loss of step " << t << ": " << loss;
    return error;
  }

  /// Compares the parameters among `function`'s `arguments` with the
  /// oracle's after kNumSteps steps; prints the worst error under `label`.
  void checkTrainedParameters(func::FuncOp function, ArrayRef<Tensor> arguments,
                              const safetensors::TensorFile &golden,
                              const std::string &label, double worstLoss) {
    const OracleCase &c = GetParam();
    double tolerance =
        c.precision == Precision::F64 ? kF64Tolerance : kF32TrainedTolerance;
    std::string prefix =
        tag(c.precision) + "/step" + std::to_string(kNumSteps) + "/";
    double worst = 0;
    std::string worstName;
    unsigned numCompared = 0;
    for (unsigned i = 0; i < function.getNumArguments(); ++i) {
      auto name = function.getArgAttrOfType<StringAttr>(
          i, graph::GraphDialect::kParamAttr);
      // Buffers (state with a golden: batch norm's running statistics) are
      // compared too; optimizer state has no golden.
      auto state = function.getArgAttrOfType<StringAttr>(
          i, graph::GraphDialect::kStateAttr);
      if (!name && state && golden.find(prefix + state.str()))
        name = state;
      if (!name)
        continue;
      const safetensors::Tensor *ref = golden.find(prefix + name.str());
      if (!ref) {
        ADD_FAILURE() << "no golden for " << name.str();
        continue;
      }
      ++numCompared;
      double error = relativeError(arguments[i], *ref);
      EXPECT_LE(error, tolerance)
          << name.str() << " after " << kNumSteps << " steps";
      if (error >= worst) {
        worst = error;
        worstName = name.str();
      }
    }
    unsigned numGolden = 0;
    for (const safetensors::Tensor &t : golden.tensors)
      numGolden += StringRef(t.name).starts_with(prefix);
    EXPECT_EQ(numCompared, numGolden);
    std::printf("[   oracle ] %s %s: %d steps (%s): losses %.3g, "
                "parameters worst %.3g (%s)\n",
                c.model.name.c_str(), tag(c.precision).c_str(), kNumSteps,
                label.c_str(), worstLoss, worst, worstName.c_str());
  }
};

/// The f64 twin is the f32 model with f64 element types: nothing else may
/// drift between them, or the f64 comparison would check another model.
TEST_P(OracleModelTest, F64TwinIsTheSameModel) {
  OwningOpRef<ModuleOp> f32 = load(GetParam().f32Path);
  OwningOpRef<ModuleOp> f64 = load(GetParam().f64Path);
  ASSERT_TRUE(f32 && f64);
  roundConstantsToF32(*f64);
  SmallVector<StringRef> f32Lines, f64Lines;
  std::string f32Text = printedAsF32(*f32), f64Text = printedAsF32(*f64);
  StringRef(f32Text).split(f32Lines, '\n');
  StringRef(f64Text).split(f64Lines, '\n');
  ASSERT_GT(f32Lines.size(), 3u);
  // Report the first line that differs, not the whole module.
  for (size_t i = 0; i < std::min(f32Lines.size(), f64Lines.size()); ++i)
    ASSERT_EQ(f64Lines[i].str(), f32Lines[i].str()) << "line " << i + 1;
  EXPECT_EQ(f64Lines.size(), f32Lines.size());
}

/// The loss and every gradient of @grad_step at the oracle's weights.
TEST_P(OracleTest, GradientsMatchAtStepZero) {
  const OracleCase &c = GetParam();
  OwningOpRef<ModuleOp> module = loadCaseModel();
  ASSERT_TRUE(module);
  ASSERT_TRUE(differentiate(*module));
  auto forward = module->lookupSymbol<func::FuncOp>("forward");
  auto gradStep = module->lookupSymbol<func::FuncOp>("grad_step");
  ASSERT_TRUE(forward && gradStep);

  SmallVector<Tensor> arguments = oracleArguments(forward);
  ASSERT_FALSE(testing::Test::HasFailure());
  auto results = runFunction(gradStep, arguments);
  ASSERT_TRUE(bool(results)) << llvm::toString(results.takeError());

  safetensors::TensorFile golden =
      readTensors(c.model.name + ".golden.safetensors");
  std::string prefix = tag(c.precision) + "/";
  double tolerance =
      c.precision == Precision::F64 ? kF64Tolerance : kF32StepZeroTolerance;

  // The loss is @grad_step's first result.
  const safetensors::Tensor *loss = golden.find(prefix + "loss");
  ASSERT_TRUE(loss);
  double lossError = relativeError((*results)[0], *loss);
  EXPECT_LE(lossError, tolerance) << "loss " << (*results)[0].getDouble(0);

  // Then one gradient per parameter, each named by graph.grad.
  unsigned numGradients = 0;
  double worst = 0;
  std::string worstName;
  for (unsigned i = 0; i < gradStep.getNumResults(); ++i) {
    auto name = gradStep.getResultAttrOfType<StringAttr>(
        i, graph::GraphDialect::kGradAttr);
    if (!name)
      continue;
    ++numGradients;
    const safetensors::Tensor *ref = golden.find(prefix + "grad/" + name.str());
    if (!ref) {
      ADD_FAILURE() << "no golden gradient for " << name.str();
      continue;
    }
    double error = relativeError((*results)[i], *ref);
    EXPECT_LE(error, tolerance) << "gradient of " << name.str();
    if (error >= worst) {
      worst = error;
      worstName = name.str();
    }
  }
  // Every golden gradient was compared.
  unsigned numGolden = 0;
  for (const safetensors::Tensor &t : golden.tensors)
    numGolden += llvm::StringRef(t.name).starts_with(prefix + "grad/");
  EXPECT_EQ(numGradients, numGolden);
  EXPECT_GT(numGradients, 0u);
  std::printf("[   oracle ] %s %s: loss %.3g, %u gradients, worst %.3g (%s)\n",
              c.model.name.c_str(), tag(c.precision).c_str(), lossError,
              numGradients, worst, worstName.c_str());
}

/// Ten AdamW steps on the oracle's batch: @grad_step, then the update the
/// train block describes, built from the graph dialect's optimizer ops.
TEST_P(OracleTest, TenAdamWStepsWithTheOptimizerOps) {
  const OracleCase &c = GetParam();
  OwningOpRef<ModuleOp> module = loadCaseModel();
  ASSERT_TRUE(module);
  ASSERT_TRUE(differentiate(*module));
  auto forward = module->lookupSymbol<func::FuncOp>("forward");
  auto gradStep = module->lookupSymbol<func::FuncOp>("grad_step");
  ASSERT_TRUE(forward && gradStep);
  auto train =
      (*module)->getAttrOfType<DictionaryAttr>(graph::GraphDialect::kTrainAttr);
  ASSERT_TRUE(train);

  // The parameters, in argument order, and their gradients' result indices.
  SmallVector<unsigned> paramArgs;
  SmallVector<RankedTensorType> paramTypes;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (forward.getArgAttr(i, graph::GraphDialect::kParamAttr)) {
      paramArgs.push_back(i);
      paramTypes.push_back(
          cast<RankedTensorType>(forward.getArgumentTypes()[i]));
    }
  SmallVector<unsigned> gradResults;
  for (unsigned i = 0; i < gradStep.getNumResults(); ++i)
    if (gradStep.getResultAttrOfType<StringAttr>(
            i, graph::GraphDialect::kGradAttr))
      gradResults.push_back(i);
  ASSERT_EQ(gradResults.size(), paramArgs.size());

  std::string element = tag(c.precision);
  std::string source = buildUpdateFunction(train, paramTypes, element);
  OwningOpRef<ModuleOp> updateModule =
      parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(updateModule) << source;
  auto update = updateModule->lookupSymbol<func::FuncOp>("update");
  ASSERT_TRUE(update);

  SmallVector<Tensor> arguments = oracleArguments(forward);
  ASSERT_FALSE(testing::Test::HasFailure());
  ElementType type = *getElementType(paramTypes.front().getElementType());
  SmallVector<Tensor> m, v;
  for (RankedTensorType t : paramTypes) {
    m.push_back(Tensor(type, t.getShape()));
    v.push_back(Tensor(type, t.getShape()));
  }

  safetensors::TensorFile golden =
      readTensors(c.model.name + ".golden.safetensors");
  std::vector<double> losses = goldenLosses(golden);
  double worstLoss = 0;
  for (int t = 1; t <= kNumSteps; ++t) {
    auto gradients = runFunction(gradStep, arguments);
    ASSERT_TRUE(bool(gradients)) << llvm::toString(gradients.takeError());
    worstLoss =
        std::max(worstLoss, checkLoss(t, (*gradients)[0].getDouble(0), losses));

    SmallVector<Tensor> updateArgs{Tensor::fromDoubles(type, {}, {double(t)})};
    for (size_t i = 0; i < paramArgs.size(); ++i) {
      updateArgs.push_back(arguments[paramArgs[i]]);
      updateArgs.push_back((*gradients)[gradResults[i]]);
      updateArgs.push_back(m[i]);
      updateArgs.push_back(v[i]);
    }
    auto updated = runFunction(update, updateArgs);
    ASSERT_TRUE(bool(updated)) << llvm::toString(updated.takeError());
    for (size_t i = 0; i < paramArgs.size(); ++i) {
      arguments[paramArgs[i]] = (*updated)[3 * i];
      m[i] = (*updated)[3 * i + 1];
      v[i] = (*updated)[3 * i + 2];
    }
    // grad_step's buffer updates (batch norm's running statistics).
    for (unsigned r = 0; r < gradStep.getNumResults(); ++r)
      if (auto target = graph::getUpdateTarget(gradStep, r))
        if (std::optional<unsigned> arg =
                graph::findPersistentArgument(gradStep, target))
          arguments[*arg] = (*gradients)[r];
  }
  checkTrainedParameters(forward, arguments, golden,
                         "grad_step + optimizer ops", worstLoss);
}

/// Ten steps of --graph-train-step's @train_step: forward, backward and the
/// train block's AdamW update in one function, its state threaded through.
TEST_P(OracleTest, TrainStepTakesTheOraclesSteps) {
  const OracleCase &c = GetParam();
  OwningOpRef<ModuleOp> module = loadCaseModel();
  ASSERT_TRUE(module);
  PassManager pm(&context);
  pm.addPass(graph::createGraphTrainStep());
  ASSERT_TRUE(succeeded(pm.run(*module))) << "graph-train-step failed";
  auto trainStep = module->lookupSymbol<func::FuncOp>("train_step");
  ASSERT_TRUE(trainStep);

  // Where each updated value goes back in: the argument of its name.
  llvm::StringMap<unsigned> argumentOf;
  for (unsigned i = 0; i < trainStep.getNumArguments(); ++i)
    for (StringRef kind :
         {graph::GraphDialect::kParamAttr, graph::GraphDialect::kStateAttr})
      if (auto name = trainStep.getArgAttrOfType<StringAttr>(i, kind))
        argumentOf[name.getValue()] = i;
  std::optional<unsigned> lossResult, normResult;
  SmallVector<std::pair<unsigned, unsigned>> updates; // result -> argument
  for (unsigned i = 0; i < trainStep.getNumResults(); ++i) {
    if (trainStep.getResultAttr(i, graph::GraphDialect::kLossAttr))
      lossResult = i;
    auto output = trainStep.getResultAttrOfType<StringAttr>(
        i, graph::GraphDialect::kOutputAttr);
    if (output && output.getValue() == "grad_norm")
      normResult = i;
    if (auto name = trainStep.getResultAttrOfType<StringAttr>(
            i, graph::GraphDialect::kUpdateAttr)) {
      auto it = argumentOf.find(name.getValue());
      ASSERT_NE(it, argumentOf.end()) << "update of unknown " << name.str();
      updates.push_back({i, it->second});
    }
  }
  ASSERT_TRUE(lossResult);
  ASSERT_FALSE(updates.empty());

  SmallVector<Tensor> arguments = oracleArguments(trainStep);
  ASSERT_FALSE(testing::Test::HasFailure());
  safetensors::TensorFile golden =
      readTensors(c.model.name + ".golden.safetensors");
  std::vector<double> losses = goldenLosses(golden);
  // The gradients' global norm of each step (before clipping), in f64.
  std::vector<double> norms;
  auto file =
      llvm::MemoryBuffer::getFile(oraclePath(c.model.name + ".golden.json"));
  ASSERT_TRUE(bool(file));
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*file)->getBuffer());
  ASSERT_TRUE(bool(json)) << llvm::toString(json.takeError());
  if (const llvm::json::Array *list =
          json->getAsObject()->getArray("grad_norms_f64"))
    for (const llvm::json::Value &n : *list)
      norms.push_back(*n.getAsNumber());
  ASSERT_EQ(norms.size(), static_cast<size_t>(kNumSteps));

  double worstLoss = 0;
  for (int t = 1; t <= kNumSteps; ++t) {
    auto results = runFunction(trainStep, arguments);
    ASSERT_TRUE(bool(results)) << llvm::toString(results.takeError());
    worstLoss = std::max(
        worstLoss, checkLoss(t, (*results)[*lossResult].getDouble(0), losses));
    // Clipping acts on the norm; in f64 it must be the oracle's.
    if (normResult && c.precision == Precision::F64) {
      double norm = (*results)[*normResult].getDouble(0);
      EXPECT_LE(std::fabs(norm - norms[t - 1]) / norms[t - 1], kF64Tolerance)
          << "grad_norm of step " << t << ": " << norm;
    }
    for (auto [result, argument] : updates)
      arguments[argument] = (*results)[result];
  }
  checkTrainedParameters(trainStep, arguments, golden, "train_step", worstLoss);
}

/// The train block the oracle assumed (its .golden.json) is the one the
/// model declares, so that a train step built from the model takes the
/// oracle's optimizer steps.
TEST_P(OracleModelTest, TrainBlockIsTheOraclesSettings) {
  const OracleModel &model = GetParam();
  OwningOpRef<ModuleOp> module = load(model.f32Path);
  ASSERT_TRUE(module);
  auto train =
      (*module)->getAttrOfType<DictionaryAttr>(graph::GraphDialect::kTrainAttr);
  ASSERT_TRUE(train);
  auto file =
      llvm::MemoryBuffer::getFile(oraclePath(model.name + ".golden.json"));
  ASSERT_TRUE(bool(file));
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*file)->getBuffer());
  ASSERT_TRUE(bool(json)) << llvm::toString(json.takeError());
  const llvm::json::Object *oracle =
      json->getAsObject()->getObject("optimizer");
  ASSERT_TRUE(oracle);

  auto optimizer = train.getAs<DictionaryAttr>("optimizer");
  ASSERT_TRUE(optimizer);
  EXPECT_EQ(optimizer.getAs<StringAttr>("name").getValue(), "adamw");
  for (StringRef key : {"lr", "eps", "weight_decay", "clip"})
    EXPECT_EQ(getNumber(optimizer, key), *oracle->getNumber(key)) << key.str();
  auto betas = optimizer.getAs<ArrayAttr>("betas");
  const llvm::json::Array *oracleBetas = oracle->getArray("betas");
  ASSERT_TRUE(betas && oracleBetas && betas.size() == 2 &&
              oracleBetas->size() == 2);
  for (unsigned i = 0; i < 2; ++i)
    EXPECT_EQ(cast<FloatAttr>(betas[i]).getValueAsDouble(),
              *(*oracleBetas)[i].getAsNumber());
  auto decayAll = optimizer.getAs<BoolAttr>("decay_all");
  EXPECT_TRUE(decayAll && !decayAll.getValue());

  // No schedule is a constant rate without warmup.
  auto schedule = train.getAs<DictionaryAttr>("schedule");
  std::string kind =
      schedule ? schedule.getAs<StringAttr>("name").str() : "constant";
  EXPECT_EQ(kind, oracle->getString("schedule")->str());
  int64_t warmup = 0;
  if (schedule)
    warmup = schedule.getAs<IntegerAttr>("warmup").getInt();
  EXPECT_EQ(warmup, *oracle->getInteger("warmup"));
  double final =
      schedule && schedule.get("final") ? getNumber(schedule, "final") : 0.0;
  EXPECT_EQ(final, *oracle->getNumber("final"));
  EXPECT_EQ(train.getAs<IntegerAttr>("steps").getInt(),
            *oracle->getInteger("total"));
}

const OracleModel kMlp{"mlp", "examples/mlp.kiln", "test/oracle/mlp_f64.kiln"};
const OracleModel kGpt{"gpt2l", "test/oracle/gpt2l.kiln",
                       "test/oracle/gpt2l_f64.kiln"};
const OracleModel kLlama{"llama2l", "test/oracle/llama2l.kiln",
                         "test/oracle/llama2l_f64.kiln"};
const OracleModel kCnn{"cnn", "test/oracle/cnn.kiln",
                       "test/oracle/cnn_f64.kiln"};

std::string modelName(const ::testing::TestParamInfo<OracleModel> &info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Models, OracleModelTest, ::testing::Values(kMlp, kGpt, kLlama, kCnn),
                         modelName);

std::string caseName(const ::testing::TestParamInfo<OracleCase> &info) {
  return info.param.model.name + "_" + tag(info.param.precision);
}

INSTANTIATE_TEST_SUITE_P(Models, OracleTest,
                         ::testing::Values(OracleCase{kMlp, Precision::F64},
                                           OracleCase{kMlp, Precision::F32},
                                           OracleCase{kGpt, Precision::F64},
                                           OracleCase{kGpt, Precision::F32},
                                           OracleCase{kLlama, Precision::F64},
                                           OracleCase{kLlama, Precision::F32},
                                           OracleCase{kCnn, Precision::F64},
                                           OracleCase{kCnn, Precision::F32}),
                         caseName);

} // namespace
