//===- WeightCopies.cpp - Mixed precision's low-precision weight copies ---===//
//
// Part of Kiln. Under mixed precision a training step reads each weight it
// multiplies in 16 bits from a state buffer that the optimizer's kernel
// writes as it updates the f32 weight (--graph-mixed-precision): the state
// `W.bf16` (or `W.fp16`) of parameter `W`, with the initializer `rounded`.
// The compiled steps keep it equal to W rounded to nearest even; whenever
// the host writes W instead (initialization, a checkpoint, the C API), the
// session derives the copy again before the next run. Copies are not
// saved in checkpoints: they follow from the weights.
//
//===----------------------------------------------------------------------===//

#include "Session.h"

#include "kiln/HalfFloats.h"

using namespace kiln;
using namespace kiln::runtime;

bool kiln::runtime::isWeightCopy(const BufferInfo &buffer) {
  const plan::Initializer *init = buffer.table ? buffer.table->init() : nullptr;
  return buffer.kind == plan::BufferKind::OptimizerState && init &&
         init->kind() && init->kind()->str() == "rounded";
}

Result Session::findWeightCopies() {
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  paramWritten_.assign(buffers.size(), false);
  for (size_t id = 0; id < buffers.size(); ++id) {
    const BufferInfo &copy = buffers[id];
    if (!isWeightCopy(copy))
      continue;
    // The parameter is the name before the last '.' (W of W.bf16).
    size_t dot = copy.name.rfind('.');
    int64_t param = dot == std::string::npos
                        ? -1
                        : artifact_->findBuffer(copy.name.substr(0, dot));
    std::string what = "weight copy '" + copy.name + "'";
    if (param < 0 || buffers[param].kind != plan::BufferKind::Param)
      return invalidFormat(what + " has no parameter '" +
                           copy.name.substr(0, dot) + "'");
    const BufferInfo &source = buffers[param];
    if (source.dtype != plan::DType::F32 ||
        (copy.dtype != plan::DType::BF16 && copy.dtype != plan::DType::F16) ||
        source.numElements != copy.numElements)
      return invalidFormat(what + " must be a bf16 or f16 buffer of the "
                                  "f32 parameter's size");
    weightCopies_.emplace_back(id, static_cast<size_t>(param));
  }
  return Result::ok();
}

void Session::noteHostWrote(size_t id) {
  if (id < paramWritten_.size() &&
      artifact_->getBuffers()[id].kind == plan::BufferKind::Param)
    paramWritten_[id] = true;
}

Result Session::refreshWeightCopies() {
  for (auto [copyId, paramId] : weightCopies_) {
    if (!paramWritten_[paramId])
      continue;
    const BufferInfo &copy = artifact_->getBuffers()[copyId];
    const auto *from = static_cast<const float *>(pointers_[paramId]);
    auto *to = static_cast<uint16_t *>(pointers_[copyId]);
    bool bf16 = copy.dtype == plan::DType::BF16;
    for (int64_t e = 0; e < copy.numElements; ++e)
      to[e] = bf16 ? floatToBf16(from[e]) : floatToHalf(from[e]);
    KILN_RETURN_IF_ERROR(device_->hostWrote(static_cast<uint32_t>(copyId)));
  }
  paramWritten_.assign(paramWritten_.size(), false);
  return Result::ok();
}
