//===- TargetInfo.cpp - The target objects --------------------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/TargetInfo.h"

using namespace kiln;

TargetInfo::~TargetInfo() = default;

llvm::StringRef kiln::getTargetName(TargetKind kind) {
  switch (kind) {
  case TargetKind::Cpu:
    return "cpu";
  case TargetKind::Cuda:
    return "cuda";
  }
  return "";
}

std::optional<TargetKind> kiln::parseTargetName(llvm::StringRef name) {
  if (name == "cpu")
    return TargetKind::Cpu;
  if (name == "cuda")
    return TargetKind::Cuda;
  return std::nullopt;
}

std::unique_ptr<TargetInfo>
TargetInfo::create(TargetKind kind, llvm::StringRef arch, std::string &error) {
  switch (kind) {
  case TargetKind::Cpu:
    return createHostTargetInfo(arch.empty() ? "x86-64-v2" : arch);
  case TargetKind::Cuda:
    return createCudaTargetInfo(arch.empty() ? "sm_90" : arch, error);
  }
  error = "unknown target";
  return nullptr;
}
