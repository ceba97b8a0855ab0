//===- Diagnostics.cpp - Check-numerics mode and per-op profiles ----------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// Check numerics scans, after each op, the floating-point buffers the op may
// have written (a kernel's arguments, a GEMM's C, a copy's destination) for
// exponent bits all ones: NaN or an infinity, in any of f32, f64, f16, bf16.
// The first one found fails the run with the op, its model location, the
// buffer and the element.
//
//===----------------------------------------------------------------------===//

#include "Session.h"
#include "kiln/KernelStatus.h"

#include <algorithm>
#include <cstring>

using namespace kiln;
using namespace kiln::runtime;

namespace {

/// A non-finite value found in a buffer.
struct NonFinite {
  int64_t element = -1;
  bool isNaN = false;
};

/// Scans `count` elements of `Bits` for an all-ones exponent.
template <typename Bits>
NonFinite scan(const void *data, int64_t count, Bits exponentMask,
               Bits mantissaMask) {
  const Bits *values = static_cast<const Bits *>(data);
  for (int64_t i = 0; i < count; ++i) {
    Bits bits;
    std::memcpy(&bits, values + i, sizeof(Bits));
    if ((bits & exponentMask) == exponentMask)
      return {i, (bits & mantissaMask) != 0};
  }
  return {};
}

NonFinite scanBuffer(const BufferInfo &buffer, const void *data) {
  int64_t count = buffer.numElements;
  switch (buffer.dtype) {
  case plan::DType::F32:
    return scan<uint32_t>(data, count, 0x7F800000u, 0x007FFFFFu);
  case plan::DType::F64:
    return scan<uint64_t>(data, count, 0x7FF0000000000000ull,
                          0x000FFFFFFFFFFFFFull);
  case plan::DType::F16:
    return scan<uint16_t>(data, count, 0x7C00u, 0x03FFu);
  case plan::DType::BF16:
    return scan<uint16_t>(data, count, 0x7F80u, 0x007Fu);
  default:
    return {};
  }
}

const char *callName(plan::Call kind) {
  switch (kind) {
  case plan::Call::KernelCall:
    return "kernel";
  case plan::Call::GemmCall:
    return "gemm";
  case plan::Call::CopyCall:
    return "copy";
  case plan::Call::ZeroCall:
    return "zero";
  case plan::Call::CollectiveStart:
    return "collective start";
  case plan::Call::CollectiveWait:
    return "collective wait";
  default:
    return "none";
  }
}

} // namespace

/// "op 'fusion(graph.add)' (entry 'train_step' op 3" and the op's call.
static std::string describeOp(const plan::Op &op, const std::string &entry,
                              size_t index) {
  std::string opName = op.name() ? op.name()->str() : "";
  return formatLocation(op.loc()) + ": op '" + opName + "' (entry '" + entry +
         "' op " + std::to_string(index);
}

Result Session::checkNumerics(size_t entry, size_t index, uint32_t id,
                              const void *bytes) const {
  const plan::Op &op = getOp(entry, index);
  const BufferInfo &buffer = artifact_->getBuffers()[id];
  NonFinite found = scanBuffer(buffer, bytes);
  if (found.element < 0)
    return Result::ok();
  std::string call = callName(op.call_type());
  if (op.call_type() == plan::Call::KernelCall)
    call += " " + op.call_as_KernelCall()->symbol()->str();
  std::string message =
      "check numerics: " + std::string(found.isNaN ? "NaN" : "infinity") +
      " at " + describeOp(op, entryNames_[entry], index) + ", " + call +
      ") left " + (found.isNaN ? "a NaN" : "an infinity") + " in buffer '" +
      buffer.name + "' (" + bufferKindName(buffer.kind) + " " +
      formatType(buffer.dtype, buffer.shape.data(), buffer.shape.size()) +
      ") at element " + std::to_string(found.element);
  if (buffer.kind == plan::BufferKind::Input ||
      buffer.kind == plan::BufferKind::Param)
    message += std::string("; that ") + bufferKindName(buffer.kind) +
               " may have held it before the op ran";
  return Result::error(KILN_ERROR_NUMERICS, message);
}

Result Session::checkFiniteState(const std::string &purpose) const {
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  for (size_t id = 0; id < buffers.size(); ++id) {
    const BufferInfo &buffer = buffers[id];
    if (buffer.kind != plan::BufferKind::Param &&
        buffer.kind != plan::BufferKind::OptimizerState)
      continue;
    NonFinite found = scanBuffer(buffer, pointers_[id]);
    if (found.element < 0)
      continue;
    return Result::error(
        KILN_ERROR_NUMERICS,
        std::string(bufferKindName(buffer.kind)) + " '" + buffer.name +
            "' holds " + (found.isNaN ? "a NaN" : "an infinity") +
            " at element " + std::to_string(found.element) + " after step " +
            std::to_string(step_) + ": " + purpose);
  }
  return Result::ok();
}

Result Session::checkStatus(size_t entry, size_t index, uint32_t id,
                            const void *bytes) const {
  int64_t report[2];
  std::memcpy(report, bytes, sizeof report);
  if (report[0] == 0)
    return Result::ok();
  std::string problem;
  switch (static_cast<KernelStatus>(report[0])) {
  case KernelStatus::BadEmbeddingId:
    problem = "embedding id " + std::to_string(report[1]) +
              " is out of range (an input holds an id outside [0, V))";
    break;
  case KernelStatus::BadTarget:
    problem = "cross-entropy target " + std::to_string(report[1]) +
              " is out of range (an input holds a class outside [0, C))";
    break;
  case KernelStatus::Ok:
  default:
    problem = "kernel reported error code " + std::to_string(report[0]) +
              " (value " + std::to_string(report[1]) + ")";
    break;
  }
  return invalidArgument(
      describeOp(getOp(entry, index), entryNames_[entry], index) +
      "): " + problem);
}

void Session::setProfiling(bool enabled) {
  profiling_ = enabled;
  if (!enabled)
    return;
  for (EntryProfile &profile : profiles_) {
    std::fill(profile.calls.begin(), profile.calls.end(), 0);
    std::fill(profile.nanoseconds.begin(), profile.nanoseconds.end(), 0);
  }
}

size_t Session::getProfileCount() const {
  size_t count = 0;
  for (const EntryProfile &profile : profiles_)
    count += profile.calls.size();
  return count;
}

Result Session::getProfile(size_t index, kiln_op_profile &profile) const {
  for (size_t entry = 0; entry < profiles_.size(); ++entry) {
    const EntryProfile &times = profiles_[entry];
    if (index >= times.calls.size()) {
      index -= times.calls.size();
      continue;
    }
    const plan::Op &op = getOp(entry, index);
    const plan::SourceLoc *loc = op.loc();
    profile.entry = entryNames_[entry].c_str();
    profile.index = static_cast<int32_t>(index);
    profile.call = callName(op.call_type());
    profile.name = op.name() ? op.name()->c_str() : "";
    profile.file = loc && loc->file() ? loc->file()->c_str() : "";
    profile.line = loc ? loc->line() : 0;
    profile.column = loc ? loc->column() : 0;
    profile.calls = times.calls[index];
    profile.total_ms = static_cast<double>(times.nanoseconds[index]) * 1e-6;
    return Result::ok();
  }
  return invalidArgument("profile index out of range (" +
                         std::to_string(getProfileCount()) + " ops)");
}

Result Session::getOpDetail(size_t index, const char *&detail) {
  if (details_.empty())
    details_.resize(getProfileCount());
  if (index >= details_.size())
    return invalidArgument("op index " + std::to_string(index) +
                           " out of range (" + std::to_string(details_.size()) +
                           " ops)");
  std::string &text = details_[index];
  if (text.empty()) {
    size_t op = index, entry = 0;
    while (op >= profiles_[entry].calls.size())
      op -= profiles_[entry++].calls.size();
    text = device_->describeOp(entry, op);
  }
  detail = text.c_str();
  return Result::ok();
}
