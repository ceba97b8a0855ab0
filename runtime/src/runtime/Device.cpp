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

Result Device::joinRanks(const void *, int, int, double) {
  return Result::error(KILN_ERROR_UNSUPPORTED,
                       "this device has no collectives of its own (NCCL is "
                       "the cuda device's): sum its buffers over the ranks "
                       "through kiln_session_buffer_data");
}

Result Device::sumOverRanks(const std::vector<uint32_t> &) {
  return joinRanks(nullptr, 0, 1, 0);
}

static bool isFloat(plan::DType dtype) {
  return dtype == plan::DType::F32 || dtype == plan::DType::F64 ||
         dtype == plan::DType::F16 || dtype == plan::DType::BF16;
}

OpBuffers runtime::listOpBuffers(const Artifact &artifact, const plan::Op &op) {
  const std::vector<BufferInfo> &buffers = artifact.getBuffers();
  OpBuffers listed;
  auto checkIfFloat = [&](int64_t id) {
    if (id >= 0 && isFloat(buffers[id].dtype) &&
        buffers[id].kind != plan::BufferKind::Constant)
      listed.checked.push_back(static_cast<uint32_t>(id));
  };
  switch (op.call_type()) {
  case plan::Call::KernelCall:
    if (const auto *ids = op.call_as_KernelCall()->buffers())
      for (uint32_t id : *ids) {
        checkIfFloat(id);
        if (buffers[id].kind == plan::BufferKind::Status)
          listed.status.push_back(id);
      }
    break;
  case plan::Call::GemmCall: {
    const plan::GemmCall &call = *op.call_as_GemmCall();
    checkIfFloat(call.c());
    // What the epilogue writes besides C: a bias gradient, a GELU's input.
    if (call.epilogue() == plan::GemmEpilogue::BiasGrad)
      checkIfFloat(call.bias());
    if (call.epilogue() != plan::GemmEpilogue::DGelu)
      checkIfFloat(call.aux());
    break;
  }
  case plan::Call::CopyCall:
    checkIfFloat(op.call_as_CopyCall()->destination());
    break;
  default:
    break;
  }
  return listed;
}
