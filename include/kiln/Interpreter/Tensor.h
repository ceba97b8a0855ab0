//===- Tensor.h - Dense host tensors of the interpreter ---------*- C++ -*-===//
//
// Part of Kiln. The values the reference interpreter computes with: a shape,
// an element type and a dense row-major buffer on the host.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_INTERPRETER_TENSOR_H
#define KILN_INTERPRETER_TENSOR_H

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace kiln::interp {

/// The element types the interpreter computes with. F16 and BF16 are stored
/// as floats that hold exactly representable values: ops compute in float and
/// round every result element to the type once (round to nearest even).
enum class ElementType { F16, BF16, F32, F64, I32, I64 };

/// The interpreter's element type of an MLIR type, or nullopt if unsupported.
std::optional<ElementType> getElementType(mlir::Type type);
/// The MLIR type of an element type.
mlir::Type getMLIRType(ElementType type, mlir::MLIRContext *context);
/// The type's name as MLIR spells it ("f32", "i64", ...).
llvm::StringRef getElementTypeName(ElementType type);
/// Whether the type is a floating-point type.
bool isFloat(ElementType type);

/// Rounds a float to the nearest f16 or bf16 value (ties to even), returned
/// as a float. Other types return the value unchanged.
float roundToElementType(float value, ElementType type);

/// The storage of each element type: F16, BF16 and F32 are stored as float,
/// F64 as double, I32 as int32_t and I64 as int64_t.
template <typename T> bool storesAs(ElementType type) {
  if constexpr (std::is_same_v<T, float>)
    return type == ElementType::F16 || type == ElementType::BF16 ||
           type == ElementType::F32;
  else if constexpr (std::is_same_v<T, double>)
    return type == ElementType::F64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return type == ElementType::I32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return type == ElementType::I64;
  else
    return false;
}

/// A dense, row-major tensor with value semantics.
class Tensor {
public:
  Tensor() = default;
  /// A tensor of `shape` filled with zeros.
  Tensor(ElementType type, llvm::ArrayRef<int64_t> shape);

  /// A tensor from values given as doubles (rounded to the element type;
  /// integers are converted exactly when representable).
  static Tensor fromDoubles(ElementType type, llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<double> values);
  /// A tensor from int64 values (for integer types).
  static Tensor fromInts(ElementType type, llvm::ArrayRef<int64_t> shape,
                         llvm::ArrayRef<int64_t> values);
  /// A tensor holding the values of a dense elements attribute.
  static llvm::Expected<Tensor> fromAttribute(mlir::ElementsAttr attr);
  /// A tensor of the given MLIR type filled with zeros.
  static llvm::Expected<Tensor> zeros(mlir::RankedTensorType type);

  ElementType getElementType() const { return elementType; }
  llvm::ArrayRef<int64_t> getShape() const { return shape; }
  int64_t getRank() const { return static_cast<int64_t>(shape.size()); }
  int64_t getNumElements() const { return numElements; }
  /// Row-major strides, in elements.
  llvm::SmallVector<int64_t> getStrides() const;
  /// Whether the tensor has the shape and element type of `type`.
  bool hasType(mlir::RankedTensorType type) const;
  /// A readable description, e.g. "tensor<2x3xf32>".
  std::string getTypeString() const;

  /// The elements as their storage type T (see storesAs).
  template <typename T> llvm::MutableArrayRef<T> data();
  template <typename T> llvm::ArrayRef<T> data() const;

  /// Element `index` (row-major) converted to double / int64.
  double getDouble(int64_t index) const;
  int64_t getInt(int64_t index) const;
  /// Sets element `index`, converting and rounding to the element type.
  void setDouble(int64_t index, double value);
  void setInt(int64_t index, int64_t value);

  /// Rounds every element to the element type (a no-op except for F16 and
  /// BF16, whose values are computed in float).
  void roundToElementType();

  /// The same data seen with another shape of equal element count.
  Tensor reshaped(llvm::ArrayRef<int64_t> newShape) const;

private:
  template <typename T> std::vector<T> &storage() {
    assert(storesAs<T>(elementType) && "tensor accessed as the wrong type");
    if constexpr (std::is_same_v<T, float>)
      return floats;
    else if constexpr (std::is_same_v<T, double>)
      return doubles;
    else if constexpr (std::is_same_v<T, int32_t>)
      return int32s;
    else
      return int64s;
  }

  ElementType elementType = ElementType::F32;
  llvm::SmallVector<int64_t, 4> shape;
  int64_t numElements = 1;
  std::vector<float> floats;
  std::vector<double> doubles;
  std::vector<int32_t> int32s;
  std::vector<int64_t> int64s;
};

template <typename T> llvm::MutableArrayRef<T> Tensor::data() {
  return storage<T>();
}
template <typename T> llvm::ArrayRef<T> Tensor::data() const {
  return const_cast<Tensor *>(this)->storage<T>();
}

/// The row-major linear index of a multi-index under `strides`.
int64_t linearize(llvm::ArrayRef<int64_t> index,
                  llvm::ArrayRef<int64_t> strides);
/// The multi-index of a row-major linear index in `shape`.
void delinearize(int64_t linear, llvm::ArrayRef<int64_t> shape,
                 llvm::SmallVectorImpl<int64_t> &index);
/// Row-major strides of `shape`.
llvm::SmallVector<int64_t> computeStrides(llvm::ArrayRef<int64_t> shape);
/// The product of the dims.
int64_t computeNumElements(llvm::ArrayRef<int64_t> shape);

} // namespace kiln::interp

#endif // KILN_INTERPRETER_TENSOR_H
