//===- TransposeTemplate.cpp - Shared-memory tiles for transposes ---------===//
//
// Part of Kiln. The transpose template (TransposeTemplate.h): an
// elementwise kernel that reads some operands across its store order,
// through 32 x 32 tiles of shared memory, so that both its loads and its
// stores run along neighbouring elements of a warp.
//
//===----------------------------------------------------------------------===//

#include "TransposeTemplate.h"
#include "KernelFunc.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace kiln;

namespace {
/// A tile's side, and the rows of it a block's threads take at once (a
/// block of kTile x kTileRows threads; each thread takes kTile / kTileRows
/// elements of the tile).
constexpr int64_t kTile = 32;
constexpr int64_t kTileRows = 8;
/// The loads one kernel may read through tiles (each kTile x (kTile + 1)
/// words of shared memory: 4 KiB for f32).
constexpr size_t kMaxTiledLoads = 4;
/// Dims shorter than this fill too little of a tile to gain from one.
constexpr int64_t kMinTiledExtent = 16;

/// The dim of `loop` whose induction variable `value` is (directly, or
/// through an affine.apply of the identity map), else nullopt.
std::optional<unsigned> getLoopDim(Value value, scf::ParallelOp loop) {
  if (auto apply = value.getDefiningOp<affine::AffineApplyOp>()) {
    AffineMap map = apply.getAffineMap();
    if (map.getNumDims() != 1 || map.getNumSymbols() != 0 || !map.isIdentity())
      return std::nullopt;
    value = apply.getMapOperands()[0];
  }
  auto argument = dyn_cast<BlockArgument>(value);
  if (!argument || argument.getOwner() != loop.getBody())
    return std::nullopt;
  return argument.getArgNumber();
}

/// Whether each index is an induction variable of `loop` or comes from
/// outside it (so that the access can be made at any chosen element).
bool hasPlainIndices(ValueRange indices, scf::ParallelOp loop) {
  return llvm::all_of(indices, [&](Value index) {
    return getLoopDim(index, loop) || loop.isDefinedOutsideOfLoop(index);
  });
}

/// The extent of each dim of `loop` (constant bounds from 0 in steps of 1).
std::optional<SmallVector<int64_t>> getExtents(scf::ParallelOp loop) {
  SmallVector<int64_t> extents;
  for (auto [lower, upper, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> high = getConstantIntValue(upper);
    if (getConstantIntValue(lower) != 0 || getConstantIntValue(step) != 1 ||
        !high || *high <= 0)
      return std::nullopt;
    extents.push_back(*high);
  }
  return extents;
}
} // namespace

std::optional<TransposePlan>
kiln::planTranspose(func::FuncOp body, scf::ParallelOp loop,
                    ArrayRef<bool> aliasedArguments) {
  std::optional<SmallVector<int64_t>> extents = getExtents(loop);
  if (!extents || extents->size() < 2 || loop.getNumReductions() != 0)
    return std::nullopt;
  unsigned storeDim = extents->size() - 1;
  // Every store runs along the store dim (a map's output).
  bool storesAlong = true;
  loop.getBody()->walk([&](Operation *op) {
    if (isa<memref::AtomicRMWOp>(op))
      storesAlong = false;
    if (auto store = dyn_cast<memref::StoreOp>(op))
      storesAlong &= !store.getIndices().empty() &&
                     getLoopDim(store.getIndices().back(), loop) == storeDim;
  });
  if (!storesAlong)
    return std::nullopt;

  TransposePlan plan;
  plan.loop = loop;
  std::optional<unsigned> readDim;
  for (Operation &op : loop.getBody()->without_terminator()) {
    auto load = dyn_cast<memref::LoadOp>(op);
    if (!load || load.getIndices().empty())
      continue;
    ValueRange indices = load.getIndices();
    std::optional<unsigned> last = getLoopDim(indices.back(), loop);
    bool storeDimElsewhere = llvm::any_of(indices.drop_back(), [&](Value v) {
      return getLoopDim(v, loop) == storeDim;
    });
    if (!last || *last == storeDim || !storeDimElsewhere)
      continue;
    // Tiles read along one dim; the loads' buffers are not written by the
    // kernel (its tile is read before any element is stored).
    if ((readDim && *readDim != *last) || !hasPlainIndices(indices, loop))
      return std::nullopt;
    auto argument = dyn_cast<BlockArgument>(load.getMemRef());
    if (!argument || argument.getOwner() != &body.getBody().front() ||
        argument.getArgNumber() >= aliasedArguments.size() ||
        aliasedArguments[argument.getArgNumber()])
      return std::nullopt;
    bool written = false;
    body.walk([&](Operation *user) {
      if (auto store = dyn_cast<memref::StoreOp>(user))
        written |= store.getMemRef() == load.getMemRef();
      if (auto atomic = dyn_cast<memref::AtomicRMWOp>(user))
        written |= atomic.getMemref() == load.getMemRef();
    });
    if (written)
      return std::nullopt;
    readDim = *last;
    plan.loads.push_back(load);
  }
  if (!readDim || plan.loads.size() > kMaxTiledLoads ||
      (*extents)[*readDim] < kMinTiledExtent ||
      (*extents)[storeDim] < kMinTiledExtent)
    return std::nullopt;
  plan.readDim = *readDim;
  plan.grid = 1;
  for (auto [dim, extent] : llvm::enumerate(*extents))
    plan.grid *= dim == *readDim || dim == storeDim
                     ? (extent + kTile - 1) / kTile
                     : extent;
  return plan;
}

namespace {
/// Maps the induction variables of `loop` to `indices` in `mapping`.
void mapIndices(scf::ParallelOp loop, ArrayRef<Value> indices,
                IRMapping &mapping) {
  for (auto [variable, index] :
       llvm::zip(loop.getBody()->getArguments(), indices))
    mapping.map(variable, index);
}

/// Clones the ops of the loop body that `load`'s indices are computed by
/// (affine.apply of the induction variables), then the load itself.
Value cloneLoad(OpBuilder &b, memref::LoadOp load, IRMapping &mapping) {
  for (Value index : load.getIndices())
    if (Operation *producer = index.getDefiningOp();
        producer && producer->getBlock() == load->getBlock())
      b.clone(*producer, mapping);
  return b.clone(*load, mapping)->getResult(0);
}

/// `lhs < rhs` as an i1.
Value isBelow(OpBuilder &b, Location loc, Value lhs, int64_t rhs) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lhs,
                               arith::ConstantIndexOp::create(b, loc, rhs));
}
} // namespace

void kiln::buildTransposeKernel(OpBuilder &builder, StringRef name,
                                Location loc, func::FuncOp body,
                                const TransposePlan &plan) {
  Block &source = body.getBody().front();
  scf::ParallelOp loop = plan.loop;
  unsigned numBuffers = source.getNumArguments() - 2;
  // A tile per load, a word of padding per row: the column a warp reads
  // back in the second phase then falls on 32 different banks.
  SmallVector<Type> workgroup;
  for (memref::LoadOp load : plan.loads)
    workgroup.push_back(getSharedBufferType(
        builder.getContext(), {kTile, kTile + 1}, load.getType()));
  gpu::GPUFuncOp func = createKernelFunc(builder, loc, name, body, workgroup,
                                         {plan.grid, kTile * kTileRows});
  func->setAttr(kTransposeAttr, builder.getI64IntegerAttr(kTile));

  Block &entry = func.getBody().front();
  OpBuilder b = OpBuilder::atBlockEnd(&entry);
  IRMapping outside;
  for (unsigned i = 0; i < numBuffers; ++i)
    outside.map(source.getArgument(i), entry.getArgument(i));
  for (Operation &op : source.without_terminator())
    if (&op != loop.getOperation())
      b.clone(op, outside);

  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value blockId = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value side = arith::ConstantIndexOp::create(b, loc, kTile);
  Value lane = arith::RemUIOp::create(b, loc, thread, side);
  Value row = arith::DivUIOp::create(b, loc, thread, side);

  // The block's tile: the store dim's tiles fastest, then the read dim's,
  // then the other dims, the last fastest.
  SmallVector<int64_t> extents = *getExtents(loop);
  unsigned storeDim = extents.size() - 1, readDim = plan.readDim;
  SmallVector<Value> base(extents.size());
  Value rest = blockId;
  auto takeDim = [&](unsigned dim, int64_t count, int64_t scale) {
    Value countValue = arith::ConstantIndexOp::create(b, loc, count);
    Value index = arith::RemUIOp::create(b, loc, rest, countValue);
    rest = arith::DivUIOp::create(b, loc, rest, countValue);
    base[dim] = scale == 1 ? index
                           : arith::MulIOp::create(
                                 b, loc, index,
                                 arith::ConstantIndexOp::create(b, loc, scale))
                                 .getResult();
  };
  takeDim(storeDim, (extents[storeDim] + kTile - 1) / kTile, kTile);
  takeDim(readDim, (extents[readDim] + kTile - 1) / kTile, kTile);
  for (int64_t dim = static_cast<int64_t>(extents.size()) - 1; dim >= 0; --dim)
    if (dim != storeDim && dim != readDim)
      takeDim(dim, extents[dim], 1);

  // The loop's indices of the tile's element (along the store dim, along
  // the read dim), and whether it is inside the loop's range.
  auto elementAt = [&](Value alongStore, Value alongRead, Value &inside) {
    SmallVector<Value> indices(base);
    indices[storeDim] =
        arith::AddIOp::create(b, loc, base[storeDim], alongStore);
    indices[readDim] = arith::AddIOp::create(b, loc, base[readDim], alongRead);
    inside = arith::AndIOp::create(
        b, loc, isBelow(b, loc, indices[storeDim], extents[storeDim]),
        isBelow(b, loc, indices[readDim], extents[readDim]));
    return indices;
  };
  ArrayRef<BlockArgument> tiles = func.getWorkgroupAttributions();

  // The thread's kTile / kTileRows elements of the tile: rows `row`, `row`
  // + kTileRows, ... of it, its lane the column. `lanesAlongRead`: columns
  // are offsets along the read dim (else the store dim). `emit` builds each
  // element's work where the element is inside the loop's range, with the
  // loop's indices mapped to it and the element's row offset.
  auto forEachElement =
      [&](bool lanesAlongRead,
          llvm::function_ref<void(OpBuilder &, Value, IRMapping &)> emit) {
        for (int64_t k = 0; k < kTile; k += kTileRows) {
          Value offset = k == 0 ? row
                                : arith::AddIOp::create(
                                      b, loc, row,
                                      arith::ConstantIndexOp::create(b, loc, k))
                                      .getResult();
          Value inside;
          SmallVector<Value> indices = lanesAlongRead
                                           ? elementAt(offset, lane, inside)
                                           : elementAt(lane, offset, inside);
          auto ifInside =
              scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
          OpBuilder then(ifInside.thenBlock()->getTerminator());
          IRMapping mapping = outside;
          mapIndices(loop, indices, mapping);
          emit(then, offset, mapping);
        }
      };

  // First phase: lanes along the read dim, each tiled load into its tile at
  // [store offset][read offset].
  forEachElement(/*lanesAlongRead=*/true, [&](OpBuilder &then, Value alongStore,
                                              IRMapping &mapping) {
    for (auto [load, tile] : llvm::zip(plan.loads, tiles))
      memref::StoreOp::create(then, loc, cloneLoad(then, load, mapping), tile,
                              ValueRange{alongStore, lane});
  });
  gpu::BarrierOp::create(b, loc);

  // Second phase: lanes along the store dim, the whole body, the tiled
  // loads read back from [store offset][read offset].
  llvm::DenseMap<Operation *, BlockArgument> tileOf;
  for (auto [load, tile] : llvm::zip(plan.loads, tiles))
    tileOf[load] = tile;
  forEachElement(/*lanesAlongRead=*/false, [&](OpBuilder &then, Value alongRead,
                                               IRMapping &mapping) {
    for (Operation &op : loop.getBody()->without_terminator()) {
      auto tile = tileOf.find(&op);
      if (tile == tileOf.end()) {
        then.clone(op, mapping);
        continue;
      }
      mapping.map(op.getResult(0),
                  memref::LoadOp::create(then, loc, tile->second,
                                         ValueRange{lane, alongRead})
                      .getResult());
    }
  });
  gpu::ReturnOp::create(b, loc);
}
