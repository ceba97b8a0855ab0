//===- OptimizerToKernel.cpp - Optimizer graph ops to kernels -------------===//
//
// Part of Kiln. The learning-rate schedule, the global gradient norm, the
// clipping factor and the SGD, momentum and AdamW updates, with the
// formulas of GraphOptimizerOps.td written operation for operation as the
// interpreter evaluates them (lib/Interpreter/OptimizerOps.cpp).
//
// The updates are blocked elementwise kernels: one parallel iteration per
// block of elements (the target's ScheduleParameters::updateBlock), which
// first loads the scalars (lr, step, grad scale) from their 0-d buffers and
// derives the per-step factors (AdamW's bias corrections), then updates its
// elements. They read element
// i of the parameter and state only where they write element i, so the
// conversion may give them the parameter's and the state's own buffers as
// results: the update happens in place. A buffer passed for both an operand
// and a result is passed once.
//
// An update with a `skip` scalar (dynamic loss scaling) stores its inputs
// back where the skip is not 0, element by element (launchBlockedUpdate),
// so that a skipped step leaves parameter and state as they were whether
// or not the update is in place.
//
// Under mixed precision the update also writes the parameter's
// low-precision copy (a graph.cast of the new parameter that the step
// returns as state), rounded from the value it just stored: the forward of
// the next step reads that copy instead of casting the weight again.
//
// The global norm sums squares per fixed block of each gradient (in
// parallel), then the block sums in order: the order is fixed at compile
// time, whatever the chunking.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/GraphToKernel/GraphToKernel.h"
#include "kiln/Conversion/GraphToKernel/KernelBuilders.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace kiln;

namespace {
/// The per-block scalars of an update, from the kernel's arguments.
using BlockPrologue = llvm::function_ref<SmallVector<Value>(
    OpBuilder &, Location, ArrayRef<Value> args)>;
/// `fresh`, or `old` where the update is skipped: what an update stores.
using KeepIfSkipped =
    llvm::function_ref<Value(OpBuilder &, Location, Value old, Value fresh)>;
/// Updates element `i`, given the block's scalars.
using ElementUpdate =
    llvm::function_ref<void(OpBuilder &, Location, ArrayRef<Value> args,
                            ValueRange scalars, Value i, KeepIfSkipped keep)>;
} // namespace

/// The value of a 0-d buffer.
static Value loadScalar(OpBuilder &b, Location loc, Value buffer) {
  return memref::LoadOp::create(b, loc, buffer, ValueRange{});
}

/// The low-precision copy of the parameter an update writes (mixed
/// precision's weight copy, --graph-mixed-precision: a graph.cast of the
/// new parameter to a 16-bit float), lowered into the update's own kernel:
/// its buffer (flat), bound to the cast's result; null where there is none.
static Value lowerCopyIntoUpdate(Value newParam, KernelLowering &lowering) {
  for (Operation *user : newParam.getUsers()) {
    auto cast = dyn_cast<graph::CastOp>(user);
    if (!cast || cast.getType().getElementTypeBitWidth() != 16)
      continue;
    Value buffer = lowering.allocateResult(cast.getResult());
    lowering.bind(cast.getResult(), buffer);
    return lowering.view(buffer, {cast.getType().getNumElements()});
  }
  return nullptr;
}

/// Launches the blocked update kernel of `op` over `count` elements.
/// `buffers` are the operands then the results (tensors seen flat as
/// `{count}`, scalars as 0-d buffers); `prologue` and `update` see them in
/// that order, whichever of them share one buffer. With `skip` (the update
/// op's optional skip scalar), `keep` returns the old value of an element
/// where the skip is not 0, so that a skipped step stores parameter and
/// state back as they were, in place or not. The new parameter is
/// buffers[newParam]; its low-precision copy, where the step keeps one,
/// is written from it element by element in the same kernel.
static void launchBlockedUpdate(Operation *op, KernelLowering &lowering,
                                ArrayRef<Value> buffers, unsigned newParam,
                                Value skip, int64_t count,
                                BlockPrologue prologue, ElementUpdate update) {
  if (count == 0)
    return;
  SmallVector<Value> all(buffers);
  Value copy = lowerCopyIntoUpdate(op->getResult(0), lowering);
  if (copy)
    all.push_back(copy);
  if (skip)
    all.push_back(lowering.lookup(skip));
  // One kernel argument per distinct buffer.
  SmallVector<Value> arguments;
  SmallVector<unsigned> slots;
  for (Value buffer : all) {
    auto same = llvm::find_if(arguments, [&](Value argument) {
      return argument.getType() == buffer.getType() &&
             KernelLowering::getRootBuffer(argument) ==
                 KernelLowering::getRootBuffer(buffer);
    });
    slots.push_back(same - arguments.begin());
    if (same == arguments.end())
      arguments.push_back(buffer);
  }
  // Elements per parallel iteration (the target's update block).
  int64_t updateBlock = lowering.getSchedule().updateBlock;
  int64_t blocks = (count + updateBlock - 1) / updateBlock;
  lowering.launch(
      op->getLoc(), op->getName().getStringRef(), arguments, blocks,
      // About four loads and stores, a square root and divisions each.
      4 * updateBlock, [&](OpBuilder &b, Location loc, ValueRange kernelArgs) {
        SmallVector<Value> args;
        for (unsigned slot : slots)
          args.push_back(kernelArgs[slot]);
        Value skipBuffer = skip ? args.pop_back_val() : Value();
        Value copyBuffer = copy ? args.pop_back_val() : Value();
        kb::parallelFor(
            b, loc, blocks, [&](OpBuilder &b, Location loc, Value block) {
              SmallVector<Value> scalars = prologue(b, loc, args);
              // i1 skip != 0, once per block.
              Value skipped;
              if (skipBuffer) {
                Value word = loadScalar(b, loc, skipBuffer);
                skipped = arith::CmpFOp::create(
                    b, loc, arith::CmpFPredicate::UNE, word,
                    kb::floatConst(b, loc, word.getType(), 0.0));
              }
              auto keep = [&](OpBuilder &b, Location loc, Value old,
                              Value fresh) -> Value {
                if (!skipped)
                  return fresh;
                return arith::SelectOp::create(b, loc, skipped, old, fresh);
              };
              Value begin, end;
              std::tie(begin, end) =
                  kb::blockRange(b, loc, block, updateBlock, count);
              kb::forLoop(
                  b, loc, begin, end, {},
                  [&](OpBuilder &b, Location loc, Value i,
                      ValueRange) -> SmallVector<Value> {
                    update(b, loc, args, scalars, i, keep);
                    if (copyBuffer) {
                      Value fresh = memref::LoadOp::create(
                          b, loc, args[newParam], ValueRange{i});
                      memref::StoreOp::create(
                          b, loc,
                          kb::narrow(b, loc, fresh,
                                     cast<MemRefType>(copyBuffer.getType())
                                         .getElementType()),
                          copyBuffer, ValueRange{i});
                    }
                    return {};
                  });
            });
      });
}

namespace {
/// Small arithmetic helpers over one builder.
struct Arith {
  OpBuilder &b;
  Location loc;
  Type type;
  Value c(double value) { return kb::floatConst(b, loc, type, value); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value at(Value buffer, Value i) {
    return memref::LoadOp::create(b, loc, buffer, i);
  }
  void store(Value value, Value buffer, Value i) {
    memref::StoreOp::create(b, loc, value, buffer, i);
  }
};

/// The rate of step t (read from its 0-d buffer), computed in f64 as the
/// interpreter does, rounded once to the result type.
struct LrScheduleToKernel : OpToKernelPattern<graph::LrScheduleOp> {
  LogicalResult lowerOp(graph::LrScheduleOp op,
                        KernelLowering &lowering) const override {
    Type elementType = op.getType().getElementType();
    double lr = op.getLr().convertToDouble();
    double warmup = static_cast<double>(op.getWarmup());
    double total = static_cast<double>(op.getTotal());
    double final = op.getFinal().convertToDouble();
    graph::LrScheduleKind kind = op.getKind();
    Value result = lowering.allocateResult(op.getResult());
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(),
        {lowering.lookup(op.getStep()), result}, 1, 1,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Arith f{b, loc, b.getF64Type()};
          Value t = loadScalar(b, loc, args[0]);
          if (!t.getType().isF64())
            t = arith::ExtFOp::create(b, loc, b.getF64Type(), t);
          Value rate = f.c(lr);
          if (kind != graph::LrScheduleKind::Constant) {
            // p = clamp((t - W) / (total - W), 0, 1), as std::clamp.
            Value p = f.div(f.sub(t, f.c(warmup)), f.c(total - warmup));
            Value below = arith::CmpFOp::create(
                b, loc, arith::CmpFPredicate::OLT, p, f.c(0.0));
            Value above = arith::CmpFOp::create(
                b, loc, arith::CmpFPredicate::OLT, f.c(1.0), p);
            p = arith::SelectOp::create(
                b, loc, below, f.c(0.0),
                arith::SelectOp::create(b, loc, above, f.c(1.0), p));
            if (kind == graph::LrScheduleKind::Linear) {
              rate =
                  f.mul(f.c(lr), f.sub(f.c(1.0), f.mul(f.c(1.0 - final), p)));
            } else {
              Value cosine = math::CosOp::create(b, loc, f.mul(f.c(M_PI), p));
              rate =
                  f.mul(f.c(lr), f.add(f.c(final),
                                       f.mul(f.mul(f.c(1.0 - final), f.c(0.5)),
                                             f.add(f.c(1.0), cosine))));
            }
          }
          if (warmup > 0) {
            Value warming = arith::CmpFOp::create(
                b, loc, arith::CmpFPredicate::OLE, t, f.c(warmup));
            rate = arith::SelectOp::create(
                b, loc, warming, f.div(f.mul(f.c(lr), t), f.c(warmup)), rate);
          }
          if (!elementType.isF64())
            rate = arith::TruncFOp::create(b, loc, elementType, rate);
          memref::StoreOp::create(b, loc, rate, args[1], ValueRange{});
        });
    lowering.bind(op.getResult(), result);
    return success();
  }
};

/// sqrt of the sum of squares: a partial sum per block of elements (the
/// target's ScheduleParameters::normBlock) of each operand (one parallel
/// loop per operand over the block index; at most normTensorsPerKernel
/// operands to a kernel), then the partials summed in operand and block
/// order.
struct GlobalNormToKernel : OpToKernelPattern<graph::GlobalNormOp> {
  LogicalResult lowerOp(graph::GlobalNormOp op,
                        KernelLowering &lowering) const override {
    Type elementType = op.getType().getElementType();
    int64_t normBlock = lowering.getSchedule().normBlock;
    int64_t perKernel = lowering.getSchedule().normTensorsPerKernel;
    SmallVector<Value> inputs;
    SmallVector<int64_t> counts, blocks, bases;
    int64_t totalBlocks = 0;
    for (Value input : op.getInputs()) {
      int64_t count = cast<ShapedType>(input.getType()).getNumElements();
      if (count == 0)
        continue;
      inputs.push_back(lowering.view(lowering.lookup(input), {count}));
      counts.push_back(count);
      blocks.push_back((count + normBlock - 1) / normBlock);
      bases.push_back(totalBlocks);
      totalBlocks += blocks.back();
    }
    Value result = lowering.allocateResult(op.getResult());
    Value partials = lowering.allocateTransient(
        MemRefType::get({std::max<int64_t>(totalBlocks, 1)}, elementType));
    size_t group = perKernel > 0 ? static_cast<size_t>(perKernel)
                                 : std::max<size_t>(inputs.size(), 1);
    for (size_t first = 0; first < inputs.size(); first += group) {
      size_t last = std::min(inputs.size(), first + group);
      SmallVector<Value> buffers(inputs.begin() + first, inputs.begin() + last);
      buffers.push_back(partials);
      int64_t range = 0, totalElements = 0;
      for (size_t k = first; k < last; ++k) {
        range = std::max(range, blocks[k]);
        totalElements += counts[k];
      }
      lowering.launch(
          op.getLoc(), op->getName().getStringRef(), buffers, range,
          totalElements / range,
          [&](OpBuilder &b, Location loc, ValueRange kernelArgs) {
            // Operand k's buffer is kernelArgs[k - first].
            SmallVector<Value> args(last, Value());
            for (size_t k = first; k < last; ++k)
              args[k] = kernelArgs[k - first];
            args.push_back(kernelArgs.back());
            for (unsigned k = first; k < last; ++k) {
              kb::parallelFor(
                  b, loc, range, [&](OpBuilder &b, Location loc, Value block) {
                    auto sumBlock = [&](OpBuilder &b, Location loc) {
                      Arith f{b, loc, elementType};
                      Value begin, end;
                      std::tie(begin, end) =
                          kb::blockRange(b, loc, block, normBlock, counts[k]);
                      Value sum = kb::forLoop(
                          b, loc, begin, end, f.c(0.0),
                          [&](OpBuilder &, Location, Value i,
                              ValueRange acc) -> SmallVector<Value> {
                            Value x = f.at(args[k], i);
                            return {f.add(acc[0], f.mul(x, x))};
                          })[0];
                      f.store(sum, args.back(),
                              arith::AddIOp::create(
                                  b, loc, block, kb::index(b, loc, bases[k])));
                    };
                    if (blocks[k] == range) {
                      sumBlock(b, loc);
                      return;
                    }
                    Value inside = arith::CmpIOp::create(
                        b, loc, arith::CmpIPredicate::ult, block,
                        kb::index(b, loc, blocks[k]));
                    auto ifOp = scf::IfOp::create(b, loc, inside, false);
                    OpBuilder::InsertionGuard guard(b);
                    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
                    sumBlock(b, loc);
                  });
            }
          });
    }
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(), {partials, result}, 1, 1,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Arith f{b, loc, elementType};
          Value sum = kb::forLoop(b, loc, totalBlocks, f.c(0.0),
                                  [&](OpBuilder &, Location, Value i,
                                      ValueRange acc) -> SmallVector<Value> {
                                    return {f.add(acc[0], f.at(args[0], i))};
                                  })[0];
          memref::StoreOp::create(b, loc, math::SqrtOp::create(b, loc, sum),
                                  args[1], ValueRange{});
        });
    lowering.bind(op.getResult(), result);
    return success();
  }
};

/// min(1, max_norm / (norm + 1e-6)), as std::min(T(1), coefficient).
struct ClipScaleToKernel : OpToKernelPattern<graph::ClipScaleOp> {
  LogicalResult lowerOp(graph::ClipScaleOp op,
                        KernelLowering &lowering) const override {
    Type elementType = op.getType().getElementType();
    double maxNorm = op.getMaxNorm().convertToDouble();
    Value result = lowering.allocateResult(op.getResult());
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(),
        {lowering.lookup(op.getNorm()), result}, 1, 1,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Arith f{b, loc, elementType};
          Value coefficient = f.div(
              f.c(maxNorm), f.add(loadScalar(b, loc, args[0]), f.c(1e-6)));
          Value smaller = arith::CmpFOp::create(
              b, loc, arith::CmpFPredicate::OLT, coefficient, f.c(1.0));
          memref::StoreOp::create(
              b, loc,
              arith::SelectOp::create(b, loc, smaller, coefficient, f.c(1.0)),
              args[1], ValueRange{});
        });
    lowering.bind(op.getResult(), result);
    return success();
  }
};

/// (scale, good steps, skip) after a step: on a non-finite norm the scale
/// backs off and the step is skipped, else the clean-step count grows and,
/// at the interval, the scale with it (unless that overflows). One thread;
/// it reads every operand before it writes.
struct LossScaleUpdateToKernel : OpToKernelPattern<graph::LossScaleUpdateOp> {
  bool readsAtResultIndex() const override { return true; }
  LogicalResult lowerOp(graph::LossScaleUpdateOp op,
                        KernelLowering &lowering) const override {
    Type elementType = op.getNorm().getType().getElementType();
    double growth = op.getGrowth().convertToDouble();
    double backoff = op.getBackoff().convertToDouble();
    double interval = static_cast<double>(op.getInterval());
    Value newScale = lowering.allocateResult(op.getNewScale());
    Value newGood = lowering.allocateResult(op.getNewGoodSteps());
    Value skip = lowering.allocateResult(op.getSkip());
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(),
        {lowering.lookup(op.getNorm()), lowering.lookup(op.getScale()),
         lowering.lookup(op.getGoodSteps()), newScale, newGood, skip},
        1, 1, [&](OpBuilder &b, Location loc, ValueRange args) {
          Arith f{b, loc, elementType};
          Value norm = loadScalar(b, loc, args[0]);
          Value scale = loadScalar(b, loc, args[1]);
          Value good = loadScalar(b, loc, args[2]);
          Value inf = f.c(std::numeric_limits<double>::infinity());
          auto isFinite = [&](Value x) {
            return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                         math::AbsFOp::create(b, loc, x), inf);
          };
          auto select = [&](Value condition, Value x, Value y) {
            return arith::SelectOp::create(b, loc, condition, x, y);
          };
          Value finite = isFinite(norm);
          Value clean = f.add(good, f.c(1.0));
          Value grows = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE,
                                              clean, f.c(interval));
          Value grown = f.mul(scale, f.c(growth));
          Value cleanScale =
              select(grows, select(isFinite(grown), grown, scale), scale);
          Value cleanGood = select(grows, f.c(0.0), clean);
          auto store = [&](Value value, Value buffer) {
            memref::StoreOp::create(b, loc, value, buffer, ValueRange{});
          };
          store(select(finite, cleanScale, f.mul(scale, f.c(backoff))),
                args[3]);
          store(select(finite, cleanGood, f.c(0.0)), args[4]);
          store(select(finite, f.c(0.0), f.c(1.0)), args[5]);
        });
    lowering.bind(op.getNewScale(), newScale);
    lowering.bind(op.getNewGoodSteps(), newGood);
    lowering.bind(op.getSkip(), skip);
    return success();
  }
};

/// p' = p - lr (g s + wd p).
struct SgdUpdateToKernel : OpToKernelPattern<graph::SgdUpdateOp> {
  bool readsAtResultIndex() const override { return true; }
  LogicalResult lowerOp(graph::SgdUpdateOp op,
                        KernelLowering &lowering) const override {
    auto type = op.getParam().getType();
    int64_t count = type.getNumElements();
    double wd = op.getWeightDecay().convertToDouble();
    Value newParam = lowering.allocateResult(op.getNewParam());
    Value buffers[] = {lowering.view(lowering.lookup(op.getParam()), {count}),
                       lowering.view(lowering.lookup(op.getGrad()), {count}),
                       lowering.lookup(op.getLr()),
                       lowering.lookup(op.getGradScale()),
                       lowering.view(newParam, {count})};
    launchBlockedUpdate(
        op, lowering, buffers, /*newParam=*/4, op.getSkip(), count,
        [&](OpBuilder &b, Location loc, ArrayRef<Value> args) {
          return SmallVector<Value>{loadScalar(b, loc, args[2]),
                                    loadScalar(b, loc, args[3])};
        },
        [&](OpBuilder &b, Location loc, ArrayRef<Value> args,
            ValueRange scalars, Value i, KeepIfSkipped keep) {
          Arith f{b, loc, type.getElementType()};
          Value p = f.at(args[0], i);
          Value d =
              f.add(f.mul(f.at(args[1], i), scalars[1]), f.mul(f.c(wd), p));
          f.store(keep(b, loc, p, f.sub(p, f.mul(scalars[0], d))), args[4], i);
        });
    lowering.bind(op.getNewParam(), newParam);
    return success();
  }
};

/// d = g s + wd p; b' = mu b + d; p' = p - lr (nesterov ? d + mu b' : b').
struct MomentumUpdateToKernel : OpToKernelPattern<graph::MomentumUpdateOp> {
  bool readsAtResultIndex() const override { return true; }
  LogicalResult lowerOp(graph::MomentumUpdateOp op,
                        KernelLowering &lowering) const override {
    auto type = op.getParam().getType();
    int64_t count = type.getNumElements();
    double wd = op.getWeightDecay().convertToDouble();
    double mu = op.getMomentum().convertToDouble();
    bool nesterov = op.getNesterov();
    Value newParam = lowering.allocateResult(op.getNewParam());
    Value newBuffer = lowering.allocateResult(op.getNewBuffer());
    Value buffers[] = {lowering.view(lowering.lookup(op.getParam()), {count}),
                       lowering.view(lowering.lookup(op.getGrad()), {count}),
                       lowering.view(lowering.lookup(op.getBuffer()), {count}),
                       lowering.lookup(op.getLr()),
                       lowering.lookup(op.getGradScale()),
                       lowering.view(newParam, {count}),
                       lowering.view(newBuffer, {count})};
    launchBlockedUpdate(
        op, lowering, buffers, /*newParam=*/5, op.getSkip(), count,
        [&](OpBuilder &b, Location loc, ArrayRef<Value> args) {
          return SmallVector<Value>{loadScalar(b, loc, args[3]),
                                    loadScalar(b, loc, args[4])};
        },
        [&](OpBuilder &b, Location loc, ArrayRef<Value> args,
            ValueRange scalars, Value i, KeepIfSkipped keep) {
          Arith f{b, loc, type.getElementType()};
          Value p = f.at(args[0], i);
          Value buffer = f.at(args[2], i);
          Value d =
              f.add(f.mul(f.at(args[1], i), scalars[1]), f.mul(f.c(wd), p));
          Value next = f.add(f.mul(f.c(mu), buffer), d);
          Value step = nesterov ? f.add(d, f.mul(f.c(mu), next)) : next;
          f.store(keep(b, loc, buffer, next), args[6], i);
          f.store(keep(b, loc, p, f.sub(p, f.mul(scalars[0], step))), args[5],
                  i);
        });
    lowering.bind(op.getNewParam(), newParam);
    lowering.bind(op.getNewBuffer(), newBuffer);
    return success();
  }
};

/// Per block: bc1 = 1 - b1^t, bc2 = sqrt(1 - b2^t), step = lr / bc1,
/// decay = 1 - lr wd; per element: g = grad s, m' = b1 m + (1 - b1) g,
/// v' = b2 v + (1 - b2) g g, p' = p decay - step (m' / (sqrt(v') / bc2 +
/// eps)).
struct AdamWUpdateToKernel : OpToKernelPattern<graph::AdamWUpdateOp> {
  bool readsAtResultIndex() const override { return true; }
  LogicalResult lowerOp(graph::AdamWUpdateOp op,
                        KernelLowering &lowering) const override {
    auto type = op.getParam().getType();
    Type elementType = type.getElementType();
    int64_t count = type.getNumElements();
    double beta1 = op.getBeta1().convertToDouble();
    double beta2 = op.getBeta2().convertToDouble();
    double eps = op.getEps().convertToDouble();
    double wd = op.getWeightDecay().convertToDouble();
    Value newParam = lowering.allocateResult(op.getNewParam());
    Value newM = lowering.allocateResult(op.getNewM());
    Value newV = lowering.allocateResult(op.getNewV());
    Value buffers[] = {lowering.view(lowering.lookup(op.getParam()), {count}),
                       lowering.view(lowering.lookup(op.getGrad()), {count}),
                       lowering.view(lowering.lookup(op.getM()), {count}),
                       lowering.view(lowering.lookup(op.getV()), {count}),
                       lowering.lookup(op.getLr()),
                       lowering.lookup(op.getStep()),
                       lowering.lookup(op.getGradScale()),
                       lowering.view(newParam, {count}),
                       lowering.view(newM, {count}),
                       lowering.view(newV, {count})};
    launchBlockedUpdate(
        op, lowering, buffers, /*newParam=*/7, op.getSkip(), count,
        [&](OpBuilder &b, Location loc, ArrayRef<Value> args) {
          Arith f{b, loc, elementType};
          Value lr = loadScalar(b, loc, args[4]);
          Value step = loadScalar(b, loc, args[5]);
          Value bias1 =
              f.sub(f.c(1.0), math::PowFOp::create(b, loc, f.c(beta1), step));
          Value bias2Sqrt = math::SqrtOp::create(
              b, loc,
              f.sub(f.c(1.0), math::PowFOp::create(b, loc, f.c(beta2), step)));
          return SmallVector<Value>{f.div(lr, bias1), bias2Sqrt,
                                    f.sub(f.c(1.0), f.mul(lr, f.c(wd))),
                                    loadScalar(b, loc, args[6])};
        },
        [&](OpBuilder &b, Location loc, ArrayRef<Value> args,
            ValueRange scalars, Value i, KeepIfSkipped keep) {
          Arith f{b, loc, elementType};
          Value stepSize = scalars[0], bias2Sqrt = scalars[1],
                decay = scalars[2], scale = scalars[3];
          Value b1 = f.c(beta1), b2 = f.c(beta2);
          Value p0 = f.at(args[0], i), m0 = f.at(args[2], i),
                v0 = f.at(args[3], i);
          Value g = f.mul(f.at(args[1], i), scale);
          Value m = f.add(f.mul(b1, m0), f.mul(f.sub(f.c(1.0), b1), g));
          Value v =
              f.add(f.mul(b2, v0), f.mul(f.mul(f.sub(f.c(1.0), b2), g), g));
          Value denominator = f.add(
              f.div(math::SqrtOp::create(b, loc, v), bias2Sqrt), f.c(eps));
          Value p =
              f.sub(f.mul(p0, decay), f.mul(stepSize, f.div(m, denominator)));
          f.store(keep(b, loc, m0, m), args[8], i);
          f.store(keep(b, loc, v0, v), args[9], i);
          f.store(keep(b, loc, p0, p), args[7], i);
        });
    lowering.bind(op.getNewParam(), newParam);
    lowering.bind(op.getNewM(), newM);
    lowering.bind(op.getNewV(), newV);
    return success();
  }
};
} // namespace

void kiln::populateOptimizerToKernelPatterns(
    GraphToKernelPatternSet &patterns) {
  patterns.add<LrScheduleToKernel>();
  patterns.add<GlobalNormToKernel>();
  patterns.add<ClipScaleToKernel>();
  patterns.add<LossScaleUpdateToKernel>();
  patterns.add<SgdUpdateToKernel>();
  patterns.add<MomentumUpdateToKernel>();
  patterns.add<AdamWUpdateToKernel>();
}
