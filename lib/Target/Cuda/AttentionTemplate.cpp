//===- AttentionTemplate.cpp - Flash attention on the GPU -----------------===//
//
// Part of Kiln. The attention template (AttentionTemplate.h): the three
// parts of a fused attention as tiled kernels.
//
//   forward         a row per query: for each key of each key tile, the
//                   score q.k * scale; a running maximum m and exp-sum l;
//                   the output row rescaled by exp(m_old - m_new) and
//                   p * v added. out = o / l, lse = m + log(l).
//   key_value_grad  a row per key: for each query of each query tile (with
//                   its lse and delta = rowsum(dout * out)),
//                   p = exp(q.k * scale - lse), dv += p * dout,
//                   ds = p * (dout.v - delta) * scale, dk += ds * q.
//   query_grad      a row per query: for each key, the same p and ds,
//                   dq += ds * k.
//
// Each sum over a row's columns is its lanes' partial sums combined by a
// butterfly of shuffles; IEEE addition commutes, so every lane of the group
// ends with the same bits. A mask's term of each pair is read in place
// from global memory (it is an input, shared by the heads it broadcasts
// over, and small next to the vectors in cache). Every loop that holds a
// barrier or a shuffle has bounds the whole block (or warp) shares; masked rows
// and keys are dropped by selects, never by a branch around a shuffle.
//
//===----------------------------------------------------------------------===//

#include "AttentionTemplate.h"
#include "KernelFunc.h"
#include "TemplateBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace kiln;
using kernel::FusedAttention;
using Part = FusedAttention::Part;
using namespace kiln::attention;

namespace {
/// The columns of one vector a lane holds at most (registers per vector).
constexpr int64_t kMaxColumnsPerLane = 8;
/// The threads of a block, when the part has rows enough to fill one.
constexpr int64_t kBlockSize = 256;
/// The other side's rows staged in shared memory at once.
constexpr int64_t kTileRows = 32;

/// The shape each argument of `part` must have; `f32` whether it holds f32
/// whatever the vectors' type (lse and delta).
struct ExpectedBuffer {
  SmallVector<int64_t> shape;
  bool f32 = false;
};
SmallVector<ExpectedBuffer> getExpectedBuffers(const FusedAttention &a) {
  ExpectedBuffer q{{a.batches, a.queries, a.keyDim}},
      k{{a.batches, a.keys, a.keyDim}}, v{{a.batches, a.keys, a.valueDim}},
      out{{a.batches, a.queries, a.valueDim}},
      rows{{a.batches, a.queries}, /*f32=*/true};
  SmallVector<ExpectedBuffer> buffers;
  switch (a.part) {
  case Part::Forward:
    buffers = {q, k, v, out, rows};
    break;
  case Part::KeyValueGrad:
    buffers = {q, k, v, out, rows, rows, k, v};
    break;
  case Part::QueryGrad:
    buffers = {q, k, v, out, rows, rows, q};
    break;
  }
  if (a.masked)
    buffers.push_back({{a.maskBatches * a.maskQueries, a.maskKeys}});
  return buffers;
}

/// The vectors a part's rows hold: (argument, dim) pairs.
struct VectorArgument {
  unsigned argument;
  int64_t dim;
};
} // namespace

std::optional<AttentionPlan> kiln::planAttention(const FusedAttention &part,
                                                 func::FuncOp body,
                                                 int64_t warpSize) {
  Block &source = body.getBody().front();
  SmallVector<ExpectedBuffer> buffers = getExpectedBuffers(part);
  if (source.getNumArguments() != buffers.size() + 2)
    return std::nullopt;
  // The vectors and the mask in one element type, lse and delta in f32.
  Type elementType =
      cast<MemRefType>(source.getArgument(kQuery).getType()).getElementType();
  for (auto [argument, buffer] : llvm::zip(source.getArguments(), buffers)) {
    auto type = dyn_cast<MemRefType>(argument.getType());
    Type expected =
        buffer.f32 ? Float32Type::get(body.getContext()) : elementType;
    if (!type || type.getElementType() != expected ||
        type.getShape() != ArrayRef<int64_t>(buffer.shape))
      return std::nullopt;
  }
  if (!elementType.isF32())
    return planMmaAttention(part, elementType, warpSize);
  // The fewest lanes (a power of two, at most a warp) that hold the wider
  // head dim in kMaxColumnsPerLane columns each.
  int64_t widest = std::max(part.keyDim, part.valueDim);
  int64_t lanes = 1;
  while (lanes < warpSize &&
         llvm::divideCeilSigned(widest, lanes) > kMaxColumnsPerLane)
    lanes *= 2;
  if (llvm::divideCeilSigned(widest, lanes) > kMaxColumnsPerLane ||
      warpSize % lanes)
    return std::nullopt;

  AttentionPlan plan;
  plan.attention = part;
  plan.lanes = lanes;
  plan.warpSize = warpSize;
  plan.tileRows = kTileRows;
  int64_t rows = part.getRows();
  int64_t rowsPerWarp = warpSize / lanes;
  plan.rowsPerBlock =
      std::min(kBlockSize / lanes,
               llvm::divideCeilSigned(rows, rowsPerWarp) * rowsPerWarp);
  plan.blockSize = plan.rowsPerBlock * lanes;
  plan.grid = part.batches * llvm::divideCeilSigned(rows, plan.rowsPerBlock);
  // Two tiles of vectors, and for key_value_grad the queries' lse and delta.
  int64_t words = kTileRows * (part.keyDim + part.valueDim);
  if (part.part == Part::KeyValueGrad)
    words += 2 * kTileRows;
  plan.sharedBytes = 4 * words;
  return plan;
}

std::pair<Value, Value> kiln::buildTileRange(OpBuilder &b, Location loc,
                                             const AttentionPlan &plan,
                                             Value firstRow) {
  const FusedAttention &a = plan.attention;
  bool byKeys = a.part != Part::KeyValueGrad;
  int64_t others = byKeys ? a.keys : a.queries;
  int64_t tileRows = plan.tileRows;
  auto index = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  Value first = index(0), end = index(llvm::divideCeilSigned(others, tileRows));
  if (a.causal && byKeys) {
    // Keys up to the block's last row (and no further than the keys).
    Value last = arith::MinUIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc, firstRow, index(plan.rowsPerBlock)),
        index(std::min(a.queries, a.keys)));
    end = arith::DivUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, last, index(tileRows - 1)),
        index(tileRows));
  } else if (a.causal) {
    // Queries from the block's first key on.
    first = arith::DivUIOp::create(b, loc, firstRow, index(tileRows));
  }
  return {first, end};
}

void kiln::stageAttentionTiles(OpBuilder &b, Location loc,
                               const AttentionPlan &plan, ValueRange arguments,
                               ValueRange shared, Value batch, Value thread,
                               Value start) {
  const FusedAttention &a = plan.attention;
  bool byKeys = a.part != Part::KeyValueGrad;
  int64_t others = byKeys ? a.keys : a.queries;
  auto index = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  SmallVector<unsigned, 4> sources = {kKey, kValue};
  if (!byKeys)
    sources = {kQuery, kResultGrad, kLse, kDelta};
  // The last tile's reads are over before it is overwritten.
  gpu::BarrierOp::create(b, loc);
  for (auto [source, tile] : llvm::zip(sources, shared)) {
    // [tileRows, dim] of a [batches, others, dim] vector, or [tileRows] of
    // a [batches, others] one; each thread copies every blockSize-th word.
    auto type = cast<MemRefType>(tile.getType());
    int64_t dim = type.getRank() == 2 ? type.getShape()[1] : 1;
    Type element = type.getElementType();
    Value zero = arith::ConstantOp::create(b, loc, element,
                                           b.getFloatAttr(element, 0.0));
    scf::ForOp loop = scf::ForOp::create(
        b, loc, thread, index(plan.tileRows * dim), index(plan.blockSize));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    Value word = loop.getInductionVar();
    Value r = arith::DivUIOp::create(b, loc, word, index(dim));
    Value other = arith::AddIOp::create(b, loc, start, r);
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         other, index(others));
    Value clamped =
        arith::SelectOp::create(b, loc, inside, other, index(others - 1));
    SmallVector<Value, 3> from = {batch, clamped}, to = {r};
    if (type.getRank() == 2) {
      Value c = arith::RemUIOp::create(b, loc, word, index(dim));
      from.push_back(c);
      to.push_back(c);
    }
    Value value = memref::LoadOp::create(b, loc, arguments[source], from);
    memref::StoreOp::create(
        b, loc, arith::SelectOp::create(b, loc, inside, value, zero), tile, to);
  }
  gpu::BarrierOp::create(b, loc);
}

Value kiln::loadAttentionMask(OpBuilder &b, Location loc,
                              const FusedAttention &a, Value mask, Value batch,
                              Value query, Value key) {
  auto index = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  // Batch (b / divisor) % batches; query i, or the mask's only row.
  Value row = arith::MulIOp::create(
      b, loc,
      arith::RemUIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, batch, index(a.maskDivisor)),
          index(a.maskBatches)),
      index(a.maskQueries));
  if (a.maskQueries != 1)
    row = arith::AddIOp::create(
        b, loc, row,
        arith::MinUIOp::create(b, loc, query, index(a.queries - 1)));
  Value column = a.maskKeys == 1
                     ? index(0)
                     : arith::MinUIOp::create(b, loc, key, index(a.keys - 1));
  Value value = memref::LoadOp::create(b, loc, mask, ValueRange{row, column});
  if (!value.getType().isF32())
    value = arith::ExtFOp::create(b, loc, b.getF32Type(), value);
  return value;
}

namespace {
/// Builds one part's kernel: the thread's row, its registers, the tiles.
class AttentionKernelBuilder : TemplateBuilder {
public:
  AttentionKernelBuilder(OpBuilder &b, Location loc, const AttentionPlan &plan,
                         ValueRange arguments, ValueRange shared)
      : TemplateBuilder(b, loc), plan(plan), a(plan.attention),
        arguments(arguments.begin(), arguments.end()),
        shared(shared.begin(), shared.end()) {}

  void build();

private:
  /// The lanes' columns of a vector of `dim`: column c of the lane is
  /// member + c * lanes.
  int64_t columnsOf(int64_t dim) const {
    return llvm::divideCeilSigned(dim, plan.lanes);
  }
  bool mayPassEnd(int64_t c, int64_t dim) const {
    return (c + 1) * plan.lanes > dim;
  }
  Value column(int64_t c) { return add(member, index(c * plan.lanes)); }
  /// The column, clamped into [0, dim), and whether it was inside.
  std::pair<Value, Value> clampedColumn(int64_t c, int64_t dim) {
    Value col = column(c);
    if (!mayPassEnd(c, dim))
      return {col, nullptr};
    Value inside = below(col, index(dim));
    return {select(inside, col, index(dim - 1)), inside};
  }

  /// The thread's row of `argument` ([batches, rows, dim]) into registers;
  /// columns past the dim are 0.
  SmallVector<Value> loadRow(VectorArgument vector) {
    SmallVector<Value> values;
    for (int64_t c = 0; c < columnsOf(vector.dim); ++c) {
      auto [col, inside] = clampedColumn(c, vector.dim);
      Value value = memref::LoadOp::create(b, loc, arguments[vector.argument],
                                           ValueRange{batch, row, col});
      values.push_back(inside ? select(inside, value, real(0)) : value);
    }
    return values;
  }
  /// The registers into the thread's row of `argument`, where it exists.
  void storeRow(ArrayRef<Value> values, VectorArgument vector) {
    for (auto [c, value] : llvm::enumerate(values)) {
      Value col = column(c);
      Value store = rowInside;
      if (mayPassEnd(c, vector.dim))
        store = both(store, below(col, index(vector.dim)));
      when(store, [&, value = value] {
        memref::StoreOp::create(b, loc, value, arguments[vector.argument],
                                ValueRange{batch, rowIndex, col});
      });
    }
  }
  /// The row's value summed over its group: a butterfly of shuffles.
  Value sumOverGroup(Value partial) {
    Value width =
        arith::ConstantIntOp::create(b, loc, b.getI32Type(), plan.warpSize);
    for (int64_t offset = plan.lanes / 2; offset >= 1; offset /= 2) {
      Value offsetValue =
          arith::ConstantIntOp::create(b, loc, b.getI32Type(), offset);
      Value other = gpu::ShuffleOp::create(b, loc, partial, offsetValue, width,
                                           gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      partial = add(partial, other);
    }
    return partial;
  }
  /// Σ_c own[c] * tile[j][c] over the group's columns.
  Value dot(ArrayRef<Value> own, Value tile, Value j, int64_t dim) {
    Value partial;
    for (auto [c, value] : llvm::enumerate(own)) {
      auto [col, inside] = clampedColumn(c, dim);
      Value term =
          mul(value, memref::LoadOp::create(b, loc, tile, ValueRange{j, col}));
      if (inside)
        term = select(inside, term, real(0));
      partial = partial ? add(partial, term) : term;
    }
    return sumOverGroup(partial);
  }
  /// acc[c] * scale (when given) + weight * tile[j][c].
  SmallVector<Value> axpy(ValueRange acc, Value scale, Value weight, Value tile,
                          Value j, int64_t dim) {
    SmallVector<Value> result;
    for (auto [c, value] : llvm::enumerate(acc)) {
      Value col = clampedColumn(c, dim).first;
      Value term =
          mul(weight, memref::LoadOp::create(b, loc, tile, ValueRange{j, col}));
      result.push_back(add(scale ? mul(value, scale) : value, term));
    }
    return result;
  }

  /// Whether the other side's row `other` pairs with the thread's row:
  /// inside its rows, and on the seen side of the causal diagonal.
  Value pairs(Value other, int64_t others) {
    Value inside = below(other, index(others));
    if (!a.causal)
      return inside;
    // Queries see the keys up to their own index.
    Value seen = a.part == Part::KeyValueGrad
                     ? arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                             other, rowIndex)
                     : arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                                             other, rowIndex);
    return both(inside, seen);
  }

  /// score + the mask's term of the thread's row and the other side's row
  /// `other` (unchanged without a mask).
  Value addMask(Value score, Value other) {
    if (!a.masked)
      return score;
    bool byKeys = a.part != Part::KeyValueGrad;
    Value query = byKeys ? row : other, key = byKeys ? other : row;
    return add(score, loadAttentionMask(b, loc, a, arguments[a.getMaskBuffer()],
                                        batch, query, key));
  }

  /// Loops over the tiles this block needs, staging each
  /// (stageAttentionTiles); `pair` updates `carried`
  /// for row j of the tile (`other` its index, `valid` whether it pairs).
  SmallVector<Value>
  walkTiles(ValueRange inits,
            llvm::function_ref<SmallVector<Value>(Value j, Value other,
                                                  Value valid, ValueRange)>
                pair);

  void buildForward();
  void buildKeyValueGrad();
  void buildQueryGrad();

  const AttentionPlan &plan;
  const FusedAttention &a;
  SmallVector<Value> arguments;
  SmallVector<Value> shared;
  // The thread's place: its batch, its row (clamped into the rows, and as
  // laid out), whether that row exists, its lane in the row's group.
  Value thread, batch, firstRow, rowIndex, row, rowInside, member;
};

SmallVector<Value> AttentionKernelBuilder::walkTiles(
    ValueRange inits,
    llvm::function_ref<SmallVector<Value>(Value, Value, Value, ValueRange)>
        pair) {
  bool byKeys = a.part != Part::KeyValueGrad;
  int64_t others = byKeys ? a.keys : a.queries;
  int64_t tileRows = plan.tileRows;
  auto [first, end] = buildTileRange(b, loc, plan, firstRow);
  return forLoop(first, end, index(1), inits,
                 [&](Value t, ValueRange carried) -> SmallVector<Value> {
                   Value start = mul(t, index(tileRows));
                   stageAttentionTiles(b, loc, plan, arguments, shared, batch,
                                       thread, start);
                   return forLoop(index(0), index(tileRows), index(1), carried,
                                  [&](Value j, ValueRange state) {
                                    Value other = add(start, j);
                                    return pair(j, other, pairs(other, others),
                                                state);
                                  });
                 });
}

void AttentionKernelBuilder::buildForward() {
  VectorArgument q{kQuery, a.keyDim}, out{kOut, a.valueDim};
  SmallVector<Value> query = loadRow(q);
  Value scale = real(a.scale);
  // Carried: the running maximum, exp-sum, then the output row.
  SmallVector<Value> inits = {real(-std::numeric_limits<double>::infinity()),
                              real(0)};
  for (int64_t c = 0; c < columnsOf(a.valueDim); ++c)
    inits.push_back(real(0));
  SmallVector<Value> state = walkTiles(
      inits,
      [&](Value j, Value other, Value valid,
          ValueRange carried) -> SmallVector<Value> {
        Value maximum = carried[0], sum = carried[1];
        Value score =
            addMask(mul(dot(query, shared[0], j, a.keyDim), scale), other);
        // A key the mask hides (-inf) counts as outside: exp(-inf - -inf)
        // would be NaN while nothing is seen yet.
        if (a.masked)
          valid =
              both(valid, arith::CmpFOp::create(
                              b, loc, arith::CmpFPredicate::OGT, score,
                              real(-std::numeric_limits<double>::infinity())));
        // One exponential: of the smaller minus the larger.
        Value larger = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                             score, maximum);
        Value e = math::ExpOp::create(
            b, loc,
            arith::NegFOp::create(
                b, loc, math::AbsFOp::create(b, loc, sub(score, maximum))));
        Value rescale = select(valid, select(larger, e, real(1)), real(1));
        Value p = select(valid, select(larger, real(1), e), real(0));
        SmallVector<Value> next = {select(both(valid, larger), score, maximum),
                                   add(mul(sum, rescale), p)};
        llvm::append_range(next, axpy(carried.drop_front(2), rescale, p,
                                      shared[1], j, a.valueDim));
        return next;
      });
  Value maximum = state[0], sum = state[1];
  SmallVector<Value> output;
  for (Value value : ArrayRef<Value>(state).drop_front(2))
    output.push_back(arith::DivFOp::create(b, loc, value, sum));
  storeRow(output, out);
  Value lse = add(maximum, math::LogOp::create(b, loc, sum));
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, member, index(0));
  when(both(rowInside, first), [&] {
    memref::StoreOp::create(b, loc, lse, arguments[kForwardLse],
                            ValueRange{batch, rowIndex});
  });
}

void AttentionKernelBuilder::buildKeyValueGrad() {
  VectorArgument k{kKey, a.keyDim}, v{kValue, a.valueDim},
      dk{kFirstGrad, a.keyDim}, dv{kValueGrad, a.valueDim};
  SmallVector<Value> key = loadRow(k), value = loadRow(v);
  Value scale = real(a.scale);
  int64_t keyColumns = columnsOf(a.keyDim);
  // Carried: the key's gradient row, then the value's.
  SmallVector<Value> inits(keyColumns + columnsOf(a.valueDim), real(0));
  SmallVector<Value> state = walkTiles(
      inits,
      [&](Value j, Value other, Value valid,
          ValueRange carried) -> SmallVector<Value> {
        Value score =
            addMask(mul(dot(key, shared[0], j, a.keyDim), scale), other);
        Value lse = memref::LoadOp::create(b, loc, shared[2], ValueRange{j});
        Value delta = memref::LoadOp::create(b, loc, shared[3], ValueRange{j});
        Value p = select(valid, math::ExpOp::create(b, loc, sub(score, lse)),
                         real(0));
        SmallVector<Value> valueGrad =
            axpy(carried.drop_front(keyColumns), nullptr, p, shared[1], j,
                 a.valueDim);
        Value dp = dot(value, shared[1], j, a.valueDim);
        Value ds = mul(mul(p, sub(dp, delta)), scale);
        SmallVector<Value> next = axpy(carried.take_front(keyColumns), nullptr,
                                       ds, shared[0], j, a.keyDim);
        llvm::append_range(next, valueGrad);
        return next;
      });
  storeRow(ArrayRef<Value>(state).take_front(keyColumns), dk);
  storeRow(ArrayRef<Value>(state).drop_front(keyColumns), dv);
}

void AttentionKernelBuilder::buildQueryGrad() {
  VectorArgument q{kQuery, a.keyDim}, dout{kResultGrad, a.valueDim},
      dq{kFirstGrad, a.keyDim};
  SmallVector<Value> query = loadRow(q), resultGrad = loadRow(dout);
  Value lse =
      memref::LoadOp::create(b, loc, arguments[kLse], ValueRange{batch, row});
  Value delta =
      memref::LoadOp::create(b, loc, arguments[kDelta], ValueRange{batch, row});
  Value scale = real(a.scale);
  SmallVector<Value> inits(columnsOf(a.keyDim), real(0));
  SmallVector<Value> state = walkTiles(
      inits,
      [&](Value j, Value other, Value valid,
          ValueRange carried) -> SmallVector<Value> {
        Value score =
            addMask(mul(dot(query, shared[0], j, a.keyDim), scale), other);
        Value p = select(valid, math::ExpOp::create(b, loc, sub(score, lse)),
                         real(0));
        Value dp = dot(resultGrad, shared[1], j, a.valueDim);
        Value ds = mul(mul(p, sub(dp, delta)), scale);
        return axpy(carried, nullptr, ds, shared[0], j, a.keyDim);
      });
  storeRow(state, dq);
}

void AttentionKernelBuilder::build() {
  thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  int64_t rows = a.getRows();
  Value rowBlocks = index(llvm::divideCeilSigned(rows, plan.rowsPerBlock));
  batch = arith::DivUIOp::create(b, loc, block, rowBlocks);
  firstRow = mul(arith::RemUIOp::create(b, loc, block, rowBlocks),
                 index(plan.rowsPerBlock));
  Value lanes = index(plan.lanes);
  member = arith::RemUIOp::create(b, loc, thread, lanes);
  rowIndex = add(firstRow, arith::DivUIOp::create(b, loc, thread, lanes));
  rowInside = below(rowIndex, index(rows));
  row = select(rowInside, rowIndex, index(rows - 1));
  switch (a.part) {
  case Part::Forward:
    return buildForward();
  case Part::KeyValueGrad:
    return buildKeyValueGrad();
  case Part::QueryGrad:
    return buildQueryGrad();
  }
}
} // namespace

void kiln::buildAttentionKernel(OpBuilder &builder, StringRef name,
                                Location loc, func::FuncOp body,
                                const AttentionPlan &plan) {
  const FusedAttention &a = plan.attention;
  MLIRContext *context = builder.getContext();
  Type f32 = builder.getF32Type();
  // Tiles of the other side's two vectors (keys and values, or queries and
  // result gradients, in the vectors' type), and key_value_grad's lse and
  // delta.
  bool byKeys = a.part != Part::KeyValueGrad;
  Type vectors = plan.tensorCores ? plan.elementType : f32;
  SmallVector<Type> workgroup = {
      getSharedBufferType(context, {plan.tileRows, a.keyDim}, vectors),
      getSharedBufferType(context, {plan.tileRows, a.valueDim}, vectors)};
  if (!byKeys) {
    workgroup.push_back(getSharedBufferType(context, {plan.tileRows}, f32));
    workgroup.push_back(getSharedBufferType(context, {plan.tileRows}, f32));
  }
  gpu::GPUFuncOp func = createKernelFunc(builder, loc, name, body, workgroup,
                                         {plan.grid, plan.blockSize});
  func->setAttr(kAttentionTemplateAttr,
                builder.getStringAttr(kernel::getPartName(a.part)));
  Block &entry = func.getBody().front();
  OpBuilder b = OpBuilder::atBlockEnd(&entry);
  SmallVector<Value> buffers(
      entry.getArguments().take_front(a.getNumBuffers()));
  SmallVector<Value> shared(func.getWorkgroupAttributions());
  if (plan.tensorCores)
    buildMmaAttentionBody(b, loc, plan, buffers, shared);
  else
    AttentionKernelBuilder(b, loc, plan, buffers, shared).build();
  gpu::ReturnOp::create(b, loc);
}
