//===- RunCommand.cpp - kiln run
//-------------------------------------------===//
//
// Part of Kiln. Evaluates a model's forward pass with the reference
// interpreter: parameters from their initializers (seeded) or a checkpoint
// (--weights), inputs from .npy files (or drawn at random), outputs printed
// and optionally saved as .npy.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "ModelLoading.h"

#include "kiln/Dialect/Graph/Analysis/ModelSummary.h"
#include "kiln/Dialect/Graph/IR/GraphEntries.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/Transforms/Autodiff.h"
#include "kiln/HalfFloats.h"
#include "kiln/Interpreter/Interpreter.h"
#include "kiln/Npy.h"
#include "kiln/Philox.h"
#include "kiln/Safetensors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>

using namespace llvm;
using namespace kiln;
using mlir::RankedTensorType;

cl::SubCommand kiln::cli::runCommand(
    "run", "Evaluate a model's forward pass with the reference interpreter");
cl::SubCommand kiln::cli::gradCommand(
    "grad", "Every parameter's gradient of the loss, with the reference "
            "interpreter");

static cl::opt<std::string> runModel(cl::Positional, cl::Required,
                                     cl::desc("MODEL.kiln"),
                                     cl::sub(kiln::cli::runCommand),
                                     cl::sub(kiln::cli::gradCommand),
                                     cl::cat(kiln::cli::optionCategory));
static cl::list<std::string>
    runInputs("input", cl::desc("An input of the model, from a .npy file"),
              cl::value_desc("NAME=FILE.npy"), cl::sub(kiln::cli::runCommand),
              cl::sub(kiln::cli::gradCommand),
              cl::cat(kiln::cli::optionCategory));
static cl::alias runInputsAlias("inputs", cl::aliasopt(runInputs),
                                cl::desc("Alias for --input"));
static cl::opt<bool> randomInputs(
    "random-inputs",
    cl::desc("Draw inputs not given with --input at random: floats from "
             "N(0, 1), integer ids uniformly over the range their use "
             "allows (embedding rows, classes)"),
    cl::sub(kiln::cli::runCommand), cl::sub(kiln::cli::gradCommand),
    cl::cat(kiln::cli::optionCategory));
static cl::opt<uint64_t> runSeed("seed",
                                 cl::desc("Seed of the parameter initializers "
                                          "and random inputs"),
                                 cl::init(0), cl::sub(kiln::cli::runCommand),
                                 cl::sub(kiln::cli::gradCommand),
                                 cl::cat(kiln::cli::optionCategory));
static cl::opt<std::string> gradOutput(
    "o",
    cl::desc("kiln grad: write the gradients to this .safetensors file, one "
             "tensor per parameter under its name"),
    cl::value_desc("GRADS.safetensors"), cl::sub(kiln::cli::gradCommand),
    cl::cat(kiln::cli::optionCategory));
static cl::opt<std::string> runWeights(
    "weights",
    cl::desc("Take the parameters from a checkpoint (.safetensors, as `kiln "
             "train --save` writes it) instead of their initializers"),
    cl::value_desc("CKPT.safetensors"), cl::sub(kiln::cli::runCommand),
    cl::sub(kiln::cli::gradCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<std::string>
    outputDir("output-dir",
              cl::desc("Write each output (kiln grad: each parameter's "
                       "gradient) to DIR/NAME.npy"),
              cl::value_desc("DIR"), cl::sub(kiln::cli::runCommand),
              cl::sub(kiln::cli::gradCommand),
              cl::cat(kiln::cli::optionCategory));

/// Reports an error of `kiln run` (or `kiln grad`); returns 1.
static int fail(const Twine &message) {
  WithColor::error(errs(), kiln::cli::gradCommand ? "kiln grad" : "kiln run")
      << message << "\n";
  return 1;
}

/// Converts a .npy array into an interpreter tensor of `type`, checking the
/// shape and dtype.
static Expected<interp::Tensor>
tensorFromNpy(StringRef name, const npy::Array &array, RankedTensorType type) {
  if (ArrayRef<int64_t>(array.shape) != type.getShape())
    return createStringError(formatv(
        "input '{0}': the model expects shape [{1}], the file holds "
        "[{2}]",
        name, make_range(type.getShape().begin(), type.getShape().end()),
        make_range(array.shape.begin(), array.shape.end())));
  Expected<interp::Tensor> zeros = interp::Tensor::zeros(type);
  if (!zeros)
    return zeros.takeError();
  interp::Tensor tensor = std::move(*zeros);
  bool wantsFloat = interp::isFloat(tensor.getElementType());
  int64_t count = array.numElements();
  for (int64_t i = 0; i < count; ++i) {
    switch (array.dtype) {
    case npy::DType::Float32:
      if (!wantsFloat)
        goto dtypeMismatch;
      tensor.setDouble(i, array.as<float>()[i]);
      break;
    case npy::DType::Float64:
      if (!wantsFloat)
        goto dtypeMismatch;
      tensor.setDouble(i, array.as<double>()[i]);
      break;
    case npy::DType::Int32:
      if (wantsFloat)
        goto dtypeMismatch;
      tensor.setInt(i, array.as<int32_t>()[i]);
      break;
    case npy::DType::Int64:
      if (wantsFloat)
        goto dtypeMismatch;
      tensor.setInt(i, array.as<int64_t>()[i]);
      break;
    case npy::DType::UInt8:
      if (wantsFloat)
        goto dtypeMismatch;
      tensor.setInt(i, array.as<uint8_t>()[i]);
      break;
    case npy::DType::UInt16:
      if (wantsFloat)
        goto dtypeMismatch;
      tensor.setInt(i, array.as<uint16_t>()[i]);
      break;
    case npy::DType::Bool:
      goto dtypeMismatch;
    }
  }
  tensor.roundToElementType();
  return tensor;
dtypeMismatch:
  return createStringError(
      formatv("input '{0}': the model expects {1} "
              "elements, the file holds {2}",
              name, interp::getElementTypeName(tensor.getElementType()),
              npy::dtypeDescr(array.dtype)));
}

/// Element `e` of a checkpoint tensor as a double; false for a tensor that
/// does not hold floats.
static bool floatElement(const safetensors::Tensor &tensor, int64_t e,
                         double &value) {
  switch (tensor.dtype) {
  case safetensors::DType::F32:
    value = tensor.as<float>()[e];
    return true;
  case safetensors::DType::F64:
    value = tensor.as<double>()[e];
    return true;
  case safetensors::DType::BF16:
    value = bf16ToFloat(tensor.as<uint16_t>()[e]);
    return true;
  case safetensors::DType::F16:
    value = halfToFloat(tensor.as<uint16_t>()[e]);
    return true;
  default:
    return false;
  }
}

/// Every parameter of `forward` into `arguments` from the checkpoint at
/// `path`, by name, each with the parameter's shape (the checkpoint's other
/// tensors, such as optimizer state, are not read).
static Error loadWeights(mlir::func::FuncOp forward, StringRef modelName,
                         StringRef path,
                         SmallVectorImpl<interp::Tensor> &arguments) {
  safetensors::TensorFile file;
  Status read = safetensors::readSafetensors(path.str(), file);
  if (!read)
    return createStringError(path + ": " + read.message());
  auto model = file.metadata.find("model");
  if (model != file.metadata.end() && model->second != modelName)
    WithColor::warning(errs(), "kiln run")
        << path << " is a checkpoint of model '" << model->second << "', not '"
        << modelName << "'\n";
  SmallVector<std::string> missing;
  int64_t loaded = 0;
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i) {
    // Parameters, and buffers (the forward's state), which checkpoints hold.
    auto name = forward.getArgAttrOfType<mlir::StringAttr>(
        i, graph::GraphDialect::kParamAttr);
    if (!name)
      name = forward.getArgAttrOfType<mlir::StringAttr>(
          i, graph::GraphDialect::kStateAttr);
    if (!name)
      continue;
    const safetensors::Tensor *stored = file.find(name.str());
    if (!stored) {
      missing.push_back("'" + name.str() + "'");
      continue;
    }
    auto type = cast<RankedTensorType>(forward.getArgument(i).getType());
    if (ArrayRef<int64_t>(stored->shape) != type.getShape())
      return createStringError(
          formatv("{0}: parameter '{1}' is [{2}] there, [{3}] in the model",
                  path, name.getValue(),
                  make_range(stored->shape.begin(), stored->shape.end()),
                  make_range(type.getShape().begin(), type.getShape().end())));
    Expected<interp::Tensor> tensor = interp::Tensor::zeros(type);
    if (!tensor)
      return tensor.takeError();
    for (int64_t element = 0; element < stored->numElements(); ++element) {
      double value;
      if (!floatElement(*stored, element, value))
        return createStringError(
            formatv("{0}: parameter '{1}' holds {2}, not floats", path,
                    name.getValue(), safetensors::dtypeName(stored->dtype)));
      tensor->setDouble(element, value);
    }
    tensor->roundToElementType();
    arguments[i] = std::move(*tensor);
    ++loaded;
  }
  if (!missing.empty())
    return createStringError(
        formatv("{0} holds no parameter {1} of model '{2}'", path,
                make_range(missing.begin(), missing.end()), modelName));
  errs() << formatv("weights: {0} parameters from {1}\n", loaded, path);
  return Error::success();
}

/// The exclusive upper bound of integer ids fed to `input`: the rows of the
/// embedding table or the classes of the cross-entropy that reads it.
static int64_t getIdBound(mlir::Value input) {
  for (mlir::Operation *user : input.getUsers()) {
    if (auto embedding = dyn_cast<graph::EmbeddingOp>(user))
      return embedding.getTable().getType().getDimSize(0);
    if (auto loss = dyn_cast<graph::CrossEntropyOp>(user))
      return loss.getLogits().getType().getShape().back();
  }
  return 2;
}

static Expected<interp::Tensor> randomInput(mlir::Value input, uint64_t seed,
                                            uint32_t stream) {
  auto type = cast<RankedTensorType>(input.getType());
  Expected<interp::Tensor> zeros = interp::Tensor::zeros(type);
  if (!zeros)
    return zeros.takeError();
  interp::Tensor tensor = std::move(*zeros);
  bool isFloat = interp::isFloat(tensor.getElementType());
  int64_t bound = isFloat ? 0 : getIdBound(input);
  for (int64_t i = 0; i < tensor.getNumElements(); ++i) {
    // Inputs use the top stream ids, apart from the initializers' hashes.
    uint32_t inputStream = 0xFFFF0000u + stream;
    if (isFloat)
      tensor.setDouble(i, philox::normalFor(seed, 0, inputStream, i));
    else
      tensor.setInt(i, int64_t(philox::wordFor(seed, 0, inputStream, i) %
                               uint64_t(bound)));
  }
  tensor.roundToElementType();
  return tensor;
}

/// Prints a tensor briefly: a scalar's value, or the shape, a few leading
/// values and the mean and extremes.
static void printTensor(StringRef name, const interp::Tensor &tensor,
                        raw_ostream &os) {
  os << formatv("{0,-12} {1}", name, tensor.getTypeString());
  int64_t count = tensor.getNumElements();
  if (count == 1) {
    os << " = " << format("%.9g", tensor.getDouble(0)) << "\n";
    return;
  }
  double sum = 0, lo = INFINITY, hi = -INFINITY;
  for (int64_t i = 0; i < count; ++i) {
    double value = tensor.getDouble(i);
    sum += value;
    lo = std::min(lo, value);
    hi = std::max(hi, value);
  }
  os << "  [";
  for (int64_t i = 0; i < std::min<int64_t>(count, 6); ++i)
    os << (i ? ", " : "") << format("%.6g", tensor.getDouble(i));
  os << (count > 6 ? ", ...]" : "]");
  os << format("  mean %.6g, min %.6g, max %.6g\n", sum / count, lo, hi);
}

static npy::Array toNpy(const interp::Tensor &tensor) {
  npy::Array array;
  array.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  int64_t count = tensor.getNumElements();
  if (interp::isFloat(tensor.getElementType())) {
    bool isDouble = tensor.getElementType() == interp::ElementType::F64;
    array.dtype = isDouble ? npy::DType::Float64 : npy::DType::Float32;
    array.data.resize(count * npy::dtypeSize(array.dtype));
    for (int64_t i = 0; i < count; ++i) {
      if (isDouble)
        array.as<double>()[i] = tensor.getDouble(i);
      else
        array.as<float>()[i] = float(tensor.getDouble(i));
    }
  } else {
    array.dtype = npy::DType::Int64;
    array.data.resize(count * npy::dtypeSize(array.dtype));
    for (int64_t i = 0; i < count; ++i)
      array.as<int64_t>()[i] = tensor.getInt(i);
  }
  return array;
}

int kiln::cli::runRun() {
  std::unique_ptr<LoadedModel> model = loadModelForCLI(runModel);
  if (!model->module)
    return 1;
  mlir::func::FuncOp forward = graph::getForwardFunction(*model->module);
  if (!forward)
    return fail("the model has no @forward function");

  // NAME=FILE pairs.
  StringMap<std::string> inputFiles;
  for (const std::string &spec : runInputs) {
    auto [name, path] = StringRef(spec).split('=');
    if (name.empty() || path.empty())
      return fail("expected --input NAME=FILE.npy, got '" + spec + "'");
    if (!inputFiles.try_emplace(name, path.str()).second)
      return fail("input '" + name + "' is given twice");
  }

  Expected<SmallVector<interp::InitializedParameter>> params =
      interp::initializeParameters(forward, runSeed);
  if (!params)
    return fail(toString(params.takeError()));

  Expected<SmallVector<interp::InitializedParameter>> buffers =
      interp::initializeBuffers(forward, runSeed);
  if (!buffers)
    return fail(toString(buffers.takeError()));

  SmallVector<interp::Tensor> arguments(forward.getNumArguments());
  for (interp::InitializedParameter &param : *params)
    arguments[param.argumentIndex] = std::move(param.value);
  for (interp::InitializedParameter &buffer : *buffers)
    arguments[buffer.argumentIndex] = std::move(buffer.value);
  if (!runWeights.empty() && runSeed.getNumOccurrences() && !randomInputs)
    return fail("--seed seeds the initializers and --random-inputs; with "
                "--weights and no --random-inputs it would do nothing");
  if (!runWeights.empty()) {
    auto modelName =
        model->module->getOperation()->getAttrOfType<mlir::StringAttr>(
            graph::GraphDialect::kModelAttr);
    if (Error error =
            loadWeights(forward, modelName ? modelName.getValue() : "",
                        runWeights, arguments))
      return fail(toString(std::move(error)));
  }

  StringSet<> known;
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i) {
    auto name = forward.getArgAttrOfType<mlir::StringAttr>(
        i, graph::GraphDialect::kInputAttr);
    if (!name)
      continue;
    known.insert(name.getValue());
    auto type = cast<RankedTensorType>(forward.getArgument(i).getType());
    auto file = inputFiles.find(name.getValue());
    if (file == inputFiles.end()) {
      if (!randomInputs)
        return fail(formatv(
            "missing input '{0}' (shape [{1}]): pass "
            "--input {0}=FILE.npy, or --random-inputs",
            name.getValue(),
            make_range(type.getShape().begin(), type.getShape().end())));
      Expected<interp::Tensor> tensor =
          randomInput(forward.getArgument(i), runSeed, /*stream=*/i);
      if (!tensor)
        return fail(toString(tensor.takeError()));
      arguments[i] = std::move(*tensor);
      continue;
    }
    npy::Array array;
    Status status = npy::readNpy(file->second, array);
    if (!status)
      return fail("input '" + name.getValue() + "': " + status.message());
    Expected<interp::Tensor> tensor =
        tensorFromNpy(name.getValue(), array, type);
    if (!tensor)
      return fail(toString(tensor.takeError()));
    arguments[i] = std::move(*tensor);
  }
  for (const auto &entry : inputFiles)
    if (!known.contains(entry.getKey()))
      return fail("the model has no input '" + entry.getKey() + "'");

  // kiln grad: the forward and its backward (the loss, the outputs, then
  // each parameter's gradient), with the forward's arguments.
  // kiln grad differentiates the training phase (batch statistics); kiln
  // run evaluates the model in inference (running statistics), as
  // eval_step and predict do.
  mlir::func::FuncOp function = forward;
  if (kiln::cli::gradCommand) {
    mlir::SourceMgrDiagnosticHandler handler(model->sourceMgr,
                                             model->context.get());
    mlir::FailureOr<mlir::func::FuncOp> built =
        graph::buildTrainingGradientFunction(forward, "grad_step");
    if (failed(built))
      return 1;
    function = *built;
  } else {
    graph::resolveTrainingPhase(forward, /*training=*/false);
  }

  auto start = std::chrono::steady_clock::now();
  Expected<SmallVector<interp::Tensor>> results =
      interp::runFunction(function, arguments);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!results) {
    // Errors carry the location of the op that failed, in the model file.
    mlir::SourceMgrDiagnosticHandler handler(model->sourceMgr,
                                             model->context.get());
    handleAllErrors(
        results.takeError(),
        [&](const interp::InterpreterError &error) {
          mlir::emitError(error.getLocation()) << error.getMessage();
        },
        [&](const ErrorInfoBase &error) { fail(error.message()); });
    return 1;
  }

  if (!outputDir.empty()) {
    if (std::error_code error = sys::fs::create_directories(outputDir))
      return fail("cannot create '" + outputDir + "': " + error.message());
  }
  safetensors::TensorFile gradients;
  for (unsigned i = 0, e = function.getNumResults(); i < e; ++i) {
    // A buffer's next value (grad_step of a model with batch_norm).
    if (function.getResultAttr(i, graph::GraphDialect::kUpdateAttr))
      continue;
    auto nameAttr = function.getResultAttrOfType<mlir::StringAttr>(
        i, graph::GraphDialect::kOutputAttr);
    auto gradAttr = function.getResultAttrOfType<mlir::StringAttr>(
        i, graph::GraphDialect::kGradAttr);
    std::string name = gradAttr   ? gradAttr.getValue().str()
                       : nameAttr ? nameAttr.getValue().str()
                                  : formatv("result{0}", i).str();
    const interp::Tensor &value = (*results)[i];
    printTensor(gradAttr ? "d/d " + name : name, value, outs());
    // kiln grad writes the gradients only; kiln run every output.
    if (kiln::cli::gradCommand && !gradAttr)
      continue;
    if (gradAttr && !gradOutput.empty()) {
      npy::Array array = toNpy(value);
      Status added = gradients.addArray(name, array);
      if (!added)
        return fail(added.message());
    }
    if (outputDir.empty())
      continue;
    SmallString<128> path(outputDir);
    sys::path::append(path, name + ".npy");
    Status status = npy::writeNpy(std::string(path), toNpy(value));
    if (!status)
      return fail(status.message());
  }
  if (!gradOutput.empty()) {
    auto modelName =
        model->module->getOperation()->getAttrOfType<mlir::StringAttr>(
            graph::GraphDialect::kModelAttr);
    gradients.metadata["format"] = "kiln-gradients";
    gradients.metadata["model"] = modelName ? modelName.str() : "";
    Status written = safetensors::writeSafetensors(gradOutput, gradients);
    if (!written)
      return fail(written.message());
    errs() << formatv("gradients of {0} parameters: {1}\n",
                      gradients.tensors.size(), gradOutput);
  }
  errs() << formatv("{0}: {1:f1} ms (reference interpreter)\n",
                    kiln::cli::gradCommand ? "forward and backward"
                                           : "forward pass",
                    seconds * 1e3);
  return 0;
}
