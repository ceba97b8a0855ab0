//===- EmulateMma.cpp - nvvm.mma.sync lane by lane ------------------------===//
//
// Part of Kiln. The emulator's warp-level matrix product (BlockEmulator.h):
// `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32`, whose
// operands are spread over the 32 lanes of a warp as the PTX ISA's
// "Matrix Fragments for mma.m16n8k16 with floating point type" lay them
// out. With groupID = lane / 4 and threadID_in_group = lane % 4:
//
//   A (16 x 16, four registers of two elements a0..a7): a_i sits at row
//     groupID (+ 8 for a2, a3, a6, a7), column threadID_in_group * 2 +
//     (i & 1) (+ 8 for a4..a7);
//   B (16 x 8, two registers b0..b3): b_i at row threadID_in_group * 2 +
//     (i & 1) (+ 8 for b2, b3), column groupID;
//   C and D (16 x 8, four f32 c0..c3): c_i at row groupID (+ 8 for c2, c3),
//     column threadID_in_group * 2 + (i & 1).
//
// A lane's element (r, c) of D is C's plus the sum over k of A(r, k) B(k, c),
// each read from the register of the lane that holds it, in increasing k,
// products and sums in f32 (a product of two 16-bit floats is exact in
// f32). The hardware's order of accumulation is not specified; results
// may differ from a GPU's in the last bits.
//
//===----------------------------------------------------------------------===//

#include "BlockEmulator.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::emulator;

namespace {
/// A multiplicand register: bf16 pairs packed in an i32 (as nvvm.mma.sync
/// takes them), or a vector<2xf16> / vector<2xbf16>.
bool isPairRegister(Type type) {
  if (type.isInteger(32))
    return true;
  auto vector = dyn_cast<VectorType>(type);
  return vector && vector.getShape() == ArrayRef<int64_t>{2} &&
         (vector.getElementType().isF16() || vector.getElementType().isBF16());
}

/// Element `e` (0: the low half) of a pair register, as an f32.
Value elementOf(OpBuilder &b, Location loc, Value pair, int64_t e) {
  Type f32 = b.getF32Type();
  if (auto vector = dyn_cast<VectorType>(pair.getType())) {
    Value element = vector::ExtractOp::create(b, loc, pair, e);
    return arith::ExtFOp::create(b, loc, f32, element);
  }
  // A bf16 is the high half of the f32 with the same bits.
  Type i32 = b.getI32Type();
  Value bits =
      e == 0 ? arith::ShLIOp::create(
                   b, loc, pair, arith::ConstantIntOp::create(b, loc, i32, 16))
                   .getResult()
             : arith::AndIOp::create(
                   b, loc, pair,
                   arith::ConstantIntOp::create(b, loc, i32, 0xFFFF0000))
                   .getResult();
  return arith::BitcastOp::create(b, loc, f32, bits);
}
} // namespace

LogicalResult kiln::emulator::verifyEmulatedMma(NVVM::MmaOp mma) {
  NVVM::MMAShapeAttr shape = mma.getShape();
  auto types = mma.getMultiplicandAPtxType();
  bool sixteenBit = types && (*types == NVVM::MMATypes::bf16 ||
                              *types == NVVM::MMATypes::f16);
  auto result = dyn_cast<LLVM::LLVMStructType>(mma.getRes().getType());
  bool fourFloats =
      result && result.getBody().size() == 4 &&
      llvm::all_of(result.getBody(), [](Type t) { return t.isF32(); });
  if (shape.getM() == 16 && shape.getN() == 8 && shape.getK() == 16 &&
      mma.getLayoutA() == NVVM::MMALayout::row &&
      mma.getLayoutB() == NVVM::MMALayout::col && sixteenBit &&
      mma.getMultiplicandBPtxType() == types && mma.getOperandA().size() == 4 &&
      mma.getOperandB().size() == 2 && mma.getOperandC().size() == 4 &&
      llvm::all_of(mma.getOperandA(),
                   [](Value v) { return isPairRegister(v.getType()); }) &&
      llvm::all_of(mma.getOperandB(),
                   [](Value v) { return isPairRegister(v.getType()); }) &&
      llvm::all_of(mma.getOperandC(),
                   [](Value v) { return v.getType().isF32(); }) &&
      fourFloats)
    return success();
  return mma.emitError()
         << "the emulator runs nvvm.mma.sync m16n8k16 with row-major A, "
            "column-major B, bf16 or f16 multiplicands and f32 accumulators";
}

void BlockEmulator::emitMma(NVVM::MmaOp mma, OpBuilder &b, Value thread,
                            Value lane, Value warp) {
  Location loc = mma.getLoc();
  Value four = constant(b, loc, 4);
  Value base =
      arith::MulIOp::create(b, loc, warp, constant(b, loc, kEmulatedWarpSize));
  Value group = arith::DivUIOp::create(b, loc, lane, four);
  Value inGroup = arith::RemUIOp::create(b, loc, lane, four);
  // The lanes holding this lane's rows of A (groupID = row % 8) and its two
  // columns of B (groupID = column), for pair p of the k's.
  Value firstColumn =
      arith::MulIOp::create(b, loc, inGroup, constant(b, loc, 2));
  auto ownerOf = [&](OpBuilder &at, Value groupId, Value p) {
    return arith::AddIOp::create(
        at, loc, base,
        arith::AddIOp::create(
            at, loc, arith::MulIOp::create(at, loc, groupId, four), p));
  };
  SmallVector<Value> accumulators;
  for (Value c : mma.getOperandC())
    accumulators.push_back(valueAt(b, loc, c, thread));
  OperandRange a = mma.getOperandA(), bRegs = mma.getOperandB();
  // k = half * 8 + p * 2 + e: the halves are registers, p the lanes of a
  // group, e the element of a register.
  for (int64_t half = 0; half < 2; ++half) {
    auto loop = scf::ForOp::create(
        b, loc, constant(b, loc, 0), four, constant(b, loc, 1), accumulators,
        [&](OpBuilder &in, Location, Value p, ValueRange acc) {
          Value rowOwner = ownerOf(in, group, p);
          Value top = valueAt(in, loc, a[2 * half], rowOwner);
          Value bottom = valueAt(in, loc, a[2 * half + 1], rowOwner);
          Value columns[2];
          for (int64_t c = 0; c < 2; ++c) {
            Value column = arith::AddIOp::create(in, loc, firstColumn,
                                                 constant(in, loc, c));
            columns[c] = valueAt(in, loc, bRegs[half], ownerOf(in, column, p));
          }
          SmallVector<Value> next(acc.begin(), acc.end());
          for (int64_t e = 0; e < 2; ++e)
            for (int64_t i = 0; i < 4; ++i) {
              Value product = arith::MulFOp::create(
                  in, loc, elementOf(in, loc, i < 2 ? top : bottom, e),
                  elementOf(in, loc, columns[i % 2], e));
              next[i] = arith::AddFOp::create(in, loc, next[i], product);
            }
          scf::YieldOp::create(in, loc, next);
        });
    accumulators.assign(loop.getResults().begin(), loop.getResults().end());
  }
  Type type = mma.getRes().getType();
  Value result = LLVM::PoisonOp::create(b, loc, type);
  for (auto [i, value] : llvm::enumerate(accumulators))
    result = LLVM::InsertValueOp::create(b, loc, result, value,
                                         ArrayRef<int64_t>{int64_t(i)});
  mapping.map(mma.getRes(), result);
}
