//===- GraphVJPElementwise.cpp - VJPs of the elementwise ops --------------===//
//
// Part of Kiln. DifferentiableOpInterface of constants, the unary and binary
// elementwise ops, casts and dropout. Each VJP is written from the op's
// derivative, reusing the forward's result where that is cheaper (exp, tanh,
// sqrt, rsqrt, div, pow); relu and gelu use their gradient ops.
//
// Every elementwise operand has the result's type (the front end makes
// broadcasting explicit), so no VJP here needs to reduce.
//
//===----------------------------------------------------------------------===//

#include "GraphVJPUtils.h"

using namespace mlir;
using namespace kiln::graph;
using namespace kiln::graph::vjp;

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::buildVJP(OpBuilder &, ArrayRef<Value>,
                                   SmallVectorImpl<Value> &) {
  return success(); // No operands.
}

//===----------------------------------------------------------------------===//
// Unary ops: dx = dy * f'(x)
//===----------------------------------------------------------------------===//

LogicalResult NegOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                              SmallVectorImpl<Value> &operandCotangents) {
  operandCotangents.push_back(
      NegOp::create(builder, getLoc(), getType(), cotangents[0]));
  return success();
}

LogicalResult ExpOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                              SmallVectorImpl<Value> &operandCotangents) {
  // d exp(x) = exp(x): reuse the result.
  operandCotangents.push_back(
      MulOp::create(builder, getLoc(), getType(), cotangents[0], getResult()));
  return success();
}

LogicalResult LogOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                              SmallVectorImpl<Value> &operandCotangents) {
  operandCotangents.push_back(
      DivOp::create(builder, getLoc(), getType(), cotangents[0], getInput()));
  return success();
}

LogicalResult TanhOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                               SmallVectorImpl<Value> &operandCotangents) {
  // d tanh(x) = 1 - tanh(x)^2.
  Location loc = getLoc();
  Type type = getType();
  Value square = MulOp::create(builder, loc, type, getResult(), getResult());
  Value one = buildSplat(builder, loc, getType(), 1.0);
  Value slope = SubOp::create(builder, loc, type, one, square);
  operandCotangents.push_back(
      MulOp::create(builder, loc, type, cotangents[0], slope));
  return success();
}

LogicalResult AbsOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                              SmallVectorImpl<Value> &operandCotangents) {
  // d |x| = sign(x), 0 at 0 (as PyTorch and JAX): dy where x > 0, -dy
  // where x < 0, from the ReLU gradient of x and of -x.
  Location loc = getLoc();
  Type type = getType();
  Value positive =
      ReluGradOp::create(builder, loc, type, cotangents[0], getInput());
  Value negative =
      ReluGradOp::create(builder, loc, type, cotangents[0],
                         NegOp::create(builder, loc, type, getInput()));
  operandCotangents.push_back(
      SubOp::create(builder, loc, type, positive, negative));
  return success();
}

LogicalResult SinOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                              SmallVectorImpl<Value> &operandCotangents) {
  // d sin(x) = cos(x).
  Location loc = getLoc();
  Type type = getType();
  operandCotangents.push_back(
      MulOp::create(builder, loc, type, cotangents[0],
                    CosOp::create(builder, loc, type, getInput())));
  return success();
}

LogicalResult ErfOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                              SmallVectorImpl<Value> &operandCotangents) {
  // d erf(x) = 2 / sqrt(pi) exp(-x^2).
  Location loc = getLoc();
  auto type = cast<RankedTensorType>(getType());
  Value x = getInput();
  Value square = MulOp::create(builder, loc, type, x, x);
  Value bell = ExpOp::create(builder, loc, type,
                             NegOp::create(builder, loc, type, square));
  Value factor = buildSplat(builder, loc, type, 2.0 / std::sqrt(M_PI));
  operandCotangents.push_back(
      MulOp::create(builder, loc, type, cotangents[0],
                    MulOp::create(builder, loc, type, factor, bell)));
  return success();
}

LogicalResult CosOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                              SmallVectorImpl<Value> &operandCotangents) {
  // d cos(x) = -sin(x).
  Location loc = getLoc();
  Type type = getType();
  Value slope = NegOp::create(builder, loc, type,
                              SinOp::create(builder, loc, type, getInput()));
  operandCotangents.push_back(
      MulOp::create(builder, loc, type, cotangents[0], slope));
  return success();
}

LogicalResult SigmoidOp::buildVJP(OpBuilder &builder,
                                  ArrayRef<Value> cotangents,
                                  SmallVectorImpl<Value> &operandCotangents) {
  // d sigmoid(x) = s (1 - s), s the result.
  Location loc = getLoc();
  Type type = getType();
  Value one = buildSplat(builder, loc, getType(), 1.0);
  Value slope =
      MulOp::create(builder, loc, type, getResult(),
                    SubOp::create(builder, loc, type, one, getResult()));
  operandCotangents.push_back(
      MulOp::create(builder, loc, type, cotangents[0], slope));
  return success();
}

LogicalResult SiluOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                               SmallVectorImpl<Value> &operandCotangents) {
  // d x s(x) = s + x s (1 - s) = s (1 + x (1 - s)), s = sigmoid(x).
  Location loc = getLoc();
  Type type = getType();
  Value s = SigmoidOp::create(builder, loc, type, getInput());
  Value one = buildSplat(builder, loc, getType(), 1.0);
  Value inner =
      AddOp::create(builder, loc, type, one,
                    MulOp::create(builder, loc, type, getInput(),
                                  SubOp::create(builder, loc, type, one, s)));
  Value slope = MulOp::create(builder, loc, type, s, inner);
  operandCotangents.push_back(
      MulOp::create(builder, loc, type, cotangents[0], slope));
  return success();
}

LogicalResult SqrtOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                               SmallVectorImpl<Value> &operandCotangents) {
  // d sqrt(x) = 1 / (2 sqrt(x)).
  Location loc = getLoc();
  Value twice =
      AddOp::create(builder, loc, getType(), getResult(), getResult());
  operandCotangents.push_back(
      DivOp::create(builder, loc, getType(), cotangents[0], twice));
  return success();
}

LogicalResult RsqrtOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                                SmallVectorImpl<Value> &operandCotangents) {
  // d x^(-1/2) = -1/2 x^(-3/2) = -1/2 rsqrt(x)^3.
  Location loc = getLoc();
  Type type = getType();
  Value y = getResult();
  Value cube = MulOp::create(builder, loc, type, y,
                             MulOp::create(builder, loc, type, y, y));
  Value slope = MulOp::create(builder, loc, type,
                              buildSplat(builder, loc, getType(), -0.5), cube);
  operandCotangents.push_back(
      MulOp::create(builder, loc, type, cotangents[0], slope));
  return success();
}

LogicalResult ReluOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                               SmallVectorImpl<Value> &operandCotangents) {
  operandCotangents.push_back(ReluGradOp::create(builder, getLoc(), getType(),
                                                 cotangents[0], getInput()));
  return success();
}

LogicalResult GeluOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                               SmallVectorImpl<Value> &operandCotangents) {
  operandCotangents.push_back(GeluGradOp::create(builder, getLoc(), getType(),
                                                 cotangents[0], getInput()));
  return success();
}

//===----------------------------------------------------------------------===//
// Binary ops
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                              SmallVectorImpl<Value> &operandCotangents) {
  operandCotangents.append({cotangents[0], cotangents[0]});
  return success();
}

LogicalResult SubOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                              SmallVectorImpl<Value> &operandCotangents) {
  operandCotangents.push_back(cotangents[0]);
  operandCotangents.push_back(
      NegOp::create(builder, getLoc(), getType(), cotangents[0]));
  return success();
}

LogicalResult MulOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                              SmallVectorImpl<Value> &operandCotangents) {
  Location loc = getLoc();
  operandCotangents.push_back(
      MulOp::create(builder, loc, getType(), cotangents[0], getRhs()));
  operandCotangents.push_back(
      MulOp::create(builder, loc, getType(), cotangents[0], getLhs()));
  return success();
}

LogicalResult DivOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                              SmallVectorImpl<Value> &operandCotangents) {
  // d(a/b)/da = 1/b; d(a/b)/db = -a/b^2 = -(a/b)/b.
  Location loc = getLoc();
  Type type = getType();
  Value dy = cotangents[0];
  operandCotangents.push_back(DivOp::create(builder, loc, type, dy, getRhs()));
  Value scaled = MulOp::create(builder, loc, type, dy, getResult());
  Value quotient = DivOp::create(builder, loc, type, scaled, getRhs());
  operandCotangents.push_back(NegOp::create(builder, loc, type, quotient));
  return success();
}

LogicalResult PowOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                              SmallVectorImpl<Value> &operandCotangents) {
  // d(a^b)/da = b a^(b-1); d(a^b)/db = a^b log(a) (real only for a > 0, as
  // in every framework; the autodiff pass drops it when b is a constant).
  Location loc = getLoc();
  Type type = getType();
  Value dy = cotangents[0];
  Value one = buildSplat(builder, loc, getType(), 1.0);
  Value exponent = SubOp::create(builder, loc, type, getRhs(), one);
  Value power = PowOp::create(builder, loc, type, getLhs(), exponent);
  Value slope = MulOp::create(builder, loc, type, getRhs(), power);
  operandCotangents.push_back(MulOp::create(builder, loc, type, dy, slope));
  Value logBase = LogOp::create(builder, loc, type, getLhs());
  Value dyY = MulOp::create(builder, loc, type, dy, getResult());
  operandCotangents.push_back(MulOp::create(builder, loc, type, dyY, logBase));
  return success();
}

/// The cotangents of max(lhs, rhs) (or of min with `isMinimum`): dy to the
/// larger (smaller) operand, halves of it to both where they tie (JAX's and
/// PyTorch's rule), from the ReLU gradients of lhs - rhs and rhs - lhs.
static void buildExtremumVJP(OpBuilder &builder, Location loc, Type type,
                             Value dy, Value lhs, Value rhs, bool isMinimum,
                             SmallVectorImpl<Value> &operandCotangents) {
  Value difference = SubOp::create(builder, loc, type, lhs, rhs);
  Value lhsAbove = ReluGradOp::create(builder, loc, type, dy, difference);
  Value rhsAbove = ReluGradOp::create(
      builder, loc, type, dy, NegOp::create(builder, loc, type, difference));
  Value tie =
      SubOp::create(builder, loc, type,
                    SubOp::create(builder, loc, type, dy, lhsAbove), rhsAbove);
  Value half = MulOp::create(
      builder, loc, type, tie,
      buildSplat(builder, loc, cast<RankedTensorType>(type), 0.5));
  Value lhsWins = isMinimum ? rhsAbove : lhsAbove;
  Value rhsWins = isMinimum ? lhsAbove : rhsAbove;
  operandCotangents.push_back(AddOp::create(builder, loc, type, lhsWins, half));
  operandCotangents.push_back(AddOp::create(builder, loc, type, rhsWins, half));
}

LogicalResult MaximumOp::buildVJP(OpBuilder &builder,
                                  ArrayRef<Value> cotangents,
                                  SmallVectorImpl<Value> &operandCotangents) {
  buildExtremumVJP(builder, getLoc(), getType(), cotangents[0], getLhs(),
                   getRhs(), /*isMinimum=*/false, operandCotangents);
  return success();
}

LogicalResult MinimumOp::buildVJP(OpBuilder &builder,
                                  ArrayRef<Value> cotangents,
                                  SmallVectorImpl<Value> &operandCotangents) {
  buildExtremumVJP(builder, getLoc(), getType(), cotangents[0], getLhs(),
                   getRhs(), /*isMinimum=*/true, operandCotangents);
  return success();
}

/// A comparison's result is piecewise constant: no gradient to either side.
LogicalResult CompareOp::buildVJP(OpBuilder &, ArrayRef<Value>,
                                  SmallVectorImpl<Value> &operandCotangents) {
  operandCotangents.append(2, Value());
  return success();
}

/// d on_true = select(c, dy, 0), d on_false = select(c, 0, dy); the
/// condition gets none.
LogicalResult SelectOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                                 SmallVectorImpl<Value> &operandCotangents) {
  Location loc = getLoc();
  Type type = getType();
  Value zero = buildSplat(builder, loc, cast<RankedTensorType>(type), 0.0);
  operandCotangents.push_back(Value());
  operandCotangents.push_back(SelectOp::create(
      builder, loc, type, getCondition(), cotangents[0], zero));
  operandCotangents.push_back(SelectOp::create(
      builder, loc, type, getCondition(), zero, cotangents[0]));
  return success();
}

//===----------------------------------------------------------------------===//
// Casts and dropout
//===----------------------------------------------------------------------===//

LogicalResult CastOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                               SmallVectorImpl<Value> &operandCotangents) {
  // A float-to-float cast is differentiable with slope 1: cast back. Casts
  // from or to integers carry no gradient.
  if (!isDifferentiable(getInput()) || !isDifferentiable(getResult())) {
    operandCotangents.push_back(Value());
    return success();
  }
  operandCotangents.push_back(
      CastOp::create(builder, getLoc(), getInput().getType(), cotangents[0]));
  return success();
}

LogicalResult DropoutOp::buildVJP(OpBuilder &builder,
                                  ArrayRef<Value> cotangents,
                                  SmallVectorImpl<Value> &operandCotangents) {
  // y = x * mask / (1 - rate), so dx = dy * mask / (1 - rate): a dropout of
  // dy with the same rate and stream, hence the same Philox mask (keyed by
  // seed, step, stream and element).
  operandCotangents.push_back(DropoutOp::create(builder, getLoc(), getType(),
                                                cotangents[0], getRateAttr(),
                                                getStreamAttr()));
  return success();
}
