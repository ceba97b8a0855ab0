//===- RandomToKernel.cpp - graph.dropout with Philox in arith -------------===//
//
// Part of Kiln. Dropout draws its mask from Philox 4x32-10 written out in
// arith ops, keyed exactly as kiln/Philox.h and the interpreter key it:
// key = the run seed, counter = (block index, stream, step), element e uses
// word e % 4 of block e / 4. The seed and step come from the runtime's
// rng_state buffer ([seed lo, seed hi, step, micro-batch]); in micro-batch m
// of an accumulated step, element e is element m * count + e of the whole
// batch. One parallel iteration per
// block of four elements. Outside training entries dropout is the identity.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/GraphToKernel/GraphToKernel.h"
#include "kiln/Conversion/GraphToKernel/KernelBuilders.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

using namespace mlir;
using namespace kiln;

/// An i32 constant.
static Value i32Const(OpBuilder &b, Location loc, uint32_t value) {
  return arith::ConstantOp::create(
      b, loc, b.getI32IntegerAttr(static_cast<int32_t>(value)));
}

/// Philox 4x32-10 of `counter` under `key` (kiln/Philox.h), on i32 values.
static std::array<Value, 4> buildPhilox(OpBuilder &b, Location loc,
                                        std::array<Value, 4> counter,
                                        std::array<Value, 2> key) {
  Value multiplier0 = i32Const(b, loc, 0xD2511F53u);
  Value multiplier1 = i32Const(b, loc, 0xCD9E8D57u);
  Value weyl0 = i32Const(b, loc, 0x9E3779B9u);
  Value weyl1 = i32Const(b, loc, 0xBB67AE85u);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] = arith::AddIOp::create(b, loc, key[0], weyl0);
      key[1] = arith::AddIOp::create(b, loc, key[1], weyl1);
    }
    auto product0 =
        arith::MulUIExtendedOp::create(b, loc, multiplier0, counter[0]);
    auto product1 =
        arith::MulUIExtendedOp::create(b, loc, multiplier1, counter[2]);
    Value word0 = arith::XOrIOp::create(
        b, loc,
        arith::XOrIOp::create(b, loc, product1.getHigh(), counter[1]),
        key[0]);
    Value word2 = arith::XOrIOp::create(
        b, loc,
        arith::XOrIOp::create(b, loc, product0.getHigh(), counter[3]),
        key[1]);
    counter = {word0, product1.getLow(), word2, product0.getLow()};
  }
  return counter;
}

namespace {
struct DropoutToKernel : OpToKernelPattern<graph::DropoutOp> {
  LogicalResult lowerOp(graph::DropoutOp op,
                        KernelLowering &lowering) const override {
    if (!lowering.isTraining()) {
      lowering.bind(op.getResult(), lowering.lookup(op.getInput()));
      return success();
    }
    double rate = op.getRate().convertToDouble();
    if (!(rate >= 0.0 && rate < 1.0))
      return op.emitError() << "dropout rate " << rate
                            << " is outside [0, 1)";
    int64_t stream = op.getStream();
    if (stream < 0 || stream > 0xFFFFFFFFll)
      return op.emitError() << "dropout stream " << stream
                            << " does not fit in 32 bits";
    Type elementType = op.getType().getElementType();
    int64_t count = op.getType().getNumElements();
    int64_t blocks = (count + 3) / 4;
    // As philox::dropoutThreshold and the interpreter's scale.
    uint32_t threshold = static_cast<uint32_t>(std::ceil(rate * 16777216.0));
    double scale = 1.0 / (1.0 - rate);

    Value result = lowering.allocateResult(op.getResult());
    Value buffers[] = {lowering.view(lowering.lookup(op.getInput()), {count}),
                       lowering.view(result, {count}),
                       lowering.getRngState()};
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(), buffers, blocks, 4 * 20,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          kb::parallelFor(b, loc, blocks, [&](OpBuilder &b, Location loc,
                                              Value block) {
            auto rng = [&](int64_t i) -> Value {
              return memref::LoadOp::create(b, loc, args[2],
                                            kb::index(b, loc, i));
            };
            auto i64Const = [&](int64_t value) -> Value {
              return arith::ConstantOp::create(b, loc,
                                               b.getI64IntegerAttr(value));
            };
            // The four words of block `bigBlock` (i64) of the whole batch.
            auto wordsOf = [&](Value bigBlock) {
              Value low =
                  arith::TruncIOp::create(b, loc, b.getI32Type(), bigBlock);
              Value high = arith::TruncIOp::create(
                  b, loc, b.getI32Type(),
                  arith::ShRUIOp::create(b, loc, bigBlock, i64Const(32)));
              return buildPhilox(
                  b, loc,
                  {low, high, i32Const(b, loc, static_cast<uint32_t>(stream)),
                   rng(2)},
                  {rng(0), rng(1)});
            };
            // Micro-batch m of an accumulated step (rng_state word 3) draws
            // the elements m * count + e of the whole batch's mask, so that K
            // micro-batches draw what one batch K times larger would.
            Value microBatch =
                arith::ExtUIOp::create(b, loc, b.getI64Type(), rng(3));
            Value base =
                arith::MulIOp::create(b, loc, microBatch, i64Const(count));
            Value block64 =
                arith::IndexCastUIOp::create(b, loc, b.getI64Type(), block);
            Value first64 = arith::MulIOp::create(b, loc, block64, i64Const(4));
            // Aligned (count % 4 == 0): the block's four lanes are one block
            // of the whole batch. Otherwise each lane finds its own.
            std::array<Value, 4> aligned;
            if (count % 4 == 0)
              aligned = wordsOf(arith::AddIOp::create(
                  b, loc, arith::DivUIOp::create(b, loc, base, i64Const(4)),
                  block64));
            auto wordOfLane = [&](int lane) -> Value {
              if (count % 4 == 0)
                return aligned[lane];
              Value whole = arith::AddIOp::create(
                  b, loc, base,
                  arith::AddIOp::create(b, loc, first64, i64Const(lane)));
              std::array<Value, 4> lanes =
                  wordsOf(arith::ShRUIOp::create(b, loc, whole, i64Const(2)));
              Value which = arith::AndIOp::create(b, loc, whole, i64Const(3));
              Value word = lanes[3];
              for (int w = 2; w >= 0; --w)
                word = arith::SelectOp::create(
                    b, loc,
                    arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          which, i64Const(w)),
                    lanes[w], word);
              return word;
            };
            Value thresholdValue = i32Const(b, loc, threshold);
            Value eight = i32Const(b, loc, 8);
            Value scaleValue = kb::floatConst(b, loc, elementType, scale);
            Value zero = kb::floatConst(b, loc, elementType, 0.0);
            Value first = arith::MulIOp::create(b, loc, block,
                                                kb::index(b, loc, 4));
            for (int lane = 0; lane < 4; ++lane) {
              Value element = arith::AddIOp::create(b, loc, first,
                                                    kb::index(b, loc, lane));
              auto emit = [&](OpBuilder &b) {
                Value keep = arith::CmpIOp::create(
                    b, loc, arith::CmpIPredicate::uge,
                    arith::ShRUIOp::create(b, loc, wordOfLane(lane), eight),
                    thresholdValue);
                Value x = memref::LoadOp::create(b, loc, args[0], element);
                Value scaled = arith::MulFOp::create(b, loc, x, scaleValue);
                Value y = arith::SelectOp::create(b, loc, keep, scaled, zero);
                memref::StoreOp::create(b, loc, y, args[1], element);
              };
              if (lane == 0 || count % 4 == 0) {
                emit(b);
                continue;
              }
              // Only the last block can be partial.
              Value inside = arith::CmpIOp::create(
                  b, loc, arith::CmpIPredicate::ult, element,
                  kb::index(b, loc, count));
              auto ifOp = scf::IfOp::create(b, loc, inside, false);
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
              emit(b);
            }
          });
        });
    lowering.bind(op.getResult(), result);
    return success();
  }
};
} // namespace

void kiln::populateRandomToKernelPatterns(GraphToKernelPatternSet &patterns) {
  patterns.add<DropoutToKernel>();
}
