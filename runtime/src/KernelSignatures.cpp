//===- KernelSignatures.cpp - What a kernels.so says about its kernels ----===//
//
// Part of Kiln's runtime support: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "kiln/KernelSignatures.h"

#include <cstring>
#include <sstream>

namespace kiln {

std::string
formatKernelSignatures(const std::vector<KernelSignature> &signatures) {
  std::string text;
  for (const KernelSignature &signature : signatures) {
    text += signature.symbol + " " + std::to_string(signature.range);
    for (int64_t bytes : signature.bufferBytes)
      text += " " + std::to_string(bytes);
    text += "\n";
  }
  return text;
}

Status parseKernelSignatures(const std::string &text,
                             std::vector<KernelSignature> &signatures) {
  signatures.clear();
  std::istringstream lines(text);
  std::string line;
  size_t number = 0;
  while (std::getline(lines, line)) {
    ++number;
    std::istringstream fields(line);
    KernelSignature signature;
    if (!(fields >> signature.symbol >> signature.range) || signature.range < 0)
      return Status::error("line " + std::to_string(number) +
                           " of the kernel signatures is malformed");
    int64_t bytes;
    while (fields >> bytes) {
      if (bytes < 0)
        return Status::error("line " + std::to_string(number) +
                             " of the kernel signatures is malformed");
      signature.bufferBytes.push_back(bytes);
    }
    if (!fields.eof())
      return Status::error("line " + std::to_string(number) +
                           " of the kernel signatures is malformed");
    signatures.push_back(std::move(signature));
  }
  return Status::ok();
}

uint64_t hashBytes(const void *data, size_t size) {
  // Multiply-xorshift over 8-byte words (little-endian loads), then the
  // tail and the length; a final avalanche mixes every bit into every bit.
  constexpr uint64_t kMultiplier = 0x9E3779B97F4A7C15ull;
  const auto *bytes = static_cast<const uint8_t *>(data);
  uint64_t hash = 0x243F6A8885A308D3ull ^ size;
  auto mix = [&](uint64_t word) {
    hash ^= word * kMultiplier;
    hash = (hash << 27 | hash >> 37) * 0xBF58476D1CE4E5B9ull;
  };
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t word = 0;
    for (int b = 0; b < 8; ++b)
      word |= uint64_t(bytes[i + b]) << (8 * b);
    mix(word);
  }
  uint64_t tail = 0;
  for (int b = 0; i < size; ++i, ++b)
    tail |= uint64_t(bytes[i]) << (8 * b);
  mix(tail);
  hash ^= hash >> 31;
  hash *= 0x94D049BB133111EBull;
  hash ^= hash >> 29;
  return hash;
}

} // namespace kiln
