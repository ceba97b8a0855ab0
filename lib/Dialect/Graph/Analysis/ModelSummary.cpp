//===- ModelSummary.cpp - What a model holds and costs ---------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/Analysis/ModelSummary.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace kiln::graph;

int64_t kiln::graph::getTensorBytes(RankedTensorType type) {
  int64_t elementBytes = (type.getElementTypeBitWidth() + 7) / 8;
  return type.getNumElements() * elementBytes;
}

func::FuncOp kiln::graph::getForwardFunction(ModuleOp module) {
  return module.lookupSymbol<func::FuncOp>("forward");
}

static NamedTensor makeNamedTensor(StringRef name, Type type) {
  NamedTensor tensor;
  tensor.name = name.str();
  tensor.type = dyn_cast<RankedTensorType>(type);
  if (tensor.type) {
    tensor.elements = tensor.type.getNumElements();
    tensor.bytes = getTensorBytes(tensor.type);
  }
  return tensor;
}

FailureOr<ModelSummary> kiln::graph::summarizeModel(ModuleOp module) {
  func::FuncOp forward = getForwardFunction(module);
  if (!forward)
    return module.emitError("the module has no @forward function");

  ModelSummary summary;
  if (auto name = module->getAttrOfType<StringAttr>(GraphDialect::kModelAttr))
    summary.modelName = name.getValue().str();

  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i) {
    Type type = forward.getArgument(i).getType();
    if (auto name =
            forward.getArgAttrOfType<StringAttr>(i, GraphDialect::kParamAttr)) {
      summary.params.push_back(makeNamedTensor(name.getValue(), type));
      summary.paramCount += summary.params.back().elements;
      summary.paramBytes += summary.params.back().bytes;
    } else if (auto name = forward.getArgAttrOfType<StringAttr>(
                   i, GraphDialect::kInputAttr)) {
      summary.inputs.push_back(makeNamedTensor(name.getValue(), type));
    } else if (auto name = forward.getArgAttrOfType<StringAttr>(
                   i, GraphDialect::kStateAttr)) {
      summary.buffers.push_back(makeNamedTensor(name.getValue(), type));
    }
  }
  for (unsigned i = 0, e = forward.getNumResults(); i < e; ++i) {
    // A buffer's next value is no output.
    if (forward.getResultAttr(i, GraphDialect::kUpdateAttr))
      continue;
    auto name =
        forward.getResultAttrOfType<StringAttr>(i, GraphDialect::kOutputAttr);
    std::string outputName =
        name ? name.getValue().str() : llvm::formatv("result{0}", i).str();
    summary.outputs.push_back(
        makeNamedTensor(outputName, forward.getResultTypes()[i]));
    if (forward.getResultAttr(i, GraphDialect::kLossAttr))
      summary.lossName = outputName;
  }

  forward.walk([&](Operation *op) {
    if (!isa<GraphDialect>(op->getDialect()))
      return;
    ++summary.opCount;
    ++summary.opsByName[op->getName().getStringRef().str()];
    if (auto cost = dyn_cast<CostOpInterface>(op))
      summary.forwardFlops += cost.getFlops();
  });
  return summary;
}

/// 1234567 -> "1.23M": a count for people.
static std::string humanCount(int64_t value, StringRef unit = "") {
  const char *suffixes[] = {"", "K", "M", "G", "T", "P"};
  double scaled = static_cast<double>(value);
  unsigned index = 0;
  while (scaled >= 1000.0 && index + 1 < std::size(suffixes)) {
    scaled /= 1000.0;
    ++index;
  }
  if (index == 0)
    return llvm::formatv("{0}{1}", value, unit).str();
  return llvm::formatv("{0:f2}{1}{2}", scaled, suffixes[index], unit).str();
}

/// 1536 -> "1.50 KiB".
static std::string humanBytes(int64_t bytes) {
  const char *suffixes[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double scaled = static_cast<double>(bytes);
  unsigned index = 0;
  while (scaled >= 1024.0 && index + 1 < std::size(suffixes)) {
    scaled /= 1024.0;
    ++index;
  }
  if (index == 0)
    return llvm::formatv("{0} B", bytes).str();
  return llvm::formatv("{0:f2} {1}", scaled, suffixes[index]).str();
}

static std::string formatType(RankedTensorType type) {
  if (!type)
    return "?";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type.getElementType() << "[";
  llvm::interleaveComma(type.getShape(), os);
  os << "]";
  return text;
}

void ModelSummary::print(llvm::raw_ostream &os) const {
  os << "model " << (modelName.empty() ? "<unnamed>" : modelName) << "\n";
  os << llvm::formatv("  parameters: {0} ({1}) in {2} tensors, {3}\n",
                      paramCount, humanCount(paramCount), params.size(),
                      humanBytes(paramBytes));
  for (const NamedTensor &buffer : buffers)
    os << llvm::formatv("  buffer {0,-16} {1}\n", buffer.name,
                        formatType(buffer.type));
  for (const NamedTensor &input : inputs)
    os << llvm::formatv("  input  {0,-16} {1}\n", input.name,
                        formatType(input.type));
  for (const NamedTensor &output : outputs)
    os << llvm::formatv("  output {0,-16} {1}{2}\n", output.name,
                        formatType(output.type),
                        output.name == lossName ? "  (loss)" : "");
  os << llvm::formatv("  ops: {0}", opCount);
  StringRef separator = " (";
  for (const auto &[name, count] : opsByName) {
    os << separator << StringRef(name).drop_front(strlen("graph.")) << " "
       << count;
    separator = ", ";
  }
  os << (opsByName.empty() ? "" : ")") << "\n";
  os << llvm::formatv("  forward FLOPs: {0} ({1})\n", forwardFlops,
                      humanCount(forwardFlops, "FLOP"));
}

llvm::json::Value ModelSummary::toJSON() const {
  auto tensors = [](ArrayRef<NamedTensor> list) {
    llvm::json::Array array;
    for (const NamedTensor &tensor : list)
      array.push_back(llvm::json::Object{{"name", tensor.name},
                                         {"type", formatType(tensor.type)},
                                         {"bytes", tensor.bytes}});
    return array;
  };
  llvm::json::Object ops;
  for (const auto &[name, count] : opsByName)
    ops[name] = count;
  return llvm::json::Object{{"model", modelName},
                            {"params", paramCount},
                            {"param_bytes", paramBytes},
                            {"param_tensors", tensors(params)},
                            {"buffers", tensors(buffers)},
                            {"inputs", tensors(inputs)},
                            {"outputs", tensors(outputs)},
                            {"loss", lossName},
                            {"ops", opCount},
                            {"ops_by_name", std::move(ops)},
                            {"forward_flops", forwardFlops}};
}
