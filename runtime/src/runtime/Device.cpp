//===- Device.cpp - What a session runs its entries on --------------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "Device.h"

using namespace kiln;
using namespace kiln::runtime;

OpChecks::~OpChecks() = default;
Device::~Device() = default;
OpHook::~OpHook() = default;

/// Device::joinRanks and collectOverRanks where the device has no
/// collectives.
static Result noCollectives() {
  return Result::error(KILN_ERROR_UNSUPPORTED,
                       "this device has no collectives of its own (NCCL is "
                       "the cuda device's): sum its buffers over the ranks "
                       "through kiln_session_buffer_data");
}

Result Device::joinRanks(const void *, int, int, double) {
  return noCollectives();
}

Result Device::collectOverRanks(const std::vector<RankCollective> &) {
  return noCollectives();
}

Result Device::armGradientSums(size_t, uint64_t *) { return noCollectives(); }

Result Device::reduceInParts(uint32_t, std::vector<size_t>) {
  return noCollectives();
}

static bool isFloat(plan::DType dtype) {
  return dtype == plan::DType::F32 || dtype == plan::DType::F64 ||
         dtype == plan::DType::F16 || dtype == plan::DType::BF16;
}

void runtime::visitOpBuffers(
    const plan::Op &op,
    const std::function<void(uint32_t id, bool written)> &visit) {
  switch (op.call_type()) {
  case plan::Call::KernelCall:
    // A kernel may write any of its buffers.
    if (const auto *ids = op.call_as_KernelCall()->buffers())
      for (uint32_t id : *ids)
        visit(id, true);
    return;
  case plan::Call::GemmCall: {
    const plan::GemmCall &call = *op.call_as_GemmCall();
    visit(call.a(), false);
    visit(call.b(), false);
    visit(call.c(), true);
    // What the epilogue reads or writes besides C: a bias (its gradient
    // with BiasGrad), a GELU's input (read back by DGelu).
    if (call.bias() >= 0)
      visit(uint32_t(call.bias()),
            call.epilogue() == plan::GemmEpilogue::BiasGrad);
    if (call.aux() >= 0)
      visit(uint32_t(call.aux()), call.epilogue() != plan::GemmEpilogue::DGelu);
    return;
  }
  case plan::Call::CopyCall:
    visit(op.call_as_CopyCall()->source(), false);
    visit(op.call_as_CopyCall()->destination(), true);
    return;
  case plan::Call::ZeroCall:
    visit(op.call_as_ZeroCall()->buffer(), true);
    return;
  case plan::Call::CollectiveStart:
    // Read as it starts; the wait (the op that writes them, in effect)
    // comes later, in the runtime's collectives.
    if (const auto *ids = op.call_as_CollectiveStart()->buffers())
      for (uint32_t id : *ids)
        visit(id, false);
    return;
  default:
    return;
  }
}

OpBuffers runtime::listOpBuffers(const Artifact &artifact, const plan::Op &op) {
  const std::vector<BufferInfo> &buffers = artifact.getBuffers();
  OpBuffers listed;
  // Zeros need no check: only what an op computes can be non-finite.
  bool zeroes = op.call_type() == plan::Call::ZeroCall;
  visitOpBuffers(op, [&](uint32_t id, bool written) {
    if (written && !zeroes && isFloat(buffers[id].dtype) &&
        buffers[id].kind != plan::BufferKind::Constant)
      listed.checked.push_back(id);
    if (buffers[id].kind == plan::BufferKind::Status &&
        op.call_type() == plan::Call::KernelCall)
      listed.status.push_back(id);
  });
  return listed;
}
