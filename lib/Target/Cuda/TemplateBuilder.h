//===- TemplateBuilder.h - Small builders of kernel templates ---*- C++ -*-===//
//
// Part of Kiln. Private to the CUDA target: the index and f32 arithmetic,
// loops and guards that the templates' kernel builders (the attention
// templates) write their kernels with.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_TEMPLATEBUILDER_H
#define KILN_LIB_TARGET_CUDA_TEMPLATEBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace kiln {

/// Builds at `b`'s insertion point; arithmetic on index or f32 values.
class TemplateBuilder {
public:
  TemplateBuilder(mlir::OpBuilder &b, mlir::Location loc)
      : b(b), loc(loc), f32(b.getF32Type()) {}

protected:
  mlir::Value index(int64_t value) {
    return mlir::arith::ConstantIndexOp::create(b, loc, value);
  }
  mlir::Value real(double value) {
    return mlir::arith::ConstantOp::create(b, loc, f32,
                                           b.getF32FloatAttr(value));
  }
  mlir::Value below(mlir::Value lhs, mlir::Value rhs) {
    return mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::ult,
                                       lhs, rhs);
  }
  mlir::Value add(mlir::Value lhs, mlir::Value rhs) {
    if (mlir::isa<mlir::IndexType>(lhs.getType()))
      return mlir::arith::AddIOp::create(b, loc, lhs, rhs);
    return mlir::arith::AddFOp::create(b, loc, lhs, rhs);
  }
  mlir::Value mul(mlir::Value lhs, mlir::Value rhs) {
    if (mlir::isa<mlir::IndexType>(lhs.getType()))
      return mlir::arith::MulIOp::create(b, loc, lhs, rhs);
    return mlir::arith::MulFOp::create(b, loc, lhs, rhs);
  }
  mlir::Value sub(mlir::Value lhs, mlir::Value rhs) {
    return mlir::arith::SubFOp::create(b, loc, lhs, rhs);
  }
  mlir::Value select(mlir::Value condition, mlir::Value yes, mlir::Value no) {
    return mlir::arith::SelectOp::create(b, loc, condition, yes, no);
  }
  mlir::Value both(mlir::Value lhs, mlir::Value rhs) {
    return mlir::arith::AndIOp::create(b, loc, lhs, rhs);
  }
  /// for (iv = lower; iv < upper; iv += step) with `inits` carried.
  llvm::SmallVector<mlir::Value>
  forLoop(mlir::Value lower, mlir::Value upper, mlir::Value step,
          mlir::ValueRange inits,
          llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::Value,
                                                            mlir::ValueRange)>
              body) {
    auto loop = mlir::scf::ForOp::create(
        b, loc, lower, upper, step, inits,
        [&](mlir::OpBuilder &nested, mlir::Location, mlir::Value iv,
            mlir::ValueRange carried) {
          mlir::OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToEnd(nested.getInsertionBlock());
          mlir::scf::YieldOp::create(b, loc, body(iv, carried));
        });
    return llvm::SmallVector<mlir::Value>(loop.getResults());
  }
  /// Runs `then` where `condition` holds.
  void when(mlir::Value condition, llvm::function_ref<void()> then) {
    auto ifOp =
        mlir::scf::IfOp::create(b, loc, condition, /*withElseRegion=*/false);
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    then();
  }

  mlir::OpBuilder &b;
  mlir::Location loc;
  mlir::Type f32;
};

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_TEMPLATEBUILDER_H
