//===- GraphFusible.cpp - FusibleOpInterface of the graph ops
//--------------===//
//
// Part of Kiln. Index maps and scalar formulas of the ops that --graph-fuse
// may put into one kernel. The formulas follow the reference interpreter
// operation for operation (lib/Interpreter/Elementwise.cpp, GradOps.cpp),
// so a fused kernel agrees with it to the rounding of the math library;
// the per-op kernels of --convert-graph-to-kernel use the same formulas.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace kiln::graph;

Value kiln::graph::buildFloatConstant(OpBuilder &b, Location loc, Type type,
                                      double value) {
  auto floatType = cast<FloatType>(type);
  llvm::APFloat rounded(value);
  bool losesInfo;
  rounded.convert(floatType.getFloatSemantics(),
                  llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return arith::ConstantOp::create(b, loc, floatType,
                                   b.getFloatAttr(floatType, rounded));
}

static AffineMap identityOf(Operation *op, unsigned result) {
  auto type = cast<ShapedType>(op->getResult(result).getType());
  return AffineMap::getMultiDimIdentityMap(type.getRank(), op->getContext());
}

/// Small arithmetic helpers over one element type.
namespace {
struct Scalar {
  OpBuilder &b;
  Location loc;
  Type type;
  Value c(double value) { return buildFloatConstant(b, loc, type, value); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
};
} // namespace

//===----------------------------------------------------------------------===//
// Elementwise math
//===----------------------------------------------------------------------===//

#define KILN_IDENTITY_MAPS(OP)                                                 \
  AffineMap OP::getOperandIndexMap(unsigned result, unsigned) {                \
    return identityOf(getOperation(), result);                                 \
  }
KILN_IDENTITY_MAPS(NegOp)
KILN_IDENTITY_MAPS(ExpOp)
KILN_IDENTITY_MAPS(LogOp)
KILN_IDENTITY_MAPS(TanhOp)
KILN_IDENTITY_MAPS(AbsOp)
KILN_IDENTITY_MAPS(SinOp)
KILN_IDENTITY_MAPS(CosOp)
KILN_IDENTITY_MAPS(ErfOp)
KILN_IDENTITY_MAPS(SigmoidOp)
KILN_IDENTITY_MAPS(SiluOp)
KILN_IDENTITY_MAPS(SqrtOp)
KILN_IDENTITY_MAPS(RsqrtOp)
KILN_IDENTITY_MAPS(ReluOp)
KILN_IDENTITY_MAPS(GeluOp)
KILN_IDENTITY_MAPS(AddOp)
KILN_IDENTITY_MAPS(SubOp)
KILN_IDENTITY_MAPS(MulOp)
KILN_IDENTITY_MAPS(DivOp)
KILN_IDENTITY_MAPS(PowOp)
KILN_IDENTITY_MAPS(MaximumOp)
KILN_IDENTITY_MAPS(MinimumOp)
KILN_IDENTITY_MAPS(CompareOp)
KILN_IDENTITY_MAPS(SelectOp)
KILN_IDENTITY_MAPS(CastOp)
KILN_IDENTITY_MAPS(ReluGradOp)
KILN_IDENTITY_MAPS(GeluGradOp)
#undef KILN_IDENTITY_MAPS

/// The cost of one element, for the fusion's cost model: a math function
/// costs about as much as ten arithmetic operations.
static constexpr int64_t kMathFunctionFlops = 10;

Value NegOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  return arith::NegFOp::create(b, loc, in[0]);
}
int64_t NegOp::getFlopsPerElement() { return 1; }

Value ExpOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  return math::ExpOp::create(b, loc, in[0]);
}
int64_t ExpOp::getFlopsPerElement() { return kMathFunctionFlops; }

Value LogOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  return math::LogOp::create(b, loc, in[0]);
}
int64_t LogOp::getFlopsPerElement() { return kMathFunctionFlops; }

Value TanhOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  return math::TanhOp::create(b, loc, in[0]);
}
int64_t TanhOp::getFlopsPerElement() { return kMathFunctionFlops; }

Value AbsOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  return math::AbsFOp::create(b, loc, in[0]);
}
int64_t AbsOp::getFlopsPerElement() { return 1; }

Value SinOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  return math::SinOp::create(b, loc, in[0]);
}
int64_t SinOp::getFlopsPerElement() { return kMathFunctionFlops; }

Value CosOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  return math::CosOp::create(b, loc, in[0]);
}
int64_t CosOp::getFlopsPerElement() { return kMathFunctionFlops; }

Value ErfOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  return math::ErfOp::create(b, loc, in[0]);
}
int64_t ErfOp::getFlopsPerElement() { return kMathFunctionFlops; }

/// 1 / (1 + exp(-x)): exp(-x) overflows to inf for x below about -88 (f32),
/// which gives exactly 0, and underflows to 0 above, which gives 1.
static Value buildSigmoid(OpBuilder &b, Location loc, Value x) {
  Value one = arith::ConstantOp::create(b, loc, x.getType(),
                                        b.getFloatAttr(x.getType(), 1.0));
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, e));
}

Value SigmoidOp::buildScalar(OpBuilder &b, Location loc, unsigned,
                             ValueRange in) {
  return buildSigmoid(b, loc, in[0]);
}
int64_t SigmoidOp::getFlopsPerElement() { return kMathFunctionFlops; }

Value SiluOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  return arith::MulFOp::create(b, loc, in[0], buildSigmoid(b, loc, in[0]));
}
int64_t SiluOp::getFlopsPerElement() { return kMathFunctionFlops; }

Value SqrtOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  return math::SqrtOp::create(b, loc, in[0]);
}
int64_t SqrtOp::getFlopsPerElement() { return kMathFunctionFlops; }

Value RsqrtOp::buildScalar(OpBuilder &b, Location loc, unsigned,
                           ValueRange in) {
  Scalar f{b, loc, in[0].getType()};
  return arith::DivFOp::create(b, loc, f.c(1.0),
                               math::SqrtOp::create(b, loc, in[0]));
}
int64_t RsqrtOp::getFlopsPerElement() { return kMathFunctionFlops; }

/// NaN or positive: x; otherwise 0 (NaN propagates).
Value ReluOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  Scalar f{b, loc, in[0].getType()};
  Value keep =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UGT, in[0], f.c(0.0));
  return arith::SelectOp::create(b, loc, keep, in[0], f.c(0.0));
}
int64_t ReluOp::getFlopsPerElement() { return 1; }

/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in this order.
Value GeluOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  Scalar f{b, loc, in[0].getType()};
  Value x = in[0];
  Value cube = f.mul(f.mul(f.mul(f.c(0.044715), x), x), x);
  Value inner = f.mul(f.c(0.7978845608028654), f.add(x, cube));
  Value halfX = f.mul(f.c(0.5), x);
  return f.mul(halfX, f.add(f.c(1.0), math::TanhOp::create(b, loc, inner)));
}
int64_t GeluOp::getFlopsPerElement() { return 7 + kMathFunctionFlops; }

Value AddOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  return arith::AddFOp::create(b, loc, in[0], in[1]);
}
int64_t AddOp::getFlopsPerElement() { return 1; }

Value SubOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  return arith::SubFOp::create(b, loc, in[0], in[1]);
}
int64_t SubOp::getFlopsPerElement() { return 1; }

Value MulOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  return arith::MulFOp::create(b, loc, in[0], in[1]);
}
int64_t MulOp::getFlopsPerElement() { return 1; }

Value DivOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  return arith::DivFOp::create(b, loc, in[0], in[1]);
}
int64_t DivOp::getFlopsPerElement() { return 1; }

Value PowOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  return math::PowFOp::create(b, loc, in[0], in[1]);
}
int64_t PowOp::getFlopsPerElement() { return kMathFunctionFlops; }

/// IEEE 754-2019 maximum and minimum: NaN propagates, -0 < +0.
Value MaximumOp::buildScalar(OpBuilder &b, Location loc, unsigned,
                             ValueRange in) {
  return arith::MaximumFOp::create(b, loc, in[0], in[1]);
}
int64_t MaximumOp::getFlopsPerElement() { return 1; }

Value MinimumOp::buildScalar(OpBuilder &b, Location loc, unsigned,
                             ValueRange in) {
  return arith::MinimumFOp::create(b, loc, in[0], in[1]);
}
int64_t MinimumOp::getFlopsPerElement() { return 1; }

/// 1 or 0 in the operands' type; ordered predicates (false on NaN) but for
/// `ne` (true on NaN).
Value CompareOp::buildScalar(OpBuilder &b, Location loc, unsigned,
                             ValueRange in) {
  arith::CmpFPredicate predicate = arith::CmpFPredicate::OLT;
  switch (getPredicate()) {
  case ComparePredicate::Lt:
    predicate = arith::CmpFPredicate::OLT;
    break;
  case ComparePredicate::Le:
    predicate = arith::CmpFPredicate::OLE;
    break;
  case ComparePredicate::Gt:
    predicate = arith::CmpFPredicate::OGT;
    break;
  case ComparePredicate::Ge:
    predicate = arith::CmpFPredicate::OGE;
    break;
  case ComparePredicate::Eq:
    predicate = arith::CmpFPredicate::OEQ;
    break;
  case ComparePredicate::Ne:
    predicate = arith::CmpFPredicate::UNE;
    break;
  }
  Scalar f{b, loc, in[0].getType()};
  Value holds = arith::CmpFOp::create(b, loc, predicate, in[0], in[1]);
  return arith::SelectOp::create(b, loc, holds, f.c(1.0), f.c(0.0));
}
int64_t CompareOp::getFlopsPerElement() { return 1; }

/// condition != 0 (NaN included) ? on_true : on_false.
Value SelectOp::buildScalar(OpBuilder &b, Location loc, unsigned,
                            ValueRange in) {
  Scalar f{b, loc, in[0].getType()};
  Value chosen =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, in[0], f.c(0.0));
  return arith::SelectOp::create(b, loc, chosen, in[1], in[2]);
}
int64_t SelectOp::getFlopsPerElement() { return 1; }

/// Float to float rounds to nearest even, float to integer truncates toward
/// zero, integer to float rounds, i64 to i32 wraps, i32 to i64 extends.
Value CastOp::buildScalar(OpBuilder &b, Location loc, unsigned, ValueRange in) {
  // From the element as given (a kernel may hand a 16-bit float's element
  // over widened to f32): the same conversion, as the types ask.
  Value x = in[0];
  Type from = x.getType();
  Type to = getType().getElementType();
  if (from == to)
    return x;
  bool fromFloat = isa<FloatType>(from), toFloat = isa<FloatType>(to);
  if (fromFloat && toFloat) {
    if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      return arith::ExtFOp::create(b, loc, to, x);
    return arith::TruncFOp::create(b, loc, to, x);
  }
  if (fromFloat)
    return arith::FPToSIOp::create(b, loc, to, x);
  if (toFloat)
    return arith::SIToFPOp::create(b, loc, to, x);
  if (from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
    return arith::TruncIOp::create(b, loc, to, x);
  return arith::ExtSIOp::create(b, loc, to, x);
}

/// dx = x > 0 ? dy : 0 (a NaN x gives 0, as `x > T(0)` does).
Value ReluGradOp::buildScalar(OpBuilder &b, Location loc, unsigned,
                              ValueRange in) {
  Scalar f{b, loc, in[0].getType()};
  Value zero = f.c(0.0);
  Value positive =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, in[1], zero);
  return arith::SelectOp::create(b, loc, positive, in[0], zero);
}
int64_t ReluGradOp::getFlopsPerElement() { return 1; }

/// t = tanh(c (x + a x x x)), du = c (1 + 3 a x x),
/// dx = dy (0.5 (1 + t) + 0.5 x (1 - t t) du).
Value GeluGradOp::buildScalar(OpBuilder &b, Location loc, unsigned,
                              ValueRange in) {
  Scalar f{b, loc, in[0].getType()};
  Value dy = in[0], x = in[1];
  Value sqrtTwoOverPi = f.c(std::sqrt(2.0 / M_PI)), a = f.c(0.044715);
  Value cube = f.mul(f.mul(f.mul(a, x), x), x);
  Value t = math::TanhOp::create(b, loc, f.mul(sqrtTwoOverPi, f.add(x, cube)));
  Value du = f.mul(sqrtTwoOverPi,
                   f.add(f.c(1.0), f.mul(f.mul(f.mul(f.c(3.0), a), x), x)));
  Value left = f.mul(f.c(0.5), f.add(f.c(1.0), t));
  Value right =
      f.mul(f.mul(f.mul(f.c(0.5), x), f.sub(f.c(1.0), f.mul(t, t))), du);
  return f.mul(dy, f.add(left, right));
}
int64_t GeluGradOp::getFlopsPerElement() { return 18 + kMathFunctionFlops; }

//===----------------------------------------------------------------------===//
// Data movement: index maps, the element passed through
//===----------------------------------------------------------------------===//

#define KILN_PASS_THROUGH(OP)                                                  \
  Value OP::buildScalar(OpBuilder &, Location, unsigned, ValueRange in) {      \
    return in[0];                                                              \
  }
KILN_PASS_THROUGH(BroadcastOp)
KILN_PASS_THROUGH(ReshapeOp)
KILN_PASS_THROUGH(TransposeOp)
KILN_PASS_THROUGH(SliceOp)
KILN_PASS_THROUGH(SplitOp)
#undef KILN_PASS_THROUGH

/// Dims align from the right; a size-1 input dim under a larger result dim
/// is read at 0.
AffineMap BroadcastOp::getOperandIndexMap(unsigned, unsigned) {
  ArrayRef<int64_t> in = getInput().getType().getShape();
  ArrayRef<int64_t> out = getType().getShape();
  unsigned lead = out.size() - in.size();
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < in.size(); ++i)
    exprs.push_back(in[i] == 1 && out[lead + i] != 1
                        ? getAffineConstantExpr(0, getContext())
                        : getAffineDimExpr(lead + i, getContext()));
  return AffineMap::get(out.size(), 0, exprs, getContext());
}

/// Input index at perm[i] is the result index at i.
AffineMap TransposeOp::getOperandIndexMap(unsigned, unsigned) {
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<AffineExpr> exprs(perm.size());
  for (unsigned i = 0; i < perm.size(); ++i)
    exprs[perm[i]] = getAffineDimExpr(i, getContext());
  return AffineMap::get(perm.size(), 0, exprs, getContext());
}

/// Row-major linear index of the result, split into the input's dims. The
/// dims are matched in groups of equal size (a reshape that splits or
/// merges neighbouring dims), each group linearized on its own, so that
/// a split of one dim into two reads `outer * inner_size + inner` with no
/// division (vectorizable along the inner dim); a reshape without such
/// groups uses one linear index.
AffineMap ReshapeOp::getOperandIndexMap(unsigned, unsigned) {
  ArrayRef<int64_t> in = getInput().getType().getShape();
  ArrayRef<int64_t> out = getType().getShape();
  MLIRContext *context = getContext();
  SmallVector<AffineExpr> exprs(in.size());
  // Delinearizes `linear` (over a group of `size` elements) into the input
  // dims [first, last).
  auto split = [&](AffineExpr linear, size_t first, size_t last) {
    int64_t stride = 1;
    for (size_t i = last; i-- > first;) {
      AffineExpr scaled = stride == 1 ? linear : linear.floorDiv(stride);
      exprs[i] = i == first ? scaled : scaled % in[i];
      stride *= in[i];
    }
  };
  size_t i = 0, o = 0;
  bool grouped = true;
  while (i < in.size() || o < out.size()) {
    size_t i0 = i, o0 = o;
    int64_t inSize = 1, outSize = 1;
    // Grow the group until both sides cover the same number of elements
    // (and at least one dim of each side, where dims remain).
    do {
      if (i < in.size() && (inSize <= outSize || o == out.size()))
        inSize *= in[i++];
      else if (o < out.size())
        outSize *= out[o++];
      else
        break;
    } while (inSize != outSize || i == i0 || o == o0);
    if (inSize != outSize) {
      grouped = false;
      break;
    }
    AffineExpr linear = getAffineConstantExpr(0, context);
    for (size_t d = o0; d < o; ++d)
      linear = linear * out[d] + getAffineDimExpr(d, context);
    split(linear, i0, i);
  }
  if (!grouped) {
    AffineExpr linear = getAffineConstantExpr(0, context);
    for (size_t d = 0; d < out.size(); ++d)
      linear = linear * out[d] + getAffineDimExpr(d, context);
    split(linear, 0, in.size());
  }
  return simplifyAffineMap(AffineMap::get(out.size(), 0, exprs, context));
}

AffineMap SliceOp::getOperandIndexMap(unsigned, unsigned) {
  ArrayRef<int64_t> offsets = getOffsets();
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < offsets.size(); ++i)
    exprs.push_back(getAffineDimExpr(i, getContext()) + offsets[i]);
  return AffineMap::get(offsets.size(), 0, exprs, getContext());
}

/// Piece `result` starts after the pieces before it along the axis.
AffineMap SplitOp::getOperandIndexMap(unsigned result, unsigned) {
  int64_t axis = getAxis();
  int64_t offset = 0;
  for (unsigned i = 0; i < result; ++i)
    offset += cast<ShapedType>(getResult(i).getType()).getDimSize(axis);
  unsigned rank = getInput().getType().getRank();
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < rank; ++i)
    exprs.push_back(getAffineDimExpr(i, getContext()) +
                    (static_cast<int64_t>(i) == axis ? offset : 0));
  return AffineMap::get(rank, 0, exprs, getContext());
}

//===----------------------------------------------------------------------===//
// Constants: a splat is one scalar
//===----------------------------------------------------------------------===//

AffineMap ConstantOp::getOperandIndexMap(unsigned, unsigned) {
  return AffineMap(); // No operands.
}

/// The splat value; only splats are fused (--graph-fuse checks).
Value ConstantOp::buildScalar(OpBuilder &b, Location loc, unsigned,
                              ValueRange) {
  auto splat = cast<SplatElementsAttr>(getValue());
  return arith::ConstantOp::create(
      b, loc, cast<TypedAttr>(splat.getSplatValue<Attribute>()));
}

//===----------------------------------------------------------------------===//
// Fusion anchors
//===----------------------------------------------------------------------===//

unsigned ReduceOp::getFusedOperandIndex() { return 0; }
int64_t ReduceOp::getReadsPerElement() { return 1; }
/// The reduced dims lead and the last dim is kept (or the input is a
/// scalar): the lowering's column template (ReductionToKernel.cpp) asks this.
bool ReduceOp::walksColumns() {
  ArrayRef<int64_t> axes = getAxes();
  auto rank = static_cast<int64_t>(getInput().getType().getRank());
  if (rank > 0 && static_cast<int64_t>(axes.size()) == rank)
    return false;
  for (auto [index, axis] : llvm::enumerate(axes))
    if (axis != static_cast<int64_t>(index))
      return false;
  return true;
}

/// The logits: a cast up from the low precision (mixed precision) is
/// computed in the kernel, so the backward keeps the 16-bit logits only.
/// Three passes: the max, the sum of exponentials, then the loss or the
/// gradient.
unsigned CrossEntropyOp::getFusedOperandIndex() { return 0; }
int64_t CrossEntropyOp::getReadsPerElement() { return 3; }
unsigned CrossEntropyGradOp::getFusedOperandIndex() { return 1; }
int64_t CrossEntropyGradOp::getReadsPerElement() { return 3; }

unsigned LayerNormOp::getFusedOperandIndex() { return 0; }
/// The mean, the variance, then the normalized value.
int64_t LayerNormOp::getReadsPerElement() { return 3; }
