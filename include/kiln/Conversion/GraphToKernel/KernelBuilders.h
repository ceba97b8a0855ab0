//===- KernelBuilders.h - Building blocks of kernel bodies ------*- C++ -*-===//
//
// Part of Kiln. Small builders shared by the graph-to-kernel patterns: the
// parallel loop over a kernel's range, sequential loops with accumulators,
// constants rounded the way the reference interpreter rounds them, and
// all-parallel linalg.generic ops.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONVERSION_GRAPHTOKERNEL_KERNELBUILDERS_H
#define KILN_CONVERSION_GRAPHTOKERNEL_KERNELBUILDERS_H

#include "kiln/KernelStatus.h"

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace kiln::kb {

/// An index constant.
mlir::Value index(mlir::OpBuilder &b, mlir::Location loc, int64_t value);
/// A row-major shape seen around `axis` as [outer, length, inner]: the
/// products of the dims before it, its own size, those after it.
struct AxisSplit {
  int64_t outer = 1, length = 1, inner = 1;
};
AxisSplit splitAroundAxis(llvm::ArrayRef<int64_t> shape, int64_t axis);
/// Block `block` of `width` elements of [0, count): [begin, end), the last
/// block cut at `count`.
std::pair<mlir::Value, mlir::Value> blockRange(mlir::OpBuilder &b,
                                               mlir::Location loc,
                                               mlir::Value block, int64_t width,
                                               int64_t count);
/// A float constant of `type`: `value` rounded once to the type, as the
/// interpreter's static_cast<T>(value) does.
mlir::Value floatConst(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type,
                       double value);
/// A float constant of `type` holding `value`, which must already have the
/// type's semantics (computed with APFloat arithmetic in that type).
mlir::Value floatConst(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type,
                       const llvm::APFloat &value);
/// `value` rounded once to the float type `type`, for constants computed
/// in the element type as the interpreter computes them.
llvm::APFloat roundTo(mlir::Type type, double value);
/// -infinity of a float type.
mlir::Value negativeInfinity(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::Type type);

/// `std::max(acc, x)`: x when acc < x, else acc (a NaN x is skipped), as
/// the interpreter computes row maxima.
mlir::Value stdMax(mlir::OpBuilder &b, mlir::Location loc, mlir::Value acc,
                   mlir::Value x);
/// An integer (an id, a target class) loaded from memory, as i64.
mlir::Value toI64(mlir::OpBuilder &b, mlir::Location loc, mlir::Value id);
/// Whether the i64 `id` lies outside [0, size).
mlir::Value isOutside(mlir::OpBuilder &b, mlir::Location loc, mlir::Value id,
                      int64_t size);

/// The kernel's outer loop: an scf.parallel over [0, range) whose body gets
/// the iteration index. The backend restricts it to [begin, end).
void parallelFor(
    mlir::OpBuilder &b, mlir::Location loc, int64_t range,
    llvm::function_ref<void(mlir::OpBuilder &, mlir::Location, mlir::Value)>
        body);

/// A sequential scf.for over [lower, upper) carrying `init`; `body` returns
/// the next values of the carried values. Returns their final values.
llvm::SmallVector<mlir::Value>
forLoop(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lower,
        mlir::Value upper, mlir::ValueRange init,
        llvm::function_ref<llvm::SmallVector<mlir::Value>(
            mlir::OpBuilder &, mlir::Location, mlir::Value, mlir::ValueRange)>
            body);
/// The same over [0, upper).
llvm::SmallVector<mlir::Value>
forLoop(mlir::OpBuilder &b, mlir::Location loc, int64_t upper,
        mlir::ValueRange init,
        llvm::function_ref<llvm::SmallVector<mlir::Value>(
            mlir::OpBuilder &, mlir::Location, mlir::Value, mlir::ValueRange)>
            body);

/// The row-major multi-index of `linear` in `shape`.
llvm::SmallVector<mlir::Value> delinearize(mlir::OpBuilder &b,
                                           mlir::Location loc,
                                           mlir::Value linear,
                                           llvm::ArrayRef<int64_t> shape);

/// A linalg.generic whose loops are all parallel, over the shape of
/// `output` (identity map); `inputMaps` index the inputs. `scalar` computes
/// the output element from the input elements.
void parallelGeneric(
    mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange inputs,
    llvm::ArrayRef<mlir::AffineMap> inputMaps, mlir::Value output,
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                   mlir::ValueRange)>
        scalar);

/// The type an elementwise formula over elements of `storage` computes in:
/// f32 for the 16-bit floats (bf16, f16), which are rounded only where they
/// are stored or a cast says so; `storage` itself otherwise.
mlir::Type computeType(mlir::Type storage);
/// An element loaded from memory, in its compute type.
mlir::Value widen(mlir::OpBuilder &b, mlir::Location loc, mlir::Value element);
/// A computed element rounded to `storage` for a store.
mlir::Value narrow(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                   mlir::Type storage);
/// The scalar formula of result `result` of the fusible op `op`
/// (graph::FusibleOpInterface) on operand elements in their compute types,
/// in the result's compute type: a cast to a 16-bit float rounds there.
mlir::Value buildComputeScalar(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::Operation *op, unsigned result,
                               mlir::ValueRange operands);

/// Records bad input in the runtime's status buffer (memref<2xi64>):
/// word 0 = max(word 0, code), word 1 = `value` (an i64), both atomic.
void recordStatus(mlir::OpBuilder &b, mlir::Location loc, mlir::Value status,
                  KernelStatus code, mlir::Value value);

/// The kernel range of a linalg.generic over `shape`: its first dim, or 1
/// for a scalar.
int64_t rangeOfShape(llvm::ArrayRef<int64_t> shape);
/// The grain (the smallest chunk worth a thread) of a kernel whose
/// iterations each do `workPerIteration` elements of work, counted as the
/// elements an iteration reads and writes, weighted by their cost when one
/// element costs much more than a load and an add (a libm call, a division,
/// a square root). The cost rule: a chunk holds at least `workPerChunk`
/// elements of work (the target's TargetInfo::getWorkPerChunk). The grain
/// only decides how the range may be cut; no result depends on it (no sum
/// crosses an iteration).
int64_t chooseGrain(int64_t range, int64_t workPerIteration,
                    int64_t workPerChunk);

} // namespace kiln::kb

#endif // KILN_CONVERSION_GRAPHTOKERNEL_KERNELBUILDERS_H
