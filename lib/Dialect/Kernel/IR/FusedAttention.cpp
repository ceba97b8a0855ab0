//===- FusedAttention.cpp - The parts of a fused attention ----------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/IR/FusedAttention.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <iterator>

using namespace mlir;
using namespace kiln::kernel;

StringRef kiln::kernel::getPartName(FusedAttention::Part part) {
  switch (part) {
  case FusedAttention::Part::Forward:
    return "forward";
  case FusedAttention::Part::KeyValueGrad:
    return "key_value_grad";
  case FusedAttention::Part::QueryGrad:
    return "query_grad";
  }
  return "";
}

int64_t FusedAttention::getPairs() const {
  if (!causal)
    return batches * queries * keys;
  // Query i sees min(i + 1, keys) keys.
  int64_t full = std::min(queries, keys);
  int64_t pairs = full * (full + 1) / 2 + (queries - full) * keys;
  return batches * pairs;
}

int64_t FusedAttention::getFlops() const {
  int64_t perPair = 0;
  switch (part) {
  case Part::Forward:
    // q.k, p * v; scale, max, exponential, rescale of the sum.
    perPair = 2 * keyDim + 2 * valueDim + 6 + (masked ? 1 : 0);
    break;
  case Part::KeyValueGrad:
    // q.k, p * dout, dout.v, ds * q; scale, exponential, ds.
    perPair = 4 * keyDim + 4 * valueDim + 5 + (masked ? 1 : 0);
    break;
  case Part::QueryGrad:
    // q.k, dout.v, ds * k; scale, exponential, ds.
    perPair = 4 * keyDim + 2 * valueDim + 5 + (masked ? 1 : 0);
    break;
  }
  return getPairs() * perPair;
}

Attribute FusedAttention::toAttr(MLIRContext *context) const {
  Builder b(context);
  NamedAttribute entries[] = {
      b.getNamedAttr("part", b.getStringAttr(getPartName(part))),
      b.getNamedAttr("batches", b.getI64IntegerAttr(batches)),
      b.getNamedAttr("queries", b.getI64IntegerAttr(queries)),
      b.getNamedAttr("keys", b.getI64IntegerAttr(keys)),
      b.getNamedAttr("key_dim", b.getI64IntegerAttr(keyDim)),
      b.getNamedAttr("value_dim", b.getI64IntegerAttr(valueDim)),
      b.getNamedAttr("causal", b.getBoolAttr(causal)),
      b.getNamedAttr("scale", b.getF64FloatAttr(scale))};
  SmallVector<NamedAttribute> all(std::begin(entries), std::end(entries));
  if (masked)
    all.push_back(b.getNamedAttr(
        "mask", b.getDenseI64ArrayAttr(
                    {maskBatches, maskDivisor, maskQueries, maskKeys})));
  return b.getDictionaryAttr(all);
}

std::optional<FusedAttention> FusedAttention::fromAttr(Attribute attr) {
  auto dict = dyn_cast_or_null<DictionaryAttr>(attr);
  if (!dict)
    return std::nullopt;
  FusedAttention fused;
  auto part = dict.getAs<StringAttr>("part");
  if (!part)
    return std::nullopt;
  if (part.getValue() == "forward")
    fused.part = Part::Forward;
  else if (part.getValue() == "key_value_grad")
    fused.part = Part::KeyValueGrad;
  else if (part.getValue() == "query_grad")
    fused.part = Part::QueryGrad;
  else
    return std::nullopt;
  for (auto [name, field] :
       {std::pair("batches", &fused.batches),
        std::pair("queries", &fused.queries), std::pair("keys", &fused.keys),
        std::pair("key_dim", &fused.keyDim),
        std::pair("value_dim", &fused.valueDim)}) {
    auto value = dict.getAs<IntegerAttr>(name);
    if (!value || value.getInt() < 1)
      return std::nullopt;
    *field = value.getInt();
  }
  auto causal = dict.getAs<BoolAttr>("causal");
  auto scale = dict.getAs<FloatAttr>("scale");
  if (!causal || !scale || !(scale.getValueAsDouble() > 0))
    return std::nullopt;
  fused.causal = causal.getValue();
  fused.scale = scale.getValueAsDouble();
  if (Attribute maskAttr = dict.get("mask")) {
    auto mask = dyn_cast<DenseI64ArrayAttr>(maskAttr);
    if (!mask || mask.size() != 4 ||
        llvm::any_of(mask.asArrayRef(), [](int64_t v) { return v < 1; }))
      return std::nullopt;
    fused.masked = true;
    fused.maskBatches = mask[0];
    fused.maskDivisor = mask[1];
    fused.maskQueries = mask[2];
    fused.maskKeys = mask[3];
    if ((fused.maskQueries != 1 && fused.maskQueries != fused.queries) ||
        (fused.maskKeys != 1 && fused.maskKeys != fused.keys))
      return std::nullopt;
  }
  return fused;
}

llvm::StringRef kiln::kernel::getAttentionTypeName(mlir::Type elementType) {
  if (elementType.isF32())
    return "f32";
  if (elementType.isBF16())
    return "bf16";
  if (elementType.isF16())
    return "f16";
  return "";
}
