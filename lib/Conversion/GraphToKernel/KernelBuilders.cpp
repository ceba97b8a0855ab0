//===- KernelBuilders.cpp - Building blocks of kernel bodies
//---------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/GraphToKernel/KernelBuilders.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/APFloat.h"

#include <algorithm>

using namespace mlir;

Value kiln::kb::index(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

kiln::kb::AxisSplit kiln::kb::splitAroundAxis(ArrayRef<int64_t> shape,
                                              int64_t axis) {
  AxisSplit split;
  split.length = shape[axis];
  for (int64_t d = 0; d < axis; ++d)
    split.outer *= shape[d];
  for (int64_t d = axis + 1; d < static_cast<int64_t>(shape.size()); ++d)
    split.inner *= shape[d];
  return split;
}

std::pair<Value, Value> kiln::kb::blockRange(OpBuilder &b, Location loc,
                                             Value block, int64_t width,
                                             int64_t count) {
  Value begin = arith::MulIOp::create(b, loc, block, index(b, loc, width));
  Value end = arith::MinUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, begin, index(b, loc, width)),
      index(b, loc, count));
  return {begin, end};
}

llvm::APFloat kiln::kb::roundTo(Type type, double value) {
  llvm::APFloat rounded(value);
  bool losesInfo;
  rounded.convert(cast<FloatType>(type).getFloatSemantics(),
                  llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return rounded;
}

Value kiln::kb::floatConst(OpBuilder &b, Location loc, Type type,
                           const llvm::APFloat &value) {
  auto floatType = cast<FloatType>(type);
  return arith::ConstantOp::create(b, loc, floatType,
                                   b.getFloatAttr(floatType, value));
}

Value kiln::kb::floatConst(OpBuilder &b, Location loc, Type type,
                           double value) {
  return graph::buildFloatConstant(b, loc, type, value);
}

void kiln::kb::recordStatus(OpBuilder &b, Location loc, Value status,
                            KernelStatus code, Value value) {
  Value codeValue = arith::ConstantOp::create(
      b, loc, b.getI64IntegerAttr(static_cast<int64_t>(code)));
  memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::maxs, codeValue,
                              status, ValueRange{index(b, loc, 0)});
  memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::assign, value,
                              status, ValueRange{index(b, loc, 1)});
}

Value kiln::kb::negativeInfinity(OpBuilder &b, Location loc, Type type) {
  auto floatType = cast<FloatType>(type);
  return arith::ConstantOp::create(
      b, loc, floatType,
      b.getFloatAttr(floatType,
                     llvm::APFloat::getInf(floatType.getFloatSemantics(),
                                           /*Negative=*/true)));
}

Value kiln::kb::stdMax(OpBuilder &b, Location loc, Value acc, Value x) {
  Value less = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, acc, x);
  return arith::SelectOp::create(b, loc, less, x, acc);
}

Value kiln::kb::toI64(OpBuilder &b, Location loc, Value id) {
  if (id.getType().isInteger(64))
    return id;
  return arith::ExtSIOp::create(b, loc, b.getI64Type(), id);
}

Value kiln::kb::isOutside(OpBuilder &b, Location loc, Value id, int64_t size) {
  Value zero = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0));
  Value limit = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(size));
  Value below =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, id, zero);
  Value above =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, id, limit);
  return arith::OrIOp::create(b, loc, below, above);
}

void kiln::kb::parallelFor(
    OpBuilder &b, Location loc, int64_t range,
    llvm::function_ref<void(OpBuilder &, Location, Value)> body) {
  Value zero = index(b, loc, 0), one = index(b, loc, 1);
  Value upper = index(b, loc, range);
  scf::ParallelOp::create(
      b, loc, ValueRange{zero}, ValueRange{upper}, ValueRange{one},
      [&](OpBuilder &nested, Location nestedLoc, ValueRange ivs) {
        body(nested, nestedLoc, ivs[0]);
      });
}

SmallVector<Value>
kiln::kb::forLoop(OpBuilder &b, Location loc, Value lower, Value upper,
                  ValueRange init,
                  llvm::function_ref<SmallVector<Value>(OpBuilder &, Location,
                                                        Value, ValueRange)>
                      body) {
  Value one = index(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, lower, upper, one, init,
      [&](OpBuilder &nested, Location nestedLoc, Value iv, ValueRange args) {
        SmallVector<Value> next = body(nested, nestedLoc, iv, args);
        scf::YieldOp::create(nested, nestedLoc, next);
      });
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value>
kiln::kb::forLoop(OpBuilder &b, Location loc, int64_t upper, ValueRange init,
                  llvm::function_ref<SmallVector<Value>(OpBuilder &, Location,
                                                        Value, ValueRange)>
                      body) {
  return forLoop(b, loc, index(b, loc, 0), index(b, loc, upper), init, body);
}

SmallVector<Value> kiln::kb::delinearize(OpBuilder &b, Location loc,
                                         Value linear,
                                         ArrayRef<int64_t> shape) {
  SmallVector<Value> indices(shape.size());
  Value rest = linear;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (d == 0) {
      indices[d] = rest;
      break;
    }
    Value dim = index(b, loc, shape[d]);
    indices[d] = arith::RemUIOp::create(b, loc, rest, dim);
    rest = arith::DivUIOp::create(b, loc, rest, dim);
  }
  return indices;
}

void kiln::kb::parallelGeneric(
    OpBuilder &b, Location loc, ValueRange inputs,
    ArrayRef<AffineMap> inputMaps, Value output,
    llvm::function_ref<Value(OpBuilder &, Location, ValueRange)> scalar) {
  int64_t rank = cast<MemRefType>(output.getType()).getRank();
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  linalg::GenericOp::create(
      b, loc, TypeRange{}, inputs, ValueRange{output}, maps, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value result = scalar(nested, nestedLoc, args.drop_back());
        linalg::YieldOp::create(nested, nestedLoc, result);
      });
}

Type kiln::kb::computeType(Type storage) {
  if (storage.isBF16() || storage.isF16())
    return Float32Type::get(storage.getContext());
  return storage;
}

Value kiln::kb::widen(OpBuilder &b, Location loc, Value element) {
  Type compute = computeType(element.getType());
  if (compute == element.getType())
    return element;
  return arith::ExtFOp::create(b, loc, compute, element);
}

Value kiln::kb::narrow(OpBuilder &b, Location loc, Value value, Type storage) {
  if (value.getType() == storage)
    return value;
  return arith::TruncFOp::create(b, loc, storage, value);
}

Value kiln::kb::buildComputeScalar(OpBuilder &b, Location loc, Operation *op,
                                   unsigned result, ValueRange operands) {
  // Only a cast can make a 16-bit value of compute-type operands (it
  // converts from the element it is given): it rounds, then the value goes
  // on in the compute type.
  return widen(b, loc,
               cast<graph::FusibleOpInterface>(op).buildScalar(b, loc, result,
                                                               operands));
}

int64_t kiln::kb::rangeOfShape(ArrayRef<int64_t> shape) {
  return shape.empty() ? 1 : shape.front();
}

int64_t kiln::kb::chooseGrain(int64_t range, int64_t workPerIteration,
                              int64_t workPerChunk) {
  int64_t perIteration = std::max<int64_t>(workPerIteration, 1);
  int64_t grain = (workPerChunk + perIteration - 1) / perIteration;
  return std::clamp<int64_t>(grain, 1, std::max<int64_t>(range, 1));
}
