//===- TrainStepTest.cpp - Training entry points, run in the interpreter ---===//
//
// Part of Kiln. The training functions that --graph-train-step builds
// (forward, backward from --graph-autodiff's construction, optimizer), run
// by the reference interpreter: the digits MLP learns from real data, and
// gradient accumulation over identical micro-batches equals one step.
//
//===----------------------------------------------------------------------===//

#include "kiln/DataLoader.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/Transforms/TrainStep.h"
#include "kiln/Frontend/Frontend.h"
#include "kiln/InitKiln.h"
#include "kiln/Interpreter/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace kiln;
using namespace kiln::graph;
using kiln::interp::Tensor;

namespace {

/// Named tensors: parameters, optimizer state, the batch.
using TensorMap = llvm::StringMap<Tensor>;

class TrainStepTest : public ::testing::Test {
protected:
  TrainStepTest() {
    DialectRegistry registry;
    registerKilnDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Loads a model file (or source text) and adds its training functions.
  ModuleOp load(const std::string &pathOrSource, bool isSource,
                int64_t accumulate = 1) {
    std::string errors;
    llvm::raw_string_ostream errorStream(errors);
    if (isSource)
      sourceMgr.AddNewSourceBuffer(
          llvm::MemoryBuffer::getMemBufferCopy(pathOrSource, "test.kiln"),
          llvm::SMLoc());
    module = isSource
                 ? frontend::loadModel(sourceMgr, context, errorStream)
                 : frontend::loadModelFile(pathOrSource, sourceMgr, context,
                                           errorStream);
    EXPECT_TRUE(module) << errors;
    if (!module)
      return nullptr;
    FailureOr<TrainSettings> settings = TrainSettings::fromModule(*module);
    EXPECT_TRUE(succeeded(settings));
    settings->accumulate = accumulate;
    EXPECT_TRUE(succeeded(buildTrainFunctions(*module, *settings)));
    return *module;
  }

  /// Initial parameters (seeded) and zero state for `function`'s arguments.
  void initialize(func::FuncOp function, uint64_t seed) {
    auto params = interp::initializeParameters(function, seed);
    ASSERT_TRUE(static_cast<bool>(params)) << llvm::toString(params.takeError());
    for (auto &param : *params)
      state[param.name] = std::move(param.value);
    for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
      if (auto name = function.getArgAttrOfType<StringAttr>(
              i, GraphDialect::kStateAttr)) {
        auto zeros = Tensor::zeros(
            cast<RankedTensorType>(function.getArgument(i).getType()));
        ASSERT_TRUE(static_cast<bool>(zeros));
        state[name.getValue()] = std::move(*zeros);
      }
  }

  /// Calls `function` with arguments looked up by name in the state and the
  /// batch; stores each `graph.update` result back into the state; returns
  /// the outputs by name.
  TensorMap call(func::FuncOp function, const TensorMap &batch) {
    SmallVector<Tensor> arguments;
    for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i) {
      StringRef name;
      for (StringRef attr : {GraphDialect::kParamAttr, GraphDialect::kStateAttr,
                             GraphDialect::kInputAttr})
        if (auto value = function.getArgAttrOfType<StringAttr>(i, attr))
          name = value.getValue();
      const TensorMap &source = batch.count(name) ? batch : state;
      auto it = source.find(name);
      EXPECT_NE(it, source.end()) << "no value for argument " << name.str();
      arguments.push_back(it == source.end() ? Tensor() : it->second);
    }
    auto results = interp::runFunction(function, arguments);
    TensorMap outputs;
    if (!results) {
      ADD_FAILURE() << llvm::toString(results.takeError());
      return outputs;
    }
    for (unsigned i = 0, e = function.getNumResults(); i < e; ++i) {
      if (auto name = function.getResultAttrOfType<StringAttr>(
              i, GraphDialect::kUpdateAttr))
        state[name.getValue()] = (*results)[i];
      else if (auto name = function.getResultAttrOfType<StringAttr>(
                   i, GraphDialect::kOutputAttr))
        outputs[name.getValue()] = (*results)[i];
    }
    return outputs;
  }

  MLIRContext context;
  llvm::SourceMgr sourceMgr;
  OwningOpRef<ModuleOp> module;
  TensorMap state;
};

/// A batch of the digits set as interpreter tensors.
TensorMap toTensors(const data::Batch &batch) {
  TensorMap tensors;
  for (size_t i = 0; i < batch.names.size(); ++i) {
    const npy::Array &array = batch.arrays[i];
    bool isFloat = array.dtype == npy::DType::Float32;
    Tensor tensor(isFloat ? interp::ElementType::F32 : interp::ElementType::I32,
                  array.shape);
    for (int64_t j = 0; j < array.numElements(); ++j) {
      if (isFloat)
        tensor.setDouble(j, array.as<float>()[j]);
      else
        tensor.setInt(j, array.as<int32_t>()[j]);
    }
    tensors[batch.names[i]] = std::move(tensor);
  }
  return tensors;
}

std::unique_ptr<data::ArrayDataset> openDigits(const std::string &split,
                                               data::Order order) {
  std::string dir = std::string(KILN_SOURCE_DIR) + "/examples/data/digits/";
  std::vector<data::ArrayInput> inputs = {
      {"x", dir + split + "_x.npy", npy::DType::Float32, {64}},
      {"y", dir + split + "_y.npy", npy::DType::Int32, {}}};
  std::unique_ptr<data::ArrayDataset> dataset;
  Status status = data::ArrayDataset::open(inputs, {32, /*seed=*/0, order},
                                           dataset);
  EXPECT_TRUE(status.isOk()) << status.message();
  return dataset;
}

TEST_F(TrainStepTest, DigitsMlpLearnsInTheInterpreter) {
  ModuleOp loaded = load(std::string(KILN_SOURCE_DIR) + "/examples/mlp.kiln",
                         /*isSource=*/false);
  ASSERT_TRUE(loaded);
  auto trainStep = loaded.lookupSymbol<func::FuncOp>("train_step");
  auto forward = loaded.lookupSymbol<func::FuncOp>("forward");
  ASSERT_TRUE(trainStep && forward);
  initialize(trainStep, /*seed=*/0);

  auto train = openDigits("train", data::Order::Shuffled);
  ASSERT_TRUE(train);
  // Four epochs of 44 batches.
  double firstLoss = 0, lastEpochLoss = 0;
  for (int step = 0; step < 176; ++step) {
    data::Batch batch;
    ASSERT_TRUE(train->next(batch).isOk());
    TensorMap outputs = call(trainStep, toTensors(batch));
    ASSERT_TRUE(outputs.count("loss"));
    double loss = outputs["loss"].getDouble(0);
    ASSERT_TRUE(std::isfinite(loss)) << "step " << step;
    if (step == 0)
      firstLoss = loss;
    if (step >= 132)
      lastEpochLoss += loss / 44;
  }
  // At initialization the loss is near ln 10; it must fall well below.
  EXPECT_NEAR(firstLoss, std::log(10.0), 0.2);
  // (With label smoothing 0.1 the loss cannot go below about 0.5.)
  EXPECT_LT(lastEpochLoss, 1.0);
  // The step counter advanced once per call.
  EXPECT_EQ(state["optimizer.step"].getDouble(0), 176.0);

  // Held-out accuracy from the forward's logits.
  auto test = openDigits("test", data::Order::Sequential);
  ASSERT_TRUE(test);
  int64_t correct = 0, total = 0;
  for (int64_t b = 0; b < test->batchesPerEpoch(); ++b) {
    data::Batch batch;
    ASSERT_TRUE(test->next(batch).isOk());
    TensorMap inputs = toTensors(batch);
    TensorMap outputs = call(forward, inputs);
    const Tensor &logits = outputs["logits"];
    for (int64_t row = 0; row < batch.validRows; ++row) {
      int64_t best = 0;
      for (int64_t c = 1; c < 10; ++c)
        if (logits.getDouble(row * 10 + c) > logits.getDouble(row * 10 + best))
          best = c;
      correct += best == inputs["y"].getInt(row);
      ++total;
    }
  }
  std::printf("digits MLP, 176 interpreter steps: loss %.4f at step 0, "
              "%.4f over the last epoch; test accuracy %lld/%lld\n",
              firstLoss, lastEpochLoss, (long long)correct, (long long)total);
  EXPECT_EQ(total, 359);
  EXPECT_GT(double(correct) / total, 0.9)
      << correct << " of " << total << " test digits";
}

/// A small f64 regression model: the gradient accumulation check is exact
/// up to f64 rounding.
const char *kRegressionModel = R"(
model regression {
  dim B = 4, D = 3
  input x : f64[B, D]
  input y : f64[B]
  param w : f64[D] = normal(0.5)
  param b : f64[] = constant(0.1)
  e = sum(x * w, axis=-1) + b - y
  return mean(e * e)
}
train {
  optimizer = adamw(lr=0.05, weight_decay=0.1, clip=0.5)
  schedule = cosine(warmup=2)
  steps = 20
}
)";

TEST_F(TrainStepTest, AccumulatingIdenticalMicroBatchesEqualsOneStep) {
  TensorMap batch;
  batch["x"] = Tensor::fromDoubles(interp::ElementType::F64, {4, 3},
                                   {0.5, -1, 2, 1.5, 0.25, -0.75, -2, 1, 0.5,
                                    0.1, 0.2, 0.3});
  batch["y"] =
      Tensor::fromDoubles(interp::ElementType::F64, {4}, {1, -0.5, 2, 0});

  // Reference: three plain steps.
  ModuleOp plain = load(kRegressionModel, /*isSource=*/true);
  ASSERT_TRUE(plain);
  auto trainStep = plain.lookupSymbol<func::FuncOp>("train_step");
  initialize(trainStep, /*seed=*/7);
  for (int step = 0; step < 3; ++step)
    call(trainStep, batch);
  TensorMap reference = state;

  // Accumulating 4 copies of the batch per step.
  state.clear();
  ModuleOp accumulated = load(kRegressionModel, /*isSource=*/true,
                              /*accumulate=*/4);
  ASSERT_TRUE(accumulated);
  auto accumulateStep = accumulated.lookupSymbol<func::FuncOp>("accumulate_step");
  auto applyStep = accumulated.lookupSymbol<func::FuncOp>("apply_step");
  ASSERT_TRUE(accumulateStep && applyStep);
  ASSERT_FALSE(accumulated.lookupSymbol("train_step"));
  initialize(accumulateStep, /*seed=*/7);
  initialize(applyStep, /*seed=*/7);
  for (int step = 0; step < 3; ++step) {
    for (int micro = 0; micro < 4; ++micro)
      call(accumulateStep, batch);
    call(applyStep, {});
    // The accumulators are reset after each update.
    EXPECT_EQ(state["w.grad_acc"].getDouble(0), 0.0);
  }

  for (StringRef name : {"w", "b", "w.adam_m", "w.adam_v", "optimizer.step"}) {
    const Tensor &expected = reference[name], &actual = state[name];
    ASSERT_EQ(expected.getNumElements(), actual.getNumElements()) << name.str();
    for (int64_t i = 0; i < expected.getNumElements(); ++i)
      EXPECT_NEAR(actual.getDouble(i), expected.getDouble(i),
                  1e-13 * (1 + std::fabs(expected.getDouble(i))))
          << name.str() << "[" << i << "]";
  }
  // The parameters did move.
  EXPECT_NE(reference["b"].getDouble(0), 0.1);
}

} // namespace
