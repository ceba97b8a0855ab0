//===- FusionToKernel.cpp - A graph.fusion region to one kernel
//------------===//
//
// Part of Kiln. A fusion region is one linalg.generic over its results'
// shape: each value read from outside the region is an input at the index
// map that composes the maps of the ops between it and the results
// (FusibleOpInterface::getOperandIndexMap), and the payload evaluates the
// ops' scalar formulas (buildScalar) from those inputs. A value inside the
// region is computed once per (value, index map) and never stored; each
// yielded value is an output. When every map is the identity the buffers
// are seen flat, as the per-op elementwise kernels see them, so the kernel
// vectorizes and the planner may write an output over a dying input.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/GraphToKernel/GraphToKernel.h"
#include "kiln/Conversion/GraphToKernel/KernelBuilders.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace kiln;

namespace {
/// A value of the region's computation at one index map of the iteration
/// space.
using MappedValue = std::pair<Value, AffineMap>;

/// The operands of `value`'s producer, each at the map at which computing
/// `value` at `map` reads it.
static SmallVector<MappedValue> getOperandsAt(Value value, AffineMap map) {
  Operation *producer = value.getDefiningOp();
  auto fusible = cast<graph::FusibleOpInterface>(producer);
  unsigned result = cast<OpResult>(value).getResultNumber();
  SmallVector<MappedValue> operands;
  for (auto [index, operand] : llvm::enumerate(producer->getOperands()))
    operands.push_back(
        {operand, fusible.getOperandIndexMap(result, index).compose(map)});
  return operands;
}

/// Walks a fusion region from its yields to the values it reads.
class FusionInputs {
public:
  explicit FusionInputs(graph::FusionOp fusion) : fusion(fusion) {}

  /// Records the inputs `value` at `map` needs.
  void collect(Value value, AffineMap map) {
    if (!visited.insert({value, map}).second)
      return;
    Operation *producer = value.getDefiningOp();
    if (!producer || !fusion->isProperAncestor(producer)) {
      inputs.insert({{value, map}, inputs.size()});
      return;
    }
    for (auto [operand, operandMap] : getOperandsAt(value, map))
      collect(operand, operandMap);
  }

  /// The inputs, in order of first use: (value, map) -> input number.
  llvm::MapVector<MappedValue, unsigned> inputs;

private:
  graph::FusionOp fusion;
  llvm::DenseSet<MappedValue> visited;
};

/// Builds the payload: the scalar of each (value, map), once.
class FusionPayload {
public:
  FusionPayload(OpBuilder &b,
                const llvm::MapVector<MappedValue, unsigned> &inputs,
                ValueRange inputScalars)
      : b(b), inputs(inputs), inputScalars(inputScalars) {}

  Value emit(Value value, AffineMap map) {
    auto known = scalars.find({value, map});
    if (known != scalars.end())
      return known->second;
    Value scalar;
    auto input = inputs.find({value, map});
    if (input != inputs.end()) {
      scalar = kb::widen(b, value.getLoc(), inputScalars[input->second]);
    } else {
      SmallVector<Value> operands;
      for (auto [operand, operandMap] : getOperandsAt(value, map))
        operands.push_back(emit(operand, operandMap));
      Operation *producer = value.getDefiningOp();
      scalar = kb::buildComputeScalar(b, producer->getLoc(), producer,
                                      cast<OpResult>(value).getResultNumber(),
                                      operands);
    }
    scalars[{value, map}] = scalar;
    return scalar;
  }

  /// The element of `value` at `map`, rounded to its type for a store.
  Value emitStored(Value value, AffineMap map) {
    return kb::narrow(b, value.getLoc(), emit(value, map),
                      cast<ShapedType>(value.getType()).getElementType());
  }

private:
  OpBuilder &b;
  const llvm::MapVector<MappedValue, unsigned> &inputs;
  ValueRange inputScalars;
  llvm::DenseMap<MappedValue, Value> scalars;
};

/// The names of the ops in the region, for the plan and the profile.
static std::string describeFusion(graph::FusionOp fusion) {
  std::string names = "fusion(";
  llvm::raw_string_ostream os(names);
  llvm::interleave(
      fusion.getBody().front().without_terminator(), os,
      [&](Operation &op) { os << op.getName().stripDialect(); }, ",");
  os << ")";
  return names;
}

/// The indices of `shape` that `indices` of `viewShape` (a row-major
/// reshape of it) denote: each view dim that merges neighbouring dims is
/// split by its own delinearization (invariant in the inner loops of a row
/// kernel); otherwise through the linear index.
static SmallVector<Value> expandViewIndices(OpBuilder &b, Location loc,
                                            ArrayRef<int64_t> viewShape,
                                            ArrayRef<int64_t> shape,
                                            ValueRange indices) {
  if (viewShape == shape)
    return SmallVector<Value>(indices);
  Value zero = kb::index(b, loc, 0);
  SmallVector<Value> expanded(shape.size(), zero);
  size_t next = 0;
  bool merged = true;
  for (auto [viewDim, size] : llvm::enumerate(viewShape)) {
    if (size == 1)
      continue;
    SmallVector<int64_t> group, positions;
    int64_t product = 1;
    while (next < shape.size() && product < size) {
      if (shape[next] != 1) {
        group.push_back(shape[next]);
        positions.push_back(next);
        product *= shape[next];
      }
      ++next;
    }
    if (product != size) {
      merged = false;
      break;
    }
    SmallVector<Value> split = kb::delinearize(b, loc, indices[viewDim], group);
    for (auto [position, value] : llvm::zip_equal(positions, split))
      expanded[position] = value;
  }
  if (merged && llvm::all_of(shape.drop_front(next),
                             [](int64_t size) { return size == 1; }))
    return expanded;
  Value linear = zero;
  for (auto [index, size] : llvm::zip_equal(indices, viewShape))
    linear = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, linear, kb::index(b, loc, size)),
        index);
  return kb::delinearize(b, loc, linear, shape);
}

/// The indices `map` gives for `indices`: plain dims and constants
/// directly, other expressions through affine.apply.
static SmallVector<Value> applyIndexMap(OpBuilder &b, Location loc,
                                        AffineMap map, ValueRange indices) {
  SmallVector<Value> applied;
  for (unsigned i = 0; i < map.getNumResults(); ++i) {
    AffineExpr expr = map.getResult(i);
    if (auto dim = dyn_cast<AffineDimExpr>(expr))
      applied.push_back(indices[dim.getPosition()]);
    else if (auto constant = dyn_cast<AffineConstantExpr>(expr))
      applied.push_back(kb::index(b, loc, constant.getValue()));
    else
      applied.push_back(
          affine::AffineApplyOp::create(b, loc, map.getSubMap({i}), indices));
  }
  return applied;
}

/// Lowers a region that ends in an anchor: the anchor's own pattern builds
/// its kernels, reading its fused operand through the producers' formulas
/// (an ElementSource), and the covering pass also writes the other values
/// the region yields, each at the fused operand's index.
static LogicalResult lowerAnchoredFusion(graph::FusionOp fusion,
                                         graph::FusionAnchorOpInterface anchor,
                                         KernelLowering &lowering) {
  Value fused = anchor->getOperand(anchor.getFusedOperandIndex());
  auto fusedType = cast<RankedTensorType>(fused.getType());
  SmallVector<int64_t> shape(fusedType.getShape());
  AffineMap identity =
      AffineMap::getMultiDimIdentityMap(shape.size(), fusion.getContext());
  auto collector = std::make_shared<FusionInputs>(fusion);
  collector->collect(fused, identity);

  SmallVector<Value> results;
  for (Value result : fusion.getResults())
    results.push_back(lowering.allocateResult(result));
  unsigned numAnchorResults = anchor->getNumResults();
  for (auto [anchorResult, buffer] : llvm::zip(anchor->getResults(), results))
    lowering.presetResult(anchorResult, buffer);
  SmallVector<Value> yieldedValues(
      fusion.getYield().getValues().drop_front(numAnchorResults));
  SmallVector<Value> yieldedBuffers(
      ArrayRef<Value>(results).drop_front(numAnchorResults));

  lowering.setFusedSource(fused, [&lowering, collector, shape, identity, fused,
                                  yieldedValues,
                                  yieldedBuffers](ArrayRef<int64_t> viewShape) {
    SmallVector<Value> buffers;
    for (auto &entry : collector->inputs)
      buffers.push_back(lowering.lookup(entry.first.first));
    unsigned numInputs = buffers.size();
    llvm::append_range(buffers, yieldedBuffers);
    SmallVector<int64_t> view(viewShape);
    auto read = [collector, shape, view, identity, fused, yieldedValues,
                 numInputs](OpBuilder &b, Location loc, ValueRange args,
                            ValueRange indices, bool covering) -> Value {
      SmallVector<Value> at = expandViewIndices(b, loc, view, shape, indices);
      // After the covering read, a yielded operand is in its buffer.
      if (!covering)
        for (auto [value, buffer] :
             llvm::zip_equal(yieldedValues, args.drop_front(numInputs)))
          if (value == fused)
            return memref::LoadOp::create(b, loc, buffer, at);
      SmallVector<Value> scalars;
      for (auto [entry, buffer] :
           llvm::zip(collector->inputs, args.take_front(numInputs)))
        scalars.push_back(memref::LoadOp::create(
            b, loc, buffer, applyIndexMap(b, loc, entry.first.second, at)));
      FusionPayload payload(b, collector->inputs, scalars);
      Value element = payload.emitStored(fused, identity);
      if (covering)
        for (auto [value, buffer] :
             llvm::zip_equal(yieldedValues, args.drop_front(numInputs)))
          memref::StoreOp::create(b, loc, payload.emitStored(value, identity),
                                  buffer, at);
      return element;
    };
    return ElementSource(buffers, read);
  });
  if (failed(lowering.lowerNested(anchor, describeFusion(fusion))))
    return failure();
  for (auto [result, buffer] : llvm::zip_equal(fusion.getResults(), results))
    lowering.bind(result, buffer);
  return success();
}

struct FusionToKernel : OpToKernelPattern<graph::FusionOp> {
  LogicalResult lowerOp(graph::FusionOp fusion,
                        KernelLowering &lowering) const override {
    if (graph::FusionAnchorOpInterface anchor = fusion.getAnchor())
      return lowerAnchoredFusion(fusion, anchor, lowering);
    auto resultType = cast<RankedTensorType>(fusion.getResult(0).getType());
    ArrayRef<int64_t> shape = resultType.getShape();
    int64_t rank = shape.size();
    MLIRContext *context = fusion.getContext();

    FusionInputs collector(fusion);
    AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, context);
    for (Value yielded : fusion.getYield().getValues())
      collector.collect(yielded, identity);

    // Flat when every input is read at the identity of its own shape, the
    // iteration space (not a slice or split piece at offset 0 of a larger
    // one): one dim of `count`.
    int64_t count = resultType.getNumElements();
    bool flat =
        rank != 1 && llvm::all_of(collector.inputs, [&](auto &entry) {
          return entry.first.second == identity &&
                 cast<ShapedType>(entry.first.first.getType()).getShape() ==
                     shape;
        });
    AffineMap iterationMap =
        flat ? AffineMap::getMultiDimIdentityMap(1, context) : identity;
    auto asIterated = [&](Value buffer) {
      return flat ? lowering.view(buffer, {count}) : buffer;
    };

    SmallVector<Value> buffers;
    SmallVector<AffineMap> inputMaps;
    for (auto &[mapped, index] : collector.inputs) {
      buffers.push_back(asIterated(lowering.lookup(mapped.first)));
      inputMaps.push_back(flat ? iterationMap : mapped.second);
    }
    unsigned numInputs = buffers.size();
    SmallVector<Value> results;
    for (Value result : fusion.getResults()) {
      results.push_back(lowering.allocateResult(result));
      buffers.push_back(asIterated(results.back()));
    }

    int64_t range = flat ? count : kb::rangeOfShape(shape);
    int64_t perIteration =
        std::max<int64_t>(count / std::max<int64_t>(range, 1), 1);
    int64_t work = 0;
    for (Operation &op : fusion.getBody().front().without_terminator())
      work += cast<graph::FusibleOpInterface>(op).getFlopsPerElement();
    if (count > 0)
      lowering.launch(
          fusion.getLoc(), describeFusion(fusion), buffers, range,
          perIteration * std::max<int64_t>(work / 4, 1),
          [&](OpBuilder &b, Location loc, ValueRange args) {
            unsigned numLoops = flat ? 1 : rank;
            SmallVector<AffineMap> maps(inputMaps);
            // An input read at a plain loop index along a longer dim (a
            // slice or split piece at offset 0) is seen through a subview
            // of the loop's extent there: linalg requires equal sizes where
            // an operand is indexed by a loop alone.
            SmallVector<Value> ins(args.take_front(numInputs));
            for (unsigned i = 0; i < numInputs && !flat; ++i) {
              auto type = cast<MemRefType>(ins[i].getType());
              SmallVector<int64_t> sizes(type.getShape());
              bool trim = false;
              for (auto [j, expr] : llvm::enumerate(maps[i].getResults())) {
                auto dim = dyn_cast<AffineDimExpr>(expr);
                if (dim && sizes[j] > shape[dim.getPosition()]) {
                  sizes[j] = shape[dim.getPosition()];
                  trim = true;
                }
              }
              if (!trim)
                continue;
              SmallVector<int64_t> zeros(sizes.size(), 0),
                  ones(sizes.size(), 1);
              ins[i] =
                  memref::SubViewOp::create(b, loc, ins[i], zeros, sizes, ones);
            }
            maps.append(args.size() - numInputs,
                        AffineMap::getMultiDimIdentityMap(numLoops, context));
            SmallVector<utils::IteratorType> iterators(
                numLoops, utils::IteratorType::parallel);
            linalg::GenericOp::create(
                b, loc, TypeRange{}, ins, args.drop_front(numInputs), maps,
                iterators,
                [&](OpBuilder &nested, Location nestedLoc, ValueRange scalars) {
                  FusionPayload payload(nested, collector.inputs,
                                        scalars.take_front(numInputs));
                  SmallVector<Value> yielded;
                  for (Value value : fusion.getYield().getValues())
                    yielded.push_back(payload.emitStored(value, identity));
                  linalg::YieldOp::create(nested, nestedLoc, yielded);
                });
          });
    for (auto [result, buffer] : llvm::zip_equal(fusion.getResults(), results))
      lowering.bind(result, buffer);
    return success();
  }
};
} // namespace

void kiln::populateFusionToKernelPatterns(GraphToKernelPatternSet &patterns) {
  patterns.add<FusionToKernel>();
}
