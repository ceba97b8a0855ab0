//===- KernelOps.cpp - Ops of the kernel dialect ---------------------------===//
//
// Part of Kiln. Builders, assembly and verifiers of the kernel ops.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/IR/KernelOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace kiln::kernel;

int64_t kiln::kernel::getBufferSizeInBytes(MemRefType type) {
  int64_t elementBytes =
      (type.getElementType().getIntOrFloatBitWidth() + 7) / 8;
  return type.getNumElements() * elementBytes;
}

/// Buffers are statically shaped, row-major memrefs of int or float elements.
static LogicalResult verifyBufferType(Operation *op, Type type,
                                      const Twine &what) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || !memref.hasStaticShape() || !memref.getLayout().isIdentity())
    return op->emitOpError() << what
                             << " must be a statically shaped memref with the "
                                "identity layout, got "
                             << type;
  if (!memref.getElementType().isIntOrFloat())
    return op->emitOpError() << what << " must have int or float elements, got "
                             << type;
  return success();
}

//===----------------------------------------------------------------------===//
// FuncOp
//===----------------------------------------------------------------------===//

void FuncOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                   FunctionType type, int64_t range) {
  state.addAttribute(SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addAttribute(getFunctionTypeAttrName(state.name),
                     TypeAttr::get(type));
  state.addAttribute(getRangeAttrName(state.name),
                     builder.getI64IntegerAttr(range));
  state.addRegion();
}

ParseResult FuncOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildType = [](Builder &builder, ArrayRef<Type> argTypes,
                      ArrayRef<Type> results,
                      function_interface_impl::VariadicFlag, std::string &) {
    return builder.getFunctionType(argTypes, results);
  };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false,
      getFunctionTypeAttrName(result.name), buildType,
      getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void FuncOp::print(OpAsmPrinter &printer) {
  function_interface_impl::printFunctionOp(
      printer, *this, /*isVariadic=*/false, getFunctionTypeAttrName(),
      getArgAttrsAttrName(), getResAttrsAttrName());
}

std::string kiln::kernel::getUniqueKernelName(SymbolTable &symbols,
                                              unsigned &next) {
  std::string name;
  do
    name = "k" + std::to_string(next++);
  while (symbols.lookup(name));
  return name;
}

std::string FuncOp::getExportedSymbol() { return ("kiln_" + getSymName()).str(); }

LogicalResult FuncOp::verify() {
  if (getRange() < 1)
    return emitOpError() << "range must be positive, got " << getRange();
  if (std::optional<uint64_t> grain = getGrain();
      grain && static_cast<int64_t>(*grain) < 1)
    return emitOpError() << "grain must be positive, got "
                         << static_cast<int64_t>(*grain);
  if (!getFunctionType().getResults().empty())
    return emitOpError() << "returns nothing: results are written to buffers";
  for (auto [index, type] : llvm::enumerate(getArgumentTypes()))
    if (failed(verifyBufferType(*this, type, "argument " + Twine(index))))
      return failure();
  return success();
}

LogicalResult FuncOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getArgumentTypes().size())
    return emitOpError() << "body has " << body.getNumArguments()
                         << " arguments for " << getArgumentTypes().size()
                         << " argument types";
  WalkResult walk = getBody().walk([&](Operation *op) {
    bool ownTerminator =
        isa<ReturnOp>(op) && op->getParentOp() == getOperation();
    if (isa<KernelDialect>(op->getDialect()) && !ownTerminator) {
      op->emitOpError() << "is not allowed inside a kernel.func";
      return WalkResult::interrupt();
    }
    // The GPU emulator's kernels keep a block's shared memory and the
    // values its threads carry across barriers on the stack.
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    bool emulatorScratch = isa<memref::AllocaOp>(op) &&
                           (*this)->hasAttr(KernelDialect::kEmulatorAttr);
    if (effects && effects.hasEffect<MemoryEffects::Allocate>() &&
        !emulatorScratch) {
      op->emitOpError()
          << "allocates inside a kernel.func: intermediates must live in "
             "registers or in buffers passed as arguments";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

//===----------------------------------------------------------------------===//
// EntryOp
//===----------------------------------------------------------------------===//

void EntryOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                    FunctionType type) {
  state.addAttribute(SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addAttribute(getFunctionTypeAttrName(state.name),
                     TypeAttr::get(type));
  state.addRegion();
}

ParseResult EntryOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildType = [](Builder &builder, ArrayRef<Type> argTypes,
                      ArrayRef<Type> results,
                      function_interface_impl::VariadicFlag, std::string &) {
    return builder.getFunctionType(argTypes, results);
  };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false,
      getFunctionTypeAttrName(result.name), buildType,
      getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void EntryOp::print(OpAsmPrinter &printer) {
  function_interface_impl::printFunctionOp(
      printer, *this, /*isVariadic=*/false, getFunctionTypeAttrName(),
      getArgAttrsAttrName(), getResAttrsAttrName());
}

StringRef EntryOp::getBufferName(unsigned index) {
  auto name = getArgAttrOfType<StringAttr>(index, KernelDialect::kNameAttr);
  return name ? name.getValue() : StringRef();
}

BufferKind EntryOp::getBufferKind(unsigned index) {
  return getArgAttrOfType<BufferKindAttr>(index, KernelDialect::kKindAttr)
      .getValue();
}

bool EntryOp::isGradientAccumulator(unsigned index) {
  return getBufferKind(index) == BufferKind::OptimizerState &&
         getBufferName(index).ends_with(".grad_acc");
}

LogicalResult EntryOp::verify() {
  if (!getFunctionType().getResults().empty())
    return emitOpError() << "returns nothing: outputs are buffers of kind "
                            "'output'";
  llvm::StringSet<> names;
  for (auto [index, type] : llvm::enumerate(getArgumentTypes())) {
    if (failed(verifyBufferType(*this, type, "argument " + Twine(index))))
      return failure();
    auto name = getArgAttrOfType<StringAttr>(index, KernelDialect::kNameAttr);
    auto kind =
        getArgAttrOfType<BufferKindAttr>(index, KernelDialect::kKindAttr);
    if (!name || !kind)
      return emitOpError() << "argument " << index << " needs '"
                           << KernelDialect::kNameAttr << "' and '"
                           << KernelDialect::kKindAttr << "'";
    if (!names.insert(name.getValue()).second)
      return emitOpError() << "has two buffers named '" << name.getValue()
                           << "'";
    auto memref = cast<MemRefType>(type);
    Builder builder(getContext());
    auto expectRuntimeBuffer = [&](StringRef expectedName,
                                   MemRefType expectedType) -> LogicalResult {
      if (name.getValue() != expectedName || memref != expectedType)
        return emitOpError()
               << "a " << stringifyBufferKind(kind.getValue())
               << " buffer must be '" << expectedName << "' of type "
               << expectedType << ", got '" << name.getValue() << "' of type "
               << type;
      return success();
    };
    if (kind.getValue() == BufferKind::RngState &&
        failed(expectRuntimeBuffer(
            KernelDialect::kRngStateName,
            MemRefType::get({4}, builder.getIntegerType(32)))))
      return failure();
    if (kind.getValue() == BufferKind::Status &&
        failed(expectRuntimeBuffer(
            KernelDialect::kStatusName,
            MemRefType::get({2}, builder.getIntegerType(64)))))
      return failure();
    if (getArgAttr(index, KernelDialect::kInitAttr) &&
        kind.getValue() != BufferKind::Param &&
        kind.getValue() != BufferKind::OptimizerState)
      return emitOpError() << "argument " << index
                           << " has an initializer but is not a parameter "
                              "or optimizer state";
  }
  return success();
}

LogicalResult EntryOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getArgumentTypes().size())
    return emitOpError() << "body has " << body.getNumArguments()
                         << " arguments for " << getArgumentTypes().size()
                         << " argument types";
  for (Operation &op : body)
    if (!isa<KernelDialect>(op.getDialect()))
      return op.emitOpError() << "is not allowed in a kernel.entry: its body "
                                 "holds only kernel ops";
  return success();
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

int64_t AllocOp::getSizeInBytes() {
  return getBufferSizeInBytes(getResult().getType());
}

LogicalResult AllocOp::verify() {
  if (failed(verifyBufferType(*this, getType(), "result")))
    return failure();
  if (std::optional<int64_t> offset = getArenaOffset())
    if (*offset < 0 || *offset % 64 != 0)
      return emitOpError() << "arena_offset must be a non-negative multiple "
                              "of 64, got "
                           << *offset;
  return success();
}

Value ViewOp::getViewSource() { return getSource(); }

LogicalResult ViewOp::verify() {
  MemRefType source = getSource().getType(), result = getType();
  if (failed(verifyBufferType(*this, result, "result")))
    return failure();
  if (source.getElementType() != result.getElementType() ||
      source.getNumElements() != result.getNumElements())
    return emitOpError() << "must keep the element type and count: "
                         << source << " vs " << result;
  return success();
}

LogicalResult ConstantOp::verify() {
  auto valueType = dyn_cast<ShapedType>(getValue().getType());
  MemRefType type = getType();
  if (!valueType || valueType.getShape() != type.getShape() ||
      valueType.getElementType() != type.getElementType())
    return emitOpError() << "value of type " << getValue().getType()
                         << " does not match the buffer " << type;
  return success();
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

FuncOp LaunchOp::getKernelFunc() {
  return SymbolTable::lookupNearestSymbolFrom<FuncOp>(*this, getKernelAttr());
}

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto kernel =
      symbolTable.lookupNearestSymbolFrom<FuncOp>(*this, getKernelAttr());
  if (!kernel)
    return emitOpError() << "'" << getKernel()
                         << "' does not name a kernel.func";
  ArrayRef<Type> expected = kernel.getArgumentTypes();
  if (expected.size() != getBuffers().size())
    return emitOpError() << "passes " << getBuffers().size()
                         << " buffers to @" << getKernel() << ", which takes "
                         << expected.size();
  for (auto [index, buffer, type] : llvm::enumerate(getBuffers(), expected))
    if (buffer.getType() != type)
      return emitOpError() << "buffer " << index << " has type "
                           << buffer.getType() << " but @" << getKernel()
                           << " expects " << type;
  return success();
}

void GemmOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  MemoryEffects::Effect *read = MemoryEffects::Read::get();
  MemoryEffects::Effect *write = MemoryEffects::Write::get();
  effects.emplace_back(read, &getAMutable());
  effects.emplace_back(read, &getBMutable());
  if (!getBeta().isZero())
    effects.emplace_back(read, &getCMutable());
  effects.emplace_back(write, &getCMutable());
  GemmEpilogue epilogue = getEpilogue();
  if (getBias())
    effects.emplace_back(epilogue == GemmEpilogue::BiasGrad ? write : read,
                         &getBiasMutable()[0]);
  if (getAux())
    effects.emplace_back(epilogue == GemmEpilogue::DGelu ? read : write,
                         &getAuxMutable()[0]);
}

/// Checks the bias and aux operands `epilogue` needs.
static LogicalResult verifyEpilogue(GemmOp op) {
  GemmEpilogue epilogue = op.getEpilogue();
  StringRef name = stringifyGemmEpilogue(epilogue);
  bool needsBias = epilogue == GemmEpilogue::Bias ||
                   epilogue == GemmEpilogue::BiasGelu ||
                   epilogue == GemmEpilogue::BiasGrad;
  bool takesAux = epilogue == GemmEpilogue::Gelu ||
                  epilogue == GemmEpilogue::BiasGelu ||
                  epilogue == GemmEpilogue::DGelu;
  if (needsBias != static_cast<bool>(op.getBias()))
    return op.emitOpError()
           << "epilogue " << name << (needsBias ? " needs" : " takes no")
           << " bias vector";
  if (!takesAux && op.getAux())
    return op.emitOpError() << "epilogue " << name << " takes no aux buffer";
  if (epilogue == GemmEpilogue::DGelu && !op.getAux())
    return op.emitOpError()
           << "epilogue dgelu needs the forward's pre-activation as aux";
  Type resultType = op.getC().getType().getElementType();
  if (Value bias = op.getBias()) {
    auto type = cast<MemRefType>(bias.getType());
    if (type.getElementType() != resultType ||
        type.getNumElements() != static_cast<int64_t>(op.getN()))
      return op.emitOpError() << "bias must hold n = " << op.getN()
                              << " elements of C's type, got " << type;
  }
  if (Value aux = op.getAux())
    if (aux.getType() != op.getC().getType())
      return op.emitOpError()
             << "aux must have C's type " << op.getC().getType() << ", got "
             << aux.getType();
  return success();
}

LogicalResult GemmOp::verify() {
  Type operandType = getA().getType().getElementType();
  Type resultType = getC().getType().getElementType();
  if (!isa<FloatType>(operandType) || !isa<FloatType>(resultType) ||
      getB().getType().getElementType() != operandType)
    return emitOpError() << "needs float buffers, A and B of one element "
                            "type (C's may differ)";
  if (failed(verifyEpilogue(*this)))
    return failure();
  // I64Attr's getters return the value as unsigned.
  if (static_cast<int64_t>(getM()) < 1 || static_cast<int64_t>(getN()) < 1 ||
      static_cast<int64_t>(getK()) < 1 || static_cast<int64_t>(getBatch()) < 1)
    return emitOpError() << "m, n, k and batch must be positive";
  if (static_cast<int64_t>(getStrideA()) < 0 ||
      static_cast<int64_t>(getStrideB()) < 0 ||
      static_cast<int64_t>(getStrideC()) < 0)
    return emitOpError() << "batch strides must be non-negative";
  int64_t tileM = static_cast<int64_t>(getTileM()),
          tileN = static_cast<int64_t>(getTileN());
  if (tileM < 0 || tileN < 0)
    return emitOpError() << "tile sizes must be non-negative, got tile_m = "
                         << tileM << ", tile_n = " << tileN;
  if (getBatch() > 1 && getStrideC() < getM() * getN())
    return emitOpError() << "batches would overlap in C: stride_c "
                         << getStrideC() << " < m * n = " << getM() * getN();
  auto check = [&](Value buffer, StringRef name, int64_t stride,
                   int64_t matrixSize) -> LogicalResult {
    int64_t needed = (getBatch() - 1) * stride + matrixSize;
    int64_t available = cast<MemRefType>(buffer.getType()).getNumElements();
    if (needed > available)
      return emitOpError() << "reads " << needed << " elements of " << name
                           << ", which has " << available;
    return success();
  };
  return failure(failed(check(getA(), "A", getStrideA(), getM() * getK())) ||
                 failed(check(getB(), "B", getStrideB(), getK() * getN())) ||
                 failed(check(getC(), "C", getStrideC(), getM() * getN())));
}

LogicalResult CopyOp::verify() {
  int64_t from = getBufferSizeInBytes(getSource().getType());
  int64_t to = getBufferSizeInBytes(getDestination().getType());
  if (from != to)
    return emitOpError() << "copies " << from << " bytes into a buffer of "
                         << to;
  return success();
}

#define GET_OP_CLASSES
#include "kiln/Dialect/Kernel/IR/KernelOps.cpp.inc"
