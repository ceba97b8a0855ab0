//===- Artifact.cpp - Opening plan.kpl and kernels.so ---------------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "Artifact.h"

#include "kiln/Files.h"
#include "kiln/KernelSignatures.h"

#include <cstdio>
#include <sys/stat.h>

using namespace kiln;
using namespace kiln::runtime;

size_t kiln::runtime::dtypeSize(plan::DType dtype) {
  switch (dtype) {
  case plan::DType::F64:
  case plan::DType::I64:
    return 8;
  case plan::DType::F32:
  case plan::DType::I32:
    return 4;
  case plan::DType::F16:
  case plan::DType::BF16:
    return 2;
  case plan::DType::I1:
  case plan::DType::U8:
    return 1;
  }
  return 0;
}

const char *kiln::runtime::dtypeName(plan::DType dtype) {
  switch (dtype) {
  case plan::DType::F32:
    return "f32";
  case plan::DType::F64:
    return "f64";
  case plan::DType::F16:
    return "f16";
  case plan::DType::BF16:
    return "bf16";
  case plan::DType::I32:
    return "i32";
  case plan::DType::I64:
    return "i64";
  case plan::DType::I1:
    return "i1";
  case plan::DType::U8:
    return "u8";
  }
  return "<unknown dtype>";
}

const char *kiln::runtime::bufferKindName(plan::BufferKind kind) {
  switch (kind) {
  case plan::BufferKind::Param:
    return "param";
  case plan::BufferKind::OptimizerState:
    return "optimizer_state";
  case plan::BufferKind::Gradient:
    return "gradient";
  case plan::BufferKind::Input:
    return "input";
  case plan::BufferKind::Output:
    return "output";
  case plan::BufferKind::Transient:
    return "transient";
  case plan::BufferKind::Constant:
    return "constant";
  case plan::BufferKind::RngState:
    return "rng_state";
  case plan::BufferKind::Status:
    return "status";
  }
  return "<unknown kind>";
}

std::string kiln::runtime::formatType(plan::DType dtype, const int64_t *shape,
                                      size_t rank) {
  std::string text = std::string(dtypeName(dtype)) + "[";
  for (size_t i = 0; i < rank; ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string kiln::runtime::formatLocation(const plan::SourceLoc *loc) {
  if (!loc || !loc->file() || loc->file()->size() == 0)
    return "<unknown location>";
  return loc->file()->str() + ":" + std::to_string(loc->line()) + ":" +
         std::to_string(loc->column());
}

bool kiln::runtime::isPersistent(plan::BufferKind kind) {
  return kind != plan::BufferKind::Transient;
}

Result Artifact::open(const std::string &directory,
                      std::shared_ptr<const Artifact> &artifact) {
  struct stat info;
  KILN_POSIX_TRY(stat, (directory.c_str(), &info),
                 "cannot open artifact '" + directory + "'");
  if (!S_ISDIR(info.st_mode))
    return invalidArgument("'" + directory +
                           "' is not an artifact directory (expected the "
                           "directory `kiln compile -o` writes, holding "
                           "plan.kpl)");
  std::shared_ptr<Artifact> opened(new Artifact());
  opened->directory_ = directory;
  KILN_RETURN_IF_ERROR(opened->loadPlan());
  KILN_RETURN_IF_ERROR(opened->loadKernels());
  artifact = std::move(opened);
  return Result::ok();
}

Artifact::~Artifact() = default;

Result Artifact::loadPlan() {
  std::string path = directory_ + "/plan.kpl";
  Status read = readWholeFile(path, planBytes_);
  if (!read.isOk())
    return Result::error(KILN_ERROR_IO, read.message());
  const uint8_t *bytes = reinterpret_cast<const uint8_t *>(planBytes_.data());
  if (planBytes_.size() < 8 || !plan::PlanBufferHasIdentifier(bytes)) {
    std::string found =
        planBytes_.size() < 8
            ? "a file of " + std::to_string(planBytes_.size()) + " bytes"
            : "identifier '" + planBytes_.substr(4, 4) + "'";
    return invalidFormat(path +
                         ": not a Kiln plan (expected the FlatBuffers "
                         "file identifier 'KPLN', found " +
                         found + ")");
  }
  flatbuffers::Verifier verifier(bytes, planBytes_.size());
  if (!plan::VerifyPlanBuffer(verifier))
    return invalidFormat(path + ": the plan is corrupt (FlatBuffers "
                                "verification failed: truncated or damaged "
                                "file)");
  plan_ = plan::GetPlan(bytes);
  if (plan_->schema_version() != KILN_PLAN_SCHEMA_VERSION)
    return Result::error(
        KILN_ERROR_VERSION,
        path + ": plan schema version " +
            std::to_string(plan_->schema_version()) +
            " is not supported by this runtime, which executes version " +
            std::to_string(KILN_PLAN_SCHEMA_VERSION) +
            " (recompile the model with a matching kiln, or update the "
            "runtime)");

  // Decode the buffers once; validatePlan checks them against each other.
  if (plan_->buffers()) {
    for (const plan::Buffer *buffer : *plan_->buffers()) {
      BufferInfo info;
      info.name = buffer->name() ? buffer->name()->str() : std::string();
      info.kind = buffer->kind();
      info.dtype = buffer->dtype();
      if (buffer->shape())
        info.shape.assign(buffer->shape()->begin(), buffer->shape()->end());
      // -1 marks a shape whose element count overflows (validatePlan
      // rejects it, as it rejects negative dims).
      info.numElements = 1;
      for (int64_t dim : info.shape) {
        if (dim < 0 ||
            __builtin_mul_overflow(info.numElements, dim, &info.numElements)) {
          info.numElements = -1;
          break;
        }
      }
      info.sizeBytes = buffer->size_bytes();
      info.arenaOffset = buffer->arena_offset();
      info.table = buffer;
      info.shardOffset = buffer->shard_offset();
      if (info.shardOffset >= 0) {
        if (buffer->whole_shape())
          info.wholeShape.assign(buffer->whole_shape()->begin(),
                                 buffer->whole_shape()->end());
        int64_t whole = 1;
        for (int64_t dim : info.wholeShape)
          if (dim < 0 || __builtin_mul_overflow(whole, dim, &whole))
            whole = -1;
        if (info.kind != plan::BufferKind::OptimizerState ||
            info.shape.size() != 1 || whole < 0 || info.numElements < 0 ||
            info.shardOffset + info.numElements > whole)
          return invalidFormat(path + ": buffer '" + info.name +
                               "' is a part of a larger tensor that does not "
                               "lie within it, or is not 1-D state");
      }
      buffers_.push_back(std::move(info));
    }
  }
  KILN_RETURN_IF_ERROR(validatePlan(*plan_, buffers_).withContext(path));
  for (size_t i = 0; i < buffers_.size(); ++i)
    bufferByName_.emplace(buffers_[i].name, static_cast<int64_t>(i));
  return Result::ok();
}

Result Artifact::checkFileHash(const std::string &file, uint64_t expected,
                               const char *what) const {
  if (file.find('/') != std::string::npos)
    return invalidFormat(directory_ + "/plan.kpl: " + what + " '" + file +
                         "' must name a file inside the artifact directory");
  if (expected == 0)
    return Result::ok();
  std::string path = directory_ + "/" + file;
  std::string bytes;
  Status read = readWholeFile(path, bytes);
  if (!read.isOk())
    return Result::error(KILN_ERROR_KERNELS, "cannot load the kernels of '" +
                                                 directory_ +
                                                 "': " + read.message());
  if (hashBytes(bytes.data(), bytes.size()) != expected)
    return Result::error(
        KILN_ERROR_KERNELS,
        path + " is not the " + what +
            " plan.kpl was compiled with (its hash differs): the artifact is "
            "damaged or mixed from two compilations; compile it again");
  return Result::ok();
}

Result Artifact::loadKernels() {
  std::string target = getTarget();
  if (target == "cuda") {
    // The GPU code is checked here and loaded by a cuda device; the GPU
    // emulator's host build of it is loaded like a cpu plan's kernels.
    if (plan_->kernels_file())
      KILN_RETURN_IF_ERROR(checkFileHash(
          plan_->kernels_file()->str(), plan_->kernels_hash(), "kernels file"));
    if (plan_->cubin_file())
      KILN_RETURN_IF_ERROR(checkFileHash(plan_->cubin_file()->str(),
                                         plan_->cubin_hash(), "cubin"));
    if (plan_->emulator_file())
      KILN_RETURN_IF_ERROR(checkFileHash(plan_->emulator_file()->str(),
                                         plan_->emulator_hash(),
                                         "GPU emulator build"));
    return Result::ok();
  }
  std::string file = plan_->kernels_file() ? plan_->kernels_file()->str() : "";
  return loadHostKernels(file, plan_->kernels_hash());
}

Result Artifact::loadEmulatorKernels() const {
  std::lock_guard<std::mutex> lock(emulatorMutex_);
  if (hostKernelsLoaded_)
    return Result::ok();
  if (!plan_->emulator_file())
    return invalidArgument("the artifact '" + directory_ +
                           "' has no GPU emulator kernels (kernels.emu.so)");
  return loadHostKernels(plan_->emulator_file()->str(), plan_->emulator_hash());
}

Result Artifact::loadHostKernels(std::string file, uint64_t hash) const {
  std::vector<std::string> symbols;
  if (plan_->entries())
    for (const plan::Entry *entry : *plan_->entries())
      if (entry->ops())
        for (const plan::Op *op : *entry->ops())
          if (const plan::KernelCall *call = op->call_as_KernelCall())
            symbols.push_back(call->symbol()->str());
  if (symbols.empty() && file.empty())
    return Result::ok();
  if (file.empty())
    file = "kernels.so";
  // A plan written by the compiler names the exact kernels.so it goes with.
  KILN_RETURN_IF_ERROR(checkFileHash(file, hash, "kernels file"));
  std::string path = directory_ + "/" + file;
  std::string reason;
  if (!library_.open(path, reason))
    return Result::error(KILN_ERROR_KERNELS, "cannot load the kernels of '" +
                                                 directory_ +
                                                 "': dlopen: " + reason);
  std::string missing;
  size_t missingCount = 0;
  for (const std::string &symbol : symbols) {
    if (kernels_.count(symbol))
      continue;
    void *address = library_.address(symbol.c_str());
    if (!address) {
      if (missingCount++ < 8)
        missing += (missing.empty() ? "'" : ", '") + symbol + "'";
      continue;
    }
    kernels_.emplace(symbol, reinterpret_cast<KernelFunction>(address));
  }
  if (missingCount)
    return Result::error(KILN_ERROR_KERNELS,
                         path + ": missing " + std::to_string(missingCount) +
                             " kernel symbol(s) the plan calls: " + missing +
                             (missingCount > 8 ? ", ..." : "") +
                             " (plan.kpl and " + file +
                             " come from different compilations?)");
  hostKernelsLoaded_ = true;
  if (hash != 0)
    KILN_RETURN_IF_ERROR(checkKernelSignatures(path));
  return Result::ok();
}

Result Artifact::checkKernelSignatures(const std::string &path) const {
  const char *table =
      static_cast<const char *>(library_.address(kKernelSignaturesSymbol));
  if (!table)
    return Result::error(KILN_ERROR_KERNELS,
                         path + " exports no " +
                             std::string(kKernelSignaturesSymbol) +
                             " table: it was not written by this compiler");
  std::vector<KernelSignature> signatures;
  if (Status parsed = parseKernelSignatures(table, signatures); !parsed.isOk())
    return Result::error(KILN_ERROR_KERNELS, path + ": " + parsed.message());
  std::unordered_map<std::string, const KernelSignature *> bySymbol;
  for (const KernelSignature &signature : signatures)
    bySymbol.emplace(signature.symbol, &signature);
  auto mismatch = [&](const plan::KernelCall &call, const std::string &what) {
    return Result::error(KILN_ERROR_KERNELS,
                         path + ": kernel '" + call.symbol()->str() + "' " +
                             what +
                             " (plan.kpl and the kernels come from different "
                             "compilations: compile the model again)");
  };
  for (const plan::Entry *entry : *plan_->entries()) {
    if (!entry->ops())
      continue;
    for (const plan::Op *op : *entry->ops()) {
      const plan::KernelCall *call = op->call_as_KernelCall();
      if (!call)
        continue;
      auto it = bySymbol.find(call->symbol()->str());
      if (it == bySymbol.end())
        return mismatch(*call, "is not in its signature table");
      const KernelSignature &signature = *it->second;
      size_t count = call->buffers() ? call->buffers()->size() : 0;
      if (count != signature.bufferBytes.size())
        return mismatch(
            *call, "takes " + std::to_string(signature.bufferBytes.size()) +
                       " buffers, the plan passes " + std::to_string(count));
      if (call->range() > signature.range)
        return mismatch(*call, "covers " + std::to_string(signature.range) +
                                   " iterations, the plan runs " +
                                   std::to_string(call->range()));
      for (size_t i = 0; i < count; ++i) {
        const BufferInfo &buffer = buffers_[call->buffers()->Get(i)];
        if (buffer.sizeBytes < signature.bufferBytes[i])
          return mismatch(*call, "reads or writes " +
                                     std::to_string(signature.bufferBytes[i]) +
                                     " bytes of its buffer " +
                                     std::to_string(i) + ", but the plan's '" +
                                     buffer.name + "' holds " +
                                     std::to_string(buffer.sizeBytes));
      }
    }
  }
  return Result::ok();
}

int64_t Artifact::findBuffer(const std::string &name) const {
  auto it = bufferByName_.find(name);
  return it == bufferByName_.end() ? -1 : it->second;
}

const plan::Entry *Artifact::findEntry(const std::string &name) const {
  if (plan_->entries())
    for (const plan::Entry *entry : *plan_->entries())
      if (entry->name()->str() == name)
        return entry;
  return nullptr;
}

KernelFunction Artifact::getKernel(const std::string &symbol) const {
  auto it = kernels_.find(symbol);
  return it == kernels_.end() ? nullptr : it->second;
}

const char *Artifact::getModelName() const {
  return plan_->model() ? plan_->model()->c_str() : "";
}

const char *Artifact::getTarget() const {
  return plan_->target() ? plan_->target()->c_str() : "";
}

const char *Artifact::getArch() const {
  return plan_->arch() ? plan_->arch()->c_str() : "";
}
