//===- Tensor.cpp - Dense host tensors of the interpreter -----------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Interpreter/Tensor.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace kiln::interp;

std::optional<ElementType> kiln::interp::getElementType(Type type) {
  if (type.isF16())
    return ElementType::F16;
  if (type.isBF16())
    return ElementType::BF16;
  if (type.isF32())
    return ElementType::F32;
  if (type.isF64())
    return ElementType::F64;
  if (type.isSignlessInteger(32) || type.isSignedInteger(32))
    return ElementType::I32;
  if (type.isSignlessInteger(64) || type.isSignedInteger(64))
    return ElementType::I64;
  return std::nullopt;
}

Type kiln::interp::getMLIRType(ElementType type, MLIRContext *context) {
  Builder builder(context);
  switch (type) {
  case ElementType::F16:
    return builder.getF16Type();
  case ElementType::BF16:
    return builder.getBF16Type();
  case ElementType::F32:
    return builder.getF32Type();
  case ElementType::F64:
    return builder.getF64Type();
  case ElementType::I32:
    return builder.getI32Type();
  case ElementType::I64:
    return builder.getI64Type();
  }
  llvm_unreachable("unknown element type");
}

llvm::StringRef kiln::interp::getElementTypeName(ElementType type) {
  switch (type) {
  case ElementType::F16:
    return "f16";
  case ElementType::BF16:
    return "bf16";
  case ElementType::F32:
    return "f32";
  case ElementType::F64:
    return "f64";
  case ElementType::I32:
    return "i32";
  case ElementType::I64:
    return "i64";
  }
  llvm_unreachable("unknown element type");
}

bool kiln::interp::isFloat(ElementType type) {
  return type != ElementType::I32 && type != ElementType::I64;
}

float kiln::interp::roundToElementType(float value, ElementType type) {
  if (type != ElementType::F16 && type != ElementType::BF16)
    return value;
  bool losesInfo;
  llvm::APFloat rounded(value);
  rounded.convert(type == ElementType::F16 ? llvm::APFloat::IEEEhalf()
                                           : llvm::APFloat::BFloat(),
                  llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  // Widening back to single precision is exact.
  rounded.convert(llvm::APFloat::IEEEsingle(),
                  llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return rounded.convertToFloat();
}

//===----------------------------------------------------------------------===//
// Index helpers
//===----------------------------------------------------------------------===//

int64_t kiln::interp::computeNumElements(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

llvm::SmallVector<int64_t>
kiln::interp::computeStrides(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

int64_t kiln::interp::linearize(llvm::ArrayRef<int64_t> index,
                                llvm::ArrayRef<int64_t> strides) {
  int64_t linear = 0;
  for (auto [i, stride] : llvm::zip_equal(index, strides))
    linear += i * stride;
  return linear;
}

void kiln::interp::delinearize(int64_t linear, llvm::ArrayRef<int64_t> shape,
                               llvm::SmallVectorImpl<int64_t> &index) {
  index.resize(shape.size());
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    index[i] = shape[i] == 0 ? 0 : linear % shape[i];
    linear = shape[i] == 0 ? 0 : linear / shape[i];
  }
}

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

Tensor::Tensor(ElementType type, llvm::ArrayRef<int64_t> shape)
    : elementType(type), shape(shape.begin(), shape.end()),
      numElements(computeNumElements(shape)) {
  switch (type) {
  case ElementType::F16:
  case ElementType::BF16:
  case ElementType::F32:
    floats.assign(numElements, 0.0f);
    break;
  case ElementType::F64:
    doubles.assign(numElements, 0.0);
    break;
  case ElementType::I32:
    int32s.assign(numElements, 0);
    break;
  case ElementType::I64:
    int64s.assign(numElements, 0);
    break;
  }
}

Tensor Tensor::fromDoubles(ElementType type, llvm::ArrayRef<int64_t> shape,
                           llvm::ArrayRef<double> values) {
  Tensor tensor(type, shape);
  assert(static_cast<int64_t>(values.size()) == tensor.numElements &&
         "value count does not match the shape");
  for (auto [i, value] : llvm::enumerate(values))
    tensor.setDouble(i, value);
  return tensor;
}

Tensor Tensor::fromInts(ElementType type, llvm::ArrayRef<int64_t> shape,
                        llvm::ArrayRef<int64_t> values) {
  Tensor tensor(type, shape);
  assert(static_cast<int64_t>(values.size()) == tensor.numElements &&
         "value count does not match the shape");
  for (auto [i, value] : llvm::enumerate(values))
    tensor.setInt(i, value);
  return tensor;
}

llvm::Expected<Tensor> Tensor::zeros(RankedTensorType type) {
  std::optional<ElementType> elementType =
      kiln::interp::getElementType(type.getElementType());
  if (!elementType) {
    std::string name;
    llvm::raw_string_ostream os(name);
    os << type.getElementType();
    return llvm::createStringError("unsupported element type " + name +
                                   " (the interpreter supports f16, bf16, "
                                   "f32, f64, i32 and i64)");
  }
  return Tensor(*elementType, type.getShape());
}

llvm::Expected<Tensor> Tensor::fromAttribute(ElementsAttr attr) {
  auto dense = llvm::dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return llvm::createStringError(
        "only dense elements attributes are supported as constants");
  auto type = llvm::cast<RankedTensorType>(dense.getType());
  llvm::Expected<Tensor> tensor = zeros(type);
  if (!tensor)
    return tensor.takeError();
  int64_t index = 0;
  if (isFloat(tensor->getElementType())) {
    for (llvm::APFloat value : dense.getValues<llvm::APFloat>()) {
      bool losesInfo;
      value.convert(llvm::APFloat::IEEEdouble(),
                    llvm::APFloat::rmNearestTiesToEven, &losesInfo);
      tensor->setDouble(index++, value.convertToDouble());
    }
  } else {
    for (const llvm::APInt &value : dense.getValues<llvm::APInt>())
      tensor->setInt(index++, value.getSExtValue());
  }
  return tensor;
}

llvm::SmallVector<int64_t> Tensor::getStrides() const {
  return computeStrides(shape);
}

bool Tensor::hasType(RankedTensorType type) const {
  return kiln::interp::getElementType(type.getElementType()) == elementType &&
         type.getShape() == llvm::ArrayRef<int64_t>(shape);
}

std::string Tensor::getTypeString() const {
  std::string text = "tensor<";
  for (int64_t dim : shape)
    text += std::to_string(dim) + "x";
  text += getElementTypeName(elementType).str() + ">";
  return text;
}

double Tensor::getDouble(int64_t index) const {
  switch (elementType) {
  case ElementType::F16:
  case ElementType::BF16:
  case ElementType::F32:
    return floats[index];
  case ElementType::F64:
    return doubles[index];
  case ElementType::I32:
    return int32s[index];
  case ElementType::I64:
    return static_cast<double>(int64s[index]);
  }
  llvm_unreachable("unknown element type");
}

int64_t Tensor::getInt(int64_t index) const {
  switch (elementType) {
  case ElementType::I32:
    return int32s[index];
  case ElementType::I64:
    return int64s[index];
  default:
    return static_cast<int64_t>(getDouble(index));
  }
}

void Tensor::setDouble(int64_t index, double value) {
  switch (elementType) {
  case ElementType::F16:
  case ElementType::BF16:
  case ElementType::F32:
    floats[index] = kiln::interp::roundToElementType(static_cast<float>(value),
                                                     elementType);
    return;
  case ElementType::F64:
    doubles[index] = value;
    return;
  case ElementType::I32:
  case ElementType::I64:
    setInt(index, static_cast<int64_t>(value));
    return;
  }
}

void Tensor::setInt(int64_t index, int64_t value) {
  switch (elementType) {
  case ElementType::I32:
    int32s[index] = static_cast<int32_t>(value);
    return;
  case ElementType::I64:
    int64s[index] = value;
    return;
  default:
    setDouble(index, static_cast<double>(value));
    return;
  }
}

void Tensor::roundToElementType() {
  if (elementType != ElementType::F16 && elementType != ElementType::BF16)
    return;
  for (float &value : floats)
    value = kiln::interp::roundToElementType(value, elementType);
}

Tensor Tensor::reshaped(llvm::ArrayRef<int64_t> newShape) const {
  assert(computeNumElements(newShape) == numElements &&
         "reshape changes the element count");
  Tensor result = *this;
  result.shape.assign(newShape.begin(), newShape.end());
  return result;
}
