//===- KernelFunc.cpp - The gpu.func every template starts from -----------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "KernelFunc.h"

using namespace mlir;
using namespace kiln;

MemRefType kiln::getSharedBufferType(MLIRContext *context,
                                     ArrayRef<int64_t> shape, Type element) {
  auto space =
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
  return MemRefType::get(shape, element, MemRefLayoutAttrInterface(), space);
}

gpu::GPUFuncOp kiln::createKernelFunc(OpBuilder &builder, Location loc,
                                      StringRef name, func::FuncOp body,
                                      TypeRange workgroup, LaunchShape shape) {
  Block &source = body.getBody().front();
  SmallVector<Type> types;
  for (BlockArgument argument : source.getArguments().drop_back(2))
    types.push_back(argument.getType());
  auto func = gpu::GPUFuncOp::create(
      builder, loc, name, builder.getFunctionType(types, {}), workgroup);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                builder.getUnitAttr());
  func.setKnownBlockSizeAttr(
      builder.getDenseI32ArrayAttr({static_cast<int32_t>(shape.block), 1, 1}));
  func.setKnownGridSizeAttr(
      builder.getDenseI32ArrayAttr({static_cast<int32_t>(shape.grid), 1, 1}));
  return func;
}
