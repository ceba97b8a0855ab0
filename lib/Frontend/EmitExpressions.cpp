//===- EmitExpressions.cpp - Expressions of a model to graph IR -----------===//
//
// Part of Kiln. Names, literals, arithmetic with NumPy broadcasting, and
// integer dim arithmetic (checked for overflow and inexact division).
//
//===----------------------------------------------------------------------===//

#include "ModelEmitter.h"

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/IR/GraphShapes.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace kiln;
using namespace kiln::frontend;
using llvm::SMLoc;
using llvm::StringRef;

FailureOr<EvalValue> ModelEmitter::evaluate(const ast::Expr &expr) {
  using Result = FailureOr<EvalValue>;
  return llvm::TypeSwitch<const ast::Expr *, Result>(&expr)
      .Case([&](const ast::IntegerExpr *e) -> Result {
        return EvalValue::ofInt(e->getValue(), e->getLoc());
      })
      .Case([&](const ast::FloatExpr *e) -> Result {
        return EvalValue::ofFloat(e->getValue(), e->getLoc());
      })
      .Case([&](const ast::BoolExpr *e) -> Result {
        EvalValue value;
        value.kind = EvalValue::Kind::Bool;
        value.boolValue = e->getValue();
        value.origin = e->getLoc();
        return value;
      })
      .Case([&](const ast::SizeExpr *e) -> Result {
        EvalValue value = EvalValue::ofInt(e->getBytes(), e->getLoc());
        value.kind = EvalValue::Kind::Size;
        return value;
      })
      .Case([&](const ast::NameExpr *e) -> Result {
        StringRef name = e->getName();
        if (const EvalValue *value = lookup(name))
          return *value;
        // Its statement failed and was reported: fail quietly (before the
        // dims: a failed `input B` must not read as the dim B).
        if (isPoisoned(name))
          return failure();
        auto dim = dims.find(name);
        if (dim != dims.end())
          return EvalValue::ofInt(dim->second, e->getLoc());
        // An unbound word: meaningful only where a keyword is expected
        // (`cast(x, bf16)`, `precision = bf16`); callers check.
        EvalValue value;
        value.kind = EvalValue::Kind::Word;
        value.word = name;
        value.origin = e->getLoc();
        return value;
      })
      .Case([&](const ast::UnaryExpr *e) -> Result {
        FailureOr<EvalValue> operand = evaluate(e->getOperand());
        if (failed(operand))
          return failure();
        switch (operand->kind) {
        case EvalValue::Kind::Int:
          if (operand->intValue == INT64_MIN)
            return error(e->getLoc(), "integer overflow in negation");
          return EvalValue::ofInt(-operand->intValue, e->getLoc());
        case EvalValue::Kind::Float:
          return EvalValue::ofFloat(-operand->floatValue, e->getLoc());
        case EvalValue::Kind::Tensor: {
          if (!isa<FloatType>(operand->getTensorType().getElementType()))
            return error(e->getLoc(), "cannot negate " + operand->describe());
          if (failed(countOp(e->getLoc())))
            return failure();
          Value result = graph::NegOp::create(builder, getLoc(e->getLoc()),
                                              operand->tensor);
          return EvalValue::ofTensor(result, e->getLoc());
        }
        default:
          return error(e->getLoc(), "cannot negate " + operand->describe());
        }
      })
      .Case([&](const ast::BinaryExpr *e) -> Result {
        FailureOr<EvalValue> lhs = evaluate(e->getLhs());
        if (failed(lhs))
          return failure();
        FailureOr<EvalValue> rhs = evaluate(e->getRhs());
        if (failed(rhs))
          return failure();
        return emitBinary(e->getOp(), e->getLoc(), *lhs, *rhs);
      })
      .Case([&](const ast::CallExpr *e) { return emitCall(*e); })
      .Case([&](const ast::ListExpr *e) -> Result {
        EvalValue list;
        list.kind = EvalValue::Kind::List;
        list.origin = e->getLoc();
        for (const ast::ExprPtr &element : e->getElements()) {
          FailureOr<EvalValue> value = evaluate(*element);
          if (failed(value))
            return failure();
          list.elements.push_back(*value);
        }
        return list;
      })
      .Case([&](const ast::TupleExpr *e) -> Result {
        EvalValue tuple;
        tuple.kind = EvalValue::Kind::Tuple;
        tuple.origin = e->getLoc();
        for (const ast::ExprPtr &element : e->getElements()) {
          FailureOr<EvalValue> value = evaluate(*element);
          if (failed(value))
            return failure();
          tuple.elements.push_back(*value);
        }
        return tuple;
      })
      .Default([&](const ast::Expr *e) -> Result {
        return error(e->getLoc(), "unsupported expression");
      });
}

/// Reports an unbound word where a value was needed, with a suggestion.
static LogicalResult reportUnknownName(ModelEmitter &emitter,
                                       const EvalValue &value) {
  std::vector<StringRef> names = emitter.namesInScope();
  return emitter.error(value.origin, "unknown name '" + value.word + "'" +
                                         didYouMean(value.word, names));
}

FailureOr<EvalValue> ModelEmitter::evaluateTensor(const ast::Expr &expr,
                                                  StringRef what) {
  FailureOr<EvalValue> value = evaluate(expr);
  if (failed(value))
    return failure();
  if (value->isTensor())
    return value;
  if (value->kind == EvalValue::Kind::Word)
    return reportUnknownName(*this, *value);
  return error(expr.getLoc(),
               "expected a tensor for " + what + ", got " + value->describe());
}

FailureOr<int64_t> ModelEmitter::evaluateInt(const ast::Expr &expr,
                                             StringRef what) {
  FailureOr<EvalValue> value = evaluate(expr);
  if (failed(value))
    return failure();
  if (value->kind == EvalValue::Kind::Int)
    return value->intValue;
  if (value->kind == EvalValue::Kind::Word)
    return reportUnknownName(*this, *value);
  return error(expr.getLoc(), "expected an integer for " + what + ", got " +
                                  value->describe());
}

FailureOr<SmallVector<int64_t>>
ModelEmitter::evaluateIntList(const ast::Expr &expr, StringRef what) {
  FailureOr<EvalValue> value = evaluate(expr);
  if (failed(value))
    return failure();
  if (value->kind == EvalValue::Kind::Int)
    return SmallVector<int64_t>{value->intValue};
  if (value->kind == EvalValue::Kind::Word)
    return reportUnknownName(*this, *value);
  if (value->kind != EvalValue::Kind::List &&
      value->kind != EvalValue::Kind::Tuple)
    return error(expr.getLoc(), "expected a list of integers for " + what +
                                    ", got " + value->describe());
  SmallVector<int64_t> list;
  for (const EvalValue &element : value->elements) {
    if (element.kind != EvalValue::Kind::Int)
      return error(element.origin.isValid() ? element.origin : expr.getLoc(),
                   "expected an integer in " + what + ", got " +
                       element.describe());
    list.push_back(element.intValue);
  }
  return list;
}

std::optional<std::string> kiln::frontend::describeMisfit(double number,
                                                          FloatType type) {
  if (!std::isfinite(number))
    return std::nullopt;
  llvm::APFloat value(number);
  bool losesInfo = false;
  llvm::APFloat::opStatus status = value.convert(
      type.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  llvm::APFloat largest = llvm::APFloat::getLargest(type.getFloatSemantics());
  std::string typeName = llvm::formatv("{0}", Type(type)).str();
  char written[32];
  std::snprintf(written, sizeof(written), "%g", number);
  if ((status & llvm::APFloat::opOverflow) || value.isInfinity())
    return llvm::formatv("the number {0} does not fit {1}: its largest "
                         "finite value is {2:e2}",
                         written, typeName, largest.convertToDouble())
        .str();
  if (number != 0.0 && value.isZero())
    return llvm::formatv("the number {0} is too small for {1}: it would "
                         "round to zero",
                         written, typeName)
        .str();
  return std::nullopt;
}

FailureOr<EvalValue> ModelEmitter::materializeScalar(const EvalValue &number,
                                                     RankedTensorType like,
                                                     SMLoc loc) {
  auto floatType = dyn_cast<FloatType>(like.getElementType());
  if (!floatType)
    return error(loc, "cannot combine a number with a tensor of " +
                          llvm::formatv("{0}", like.getElementType()).str() +
                          " elements");
  if (std::optional<std::string> problem =
          describeMisfit(number.asDouble(), floatType))
    return error(number.origin.isValid() ? number.origin : loc, *problem);
  if (failed(countOp(loc)))
    return failure();
  auto attr = DenseElementsAttr::get(
      like, builder.getFloatAttr(floatType, number.asDouble()));
  Value constant = graph::ConstantOp::create(builder, getLoc(loc), attr);
  return EvalValue::ofTensor(constant, number.origin);
}

Value ModelEmitter::broadcastTo(Value tensor, ArrayRef<int64_t> shape,
                                Location loc) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (type.getShape() == shape)
    return tensor;
  ++emittedOps;
  return graph::BroadcastOp::create(
      builder, loc, RankedTensorType::get(shape, type.getElementType()),
      tensor);
}

/// Integer arithmetic on dims and loop variables, checked.
static FailureOr<int64_t> foldIntegers(ModelEmitter &emitter, ast::BinaryOp op,
                                       SMLoc loc, int64_t lhs, int64_t rhs) {
  int64_t result = 0;
  bool overflow = false;
  switch (op) {
  case ast::BinaryOp::Add:
    overflow = __builtin_add_overflow(lhs, rhs, &result);
    break;
  case ast::BinaryOp::Sub:
    overflow = __builtin_sub_overflow(lhs, rhs, &result);
    break;
  case ast::BinaryOp::Mul:
    overflow = __builtin_mul_overflow(lhs, rhs, &result);
    break;
  case ast::BinaryOp::Div:
    if (rhs == 0)
      return emitter.error(loc, "division by zero");
    if (lhs % rhs != 0)
      return emitter.error(loc, llvm::formatv("{0} / {1} is not a whole "
                                              "number; dims must divide "
                                              "exactly",
                                              lhs, rhs));
    if (lhs == INT64_MIN && rhs == -1)
      overflow = true;
    else
      result = lhs / rhs;
    break;
  case ast::BinaryOp::Pow: {
    if (rhs < 0)
      return emitter.error(loc, "negative integer exponent");
    result = 1;
    for (int64_t i = 0; i < rhs && !overflow; ++i)
      overflow = __builtin_mul_overflow(result, lhs, &result);
    break;
  }
  case ast::BinaryOp::Maximum:
    result = std::max(lhs, rhs);
    break;
  case ast::BinaryOp::Minimum:
    result = std::min(lhs, rhs);
    break;
  case ast::BinaryOp::MatMul:
    return emitter.error(loc, "'@' needs two tensors, got integers");
  default:
    llvm_unreachable("comparisons of numbers are refused before folding");
  }
  if (overflow)
    return emitter.error(loc, "integer overflow");
  return result;
}

static double foldFloats(ast::BinaryOp op, double lhs, double rhs) {
  switch (op) {
  case ast::BinaryOp::Add:
    return lhs + rhs;
  case ast::BinaryOp::Sub:
    return lhs - rhs;
  case ast::BinaryOp::Mul:
    return lhs * rhs;
  case ast::BinaryOp::Div:
    return lhs / rhs;
  case ast::BinaryOp::Pow:
    return std::pow(lhs, rhs);
  case ast::BinaryOp::Maximum:
    return std::isnan(lhs) || std::isnan(rhs) ? NAN : std::max(lhs, rhs);
  case ast::BinaryOp::Minimum:
    return std::isnan(lhs) || std::isnan(rhs) ? NAN : std::min(lhs, rhs);
  default:
    break;
  }
  return 0.0;
}

static graph::ComparePredicate getComparePredicate(ast::BinaryOp op) {
  switch (op) {
  case ast::BinaryOp::Less:
    return graph::ComparePredicate::Lt;
  case ast::BinaryOp::LessEqual:
    return graph::ComparePredicate::Le;
  case ast::BinaryOp::Greater:
    return graph::ComparePredicate::Gt;
  case ast::BinaryOp::GreaterEqual:
    return graph::ComparePredicate::Ge;
  case ast::BinaryOp::Equal:
    return graph::ComparePredicate::Eq;
  default:
    return graph::ComparePredicate::Ne;
  }
}

FailureOr<EvalValue> ModelEmitter::emitBinary(ast::BinaryOp op, SMLoc opLoc,
                                              EvalValue lhs, EvalValue rhs) {
  StringRef spelling = ast::getBinaryOpSpelling(op);
  for (const EvalValue *operand : {&lhs, &rhs})
    if (operand->kind == EvalValue::Kind::Word)
      return reportUnknownName(*this, *operand);

  // A comparison makes a mask tensor: one side at least must be a tensor.
  if (ast::isComparison(op) && lhs.isNumber() && rhs.isNumber())
    return error(opLoc, "'" + spelling +
                            "' compares tensors elementwise; both sides are "
                            "numbers here");

  // Numbers fold at compile time; integers stay integers (dim arithmetic).
  if (lhs.isNumber() && rhs.isNumber() && op != ast::BinaryOp::MatMul) {
    if (lhs.kind == EvalValue::Kind::Int && rhs.kind == EvalValue::Kind::Int) {
      FailureOr<int64_t> value =
          foldIntegers(*this, op, opLoc, lhs.intValue, rhs.intValue);
      if (failed(value))
        return failure();
      return EvalValue::ofInt(*value, opLoc);
    }
    return EvalValue::ofFloat(foldFloats(op, lhs.asDouble(), rhs.asDouble()),
                              opLoc);
  }

  // A std::string, not a Twine: a Twine would point into the temporaries of
  // this return statement, which are gone by the time it is printed.
  auto describeBoth = [&]() -> std::string {
    return lhs.describe() + " " + spelling.str() + " " + rhs.describe();
  };
  if (!(lhs.isTensor() || lhs.isNumber()) ||
      !(rhs.isTensor() || rhs.isNumber()))
    return error(opLoc, "unsupported operands: " + describeBoth());

  if (op == ast::BinaryOp::MatMul) {
    if (!lhs.isTensor() || !rhs.isTensor())
      return error(opLoc, "'@' needs two tensors, got " + describeBoth());
    std::string message;
    RankedTensorType lhsType = lhs.getTensorType(),
                     rhsType = rhs.getTensorType();
    if (lhsType.getElementType() != rhsType.getElementType()) {
      (void)error(opLoc,
                  "matmul operands differ in element type: " + describeBoth());
      noteOrigin(lhs, "lhs");
      noteOrigin(rhs, "rhs");
      return failure();
    }
    FailureOr<SmallVector<int64_t>> shape = graph::inferMatmulShape(
        lhsType.getShape(), rhsType.getShape(),
        /*transposeLhs=*/false, /*transposeRhs=*/false, message);
    if (failed(shape)) {
      (void)error(opLoc, message);
      noteOrigin(lhs, "lhs");
      noteOrigin(rhs, "rhs");
      return failure();
    }
    if (failed(countOp(opLoc)))
      return failure();
    Value result = graph::MatmulOp::create(
        builder, getLoc(opLoc),
        RankedTensorType::get(*shape, lhsType.getElementType()), lhs.tensor,
        rhs.tensor);
    return EvalValue::ofTensor(result, opLoc);
  }

  // A number next to a tensor becomes a splat constant of the tensor's type.
  if (!lhs.isTensor()) {
    FailureOr<EvalValue> splat =
        materializeScalar(lhs, rhs.getTensorType(), opLoc);
    if (failed(splat))
      return failure();
    lhs = *splat;
  }
  if (!rhs.isTensor()) {
    FailureOr<EvalValue> splat =
        materializeScalar(rhs, lhs.getTensorType(), opLoc);
    if (failed(splat))
      return failure();
    rhs = *splat;
  }
  RankedTensorType lhsType = lhs.getTensorType(), rhsType = rhs.getTensorType();
  if (lhsType.getElementType() != rhsType.getElementType() ||
      !isa<FloatType>(lhsType.getElementType())) {
    (void)error(opLoc, "'" + spelling +
                           "' needs floating-point tensors of one "
                           "element type, got " +
                           describeBoth() + "; convert one with cast(x, TYPE)");
    noteOrigin(lhs, "lhs");
    noteOrigin(rhs, "rhs");
    return failure();
  }
  std::string message;
  FailureOr<SmallVector<int64_t>> shape = graph::inferBroadcastShape(
      lhsType.getShape(), rhsType.getShape(), message);
  if (failed(shape)) {
    (void)error(opLoc, "cannot broadcast " + describeBoth() + ": " + message);
    noteOrigin(lhs, "lhs");
    noteOrigin(rhs, "rhs");
    return failure();
  }
  if (failed(countOp(opLoc)))
    return failure();
  Location loc = getLoc(opLoc);
  Value lhsValue = broadcastTo(lhs.tensor, *shape, loc);
  Value rhsValue = broadcastTo(rhs.tensor, *shape, loc);
  Value result;
  switch (op) {
  case ast::BinaryOp::Add:
    result = graph::AddOp::create(builder, loc, lhsValue, rhsValue);
    break;
  case ast::BinaryOp::Sub:
    result = graph::SubOp::create(builder, loc, lhsValue, rhsValue);
    break;
  case ast::BinaryOp::Mul:
    result = graph::MulOp::create(builder, loc, lhsValue, rhsValue);
    break;
  case ast::BinaryOp::Div:
    result = graph::DivOp::create(builder, loc, lhsValue, rhsValue);
    break;
  case ast::BinaryOp::Pow:
    result = graph::PowOp::create(builder, loc, lhsValue, rhsValue);
    break;
  case ast::BinaryOp::Maximum:
    result = graph::MaximumOp::create(builder, loc, lhsValue, rhsValue);
    break;
  case ast::BinaryOp::Minimum:
    result = graph::MinimumOp::create(builder, loc, lhsValue, rhsValue);
    break;
  case ast::BinaryOp::MatMul:
    llvm_unreachable("handled above");
  case ast::BinaryOp::Less:
  case ast::BinaryOp::LessEqual:
  case ast::BinaryOp::Greater:
  case ast::BinaryOp::GreaterEqual:
  case ast::BinaryOp::Equal:
  case ast::BinaryOp::NotEqual:
    result = graph::CompareOp::create(builder, loc, getComparePredicate(op),
                                      lhsValue, rhsValue);
    break;
  }
  return EvalValue::ofTensor(result, opLoc);
}
