//===- Elementwise.cpp - Interpreting elementwise graph ops ---------------===//
//
// Part of Kiln. Constants, unary and binary math, and casts.
//
//===----------------------------------------------------------------------===//

#include "OpEvaluators.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <functional>
#include <limits>

using namespace mlir;
using namespace kiln;
using namespace kiln::interp;
using namespace kiln::interp::eval;

llvm::Expected<Tensor> eval::evaluateConstant(graph::ConstantOp op) {
  llvm::Expected<Tensor> value = Tensor::fromAttribute(op.getValue());
  if (!value)
    return makeOpError(op, llvm::toString(value.takeError()));
  if (!value->hasType(op.getType()))
    return makeOpError(op, "the value's type " + value->getTypeString() +
                               " differs from the result type");
  return value;
}

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

/// The scalar function a unary op applies, in storage type T.
template <typename T>
static std::function<T(T)> getUnaryFunction(Operation *op) {
  using Fn = std::function<T(T)>;
  return llvm::TypeSwitch<Operation *, Fn>(op)
      .Case([](graph::NegOp) -> Fn { return [](T x) { return -x; }; })
      .Case([](graph::ExpOp) -> Fn { return [](T x) { return std::exp(x); }; })
      .Case([](graph::LogOp) -> Fn { return [](T x) { return std::log(x); }; })
      .Case(
          [](graph::TanhOp) -> Fn { return [](T x) { return std::tanh(x); }; })
      .Case([](graph::AbsOp) -> Fn { return [](T x) { return std::fabs(x); }; })
      .Case([](graph::SinOp) -> Fn { return [](T x) { return std::sin(x); }; })
      .Case([](graph::CosOp) -> Fn { return [](T x) { return std::cos(x); }; })
      .Case([](graph::ErfOp) -> Fn { return [](T x) { return std::erf(x); }; })
      .Case([](graph::SigmoidOp) -> Fn {
        return [](T x) { return T(1) / (T(1) + std::exp(-x)); };
      })
      .Case([](graph::SiluOp) -> Fn {
        return [](T x) { return x / (T(1) + std::exp(-x)); };
      })
      .Case(
          [](graph::SqrtOp) -> Fn { return [](T x) { return std::sqrt(x); }; })
      .Case([](graph::RsqrtOp) -> Fn {
        return [](T x) { return T(1) / std::sqrt(x); };
      })
      .Case([](graph::ReluOp) -> Fn {
        // NaN propagates, as in the frameworks Kiln is compared with.
        return [](T x) { return std::isnan(x) || x > T(0) ? x : T(0); };
      })
      .Case([](graph::GeluOp) -> Fn {
        return [](T x) {
          const T sqrtTwoOverPi = T(0.7978845608028654);
          T inner = sqrtTwoOverPi * (x + T(0.044715) * x * x * x);
          return T(0.5) * x * (T(1) + std::tanh(inner));
        };
      })
      .Default([](Operation *) -> Fn { return nullptr; });
}

template <typename T>
static llvm::Error applyUnary(Operation *op, const Tensor &input,
                              Tensor &result) {
  std::function<T(T)> fn = getUnaryFunction<T>(op);
  if (!fn)
    return makeOpError(op, "is not a unary elementwise op");
  llvm::ArrayRef<T> in = input.data<T>();
  llvm::MutableArrayRef<T> out = result.data<T>();
  for (int64_t i = 0, e = input.getNumElements(); i < e; ++i)
    out[i] = fn(in[i]);
  return llvm::Error::success();
}

llvm::Expected<Tensor> eval::evaluateUnary(Operation *op, const Tensor &input) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (llvm::Error err = requireFloat(op, input, "operand"))
    return std::move(err);
  if (input.getShape() != result->getShape() ||
      input.getElementType() != result->getElementType())
    return makeOpError(op, "operand type " + input.getTypeString() +
                               " differs from the result type " +
                               result->getTypeString());
  llvm::Error err = dispatchFloat(input.getElementType(), [&](auto zero) {
    return applyUnary<decltype(zero)>(op, input, *result);
  });
  if (err)
    return std::move(err);
  result->roundToElementType();
  return result;
}

//===----------------------------------------------------------------------===//
// Binary ops
//===----------------------------------------------------------------------===//

template <typename T>
static std::function<T(T, T)> getBinaryFunction(Operation *op) {
  using Fn = std::function<T(T, T)>;
  return llvm::TypeSwitch<Operation *, Fn>(op)
      .Case([](graph::AddOp) -> Fn { return [](T a, T b) { return a + b; }; })
      .Case([](graph::SubOp) -> Fn { return [](T a, T b) { return a - b; }; })
      .Case([](graph::MulOp) -> Fn { return [](T a, T b) { return a * b; }; })
      .Case([](graph::DivOp) -> Fn { return [](T a, T b) { return a / b; }; })
      .Case([](graph::PowOp) -> Fn {
        return [](T a, T b) { return std::pow(a, b); };
      })
      // IEEE 754-2019 maximum and minimum: NaN propagates, -0 < +0.
      .Case([](graph::MaximumOp) -> Fn {
        return [](T a, T b) {
          if (std::isnan(a) || std::isnan(b))
            return std::numeric_limits<T>::quiet_NaN();
          if (a == b)
            return std::signbit(a) ? b : a;
          return a > b ? a : b;
        };
      })
      .Case([](graph::MinimumOp) -> Fn {
        return [](T a, T b) {
          if (std::isnan(a) || std::isnan(b))
            return std::numeric_limits<T>::quiet_NaN();
          if (a == b)
            return std::signbit(a) ? a : b;
          return a < b ? a : b;
        };
      })
      // Ordered comparisons: false on NaN, except `ne`.
      .Case([](graph::CompareOp compare) -> Fn {
        switch (compare.getPredicate()) {
        case graph::ComparePredicate::Lt:
          return [](T a, T b) { return T(a < b ? 1 : 0); };
        case graph::ComparePredicate::Le:
          return [](T a, T b) { return T(a <= b ? 1 : 0); };
        case graph::ComparePredicate::Gt:
          return [](T a, T b) { return T(a > b ? 1 : 0); };
        case graph::ComparePredicate::Ge:
          return [](T a, T b) { return T(a >= b ? 1 : 0); };
        case graph::ComparePredicate::Eq:
          return [](T a, T b) { return T(a == b ? 1 : 0); };
        case graph::ComparePredicate::Ne:
          return [](T a, T b) { return T(a != b ? 1 : 0); };
        }
        return nullptr;
      })
      .Default([](Operation *) -> Fn { return nullptr; });
}

template <typename T>
static llvm::Error applyBinary(Operation *op, const Tensor &lhs,
                               const Tensor &rhs, Tensor &result) {
  std::function<T(T, T)> fn = getBinaryFunction<T>(op);
  if (!fn)
    return makeOpError(op, "is not a binary elementwise op");
  llvm::ArrayRef<T> a = lhs.data<T>(), b = rhs.data<T>();
  llvm::MutableArrayRef<T> out = result.data<T>();
  for (int64_t i = 0, e = result.getNumElements(); i < e; ++i)
    out[i] = fn(a[i], b[i]);
  return llvm::Error::success();
}

llvm::Expected<Tensor> eval::evaluateBinary(Operation *op, const Tensor &lhs,
                                            const Tensor &rhs) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (llvm::Error err = requireFloat(op, lhs, "lhs"))
    return std::move(err);
  for (const Tensor *operand : {&lhs, &rhs})
    if (operand->getShape() != result->getShape() ||
        operand->getElementType() != result->getElementType())
      return makeOpError(op, "operand type " + operand->getTypeString() +
                                 " differs from the result type " +
                                 result->getTypeString() +
                                 " (broadcasting must be explicit)");
  llvm::Error err = dispatchFloat(result->getElementType(), [&](auto zero) {
    return applyBinary<decltype(zero)>(op, lhs, rhs, *result);
  });
  if (err)
    return std::move(err);
  result->roundToElementType();
  return result;
}

llvm::Expected<Tensor> eval::evaluateSelect(Operation *op,
                                            const Tensor &condition,
                                            const Tensor &onTrue,
                                            const Tensor &onFalse) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (llvm::Error err = requireFloat(op, condition, "condition"))
    return std::move(err);
  for (const Tensor *operand : {&condition, &onTrue, &onFalse})
    if (operand->getShape() != result->getShape() ||
        operand->getElementType() != result->getElementType())
      return makeOpError(op, "operand type " + operand->getTypeString() +
                                 " differs from the result type " +
                                 result->getTypeString());
  for (int64_t i = 0, e = result->getNumElements(); i < e; ++i) {
    double c = condition.getDouble(i);
    // A NaN condition is nonzero.
    result->setDouble(i, c != 0.0 ? onTrue.getDouble(i) : onFalse.getDouble(i));
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

/// `value` rounded once (to nearest even) to the float type `type`.
static double roundFloat(double value, ElementType type) {
  switch (type) {
  case ElementType::F64:
    return value;
  case ElementType::F32:
    return static_cast<float>(value);
  default: {
    bool losesInfo;
    llvm::APFloat rounded(value);
    rounded.convert(type == ElementType::F16 ? llvm::APFloat::IEEEhalf()
                                             : llvm::APFloat::BFloat(),
                    llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    return rounded.convertToDouble();
  }
  }
}

/// `value` converted to the float type `type`, rounded once.
static double intToFloat(int64_t value, ElementType type) {
  switch (type) {
  case ElementType::F64:
    return static_cast<double>(value);
  case ElementType::F32:
    return static_cast<float>(value);
  default: {
    llvm::APFloat converted(type == ElementType::F16 ? llvm::APFloat::IEEEhalf()
                                                     : llvm::APFloat::BFloat());
    converted.convertFromAPInt(llvm::APInt(64, value, /*isSigned=*/true),
                               /*IsSigned=*/true,
                               llvm::APFloat::rmNearestTiesToEven);
    return converted.convertToDouble();
  }
  }
}

llvm::Expected<Tensor> eval::evaluateCast(graph::CastOp op,
                                          const Tensor &input) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (input.getShape() != result->getShape())
    return makeOpError(op, "changes the shape from " + input.getTypeString() +
                               " to " + result->getTypeString());
  ElementType from = input.getElementType();
  ElementType to = result->getElementType();
  for (int64_t i = 0, e = input.getNumElements(); i < e; ++i) {
    if (isFloat(from) && isFloat(to)) {
      result->setDouble(i, roundFloat(input.getDouble(i), to));
    } else if (isFloat(from)) {
      // Float to integer truncates toward zero; NaN and out-of-range values
      // have no integer and are an error rather than undefined behaviour.
      double value = std::trunc(input.getDouble(i));
      double limit =
          to == ElementType::I32 ? 2147483648.0 : 9223372036854775808.0;
      if (std::isnan(value) || value >= limit || value < -limit)
        return makeOpError(op, "element " + llvm::Twine(i) + " (" +
                                   std::to_string(input.getDouble(i)) +
                                   ") does not fit in " +
                                   getElementTypeName(to));
      result->setInt(i, static_cast<int64_t>(value));
    } else if (isFloat(to)) {
      result->setDouble(i, intToFloat(input.getInt(i), to));
    } else {
      // Integer to integer: i64 -> i32 keeps the low 32 bits (two's
      // complement wrap), i32 -> i64 sign-extends.
      int64_t value = input.getInt(i);
      if (to == ElementType::I32)
        value = static_cast<int32_t>(static_cast<uint32_t>(value));
      result->setInt(i, value);
    }
  }
  return result;
}
