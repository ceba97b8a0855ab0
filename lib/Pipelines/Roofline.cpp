//===- Roofline.cpp - What each kernel of a step should cost on a GPU -----===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Pipelines/Roofline.h"
#include "kiln/Dialect/Kernel/IR/FusedAttention.h"
#include "kiln/Dialect/Kernel/IR/KernelDialect.h"
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Target/Cuda/GpuFigures.h"
#include "kiln/Target/TargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>

using namespace mlir;
using namespace kiln;

/// Bytes of a statically shaped memref.
static int64_t bufferBytes(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || !memref.hasStaticShape())
    return 0;
  return memref.getNumElements() * ((memref.getElementTypeBitWidth() + 7) / 8);
}

/// The trip count of a loop's dim: constant bounds, or a chunk's span;
/// 1 when neither is known.
static int64_t tripCount(Value lower, Value upper, Value step) {
  auto constant = [](Value value) -> std::optional<int64_t> {
    if (auto op = value.getDefiningOp<arith::ConstantIndexOp>())
      return op.value();
    return std::nullopt;
  };
  std::optional<int64_t> lo = constant(lower), hi = constant(upper),
                         st = constant(step);
  if (!st || *st <= 0)
    return 1;
  if (lo && hi)
    return *hi > *lo ? (*hi - *lo + *st - 1) / *st : 1;
  // A chunk of a parallel dim: [lower, min(lower + span, end)), span
  // elements (the last chunk may have fewer; the estimate counts span).
  Operation *min = upper.getDefiningOp();
  if (min && isa<arith::MinUIOp, arith::MinSIOp>(min))
    for (Value side : min->getOperands())
      if (auto add = side.getDefiningOp<arith::AddIOp>())
        for (auto [base, offset] : {std::pair(add.getLhs(), add.getRhs()),
                                    std::pair(add.getRhs(), add.getLhs())})
          if (base == lower)
            if (std::optional<int64_t> span = constant(offset);
                span && *span > 0)
              return (*span + *st - 1) / *st;
  return 1;
}

/// How many times `op` runs in one run of its kernel: the trips of the
/// loops around it.
static int64_t tripsAround(Operation *op) {
  int64_t trips = 1;
  for (Operation *parent = op->getParentOp();
       parent && !isa<kernel::FuncOp>(parent); parent = parent->getParentOp()) {
    if (auto loop = dyn_cast<scf::ForOp>(parent))
      trips *=
          tripCount(loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
    else if (auto loop = dyn_cast<scf::ParallelOp>(parent))
      for (auto [lower, upper, step] : llvm::zip(
               loop.getLowerBound(), loop.getUpperBound(), loop.getStep()))
        trips *= tripCount(lower, upper, step);
    else if (auto linalg = dyn_cast<linalg::LinalgOp>(parent))
      for (int64_t range : linalg.getStaticLoopRanges())
        if (range > 0)
          trips *= range;
  }
  return trips;
}

/// Whether the kernel loads from and stores to `buffer` (through views,
/// loads, stores, atomics and linalg operands).
static void findAccesses(Value buffer, bool &loads, bool &stores) {
  for (OpOperand &use : buffer.getUses()) {
    Operation *user = use.getOwner();
    if (auto linalg = dyn_cast<linalg::LinalgOp>(user)) {
      if (linalg.isDpsInput(&use)) {
        loads = true;
      } else {
        stores = true;
        loads |= linalg.payloadUsesValueFromOperand(&use);
      }
    } else if (isa<memref::LoadOp, vector::LoadOp, vector::TransferReadOp>(
                   user)) {
      loads = true;
    } else if (isa<memref::StoreOp, vector::StoreOp, vector::TransferWriteOp>(
                   user)) {
      stores = true;
    } else if (isa<memref::AtomicRMWOp>(user)) {
      loads = stores = true;
    } else if (isa<ViewLikeOpInterface>(user) && user->getNumResults() == 1) {
      findAccesses(user->getResult(0), loads, stores);
    }
  }
}

/// FLOPs of one execution of a floating-point op (a vector op counts its
/// lanes; a fused multiply-add two).
static int64_t flopsOf(Operation *op) {
  if (op->getNumResults() != 1)
    return 0;
  Type type = op->getResult(0).getType();
  int64_t lanes = 1;
  if (auto vector = dyn_cast<VectorType>(type)) {
    lanes = vector.getNumElements();
    type = vector.getElementType();
  }
  bool compare = isa<arith::CmpFOp>(op);
  if (!compare && !isa<FloatType>(type))
    return 0;
  if (isa<math::FmaOp>(op))
    return 2 * lanes;
  if (compare ||
      isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
          arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
          arith::MinNumFOp, arith::NegFOp, arith::RemFOp>(op) ||
      op->getDialect()->getNamespace() == "math")
    return lanes;
  return 0;
}

static OpCost costOfLaunch(kernel::LaunchOp launch) {
  OpCost cost;
  cost.what = ("kernel " + launch.getKernel()).str();
  kernel::FuncOp body = launch.getKernelFunc();
  if (!body)
    return cost;
  // A fused attention's body is a reference whose loops run to the causal
  // diagonal: its description counts the pairs instead.
  if (auto attention = kernel::FusedAttention::fromAttr(
          body->getAttr(kernel::KernelDialect::kAttentionAttr))) {
    cost.flops = attention->getFlops();
    // 16-bit queries: the tensor-core variant (mma.sync) of the template.
    auto query = dyn_cast<MemRefType>(body.getArgument(0).getType());
    cost.tensorCores = query && query.getElementTypeBitWidth() == 16;
  } else
    body.walk([&](Operation *op) {
      if (int64_t flops = flopsOf(op))
        cost.flops += flops * tripsAround(op);
    });
  // Each argument: loaded counts its bytes, stored counts them again.
  for (BlockArgument argument : body.getArguments()) {
    bool loads = false, stores = false;
    findAccesses(argument, loads, stores);
    int64_t bytes = bufferBytes(argument.getType());
    cost.bytes += (loads ? bytes : 0) + (stores ? bytes : 0);
  }
  return cost;
}

static OpCost costOfGemm(kernel::GemmOp gemm) {
  OpCost cost;
  cost.what = "gemm";
  int64_t m = gemm.getM(), n = gemm.getN(), k = gemm.getK();
  int64_t batch = gemm.getBatch();
  auto elementBytes = [](Value value) {
    auto memref = cast<MemRefType>(value.getType());
    return int64_t((memref.getElementTypeBitWidth() + 7) / 8);
  };
  int64_t ab = elementBytes(gemm.getA()), c = elementBytes(gemm.getC());
  cost.flops = 2 * m * n * k * batch;
  cost.bytes = ab * m * k * (gemm.getStrideA() ? batch : 1) +
               ab * k * n * (gemm.getStrideB() ? batch : 1) +
               c * m * n * batch * (gemm.getBeta().isZero() ? 1 : 2);
  if (gemm.getBias())
    cost.bytes += c * n;
  if (gemm.getAux())
    cost.bytes += c * m * n * batch;
  cost.tensorCores = ab == 2;
  return cost;
}

OpCost kiln::estimateOpCost(Operation *op) {
  OpCost cost;
  if (auto launch = dyn_cast<kernel::LaunchOp>(op))
    cost = costOfLaunch(launch);
  else if (auto gemm = dyn_cast<kernel::GemmOp>(op))
    cost = costOfGemm(gemm);
  else if (auto copy = dyn_cast<kernel::CopyOp>(op))
    cost = {"copy", "", 2 * bufferBytes(copy.getSource().getType()), 0, false};
  else if (auto zero = dyn_cast<kernel::ZeroOp>(op))
    cost = {"zero", "", bufferBytes(zero.getBuffer().getType()), 0, false};
  if (auto origin =
          op->getAttrOfType<StringAttr>(kernel::KernelDialect::kOriginAttr))
    cost.origin = origin.getValue().str();
  return cost;
}

namespace {
/// One GPU's peaks, as the datasheet gives them or as measured.
struct Peaks {
  double bytesPerSecond, fp32, bf16;
};
} // namespace

/// The op's time in seconds, and whether memory bounds it.
static std::pair<double, bool> timeOf(const OpCost &cost, const Peaks &peaks) {
  double memory = double(cost.bytes) / peaks.bytesPerSecond;
  double compute =
      double(cost.flops) / (cost.tensorCores ? peaks.bf16 : peaks.fp32);
  return {std::max(memory, compute), memory >= compute};
}

llvm::json::Object
kiln::estimateRoofline(ModuleOp module, const TargetInfo &target, bool training,
                       int64_t accumulate, const ModelFlops &model,
                       std::vector<RankStepTime> *stepTimes) {
  // The step's ops, each with how many times a step runs it.
  std::vector<std::pair<OpCost, int64_t>> ops;
  // A data-parallel step's last micro-batch: its ops in `ops`, and each
  // gradient bucket's bytes and the op of `ops` its sum starts before.
  size_t microBegin = 0, microEnd = 0;
  std::vector<std::pair<size_t, int64_t>> bucketStarts;
  auto add = [&](StringRef name, int64_t times) {
    for (auto entry : module.getOps<kernel::EntryOp>())
      if (entry.getSymName() == name)
        entry.walk([&](Operation *op) {
          if (isa<kernel::LaunchOp, kernel::GemmOp, kernel::CopyOp,
                  kernel::ZeroOp>(op))
            ops.push_back({estimateOpCost(op), times});
          if (auto start = dyn_cast<kernel::CollectiveStartOp>(op)) {
            int64_t bytes = 0;
            for (Value buffer : start.getBuffers())
              bytes += kernel::getBufferSizeInBytes(
                  cast<MemRefType>(buffer.getType()));
            bucketStarts.push_back({ops.size(), bytes});
          }
        });
  };
  bool hasTrainStep =
      llvm::any_of(module.getOps<kernel::EntryOp>(), [](kernel::EntryOp entry) {
        return entry.getSymName() == "train_step";
      });
  StringRef step = !training      ? "predict"
                   : hasTrainStep ? "train_step"
                                  : "accumulate_step";
  add(step, step == "accumulate_step" ? accumulate : 1);
  microEnd = ops.size();
  if (step == "accumulate_step")
    add("apply_step", 1);

  llvm::json::Array opList;
  int64_t bytes = 0, flops = 0;
  for (auto &[cost, times] : ops) {
    opList.push_back(llvm::json::Object{{"op", cost.what},
                                        {"origin", cost.origin},
                                        {"bytes", cost.bytes},
                                        {"flops", cost.flops},
                                        {"times", times}});
    bytes += cost.bytes * times;
    flops += cost.flops * times;
  }
  double modelFlopsPerStep = model.flopsPerToken * double(model.tokensPerStep);

  llvm::json::Array gpus;
  for (const cuda::GpuFigures &gpu : target.getGpus()) {
    auto estimate = [&](const Peaks &peaks, bool measured) {
      double seconds = 0;
      int64_t memoryBound = 0;
      llvm::json::Array times;
      for (auto &[cost, count] : ops) {
        auto [time, bound] = timeOf(cost, peaks);
        seconds += time * double(count);
        memoryBound += bound;
        times.push_back(time * 1e3);
      }
      llvm::json::Object result{
          {"step_ms", seconds * 1e3},
          {"memory_bound_ops", memoryBound},
          {"compute_bound_ops", int64_t(ops.size()) - memoryBound},
          {"op_ms", std::move(times)}};
      if (model.tokensPerStep > 0 && seconds > 0) {
        double tokensPerSecond = double(model.tokensPerStep) / seconds;
        result["tokens_per_s"] = tokensPerSecond;
        // MFU against the peak of the GEMMs' own precision: the CUDA
        // cores for f32, the tensor cores for bf16.
        bool tensorCores = llvm::any_of(
            ops, [](const auto &op) { return op.first.tensorCores; });
        result["mfu"] = modelFlopsPerStep / seconds /
                        (tensorCores ? peaks.bf16 : peaks.fp32);
        result["mfu_peak"] = tensorCores ? "bf16 tensor cores" : "fp32";
      }
      if (measured && stepTimes) {
        // The last micro-batch on its own: when each bucket's sum may
        // start, and when its compute ends.
        RankStepTime rank{std::string(gpu.name), seconds, 0, {}};
        size_t bucket = 0;
        for (size_t op = microBegin; op <= microEnd; ++op) {
          for (;
               bucket < bucketStarts.size() && bucketStarts[bucket].first == op;
               ++bucket)
            rank.buckets.push_back(
                {bucketStarts[bucket].second, rank.lastMicroBatchSeconds});
          if (op < microEnd)
            rank.lastMicroBatchSeconds += timeOf(ops[op].first, peaks).first;
        }
        stepTimes->push_back(std::move(rank));
      }
      if (measured) {
        // What no measurement covers, taken from the datasheet.
        llvm::json::Array fellBack{"fp32"};
        if (!gpu.measuredBytesPerSecond)
          fellBack.push_back("bandwidth");
        if (!gpu.measuredBf16Flops)
          fellBack.push_back("bf16");
        result["datasheet_figures"] = std::move(fellBack);
      }
      return result;
    };
    Peaks datasheet{gpu.hbmBytesPerSecond, gpu.fp32Flops, gpu.bf16Flops};
    Peaks measured{gpu.measuredBytesPerSecond.value_or(gpu.hbmBytesPerSecond),
                   gpu.fp32Flops,
                   gpu.measuredBf16Flops.value_or(gpu.bf16Flops)};
    gpus.push_back(
        llvm::json::Object{{"gpu", gpu.name},
                           {"hbm_bytes_per_s", gpu.hbmBytesPerSecond},
                           {"fp32_flops", gpu.fp32Flops},
                           {"bf16_flops", gpu.bf16Flops},
                           {"datasheet", estimate(datasheet, false)},
                           {"measured", estimate(measured, true)}});
  }
  llvm::json::Object roofline{
      {"entry", step},  {"arch", target.getArch()}, {"bytes", bytes},
      {"flops", flops}, {"ops", std::move(opList)}, {"gpus", std::move(gpus)}};
  if (model.tokensPerStep > 0) {
    roofline["tokens_per_step"] = model.tokensPerStep;
    roofline["model_flops_per_token"] = model.flopsPerToken;
  }
  return roofline;
}
