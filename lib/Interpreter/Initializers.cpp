//===- Initializers.cpp - Materializing parameters from graph.init --------===//
//
// Part of Kiln. The reference for how every backend initializes parameters:
// the keying scheme is documented in Interpreter.h and kiln/Philox.h.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Interpreter/Interpreter.h"
#include "kiln/Philox.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::interp;

/// The f64 field `field` of an initializer dictionary, if present.
static std::optional<double> getField(DictionaryAttr init,
                                      llvm::StringRef field) {
  if (auto value = init.getAs<FloatAttr>(field))
    return value.getValueAsDouble();
  return std::nullopt;
}

llvm::Expected<Tensor> kiln::interp::initializeParameter(llvm::StringRef name,
                                                         RankedTensorType type,
                                                         DictionaryAttr init,
                                                         uint64_t seed,
                                                         Location location) {
  auto fail = [&](const llvm::Twine &message) -> llvm::Error {
    return llvm::make_error<InterpreterError>(
        location, ("parameter '" + name + "': " + message).str());
  };
  llvm::Expected<Tensor> tensor = Tensor::zeros(type);
  if (!tensor)
    return fail(llvm::toString(tensor.takeError()));
  if (!isFloat(tensor->getElementType()))
    return fail("parameters must be float tensors");
  auto kindAttr = init ? init.getAs<StringAttr>("kind") : StringAttr();
  if (!kindAttr)
    return fail("the initializer needs a string 'kind'");
  llvm::StringRef kind = kindAttr.getValue();
  auto require = [&](llvm::StringRef field) -> llvm::Expected<double> {
    if (std::optional<double> value = getField(init, field))
      return *value;
    return fail("initializer '" + kind + "' needs an f64 '" + field + "'");
  };

  int64_t count = tensor->getNumElements();
  const uint32_t stream = philox::hashName(name.data(), name.size());
  const uint32_t step = philox::kInitializerStep;
  if (kind == "zeros")
    return tensor;
  if (kind == "ones" || kind == "constant") {
    double value = 1.0;
    if (kind == "constant") {
      llvm::Expected<double> field = require("value");
      if (!field)
        return field.takeError();
      value = *field;
    }
    for (int64_t e = 0; e < count; ++e)
      tensor->setDouble(e, value);
    return tensor;
  }
  if (kind == "normal") {
    llvm::Expected<double> stddev = require("std");
    if (!stddev)
      return stddev.takeError();
    for (int64_t e = 0; e < count; ++e)
      tensor->setDouble(e, *stddev * philox::normalFor(seed, step, stream, e));
    return tensor;
  }
  if (kind == "uniform") {
    llvm::Expected<double> low = require("low");
    if (!low)
      return low.takeError();
    llvm::Expected<double> high = require("high");
    if (!high)
      return high.takeError();
    for (int64_t e = 0; e < count; ++e) {
      double u =
          philox::uniformFromWord(philox::wordFor(seed, step, stream, e));
      tensor->setDouble(e, *low + (*high - *low) * u);
    }
    return tensor;
  }
  return fail("unknown initializer kind '" + kind +
              "' (expected zeros, ones, constant, normal or uniform)");
}

static llvm::Expected<llvm::SmallVector<InitializedParameter>>
initializeNamed(func::FuncOp function, uint64_t seed, StringRef attr) {
  llvm::SmallVector<InitializedParameter> parameters;
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i) {
    auto name = function.getArgAttrOfType<StringAttr>(i, attr);
    if (!name)
      continue;
    Location location = function.isExternal()
                            ? function.getLoc()
                            : function.getArgument(i).getLoc();
    auto type =
        llvm::dyn_cast<RankedTensorType>(function.getArgumentTypes()[i]);
    if (!type)
      return llvm::make_error<InterpreterError>(
          location,
          ("parameter '" + name.getValue() + "' must be a ranked tensor")
              .str());
    auto init = function.getArgAttrOfType<DictionaryAttr>(
        i, graph::GraphDialect::kInitAttr);
    if (!init)
      return llvm::make_error<InterpreterError>(
          location, ("parameter '" + name.getValue() + "' has no '" +
                     graph::GraphDialect::kInitAttr + "'")
                        .str());
    // A weight's 16-bit copy (`rounded`) is derived from its weight, not
    // initialized on its own.
    auto kind = init.getAs<StringAttr>("kind");
    if (attr == graph::GraphDialect::kStateAttr && kind &&
        kind.getValue() == "rounded")
      continue;
    llvm::Expected<Tensor> value =
        initializeParameter(name.getValue(), type, init, seed, location);
    if (!value)
      return value.takeError();
    parameters.push_back({i, name.getValue().str(), std::move(*value)});
  }
  return parameters;
}

llvm::Expected<llvm::SmallVector<InitializedParameter>>
kiln::interp::initializeParameters(func::FuncOp function, uint64_t seed) {
  return initializeNamed(function, seed, graph::GraphDialect::kParamAttr);
}

llvm::Expected<llvm::SmallVector<InitializedParameter>>
kiln::interp::initializeBuffers(func::FuncOp function, uint64_t seed) {
  return initializeNamed(function, seed, graph::GraphDialect::kStateAttr);
}
