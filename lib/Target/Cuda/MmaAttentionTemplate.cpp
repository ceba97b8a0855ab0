//===- MmaAttentionTemplate.cpp - Flash attention on tensor cores ---------===//
//
// Part of Kiln. The bf16 and f16 variant of the attention template
// (AttentionTemplate.h), after FlashAttention-2: each warp of a block holds
// 16 of the part's rows (queries, or keys for key_value_grad) as
// mma.sync.m16n8k16 fragments and walks the other side's rows in tiles
// staged in shared memory as 16-bit elements; every product runs on the
// tensor cores with f32 accumulators.
//
//   forward         S = Q K^T, scaled and masked; per row a running maximum
//                   m and exp-sum l (online softmax), the output O rescaled
//                   by exp(m_old - m_new), P rounded to 16 bits, O += P V;
//                   out = O / l, lse = m + log(l).
//   key_value_grad  S^T = K Q^T, P^T = exp(S^T * scale - lse), dP^T =
//                   V dO^T, dS^T = P^T (dP^T - delta) * scale,
//                   dV += P^T dO, dK += dS^T Q.
//   query_grad      S = Q K^T, P = exp(S * scale - lse), dP = dO V^T,
//                   dS = P (dP - delta) * scale, dQ += dS K.
//
// A 16 x 8 accumulator fragment holds a lane's elements c0..c3 at rows g
// and g + 8, columns 2t and 2t + 1 (g = lane / 4, t = lane % 4; the PTX
// ISA's layouts, EmulateMma.cpp), so two neighbouring ones are the A
// fragment of a 16 x 16 piece: P and dS feed the next product from
// registers, rounded to 16 bits as they are. A row's values live in the
// four lanes of a group: its maximum and sum are two xor shuffles. Rows
// past the end compute on a repeated row and are not stored; masked pairs
// are dropped by selects; a mask's terms are read in place from global
// memory, one per element of the S fragments. No [queries, keys] value is ever
// stored.
//
//===----------------------------------------------------------------------===//

#include "AttentionTemplate.h"
#include "TemplateBuilder.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace kiln;
using namespace kiln::attention;
using kernel::FusedAttention;
using Part = FusedAttention::Part;

namespace {
/// The rows of an mma.sync.m16n8k16 product: a warp's rows.
constexpr int64_t kRowsPerWarp = 16;
constexpr int64_t kMaxWarps = 4;

/// A lane's share of a 16 x 8 f32 accumulator: c0..c3.
using Accumulator = SmallVector<Value, 4>;
/// A lane's share of a 16 x 16 multiplicand: four registers of two
/// 16-bit elements.
using Multiplicand = SmallVector<Value, 4>;
} // namespace

std::optional<AttentionPlan> kiln::planMmaAttention(const FusedAttention &part,
                                                    Type elementType,
                                                    int64_t warpSize) {
  StringRef name = kernel::getAttentionTypeName(elementType);
  if (warpSize != 32 || name == "f32" ||
      !attentionTemplateTakes(name, part.keyDim, part.valueDim))
    return std::nullopt;
  AttentionPlan plan;
  plan.attention = part;
  plan.tensorCores = true;
  plan.elementType = elementType;
  plan.lanes = 4;
  plan.warpSize = warpSize;
  int64_t rows = part.getRows();
  int64_t warps =
      std::min(kMaxWarps, llvm::divideCeilSigned(rows, kRowsPerWarp));
  plan.rowsPerBlock = warps * kRowsPerWarp;
  plan.blockSize = warps * warpSize;
  plan.grid = part.batches * llvm::divideCeilSigned(rows, plan.rowsPerBlock);
  // Wide heads take smaller tiles: the accumulators of a tile's scores
  // stay in registers.
  plan.tileRows = std::max(part.keyDim, part.valueDim) > 64 ? 32 : 64;
  int64_t elements = plan.tileRows * (part.keyDim + part.valueDim);
  plan.sharedBytes = 2 * elements;
  if (part.part == Part::KeyValueGrad)
    plan.sharedBytes += 2 * 4 * plan.tileRows;
  return plan;
}

namespace {
class MmaAttentionBuilder : TemplateBuilder {
public:
  MmaAttentionBuilder(OpBuilder &b, Location loc, const AttentionPlan &plan,
                      ValueRange arguments, ValueRange shared)
      : TemplateBuilder(b, loc), plan(plan), a(plan.attention),
        half(plan.elementType), arguments(arguments.begin(), arguments.end()),
        shared(shared.begin(), shared.end()) {}

  void build();

private:
  bool byKeys() const { return a.part != Part::KeyValueGrad; }
  int64_t others() const { return byKeys() ? a.keys : a.queries; }
  Value load(Value buffer, ValueRange indices) {
    return memref::LoadOp::create(b, loc, buffer, indices);
  }
  Value negativeInfinity() {
    return real(-std::numeric_limits<double>::infinity());
  }

  /// Two values rounded to 16 bits as one multiplicand register: bf16
  /// pairs packed in an i32 (as nvvm.mma.sync takes them), f16 pairs as a
  /// vector<2xf16>.
  Value pack(Value low, Value high) {
    auto narrow = [&](Value value) -> Value {
      if (value.getType() == half)
        return value;
      return arith::TruncFOp::create(b, loc, half, value);
    };
    Value pair =
        vector::FromElementsOp::create(b, loc, VectorType::get({2}, half),
                                       ValueRange{narrow(low), narrow(high)});
    if (!half.isBF16())
      return pair;
    Value word = vector::BitCastOp::create(
        b, loc, VectorType::get({1}, b.getI32Type()), pair);
    return vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0});
  }
  /// D = A B + C on the warp's tensor cores.
  Accumulator mma(ArrayRef<Value> aRegisters, ArrayRef<Value> bRegisters,
                  ArrayRef<Value> c) {
    auto result = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                   SmallVector<Type>(4, f32));
    NVVM::MMATypes type =
        half.isBF16() ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
    auto op = NVVM::MmaOp::create(
        b, loc, result, aRegisters, bRegisters, c, ArrayRef<int64_t>{16, 8, 16},
        std::nullopt, std::nullopt, std::array<NVVM::MMATypes, 2>{type, type},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    Accumulator d;
    for (int64_t i = 0; i < 4; ++i)
      d.push_back(LLVM::ExtractValueOp::create(b, loc, op.getRes(),
                                               ArrayRef<int64_t>{i}));
    return d;
  }

  /// The part's row of element i (rows g, g + 8), as laid out and clamped
  /// into the rows.
  Value rowOf(int64_t i) { return add(warpRow, index(8 * (i / 2))); }
  Value clampedRowOf(int64_t i) {
    Value row = rowOf(i);
    return select(below(row, index(a.getRows())), row, index(a.getRows() - 1));
  }
  /// The other side's row of element i of 8-column block `block` of a tile
  /// starting at `start`.
  Value otherOf(Value start, int64_t block, int64_t i) {
    return add(start, add(firstColumn, index(8 * block + i % 2)));
  }
  /// Whether the pair counts: inside the other side's rows and on the seen
  /// side of the causal diagonal (queries see the keys up to their own).
  Value pairs(Value row, Value other) {
    Value inside = below(other, index(others()));
    if (!a.causal)
      return inside;
    auto predicate =
        byKeys() ? arith::CmpIPredicate::ule : arith::CmpIPredicate::uge;
    return both(inside, arith::CmpIOp::create(b, loc, predicate, other, row));
  }

  /// score + the mask's term of the pair of the part's row `row` and the
  /// other side's row `other` (unchanged without a mask).
  Value addMask(Value score, Value row, Value other) {
    if (!a.masked)
      return score;
    Value query = byKeys() ? row : other, key = byKeys() ? other : row;
    return add(score, loadAttentionMask(b, loc, a, arguments[a.getMaskBuffer()],
                                        batch, query, key));
  }

  /// The warp's 16 rows of `argument` ([batches, rows, dim]) as A
  /// fragments, one per 16 columns.
  SmallVector<Multiplicand> loadFragments(unsigned argument, int64_t dim) {
    Value rows[2] = {clampedRowOf(0), clampedRowOf(2)};
    SmallVector<Multiplicand> fragments;
    for (int64_t piece = 0; piece < dim / 16; ++piece) {
      Multiplicand registers;
      // a0 a1: row g; a2 a3: row g + 8; a4..a7: the same 8 columns on.
      for (int64_t r = 0; r < 4; ++r) {
        Value col = add(firstColumn, index(16 * piece + 8 * (r / 2)));
        Value row = rows[r % 2];
        registers.push_back(
            pack(load(arguments[argument], {batch, row, col}),
                 load(arguments[argument], {batch, row, add(col, index(1))})));
      }
      fragments.push_back(std::move(registers));
    }
    return fragments;
  }
  /// The B fragment of X tile^T at (k0, n0): B(k, n) = tile[n0 + n][k0 + k].
  SmallVector<Value> transposedTile(Value tile, int64_t k0, int64_t n0) {
    SmallVector<Value> registers;
    Value row = add(group, index(n0));
    for (int64_t h = 0; h < 2; ++h) {
      Value col = add(firstColumn, index(k0 + 8 * h));
      registers.push_back(
          pack(load(tile, {row, col}), load(tile, {row, add(col, index(1))})));
    }
    return registers;
  }
  /// The B fragment of P tile at (k0, n0): B(k, n) = tile[k0 + k][n0 + n].
  SmallVector<Value> directTile(Value tile, int64_t k0, int64_t n0) {
    SmallVector<Value> registers;
    Value col = add(group, index(n0));
    for (int64_t h = 0; h < 2; ++h) {
      Value row = add(firstColumn, index(k0 + 8 * h));
      registers.push_back(
          pack(load(tile, {row, col}), load(tile, {add(row, index(1)), col})));
    }
    return registers;
  }
  /// X tile^T: the warp's 16 x 8 fragment for each 8 rows of the tile.
  SmallVector<Accumulator> timesTileTransposed(ArrayRef<Multiplicand> x,
                                               Value tile) {
    SmallVector<Accumulator> product;
    for (int64_t block = 0; block < plan.tileRows / 8; ++block) {
      Accumulator c(4, real(0));
      for (auto [piece, fragment] : llvm::enumerate(x))
        c = mma(fragment, transposedTile(tile, 16 * piece, 8 * block), c);
      product.push_back(std::move(c));
    }
    return product;
  }
  /// acc += P tile, P a 16 x tileRows value as fragments, acc per 8
  /// columns of the tile's dim.
  void accumulateTimesTile(SmallVector<Accumulator> &acc,
                           ArrayRef<Multiplicand> p, Value tile) {
    for (auto [block, c] : llvm::enumerate(acc))
      for (auto [piece, fragment] : llvm::enumerate(p))
        c = mma(fragment, directTile(tile, 16 * piece, 8 * block), c);
  }
  /// Neighbouring accumulators as the A fragments of a 16 x 16 piece.
  SmallVector<Multiplicand> asMultiplicands(ArrayRef<Accumulator> c) {
    SmallVector<Multiplicand> fragments;
    for (size_t piece = 0; piece + 1 < c.size(); piece += 2)
      fragments.push_back({pack(c[piece][0], c[piece][1]),
                           pack(c[piece][2], c[piece][3]),
                           pack(c[piece + 1][0], c[piece + 1][1]),
                           pack(c[piece + 1][2], c[piece + 1][3])});
    return fragments;
  }
  /// A row's value over the four lanes of its group.
  Value overGroup(Value value, bool maximum) {
    Value width = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 32);
    for (int64_t offset : {1, 2}) {
      Value other = gpu::ShuffleOp::create(b, loc, value,
                                           arith::ConstantIntOp::create(
                                               b, loc, b.getI32Type(), offset),
                                           width, gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      value = maximum
                  ? arith::MaximumFOp::create(b, loc, value, other).getResult()
                  : add(value, other);
    }
    return value;
  }

  static SmallVector<Value> flatten(ArrayRef<Accumulator> accumulators) {
    SmallVector<Value> values;
    for (const Accumulator &c : accumulators)
      values.append(c.begin(), c.end());
    return values;
  }
  static SmallVector<Accumulator> unflatten(ValueRange values) {
    SmallVector<Accumulator> accumulators;
    for (size_t i = 0; i + 3 < values.size(); i += 4)
      accumulators.push_back(Accumulator(values.slice(i, 4)));
    return accumulators;
  }
  SmallVector<Accumulator> zeros(int64_t dim) {
    return SmallVector<Accumulator>(dim / 8, Accumulator(4, real(0)));
  }

  /// Loops over the tiles the block needs, staging each
  /// (stageAttentionTiles); `body`
  /// updates `carried` from the tile starting at `start`.
  SmallVector<Value>
  walkTiles(ValueRange inits,
            llvm::function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto [begin, end] = buildTileRange(b, loc, plan, firstRow);
    return forLoop(begin, end, index(1), inits,
                   [&](Value t, ValueRange carried) -> SmallVector<Value> {
                     Value start = mul(t, index(plan.tileRows));
                     stageAttentionTiles(b, loc, plan, arguments, shared, batch,
                                         thread, start);
                     return body(start, carried);
                   });
  }

  /// Rounds and stores the warp's rows of `accumulators` (scaled by
  /// `scale[i / 2]` when given) into `argument`, where the rows exist.
  void storeRows(ArrayRef<Accumulator> accumulators, unsigned argument,
                 ArrayRef<Value> scale = {}) {
    for (auto [block, c] : llvm::enumerate(accumulators))
      for (int64_t h = 0; h < 2; ++h) {
        Value row = rowOf(2 * h);
        when(below(row, index(a.getRows())), [&, block = block, c = c] {
          for (int64_t e = 0; e < 2; ++e) {
            Value value = c[2 * h + e];
            if (!scale.empty())
              value = mul(value, scale[h]);
            Value col = add(firstColumn, index(8 * block + e));
            memref::StoreOp::create(
                b, loc, arith::TruncFOp::create(b, loc, half, value),
                arguments[argument], ValueRange{batch, row, col});
          }
        });
      }
  }

  void buildForward();
  void buildKeyValueGrad();
  void buildQueryGrad();

  const AttentionPlan &plan;
  const FusedAttention &a;
  Type half;
  SmallVector<Value> arguments;
  SmallVector<Value> shared;
  // The thread's place: its batch, the block's and the warp's first rows,
  // its lane's group (g) and first column (2t).
  Value thread, batch, firstRow, warpRow, group, firstColumn;
};

void MmaAttentionBuilder::buildForward() {
  SmallVector<Multiplicand> query = loadFragments(kQuery, a.keyDim);
  Value scale = real(a.scale);
  // Carried: the running maximum and (this lane's share of) the exp-sum of
  // rows g and g + 8, then the output's accumulators.
  SmallVector<Value> inits = {negativeInfinity(), negativeInfinity(), real(0),
                              real(0)};
  llvm::append_range(inits, flatten(zeros(a.valueDim)));
  SmallVector<Value> state = walkTiles(
      inits, [&](Value start, ValueRange carried) -> SmallVector<Value> {
        SmallVector<Accumulator> s = timesTileTransposed(query, shared[0]);
        Value maximum[2] = {carried[0], carried[1]};
        for (auto [block, c] : llvm::enumerate(s))
          for (int64_t i = 0; i < 4; ++i) {
            Value row = rowOf(i), other = otherOf(start, block, i);
            c[i] =
                select(pairs(row, other), addMask(mul(c[i], scale), row, other),
                       negativeInfinity());
            maximum[i / 2] =
                arith::MaximumFOp::create(b, loc, maximum[i / 2], c[i]);
          }
        Value rescale[2], sum[2];
        for (int64_t h = 0; h < 2; ++h) {
          maximum[h] = overGroup(maximum[h], /*maximum=*/true);
          // A row that has seen nothing yet subtracts 0: exp(-inf) = 0.
          Value nothing =
              arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                    maximum[h], negativeInfinity());
          Value subtrahend = select(nothing, real(0), maximum[h]);
          rescale[h] = math::ExpOp::create(b, loc, sub(carried[h], subtrahend));
          sum[h] = mul(carried[2 + h], rescale[h]);
          for (Accumulator &c : s)
            for (int64_t e = 0; e < 2; ++e) {
              Value &p = c[2 * h + e];
              p = math::ExpOp::create(b, loc, sub(p, subtrahend));
              sum[h] = add(sum[h], p);
            }
        }
        SmallVector<Accumulator> out = unflatten(carried.drop_front(4));
        for (Accumulator &c : out)
          for (int64_t i = 0; i < 4; ++i)
            c[i] = mul(c[i], rescale[i / 2]);
        accumulateTimesTile(out, asMultiplicands(s), shared[1]);
        SmallVector<Value> next = {maximum[0], maximum[1], sum[0], sum[1]};
        llvm::append_range(next, flatten(out));
        return next;
      });
  Value sum[2], inverse[2];
  for (int64_t h = 0; h < 2; ++h) {
    sum[h] = overGroup(state[2 + h], /*maximum=*/false);
    inverse[h] = arith::DivFOp::create(b, loc, real(1), sum[h]);
  }
  storeRows(unflatten(ArrayRef<Value>(state).drop_front(4)), kOut, inverse);
  Value leader = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                       firstColumn, index(0));
  for (int64_t h = 0; h < 2; ++h) {
    Value row = rowOf(2 * h);
    Value lse = add(state[h], math::LogOp::create(b, loc, sum[h]));
    when(both(leader, below(row, index(a.getRows()))), [&] {
      memref::StoreOp::create(b, loc, lse, arguments[kForwardLse],
                              ValueRange{batch, row});
    });
  }
}

void MmaAttentionBuilder::buildKeyValueGrad() {
  SmallVector<Multiplicand> key = loadFragments(kKey, a.keyDim);
  SmallVector<Multiplicand> value = loadFragments(kValue, a.valueDim);
  Value scale = real(a.scale);
  size_t keyValues = 4 * (a.keyDim / 8);
  SmallVector<Value> inits = flatten(zeros(a.keyDim));
  llvm::append_range(inits, flatten(zeros(a.valueDim)));
  SmallVector<Value> state = walkTiles(
      inits, [&](Value start, ValueRange carried) -> SmallVector<Value> {
        SmallVector<Accumulator> p = timesTileTransposed(key, shared[0]);
        SmallVector<Accumulator> ds = timesTileTransposed(value, shared[1]);
        for (int64_t block = 0; block < int64_t(p.size()); ++block)
          for (int64_t i = 0; i < 4; ++i) {
            Value local = add(firstColumn, index(8 * block + i % 2));
            Value lse = load(shared[2], {local});
            Value delta = load(shared[3], {local});
            Value row = rowOf(i), other = otherOf(start, block, i);
            Value score = addMask(mul(p[block][i], scale), row, other);
            p[block][i] =
                select(pairs(row, other),
                       math::ExpOp::create(b, loc, sub(score, lse)), real(0));
            ds[block][i] =
                mul(mul(p[block][i], sub(ds[block][i], delta)), scale);
          }
        SmallVector<Accumulator> keyGrad =
            unflatten(carried.take_front(keyValues));
        SmallVector<Accumulator> valueGrad =
            unflatten(carried.drop_front(keyValues));
        accumulateTimesTile(valueGrad, asMultiplicands(p), shared[1]);
        accumulateTimesTile(keyGrad, asMultiplicands(ds), shared[0]);
        SmallVector<Value> next = flatten(keyGrad);
        llvm::append_range(next, flatten(valueGrad));
        return next;
      });
  storeRows(unflatten(ArrayRef<Value>(state).take_front(keyValues)),
            kFirstGrad);
  storeRows(unflatten(ArrayRef<Value>(state).drop_front(keyValues)),
            kValueGrad);
}

void MmaAttentionBuilder::buildQueryGrad() {
  SmallVector<Multiplicand> query = loadFragments(kQuery, a.keyDim);
  SmallVector<Multiplicand> resultGrad = loadFragments(kResultGrad, a.valueDim);
  Value lse[2], delta[2];
  for (int64_t h = 0; h < 2; ++h) {
    Value row = clampedRowOf(2 * h);
    lse[h] = load(arguments[kLse], {batch, row});
    delta[h] = load(arguments[kDelta], {batch, row});
  }
  Value scale = real(a.scale);
  SmallVector<Value> state = walkTiles(
      flatten(zeros(a.keyDim)),
      [&](Value start, ValueRange carried) -> SmallVector<Value> {
        SmallVector<Accumulator> p = timesTileTransposed(query, shared[0]);
        SmallVector<Accumulator> ds =
            timesTileTransposed(resultGrad, shared[1]);
        for (int64_t block = 0; block < int64_t(p.size()); ++block)
          for (int64_t i = 0; i < 4; ++i) {
            Value row = rowOf(i), other = otherOf(start, block, i);
            Value score = addMask(mul(p[block][i], scale), row, other);
            Value probability = select(
                pairs(row, other),
                math::ExpOp::create(b, loc, sub(score, lse[i / 2])), real(0));
            ds[block][i] =
                mul(mul(probability, sub(ds[block][i], delta[i / 2])), scale);
          }
        SmallVector<Accumulator> queryGrad = unflatten(carried);
        accumulateTimesTile(queryGrad, asMultiplicands(ds), shared[0]);
        return flatten(queryGrad);
      });
  storeRows(unflatten(state), kFirstGrad);
}

void MmaAttentionBuilder::build() {
  thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value rowBlocks =
      index(llvm::divideCeilSigned(a.getRows(), plan.rowsPerBlock));
  batch = arith::DivUIOp::create(b, loc, block, rowBlocks);
  firstRow = mul(arith::RemUIOp::create(b, loc, block, rowBlocks),
                 index(plan.rowsPerBlock));
  Value lane = arith::RemUIOp::create(b, loc, thread, index(32));
  Value warp = arith::DivUIOp::create(b, loc, thread, index(32));
  group = arith::DivUIOp::create(b, loc, lane, index(4));
  firstColumn = mul(arith::RemUIOp::create(b, loc, lane, index(4)), index(2));
  warpRow = add(firstRow, add(mul(warp, index(kRowsPerWarp)), group));
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

void kiln::buildMmaAttentionBody(OpBuilder &b, Location loc,
                                 const AttentionPlan &plan, ValueRange buffers,
                                 ValueRange shared) {
  MmaAttentionBuilder(b, loc, plan, buffers, shared).build();
}
