//===- Initializers.cpp - Parameters from their initializers --------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// Reproduces the reference interpreter (lib/Interpreter/Initializers.cpp) bit
// for bit, so that the compiled path and the interpreter start from the same
// weights. Element e of parameter P with seed S:
//
//   zeros               0
//   ones / constant(v)  1 / v
//   normal(std)         std * philox::normalFor(S, kInitializerStep,
//                                               hashName(P), e)
//   uniform(lo, hi)     lo + (hi - lo) * uniformFromWord(wordFor(...))
//
// computed in double and rounded once to f32 (round to nearest even); f64
// parameters keep the double; f16 and bf16 parameters are rounded to f32
// first and then to the 16-bit type, as the interpreter does. Training state
// starts at zero, except a state buffer whose initializer says otherwise
// (fp16's loss scale: constant(65536)), filled the same way.
//
//===----------------------------------------------------------------------===//

#include "Session.h"

#include "kiln/HalfFloats.h"
#include "kiln/Philox.h"

#include <cstring>

using namespace kiln;
using namespace kiln::runtime;

namespace {

/// Stores `value` as element `e` of a parameter of `dtype`.
void store(plan::DType dtype, void *data, int64_t e, double value) {
  switch (dtype) {
  case plan::DType::F64:
    static_cast<double *>(data)[e] = value;
    return;
  case plan::DType::F32:
    static_cast<float *>(data)[e] = static_cast<float>(value);
    return;
  case plan::DType::BF16:
    static_cast<uint16_t *>(data)[e] = floatToBf16(static_cast<float>(value));
    return;
  case plan::DType::F16:
    static_cast<uint16_t *>(data)[e] = floatToHalf(static_cast<float>(value));
    return;
  default:
    return;
  }
}

/// Whether state `buffer` starts from an initializer of its own (fp16's
/// loss scale) rather than zeros.
bool hasStateInitializer(const BufferInfo &buffer) {
  return buffer.kind == plan::BufferKind::OptimizerState &&
         buffer.table->init() && buffer.table->init()->kind() &&
         buffer.table->init()->kind()->str() != "zeros" &&
         !isWeightCopy(buffer);
}

/// Checks that parameter `buffer` can be initialized: a floating-point
/// dtype and an initializer of a known kind.
Result checkInitializer(const BufferInfo &buffer) {
  std::string what =
      (buffer.kind == plan::BufferKind::Param ? std::string("parameter '")
                                              : std::string("state '")) +
      buffer.name + "'";
  if (buffer.dtype != plan::DType::F32 && buffer.dtype != plan::DType::F64 &&
      buffer.dtype != plan::DType::F16 && buffer.dtype != plan::DType::BF16)
    return invalidFormat(what + " is " + dtypeName(buffer.dtype) +
                         "; parameters must be floating point");
  const plan::Initializer *init = buffer.table->init();
  if (!init || !init->kind())
    return invalidFormat(what + " has no initializer in the plan");
  std::string kind = init->kind()->str();
  if (kind != "zeros" && kind != "ones" && kind != "constant" &&
      kind != "normal" && kind != "uniform")
    return invalidFormat(what + " has an unknown initializer kind '" + kind +
                         "' (expected zeros, ones, constant, normal or "
                         "uniform)");
  return Result::ok();
}

/// Fills parameter `buffer` (checked by checkInitializer) at `data`.
void fillParameter(const BufferInfo &buffer, uint64_t seed, void *data) {
  const plan::Initializer *init = buffer.table->init();
  std::string kind = init->kind()->str();
  int64_t count = buffer.numElements;
  const uint32_t stream =
      philox::hashName(buffer.name.data(), buffer.name.size());
  const uint32_t step = philox::kInitializerStep;
  if (kind == "zeros") {
    std::memset(data, 0, static_cast<size_t>(buffer.sizeBytes));
  } else if (kind == "ones" || kind == "constant") {
    double value = kind == "ones" ? 1.0 : init->value();
    for (int64_t e = 0; e < count; ++e)
      store(buffer.dtype, data, e, value);
  } else if (kind == "normal") {
    double stddev = init->std();
    for (int64_t e = 0; e < count; ++e)
      store(buffer.dtype, data, e,
            stddev * philox::normalFor(seed, step, stream,
                                       static_cast<uint64_t>(e)));
  } else if (kind == "uniform") {
    double low = init->low(), high = init->high();
    for (int64_t e = 0; e < count; ++e) {
      double u = philox::uniformFromWord(
          philox::wordFor(seed, step, stream, static_cast<uint64_t>(e)));
      store(buffer.dtype, data, e, low + (high - low) * u);
    }
  }
}

} // namespace

Result Session::initialize(uint64_t seed) {
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  // Check every initializer before writing anything, so that a failure
  // leaves the session as it was.
  for (const BufferInfo &buffer : buffers)
    if (buffer.kind == plan::BufferKind::Param || hasStateInitializer(buffer))
      KILN_RETURN_IF_ERROR(checkInitializer(buffer));
  // The runs in flight write the state too: they finish first.
  KILN_RETURN_IF_ERROR(device_->finish());
  for (size_t id = 0; id < buffers.size(); ++id) {
    const BufferInfo &buffer = buffers[id];
    if (buffer.kind == plan::BufferKind::Param || hasStateInitializer(buffer))
      fillParameter(buffer, seed, pointers_[id]);
    else if (buffer.kind == plan::BufferKind::OptimizerState ||
             buffer.kind == plan::BufferKind::Gradient)
      std::memset(pointers_[id], 0, static_cast<size_t>(buffer.sizeBytes));
    else
      continue;
    KILN_RETURN_IF_ERROR(hostWrote(id));
  }
  seed_ = seed;
  step_ = 0;
  return Result::ok();
}
