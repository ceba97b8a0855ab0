//===- PlanPrinter.cpp - The plan as text, for `kiln inspect` -------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// The output looks like
//
//   plan of model 'mlp' for cpu (schema 1, written by kiln 0.1.0)
//   kernels: kernels.so (hash 0123456789abcdef, checked)
//   arena: 64 bytes
//   buffers (3):
//     %0   input           f32[6]            24 B        x
//     %1   transient       f32[6]            24 B        logs @ arena+0
//     %2   param           f32[6]            24 B        w = normal(std=0.02)
//   entry predict (inputs: %0 x; outputs: %1 logs), 1 ops:
//     0    kernel kiln_k0(%0 x, %1 logs) range 6 grain 2
//          graph.log  mlp.kiln:7:3
//
//===----------------------------------------------------------------------===//

#include "PlanPrinter.h"

#include <cstdio>

using namespace kiln;
using namespace kiln::runtime;

namespace {

/// Pads `text` with spaces to `width` characters.
std::string pad(std::string text, size_t width) {
  if (text.size() < width)
    text.append(width - text.size(), ' ');
  return text;
}

std::string formatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string describeInitializer(const plan::Initializer *init) {
  if (!init || !init->kind())
    return "";
  std::string kind = init->kind()->str();
  if (kind == "normal")
    return " = normal(std=" + formatNumber(init->std()) + ")";
  if (kind == "uniform")
    return " = uniform(" + formatNumber(init->low()) + ", " +
           formatNumber(init->high()) + ")";
  if (kind == "constant")
    return " = constant(" + formatNumber(init->value()) + ")";
  return " = " + kind;
}

class PlanPrinter {
public:
  explicit PlanPrinter(const Artifact &artifact) : artifact_(artifact) {}

  std::string print() {
    const plan::Plan &plan = artifact_.getPlan();
    out_ += "plan of model '" + std::string(artifact_.getModelName()) +
            "' for " + artifact_.getTarget() + " (schema " +
            std::to_string(plan.schema_version());
    if (plan.compiler_version() && plan.compiler_version()->size())
      out_ += ", written by " + plan.compiler_version()->str();
    out_ += ")\n";
    // Each file the plan is bound to, with the hash the artifact's open
    // checked.
    auto printFile = [&](const char *role, const flatbuffers::String *file,
                         uint64_t hashValue, const std::string &suffix) {
      if (!file || file->size() == 0)
        return;
      out_ += std::string(role) + ": " + file->str() + suffix;
      if (hashValue) {
        char hash[24];
        std::snprintf(hash, sizeof(hash), "%016llx",
                      static_cast<unsigned long long>(hashValue));
        out_ += std::string(" (hash ") + hash + ", checked)";
      }
      out_ += "\n";
    };
    std::string arch = plan.arch() && plan.arch()->size()
                           ? " for " + plan.arch()->str()
                           : std::string();
    printFile("kernels", plan.kernels_file(), plan.kernels_hash(), arch);
    printFile("cubin", plan.cubin_file(), plan.cubin_hash(), arch);
    printFile("GPU emulator", plan.emulator_file(), plan.emulator_hash(), "");
    out_ += "arena: " + std::to_string(plan.arena_bytes()) + " bytes\n";
    printBuffers();
    if (plan.entries())
      for (const plan::Entry *entry : *plan.entries())
        printEntry(*entry);
    if (plan.train_config() && plan.train_config()->size())
      out_ += "train config: " + plan.train_config()->str() + "\n";
    return std::move(out_);
  }

private:
  /// "%3 t3": a buffer reference in op listings.
  std::string ref(uint32_t id) const {
    return "%" + std::to_string(id) + " " + artifact_.getBuffers()[id].name;
  }

  std::string refList(const flatbuffers::Vector<uint32_t> *ids) const {
    std::string text;
    if (ids)
      for (uint32_t id : *ids)
        text += (text.empty() ? "" : ", ") + ref(id);
    return text;
  }

  void printBuffers() {
    const std::vector<BufferInfo> &buffers = artifact_.getBuffers();
    out_ += "buffers (" + std::to_string(buffers.size()) + "):\n";
    for (size_t id = 0; id < buffers.size(); ++id) {
      const BufferInfo &buffer = buffers[id];
      std::string line = "  " + pad("%" + std::to_string(id), 5) +
                         pad(bufferKindName(buffer.kind), 16) +
                         pad(formatType(buffer.dtype, buffer.shape.data(),
                                        buffer.shape.size()),
                             18) +
                         pad(std::to_string(buffer.sizeBytes) + " B", 12) +
                         buffer.name;
      if (buffer.kind == plan::BufferKind::Transient)
        line += " @ arena+" + std::to_string(buffer.arenaOffset);
      if (buffer.kind == plan::BufferKind::Param)
        line += describeInitializer(buffer.table->init());
      if (buffer.kind == plan::BufferKind::Constant && buffer.table->splat())
        line += " (splat: one element in the plan)";
      out_ += line + "\n";
    }
  }

  std::string describeCall(const plan::Op &op) const {
    switch (op.call_type()) {
    case plan::Call::KernelCall: {
      const plan::KernelCall &call = *op.call_as_KernelCall();
      std::string text = "kernel " + call.symbol()->str() + "(" +
                         refList(call.buffers()) + ")";
      if (call.block_x() > 0)
        return text + " grid " + std::to_string(call.grid_x()) + " block " +
               std::to_string(call.block_x()) +
               (call.shared_bytes()
                    ? " shared " + std::to_string(call.shared_bytes())
                    : "");
      return text + " range " + std::to_string(call.range()) + " grain " +
             std::to_string(call.grain());
    }
    case plan::Call::GemmCall: {
      const plan::GemmCall &call = *op.call_as_GemmCall();
      std::string types = dtypeName(call.dtype());
      if (call.ab_dtype() != call.dtype())
        types = std::string(dtypeName(call.ab_dtype())) + " x " +
                dtypeName(call.ab_dtype()) + " -> " + types;
      std::string text = "gemm " + types + " m=" + std::to_string(call.m()) +
                         " n=" + std::to_string(call.n()) +
                         " k=" + std::to_string(call.k());
      if (call.batch() != 1)
        text += " batch=" + std::to_string(call.batch()) + " strides=(" +
                std::to_string(call.stride_a()) + ", " +
                std::to_string(call.stride_b()) + ", " +
                std::to_string(call.stride_c()) + ")";
      text += " C " + ref(call.c()) + " = ";
      if (call.alpha() != 1.0)
        text += formatNumber(call.alpha()) + " * ";
      text += "A " + ref(call.a()) + (call.transpose_a() ? "^T" : "") +
              " @ B " + ref(call.b()) + (call.transpose_b() ? "^T" : "");
      if (call.beta() != 0.0)
        text += " + " + formatNumber(call.beta()) + " * C";
      text += " ld=(" + std::to_string(call.lda()) + ", " +
              std::to_string(call.ldb()) + ", " + std::to_string(call.ldc()) +
              ")";
      if (call.epilogue() != plan::GemmEpilogue::None) {
        text += std::string(" epilogue ") +
                plan::EnumNameGemmEpilogue(call.epilogue());
        if (call.bias() >= 0)
          text += " bias " + ref(static_cast<uint32_t>(call.bias()));
        if (call.aux() >= 0)
          text += " aux " + ref(static_cast<uint32_t>(call.aux()));
      }
      return text;
    }
    case plan::Call::CopyCall: {
      const plan::CopyCall &call = *op.call_as_CopyCall();
      return "copy " + std::to_string(call.size_bytes()) + " B " +
             ref(call.source()) + " -> " + ref(call.destination());
    }
    case plan::Call::ZeroCall:
      return "zero " + ref(op.call_as_ZeroCall()->buffer());
    case plan::Call::CollectiveStart: {
      const plan::CollectiveStart &call = *op.call_as_CollectiveStart();
      return "collective_start bucket " + std::to_string(call.bucket()) + " " +
             refList(call.buffers());
    }
    case plan::Call::CollectiveWait:
      return "collective_wait bucket " +
             std::to_string(op.call_as_CollectiveWait()->bucket());
    default:
      return "<no call>";
    }
  }

  void printEntry(const plan::Entry &entry) {
    size_t count = entry.ops() ? entry.ops()->size() : 0;
    out_ += "entry " + entry.name()->str() +
            " (inputs: " + refList(entry.inputs()) +
            "; outputs: " + refList(entry.outputs()) + "), " +
            std::to_string(count) + " ops:\n";
    for (size_t i = 0; i < count; ++i) {
      const plan::Op &op = *entry.ops()->Get(i);
      out_ += "  " + pad(std::to_string(i), 5) + describeCall(op) + "\n";
      out_ += "       " + (op.name() ? op.name()->str() : "") + "  " +
              formatLocation(op.loc()) + "\n";
    }
  }

  const Artifact &artifact_;
  std::string out_;
};

} // namespace

std::string kiln::runtime::printPlan(const Artifact &artifact) {
  return PlanPrinter(artifact).print();
}
