//===- ModelHeader.cpp - model.h, the artifact's C header ------------------===//
//
// Part of Kiln. A C header for programs that embed the artifact: for every
// parameter, input and output its name (`.` becomes `_`), element type,
// shape and element count, and the names of the entry points. Names are the
// keys the runtime's C API takes; the macros let C code size its buffers at
// compile time.
//
//===----------------------------------------------------------------------===//

#include "kiln/Artifact/Artifact.h"
#include "kiln/Dialect/Kernel/IR/KernelOps.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace kiln;

/// `name` as a C identifier: `.` and other punctuation become `_`.
static std::string toIdentifier(StringRef name) {
  std::string result;
  for (char c : name)
    result += llvm::isAlnum(c) ? c : '_';
  if (result.empty() || llvm::isDigit(result.front()))
    result.insert(result.begin(), '_');
  return result;
}

/// The C type of an element type.
static StringRef getCType(Type type) {
  if (type.isF32())
    return "float";
  if (type.isF64())
    return "double";
  if (type.isInteger(32))
    return "int32_t";
  if (type.isInteger(64))
    return "int64_t";
  if (type.isInteger(8))
    return "uint8_t";
  return "uint16_t"; // f16, bf16: raw bits.
}

namespace {
/// One named buffer of the header.
struct HeaderBuffer {
  std::string name;
  kernel::BufferKind kind;
  MemRefType type;
};
} // namespace

static void writeBuffer(llvm::raw_ostream &os, StringRef prefix,
                        const HeaderBuffer &buffer) {
  std::string id = (prefix + "_" + toIdentifier(buffer.name)).str();
  os << "/* " << buffer.name << ": " << getCType(buffer.type.getElementType())
     << "[";
  llvm::interleave(buffer.type.getShape(), os, ", ");
  os << "] */\n";
  os << "#define " << id << "_NAME \"" << buffer.name << "\"\n";
  os << "typedef " << getCType(buffer.type.getElementType()) << " " << id
     << "_t;\n";
  os << "#define " << id << "_RANK " << buffer.type.getRank() << "\n";
  // A scalar has no shape initializer (`{}` is not C before C23).
  if (buffer.type.getRank() > 0) {
    os << "#define " << id << "_SHAPE {";
    llvm::interleave(buffer.type.getShape(), os, ", ");
    os << "}\n";
  }
  os << "#define " << id << "_NUMEL " << buffer.type.getNumElements()
     << "\n";
  os << "#define " << id << "_BYTES "
     << kernel::getBufferSizeInBytes(buffer.type) << "\n\n";
}

LogicalResult kiln::writeModelHeader(ModuleOp module, llvm::raw_ostream &os) {
  auto modelAttr = module->getAttrOfType<StringAttr>("graph.model");
  std::string model = toIdentifier(modelAttr ? modelAttr.getValue() : "model");
  std::string upper = llvm::StringRef(model).upper();
  std::string prefix = "KILN_" + upper;

  // Buffers by name, in first-seen order over the entries.
  llvm::MapVector<StringRef, HeaderBuffer, llvm::StringMap<unsigned>> named;
  llvm::StringSet<> keys;
  SmallVector<std::string> entries;
  for (auto entry : module.getOps<kernel::EntryOp>()) {
    entries.push_back(entry.getSymName().str());
    for (unsigned i = 0, e = entry.getNumArguments(); i < e; ++i) {
      kernel::BufferKind kind = entry.getBufferKind(i);
      if (kind == kernel::BufferKind::RngState ||
          kind == kernel::BufferKind::Status)
        continue;
      std::string name = entry.getBufferName(i).str();
      std::string key =
          (kernel::stringifyBufferKind(kind) + "/" + name).str();
      StringRef stored = keys.insert(key).first->getKey();
      named.insert({stored, HeaderBuffer{name, kind,
                                      cast<MemRefType>(
                                          entry.getArgument(i).getType())}});
    }
  }

  std::string guard = prefix + "_MODEL_H";
  os << "/* model.h - the " << model
     << " model compiled by Kiln: parameters, inputs, outputs and entry\n"
        " * points of the artifact next to this file. Generated; do not "
        "edit. */\n";
  os << "#ifndef " << guard << "\n#define " << guard << "\n\n";
  os << "#include <stdint.h>\n\n";
  os << "#define " << prefix << "_MODEL \"" << model << "\"\n\n";

  struct Section {
    kernel::BufferKind kind;
    StringRef title, macro;
  };
  Section sections[] = {
      {kernel::BufferKind::Param, "Parameters", "PARAM"},
      {kernel::BufferKind::OptimizerState, "Optimizer state", "STATE"},
      {kernel::BufferKind::Input, "Inputs (bound before each call)", "INPUT"},
      {kernel::BufferKind::Output, "Outputs (read after a call)", "OUTPUT"}};
  for (const Section &section : sections) {
    SmallVector<const HeaderBuffer *> buffers;
    for (auto &[key, buffer] : named)
      if (buffer.kind == section.kind)
        buffers.push_back(&buffer);
    if (buffers.empty())
      continue;
    std::string sectionPrefix = prefix + "_" + section.macro.str();
    os << "/* ---- " << section.title << " ---- */\n";
    os << "#define " << sectionPrefix << "_COUNT " << buffers.size() << "\n";
    os << "#define " << sectionPrefix << "_NAMES {";
    llvm::interleave(
        buffers, os,
        [&](const HeaderBuffer *buffer) { os << "\"" << buffer->name << "\""; },
        ", ");
    os << "}\n\n";
    for (const HeaderBuffer *buffer : buffers)
      writeBuffer(os, sectionPrefix, *buffer);
  }

  os << "/* ---- Entry points (kiln_session_run) ---- */\n";
  for (const std::string &entry : entries)
    os << "#define " << prefix << "_ENTRY_" << llvm::StringRef(entry).upper()
       << " \"" << entry << "\"\n";
  os << "\n#endif /* " << guard << " */\n";
  return success();
}
