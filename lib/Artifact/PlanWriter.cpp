//===- PlanWriter.cpp - The kernel module as plan.kpl ---------------------===//
//
// Part of Kiln. Serializes a kernel-dialect module into the FlatBuffers plan
// the runtime executes (runtime/schema/plan.fbs): one plan buffer per entry
// argument (shared by entries when name, kind and type agree), per
// kernel.alloc and per kernel.constant; views resolve to the buffer they
// alias; one plan op per launch, GEMM, copy and zero, in program order.
//
//===----------------------------------------------------------------------===//

#include "kiln/Artifact/Artifact.h"
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "kiln/plan_generated.h"
#include "kiln/runtime.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace kiln;
namespace fb = flatbuffers;

/// The plan's name for an element type, or nullopt.
static std::optional<plan::DType> getPlanDType(Type type) {
  if (type.isF32())
    return plan::DType::F32;
  if (type.isF64())
    return plan::DType::F64;
  if (type.isF16())
    return plan::DType::F16;
  if (type.isBF16())
    return plan::DType::BF16;
  if (type.isInteger(32))
    return plan::DType::I32;
  if (type.isInteger(64))
    return plan::DType::I64;
  if (type.isInteger(1))
    return plan::DType::I1;
  if (type.isInteger(8))
    return plan::DType::U8;
  return std::nullopt;
}

static plan::BufferKind getPlanKind(kernel::BufferKind kind) {
  switch (kind) {
  case kernel::BufferKind::Param:
    return plan::BufferKind::Param;
  case kernel::BufferKind::OptimizerState:
    return plan::BufferKind::OptimizerState;
  case kernel::BufferKind::Gradient:
    return plan::BufferKind::Gradient;
  case kernel::BufferKind::Input:
    return plan::BufferKind::Input;
  case kernel::BufferKind::Output:
    return plan::BufferKind::Output;
  case kernel::BufferKind::RngState:
    return plan::BufferKind::RngState;
  case kernel::BufferKind::Status:
    return plan::BufferKind::Status;
  }
  llvm_unreachable("unknown buffer kind");
}

/// The first file:line:col inside `loc` (through call sites, names and
/// fusions), as the interpreter reports errors.
static std::optional<FileLineColLoc> findFileLocation(Location loc) {
  std::optional<FileLineColLoc> found;
  loc->walk([&](Location inner) {
    if (auto fileLoc = dyn_cast<FileLineColLoc>(inner)) {
      found = fileLoc;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

/// An attribute of the train block as JSON.
static llvm::json::Value toJson(Attribute attr) {
  if (auto dict = dyn_cast<DictionaryAttr>(attr)) {
    llvm::json::Object object;
    for (NamedAttribute entry : dict)
      object[entry.getName().getValue()] = toJson(entry.getValue());
    return object;
  }
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    llvm::json::Array values;
    for (Attribute element : array)
      values.push_back(toJson(element));
    return values;
  }
  if (auto boolean = dyn_cast<BoolAttr>(attr))
    return boolean.getValue();
  if (auto integer = dyn_cast<IntegerAttr>(attr))
    return integer.getInt();
  if (auto floating = dyn_cast<FloatAttr>(attr))
    return floating.getValueAsDouble();
  if (auto string = dyn_cast<StringAttr>(attr))
    return string.getValue();
  if (isa<UnitAttr>(attr))
    return true;
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

namespace {
/// Builds the plan of one module.
class PlanBuilder {
public:
  PlanBuilder(ModuleOp module, const ArtifactOptions &options)
      : module(module), options(options) {}

  FailureOr<std::vector<uint8_t>> build();

private:
  /// Adds a buffer table; returns its id.
  FailureOr<uint32_t>
  addBuffer(Operation *at, StringRef name, plan::BufferKind kind,
            MemRefType type, int64_t arenaOffset, DictionaryAttr init = nullptr,
            ElementsAttr data = nullptr, DictionaryAttr shard = nullptr);
  FailureOr<uint32_t> addEntryArgument(kernel::EntryOp entry, unsigned index);
  FailureOr<fb::Offset<plan::Entry>> buildEntry(kernel::EntryOp entry);
  FailureOr<fb::Offset<plan::Op>> buildOp(Operation *op);
  fb::Offset<plan::SourceLoc> buildLoc(Location loc);
  FailureOr<uint32_t> lookup(Operation *at, Value buffer);

  ModuleOp module;
  const ArtifactOptions &options;
  fb::FlatBufferBuilder fbb;
  std::vector<fb::Offset<plan::Buffer>> buffers;
  /// Entry buffers by "kind/name", shared by every entry that names them.
  llvm::StringMap<std::pair<uint32_t, MemRefType>> namedBuffers;
  /// The plan buffer of each buffer value of the entry being built.
  llvm::DenseMap<Value, uint32_t> bufferIds;
  unsigned transients = 0, constants = 0;
};
} // namespace

FailureOr<uint32_t> PlanBuilder::addBuffer(Operation *at, StringRef name,
                                           plan::BufferKind kind,
                                           MemRefType type, int64_t arenaOffset,
                                           DictionaryAttr init,
                                           ElementsAttr data,
                                           DictionaryAttr shard) {
  std::optional<plan::DType> dtype = getPlanDType(type.getElementType());
  if (!dtype)
    return at->emitError() << "the plan has no element type for " << type;
  uint32_t id = buffers.size();
  auto nameOffset = fbb.CreateString(name.str());
  auto shape = fbb.CreateVector(std::vector<int64_t>(type.getShape()));
  fb::Offset<plan::Initializer> initOffset;
  if (init) {
    auto number = [&](StringRef field) {
      auto value = init.getAs<FloatAttr>(field);
      return value ? value.getValueAsDouble() : 0.0;
    };
    auto kindAttr = init.getAs<StringAttr>("kind");
    initOffset = plan::CreateInitializer(
        fbb, fbb.CreateString(kindAttr ? kindAttr.str() : ""), number("std"),
        number("low"), number("high"), number("value"));
  }
  fb::Offset<fb::Vector<uint8_t>> dataOffset;
  bool splat = false;
  if (data) {
    auto dense = dyn_cast<DenseElementsAttr>(data);
    if (!dense)
      return at->emitError() << "constants must be dense elements";
    if (type.getElementType().isInteger(1))
      return at->emitError() << "i1 constants are not supported in plans";
    // A splat keeps one element: the plan grows with the op count, never
    // with the constant's size.
    splat = dense.isSplat() && type.getNumElements() > 1;
    int64_t bytes = kernel::getBufferSizeInBytes(type);
    int64_t elementBytes = bytes / std::max<int64_t>(type.getNumElements(), 1);
    int64_t stored = splat ? elementBytes : bytes;
    // The attribute's storage is exactly that: one element for a splat, all
    // of them packed otherwise.
    ArrayRef<char> source = dense.getRawData();
    if (static_cast<int64_t>(source.size()) != stored)
      return at->emitError()
             << "a constant of " << stored << " bytes stores " << source.size();
    dataOffset = fbb.CreateVector(
        reinterpret_cast<const uint8_t *>(source.data()), source.size());
  }
  // One rank's part of a larger tensor (graph.shard, verified there).
  int64_t shardOffset = -1;
  fb::Offset<fb::Vector<int64_t>> wholeShape;
  if (shard) {
    shardOffset = shard.getAs<IntegerAttr>("offset").getInt();
    wholeShape = fbb.CreateVector(std::vector<int64_t>(
        shard.getAs<DenseI64ArrayAttr>("shape").asArrayRef()));
  }
  plan::BufferBuilder buffer(fbb);
  buffer.add_id(id);
  buffer.add_name(nameOffset);
  buffer.add_kind(kind);
  buffer.add_dtype(*dtype);
  buffer.add_shape(shape);
  buffer.add_size_bytes(kernel::getBufferSizeInBytes(type));
  buffer.add_arena_offset(arenaOffset);
  if (init)
    buffer.add_init(initOffset);
  if (data)
    buffer.add_data(dataOffset);
  if (splat)
    buffer.add_splat(true);
  if (shard) {
    buffer.add_shard_offset(shardOffset);
    buffer.add_whole_shape(wholeShape);
  }
  buffers.push_back(buffer.Finish());
  return id;
}

FailureOr<uint32_t> PlanBuilder::addEntryArgument(kernel::EntryOp entry,
                                                  unsigned index) {
  StringRef name = entry.getBufferName(index);
  plan::BufferKind kind = getPlanKind(entry.getBufferKind(index));
  auto type = cast<MemRefType>(entry.getArgument(index).getType());
  std::string key = (plan::EnumNameBufferKind(kind) + Twine("/") + name).str();
  auto it = namedBuffers.find(key);
  if (it != namedBuffers.end()) {
    if (it->second.second != type)
      return entry.emitError()
             << "buffer '" << name << "' has type " << type << " here but "
             << it->second.second << " in another entry";
    return it->second.first;
  }
  auto init = entry.getArgAttrOfType<DictionaryAttr>(
      index, kernel::KernelDialect::kInitAttr);
  auto shard = entry.getArgAttrOfType<DictionaryAttr>(
      index, kernel::KernelDialect::kShardAttr);
  FailureOr<uint32_t> id = addBuffer(entry, name, kind, type,
                                     /*arenaOffset=*/-1, init, nullptr, shard);
  if (succeeded(id))
    namedBuffers[key] = {*id, type};
  return id;
}

FailureOr<uint32_t> PlanBuilder::lookup(Operation *at, Value buffer) {
  auto it = bufferIds.find(buffer);
  if (it == bufferIds.end())
    return at->emitError() << "uses a buffer the plan does not know";
  return it->second;
}

fb::Offset<plan::SourceLoc> PlanBuilder::buildLoc(Location loc) {
  std::optional<FileLineColLoc> fileLoc = findFileLocation(loc);
  if (!fileLoc)
    return 0;
  return plan::CreateSourceLoc(fbb,
                               fbb.CreateString(fileLoc->getFilename().str()),
                               fileLoc->getLine(), fileLoc->getColumn());
}

FailureOr<fb::Offset<plan::Op>> PlanBuilder::buildOp(Operation *op) {
  auto id = [&](Value value) { return lookup(op, value); };
  plan::Call callType;
  fb::Offset<void> call;
  if (auto launch = dyn_cast<kernel::LaunchOp>(op)) {
    kernel::FuncOp kernelFunc = launch.getKernelFunc();
    std::string symbol = kernelFunc.getExportedSymbol();
    std::vector<uint32_t> ids;
    for (Value buffer : launch.getBuffers()) {
      FailureOr<uint32_t> bufferId = id(buffer);
      if (failed(bufferId))
        return failure();
      ids.push_back(*bufferId);
    }
    if (options.target == TargetKind::Cuda) {
      // A GPU launch; its range is the blocks the emulator runs.
      auto found = options.launches.find(symbol);
      if (found == options.launches.end())
        return kernelFunc.emitError() << "has no GPU launch";
      LaunchShape shape = found->second;
      call = plan::CreateKernelCall(fbb, fbb.CreateString(symbol),
                                    fbb.CreateVector(ids), shape.grid,
                                    getEmulatorGrain(shape.grid, shape.block),
                                    shape.grid, shape.block, /*shared_bytes=*/0)
                 .Union();
    } else {
      // The cpu executor cuts the range by the grain; a kernel without one
      // was scheduled for another target.
      std::optional<uint64_t> grain = kernelFunc.getGrain();
      if (!grain)
        return kernelFunc.emitError()
               << "has no grain: it was not scheduled for the cpu target "
                  "(convert-graph-to-kernel{target=cpu})";
      call = plan::CreateKernelCall(fbb, fbb.CreateString(symbol),
                                    fbb.CreateVector(ids),
                                    kernelFunc.getRange(), *grain)
                 .Union();
    }
    callType = plan::Call::KernelCall;
  } else if (auto gemm = dyn_cast<kernel::GemmOp>(op)) {
    FailureOr<uint32_t> a = id(gemm.getA()), b = id(gemm.getB()),
                        c = id(gemm.getC());
    if (failed(a) || failed(b) || failed(c))
      return failure();
    static_assert(
        static_cast<int>(plan::GemmEpilogue::Bias) ==
                static_cast<int>(kernel::GemmEpilogue::Bias) &&
            static_cast<int>(plan::GemmEpilogue::BiasGelu) ==
                static_cast<int>(kernel::GemmEpilogue::BiasGelu) &&
            static_cast<int>(plan::GemmEpilogue::BiasGrad) ==
                static_cast<int>(kernel::GemmEpilogue::BiasGrad),
        "plan.fbs's GemmEpilogue numbers the kernel dialect's epilogues");
    // The epilogue's vectors and matrices, or -1 (plan.fbs).
    int32_t bias = -1, aux = -1;
    if (Value value = gemm.getBias()) {
      FailureOr<uint32_t> bufferId = id(value);
      if (failed(bufferId))
        return failure();
      bias = static_cast<int32_t>(*bufferId);
    }
    if (Value value = gemm.getAux()) {
      FailureOr<uint32_t> bufferId = id(value);
      if (failed(bufferId))
        return failure();
      aux = static_cast<int32_t>(*bufferId);
    }
    call =
        plan::CreateGemmCall(
            fbb, *a, *b, *c, gemm.getM(), gemm.getN(), gemm.getK(),
            gemm.getBatch(), gemm.getTransposeA(), gemm.getTransposeB(),
            gemm.getLda(), gemm.getLdb(), gemm.getLdc(), gemm.getStrideA(),
            gemm.getStrideB(), gemm.getStrideC(),
            gemm.getAlpha().convertToDouble(), gemm.getBeta().convertToDouble(),
            *getPlanDType(gemm.getC().getType().getElementType()),
            gemm.getTileM(), gemm.getTileN(),
            *getPlanDType(gemm.getA().getType().getElementType()),
            // The plan's enum has the kernel dialect's numbers.
            static_cast<plan::GemmEpilogue>(gemm.getEpilogue()), bias, aux)
            .Union();
    callType = plan::Call::GemmCall;
  } else if (auto copy = dyn_cast<kernel::CopyOp>(op)) {
    FailureOr<uint32_t> from = id(copy.getSource()),
                        to = id(copy.getDestination());
    if (failed(from) || failed(to))
      return failure();
    call = plan::CreateCopyCall(
               fbb, *from, *to,
               kernel::getBufferSizeInBytes(copy.getSource().getType()))
               .Union();
    callType = plan::Call::CopyCall;
  } else if (auto zero = dyn_cast<kernel::ZeroOp>(op)) {
    FailureOr<uint32_t> buffer = id(zero.getBuffer());
    if (failed(buffer))
      return failure();
    call = plan::CreateZeroCall(fbb, *buffer).Union();
    callType = plan::Call::ZeroCall;
  } else if (auto start = dyn_cast<kernel::CollectiveStartOp>(op)) {
    std::vector<uint32_t> ids;
    for (Value buffer : start.getBuffers()) {
      FailureOr<uint32_t> bufferId = id(buffer);
      if (failed(bufferId))
        return failure();
      ids.push_back(*bufferId);
    }
    call = plan::CreateCollectiveStart(fbb,
                                       static_cast<uint32_t>(start.getBucket()),
                                       fbb.CreateVector(ids))
               .Union();
    callType = plan::Call::CollectiveStart;
  } else if (auto wait = dyn_cast<kernel::CollectiveWaitOp>(op)) {
    call = plan::CreateCollectiveWait(
               fbb, static_cast<uint32_t>(wait.getStart().getBucket()))
               .Union();
    callType = plan::Call::CollectiveWait;
  } else {
    return op->emitError() << "has no plan op";
  }
  auto origin =
      op->getAttrOfType<StringAttr>(kernel::KernelDialect::kOriginAttr);
  auto name = fbb.CreateString(origin ? origin.str()
                                      : op->getName().getStringRef().str());
  auto loc = buildLoc(op->getLoc());
  return plan::CreateOp(fbb, callType, call, name, loc);
}

FailureOr<fb::Offset<plan::Entry>>
PlanBuilder::buildEntry(kernel::EntryOp entry) {
  bufferIds.clear();
  std::vector<uint32_t> inputs, outputs;
  for (unsigned i = 0, e = entry.getNumArguments(); i < e; ++i) {
    FailureOr<uint32_t> bufferId = addEntryArgument(entry, i);
    if (failed(bufferId))
      return failure();
    bufferIds[entry.getArgument(i)] = *bufferId;
    kernel::BufferKind kind = entry.getBufferKind(i);
    if (kind == kernel::BufferKind::Input)
      inputs.push_back(*bufferId);
    else if (kind == kernel::BufferKind::Output)
      outputs.push_back(*bufferId);
  }
  std::vector<fb::Offset<plan::Op>> ops;
  for (Operation &op : entry.getBody().front()) {
    if (auto alloc = dyn_cast<kernel::AllocOp>(op)) {
      std::optional<int64_t> offset = alloc.getArenaOffset();
      if (!offset)
        return alloc.emitError() << "has no arena offset: run the memory "
                                    "planner (or "
                                    "--kernel-assign-offsets-naive) first";
      FailureOr<uint32_t> bufferId =
          addBuffer(alloc, "t" + std::to_string(transients++),
                    plan::BufferKind::Transient, alloc.getType(), *offset);
      if (failed(bufferId))
        return failure();
      bufferIds[alloc.getResult()] = *bufferId;
    } else if (auto view = dyn_cast<kernel::ViewOp>(op)) {
      FailureOr<uint32_t> source = lookup(view, view.getSource());
      if (failed(source))
        return failure();
      bufferIds[view.getResult()] = *source;
    } else if (auto constant = dyn_cast<kernel::ConstantOp>(op)) {
      FailureOr<uint32_t> bufferId =
          addBuffer(constant, "c" + std::to_string(constants++),
                    plan::BufferKind::Constant, constant.getType(), -1, nullptr,
                    constant.getValue());
      if (failed(bufferId))
        return failure();
      bufferIds[constant.getResult()] = *bufferId;
    } else if (!isa<kernel::ReturnOp>(op)) {
      FailureOr<fb::Offset<plan::Op>> planOp = buildOp(&op);
      if (failed(planOp))
        return failure();
      ops.push_back(*planOp);
    }
  }
  return plan::CreateEntry(fbb, fbb.CreateString(entry.getSymName().str()),
                           fbb.CreateVector(ops), fbb.CreateVector(inputs),
                           fbb.CreateVector(outputs));
}

FailureOr<std::vector<uint8_t>> PlanBuilder::build() {
  std::vector<fb::Offset<plan::Entry>> entries;
  for (auto entry : module.getOps<kernel::EntryOp>()) {
    FailureOr<fb::Offset<plan::Entry>> built = buildEntry(entry);
    if (failed(built))
      return failure();
    entries.push_back(*built);
  }
  auto arenaBytes = module->getAttrOfType<IntegerAttr>(kernel::kArenaBytesAttr);
  auto model = module->getAttrOfType<StringAttr>("graph.model");
  std::string trainConfig = "{}";
  if (Attribute train = module->getAttr("graph.train")) {
    trainConfig.clear();
    llvm::raw_string_ostream os(trainConfig);
    os << toJson(train);
  }
  bool cuda = options.target == TargetKind::Cuda;
  auto optionalString = [&](bool present, StringRef text) {
    return present ? fbb.CreateString(text.str()) : fb::Offset<fb::String>();
  };
  auto planOffset = plan::CreatePlan(
      fbb, KILN_PLAN_SCHEMA_VERSION, fbb.CreateString(options.compilerVersion),
      fbb.CreateString(model ? model.str() : "model"),
      fbb.CreateString(getTargetName(options.target).str()),
      fbb.CreateString(cuda ? "kernels.ptx" : "kernels.so"),
      fbb.CreateVector(buffers), fbb.CreateVector(entries),
      arenaBytes ? arenaBytes.getInt() : 0, fbb.CreateString(trainConfig),
      options.kernelsHash, optionalString(cuda, options.cuda.arch),
      optionalString(cuda && options.cubinHash, "kernels.cubin"),
      options.cubinHash, optionalString(cuda, "kernels.emu.so"),
      options.emulatorHash);
  plan::FinishPlanBuffer(fbb, planOffset);
  return std::vector<uint8_t>(fbb.GetBufferPointer(),
                              fbb.GetBufferPointer() + fbb.GetSize());
}

FailureOr<std::vector<uint8_t>>
kiln::serializePlan(ModuleOp module, const ArtifactOptions &options) {
  return PlanBuilder(module, options).build();
}
