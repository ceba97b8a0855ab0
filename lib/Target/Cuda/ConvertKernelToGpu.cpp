//===- ConvertKernelToGpu.cpp - Kernels onto GPU blocks and threads -------===//
//
// Part of Kiln. --convert-kernel-to-gpu (Passes.td): the attention
// template for the parts of a fused attention (AttentionTemplate.cpp), the
// elementwise template, the transpose template (TransposeTemplate.cpp), the
// row template (RowTemplate.cpp), the scatter partitions, else one
// iteration of a kernel's range per thread.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Kernel/Analysis/BufferAccess.h"
#include "kiln/Dialect/Kernel/IR/KernelDialect.h"
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Target/Cuda/CudaTarget.h"
#include "kiln/Target/RestrictToChunk.h"

#include "AttentionTemplate.h"
#include "KernelFunc.h"
#include "RowTemplate.h"
#include "ScatterPartition.h"
#include "TransposeTemplate.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"

namespace kiln {
#define GEN_PASS_DEF_CONVERTKERNELTOGPU
#include "kiln/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

LaunchShape kiln::getLaunchShape(int64_t range, int64_t blockSize,
                                 int64_t warpSize) {
  LaunchShape shape;
  if (range >= blockSize) {
    shape.block = blockSize;
  } else {
    // One block of the range, rounded up to whole warps.
    shape.block =
        (std::max<int64_t>(range, 1) + warpSize - 1) / warpSize * warpSize;
    shape.block = std::min(shape.block, blockSize);
  }
  shape.grid = (std::max<int64_t>(range, 1) + shape.block - 1) / shape.block;
  return shape;
}

namespace {
/// A kernel on its way to the GPU: its body over [begin, end).
struct Kernel {
  std::string name;
  int64_t range;
  func::FuncOp body;
  Location loc;
  /// The top-level loops whose whole iteration spaces threads take element
  /// by element (see getElementwiseLoops); empty: a thread per iteration of
  /// the range.
  SmallVector<scf::ParallelOp> loops;
  /// Consecutive elements of the innermost dim one thread of an elementwise
  /// kernel takes (see getVectorWidth).
  int64_t width = 1;
  /// Per argument: whether a launch passes it a buffer another argument
  /// shares (the row template needs those only read).
  llvm::SmallVector<bool> aliasedArguments;
  /// Whether every launch passes it distinct buffers (no two arguments
  /// views of one root), so that its arguments never alias.
  bool distinctBuffers() const {
    return llvm::none_of(aliasedArguments,
                         [](bool aliased) { return aliased; });
  }
  /// A group of threads per iteration of the range (RowTemplate.h).
  std::optional<RowPlan> row;
  /// The partitions of a scatter-add's destination rows
  /// (ScatterPartition.h); 1 for any other kernel.
  int64_t scatterPartitions = 1;
  /// Shared-memory tiles for loads across the store order
  /// (TransposeTemplate.h).
  std::optional<TransposePlan> transpose;
  /// A part of a fused attention, whose reference body the attention
  /// template replaces (AttentionTemplate.h).
  std::optional<AttentionPlan> attention;
};

/// For each kernel, which of its arguments some launch passes a buffer
/// that shares its root with another argument's. Two buffers live at once
/// never share bytes (the memory plan), and a buffer read and written in
/// place is passed once, so only a buffer passed twice (or with its view)
/// aliases.
llvm::DenseMap<StringAttr, llvm::SmallVector<bool>>
findAliasedArguments(ModuleOp module) {
  llvm::DenseMap<StringAttr, llvm::SmallVector<bool>> aliased;
  module.walk([&](kernel::LaunchOp launch) {
    auto buffers = launch.getBuffers();
    llvm::SmallVector<bool> &flags = aliased[launch.getKernelAttr().getAttr()];
    flags.resize(std::max<size_t>(flags.size(), buffers.size()), false);
    llvm::DenseMap<Value, unsigned> uses;
    for (Value buffer : buffers)
      ++uses[kernel::getRootBuffer(buffer)];
    for (auto [i, buffer] : llvm::enumerate(buffers))
      flags[i] = flags[i] || uses[kernel::getRootBuffer(buffer)] > 1;
  });
  return aliased;
}

/// The largest element of `body`'s buffers, in bytes.
int64_t getWidestElementBytes(func::FuncOp body) {
  int64_t widest = 1;
  for (Type type : body.getArgumentTypes())
    if (auto memref = dyn_cast<MemRefType>(type))
      widest =
          std::max<int64_t>(widest, (memref.getElementTypeBitWidth() + 7) / 8);
  return widest;
}

/// The iterations of `loop` when it runs over [0, n) in steps of 1 in every
/// dim with constant bounds and no reductions, else nullopt.
std::optional<int64_t> getIterationCount(scf::ParallelOp loop) {
  if (loop.getNumReductions() != 0)
    return std::nullopt;
  int64_t count = 1;
  for (auto [lower, upper, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> low = getConstantIntValue(lower);
    std::optional<int64_t> high = getConstantIntValue(upper);
    std::optional<int64_t> stride = getConstantIntValue(step);
    if (low != 0 || stride != 1 || !high || *high < 0)
      return std::nullopt;
    count *= *high;
  }
  return count;
}

/// The loops of `body` (linalg already lowered) that threads may take one
/// element at a time: its only top-level loop, or the segments of a merged
/// kernel (independent launches, by construction), when every other
/// top-level op is free of memory effects. A body with several loops that
/// are not segments may read in one what another wrote at the same index
/// of the range, so it keeps a thread per iteration of the range.
SmallVector<scf::ParallelOp> getElementwiseLoops(func::FuncOp body) {
  SmallVector<scf::ParallelOp> loops;
  for (Operation &op : body.getBody().front().without_terminator()) {
    if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
      if (!getIterationCount(loop))
        return {};
      loops.push_back(loop);
    } else if (!isMemoryEffectFree(&op)) {
      return {};
    }
  }
  if (loops.size() > 1 && !llvm::all_of(loops, [](scf::ParallelOp loop) {
        return loop->hasAttr(kernel::KernelDialect::kSegmentOffsetAttr);
      }))
    return {};
  return loops;
}

/// The threads a kernel needs: the largest of its elementwise loops, or
/// its range.
int64_t getThreadCount(const Kernel &kernel) {
  if (kernel.loops.empty())
    return kernel.range;
  int64_t threads = 1;
  for (scf::ParallelOp loop : kernel.loops)
    threads = std::max(threads, *getIterationCount(loop) / kernel.width);
  return threads;
}

/// Whether a loop of `kernel`'s elementwise loops has a loop in its body:
/// each thread then runs that loop (a row's or a column block's sums).
bool hasNestedLoop(const Kernel &kernel) {
  bool nested = false;
  for (scf::ParallelOp loop : kernel.loops)
    loop.getBody()->walk([&](LoopLikeOpInterface) { nested = true; });
  return nested;
}

/// How many consecutive innermost elements a thread of an elementwise
/// kernel takes: as many as fill `vectorBytes` of its widest element type,
/// when every loop's innermost dim is a multiple of it and its body has no
/// loop, else 1. Buffers
/// start at 64-byte boundaries (the arena's offsets, the runtime's
/// allocations), so a thread's elements of a contiguous access are 16-byte
/// aligned and NVPTX's load/store vectorizer makes them one 128-bit access
/// (ld.global.v4.f32).
int64_t getVectorWidth(const Kernel &kernel, int64_t vectorBytes) {
  if (kernel.loops.empty())
    return 1;
  int64_t width =
      std::max<int64_t>(vectorBytes / getWidestElementBytes(kernel.body), 1);
  for (scf::ParallelOp loop : kernel.loops) {
    std::optional<int64_t> inner =
        getConstantIntValue(loop.getUpperBound().back());
    if (!inner || *inner % width != 0)
      return 1;
  }
  // Only straight-line bodies: a body with a loop of its own (a column
  // block's sums over the rows) would hold each of its values per element
  // in registers and spill.
  return hasNestedLoop(kernel) ? 1 : width;
}

/// Clones the ops of `body` into `inside` for the thread of global index
/// `index`: each elementwise loop's body at the loop indices of its
/// elements `index * width` to `index * width + width - 1` (consecutive
/// along the innermost dim), when they are within the loop.
void cloneElementwise(OpBuilder &inside, Location loc, const Kernel &kernel,
                      Value index, IRMapping &mapping) {
  func::FuncOp body = kernel.body;
  Block &source = body.getBody().front();
  for (Operation &op : source.without_terminator()) {
    auto loop = dyn_cast<scf::ParallelOp>(op);
    if (!loop) {
      inside.clone(op, mapping);
      continue;
    }
    Value count =
        arith::ConstantIndexOp::create(inside, loc, *getIterationCount(loop));
    Value element = index;
    if (kernel.width > 1)
      element = arith::MulIOp::create(
          inside, loc, index,
          arith::ConstantIndexOp::create(inside, loc, kernel.width));
    Value within = arith::CmpIOp::create(inside, loc, arith::CmpIPredicate::ult,
                                         element, count);
    auto ifOp = scf::IfOp::create(inside, loc, within,
                                  /*withElseRegion=*/false);
    OpBuilder b = OpBuilder::atBlockBegin(ifOp.thenBlock());
    // Row-major: the last dim varies fastest, so neighbouring threads
    // touch neighbouring elements.
    Value rest = element;
    Block *loopBody = loop.getBody();
    int64_t innermost = loop.getNumLoops() - 1;
    for (int64_t d = innermost; d >= 0; --d) {
      Value size = loop.getUpperBound()[d];
      Value sizeHere =
          arith::ConstantIndexOp::create(b, loc, *getConstantIntValue(size));
      mapping.map(
          loopBody->getArgument(d),
          d == 0 ? rest
                 : arith::RemUIOp::create(b, loc, rest, sizeHere).getResult());
      if (d > 0)
        rest = arith::DivUIOp::create(b, loc, rest, sizeHere);
    }
    // The thread's consecutive elements, one copy of the body each (the
    // innermost dim is a multiple of the width: they share the outer
    // indices).
    // Each copy has a mapping of its own: cloning a region maps its block
    // arguments, which a second clone with the same mapping would reuse.
    Value first = mapping.lookup(loopBody->getArgument(innermost));
    for (int64_t k = 0; k < kernel.width; ++k) {
      IRMapping copy = mapping;
      if (k > 0)
        copy.map(loopBody->getArgument(innermost),
                 arith::AddIOp::create(
                     b, loc, first, arith::ConstantIndexOp::create(b, loc, k))
                     .getResult());
      for (Operation &nested : loopBody->without_terminator())
        b.clone(nested, copy);
    }
  }
}

/// Builds `gpu.func @name` running the restricted `body` once per thread,
/// with begin = the thread's global index i and end = i + 1, where i is in
/// the range.
void buildGpuKernel(OpBuilder &builder, const Kernel &kernel, int64_t threads,
                    LaunchShape shape) {
  Location loc = kernel.loc;
  func::FuncOp body = kernel.body;
  Block &source = body.getBody().front();
  unsigned numBuffers = source.getNumArguments() - 2;
  gpu::GPUFuncOp func =
      createKernelFunc(builder, loc, kernel.name, body, {}, shape);
  // Every buffer starts at a 64-byte boundary (see getVectorWidth); said
  // only where a thread takes a vector's worth of elements: on a column
  // block's loop the vectorizer's wide loads raised the registers a thread
  // holds until ptxas spilled (layer_norm_grad's weight gradients).
  // Which template it got: elements per thread, or none (a thread per
  // iteration of the range).
  if (!kernel.loops.empty() && !hasNestedLoop(kernel))
    func->setAttr(kElementwiseAttr, builder.getI64IntegerAttr(kernel.width));
  if (kernel.scatterPartitions > 1)
    func->setAttr(kScatterAttr,
                  builder.getI64IntegerAttr(kernel.scatterPartitions));
  // Distinct buffers also say noalias, so that LLVM may load a thread's
  // elements before it stores any and make the loads one.
  if (kernel.width > 1)
    for (unsigned i = 0; i < numBuffers; ++i) {
      func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                      builder.getI64IntegerAttr(16));
      if (kernel.distinctBuffers())
        func.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(),
                        builder.getUnitAttr());
    }

  Block &entry = func.getBody().front();
  OpBuilder b = OpBuilder::atBlockEnd(&entry);
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value blockSize = arith::ConstantIndexOp::create(b, loc, shape.block);
  Value index = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, block, blockSize), thread);
  Value inRange =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, index,
                            arith::ConstantIndexOp::create(b, loc, threads));
  auto ifOp = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
  gpu::ReturnOp::create(b, loc);

  IRMapping mapping;
  for (unsigned i = 0; i < numBuffers; ++i)
    mapping.map(source.getArgument(i), entry.getArgument(i));
  OpBuilder inside = OpBuilder::atBlockBegin(ifOp.thenBlock());
  if (!kernel.loops.empty()) {
    cloneElementwise(inside, loc, kernel, index, mapping);
    return;
  }
  mapping.map(source.getArgument(numBuffers), index);
  mapping.map(
      source.getArgument(numBuffers + 1),
      arith::AddIOp::create(inside, loc, index,
                            arith::ConstantIndexOp::create(inside, loc, 1)));
  for (Operation &op : source.without_terminator())
    inside.clone(op, mapping);
}

struct ConvertKernelToGpuPass
    : kiln::impl::ConvertKernelToGpuBase<ConvertKernelToGpuPass> {
  using ConvertKernelToGpuBase::ConvertKernelToGpuBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t block = blockSize, bytes = vectorBytes, warp = warpSize;
    if (bytes < 1 || warp < 1) {
      module.emitError() << "convert-kernel-to-gpu: vector-bytes and "
                            "warp-size must be positive, got "
                         << bytes << " and " << warp;
      return signalPassFailure();
    }
    if (block < warp || block > 1024 || block % warp) {
      module.emitError() << "convert-kernel-to-gpu: block-size must be a "
                            "multiple of "
                         << warp << " in [" << warp << ", 1024], got " << block;
      return signalPassFailure();
    }
    // Entries and their ops are the plan, not code: what they say about
    // each kernel's buffers first.
    llvm::DenseMap<StringAttr, llvm::SmallVector<bool>> aliased =
        findAliasedArguments(module);
    for (Operation &op : llvm::make_early_inc_range(*module.getBody()))
      if (isa<kernel::EntryOp>(op))
        op.erase();

    SmallVector<Kernel, 0> kernels;
    for (auto kernel :
         llvm::make_early_inc_range(module.getOps<kernel::FuncOp>())) {
      std::string name = kernel.getExportedSymbol();
      Location loc = kernel.getLoc();
      int64_t range = kernel.getRange();
      llvm::SmallVector<bool> aliasedArguments =
          aliased.lookup(kernel.getSymNameAttr());
      // A kernel no launch calls: nothing shows its buffers apart.
      if (!aliased.count(kernel.getSymNameAttr()))
        aliasedArguments.assign(kernel.getNumArguments(), true);
      std::optional<kernel::FusedAttention> attention =
          kernel::FusedAttention::fromAttr(
              kernel->getAttr(kernel::KernelDialect::kAttentionAttr));
      func::FuncOp body = outlineKernelBody(kernel, name + "_body");
      kernel.erase();
      kernels.push_back(
          {name, range, body, loc, {}, 1, aliasedArguments, std::nullopt});
      if (attention) {
        // The reference body is a thread per row: never the fallback.
        kernels.back().attention = planAttention(*attention, body, warp);
        if (!kernels.back().attention) {
          emitError(loc) << "convert-kernel-to-gpu: the attention template "
                            "cannot take kernel "
                         << name << " (" << kernel::getPartName(attention->part)
                         << "): its buffers are not the part's f32 buffers, "
                            "or a head dim is past what a warp's lanes hold";
          return signalPassFailure();
        }
      }
    }

    // linalg → loops; then a thread per element of elementwise loops, or a
    // thread per iteration of the range.
    OpPassManager toLoops(ModuleOp::getOperationName());
    toLoops.addNestedPass<func::FuncOp>(
        createConvertLinalgToParallelLoopsPass());
    if (failed(runPipeline(toLoops, module)))
      return signalPassFailure();
    for (Kernel &kernel : kernels) {
      if (kernel.attention)
        continue;
      kernel.loops = getElementwiseLoops(kernel.body);
      // One loop nest reading some operand across its store order: tiles.
      if (kernel.loops.size() == 1 && !hasNestedLoop(kernel)) {
        kernel.transpose = planTranspose(kernel.body, kernel.loops.front(),
                                         kernel.aliasedArguments);
        if (kernel.transpose)
          continue;
      }
      kernel.width = getVectorWidth(kernel, vectorBytes);
      // A loop inside a row (or a sequential kernel) is spread over a
      // group of threads where the row template can take it.
      if (kernel.loops.empty() || hasNestedLoop(kernel)) {
        kernel.row = planRowKernel(kernel.body, kernel.range, block, warp,
                                   kernel.aliasedArguments);
        if (kernel.row)
          kernel.loops.clear();
      }
      // A scatter-add: a thread per column and partition of its rows.
      if (!kernel.row && (kernel.loops.empty() || hasNestedLoop(kernel)))
        if (std::optional<int64_t> partitions =
                partitionScatter(kernel.body, kernel.range)) {
          kernel.range *= *partitions;
          kernel.scatterPartitions = *partitions;
        }
      if (kernel.loops.empty() && !kernel.row &&
          failed(restrictToChunk(kernel.body, kernel.range)))
        return signalPassFailure();
    }

    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    builder.getUnitAttr());
    auto gpuModule =
        gpu::GPUModuleOp::create(builder, module.getLoc(), "kiln_kernels");
    builder.setInsertionPointToStart(gpuModule.getBody());
    for (Kernel &kernel : kernels) {
      if (kernel.attention) {
        buildAttentionKernel(builder, kernel.name, kernel.loc, kernel.body,
                             *kernel.attention);
      } else if (kernel.transpose) {
        buildTransposeKernel(builder, kernel.name, kernel.loc, kernel.body,
                             *kernel.transpose);
      } else if (kernel.row) {
        buildRowKernel(builder, kernel.name, kernel.loc, kernel.body,
                       *kernel.row);
      } else {
        int64_t threads = getThreadCount(kernel);
        buildGpuKernel(builder, kernel, threads,
                       getLaunchShape(threads, blockSize, warpSize));
      }
      kernel.body.erase();
    }
  }
};
} // namespace
