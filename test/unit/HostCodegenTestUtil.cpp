//===- HostCodegenTestUtil.cpp - Running compiled kernels in tests ---------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "HostCodegenTestUtil.h"

#include "kiln/Artifact/Artifact.h"
#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Pipelines/CompilePipeline.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cblas.h>
#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace mlir;
using namespace kiln;
using namespace kiln::test;

using KernelFn = void (*)(void **, int64_t, int64_t);

PlanRunner::PlanRunner(const std::string &directory) {
  auto buffer = llvm::MemoryBuffer::getFile(directory + "/plan.kpl");
  if (!buffer) {
    ADD_FAILURE() << "cannot read " << directory << "/plan.kpl";
    return;
  }
  file.assign((*buffer)->getBufferStart(), (*buffer)->getBufferEnd());
  flatbuffers::Verifier verifier(file.data(), file.size());
  if (!plan::VerifyPlanBuffer(verifier)) {
    ADD_FAILURE() << "plan.kpl does not verify against plan.fbs";
    return;
  }
  plan = plan::GetPlan(file.data());
  // A cuda plan's kernels run through the GPU emulator's host build.
  std::string so = directory + "/" +
                   (plan->emulator_file() ? plan->emulator_file()->str()
                                          : std::string("kernels.so"));
  library = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    ADD_FAILURE() << "dlopen " << so << ": " << dlerror();
    return;
  }
  arena.assign(plan->arena_bytes() + 64, 0);
  for (const plan::Buffer *buffer : *plan->buffers()) {
    storage.emplace_back();
    if (buffer->kind() == plan::BufferKind::Transient) {
      EXPECT_EQ(buffer->arena_offset() % 64, 0);
      EXPECT_LE(buffer->arena_offset() + buffer->size_bytes(),
                plan->arena_bytes());
      continue;
    }
    storage.back().assign(buffer->size_bytes(), 0);
    if (buffer->data())
      std::memcpy(storage.back().data(), buffer->data()->data(),
                  buffer->data()->size());
  }
}

PlanRunner::~PlanRunner() {
  if (library)
    dlclose(library);
}

void *PlanRunner::address(uint32_t id) {
  const plan::Buffer *buffer = plan->buffers()->Get(id);
  if (buffer->kind() == plan::BufferKind::Transient)
    return arena.data() + buffer->arena_offset();
  return storage[id].data();
}

std::vector<uint8_t> *PlanRunner::find(const std::string &name,
                                       plan::BufferKind kind) {
  for (const plan::Buffer *buffer : *plan->buffers())
    if (buffer->kind() == kind && buffer->name()->str() == name)
      return &storage[buffer->id()];
  return nullptr;
}

void PlanRunner::setRng(uint64_t seed, uint32_t step, uint32_t microBatch) {
  uint32_t words[4] = {static_cast<uint32_t>(seed),
                       static_cast<uint32_t>(seed >> 32), step, microBatch};
  if (std::vector<uint8_t> *rng =
          find("kiln.rng_state", plan::BufferKind::RngState))
    std::memcpy(rng->data(), words, sizeof(words));
}

std::pair<int64_t, int64_t> PlanRunner::getStatus() {
  std::vector<uint8_t> *status = find("kiln.status", plan::BufferKind::Status);
  if (!status)
    return {0, 0};
  int64_t words[2];
  std::memcpy(words, status->data(), sizeof(words));
  return {words[0], words[1]};
}

bool PlanRunner::runGemm(const plan::GemmCall &gemm) {
  auto ta = gemm.transpose_a() ? CblasTrans : CblasNoTrans;
  auto tb = gemm.transpose_b() ? CblasTrans : CblasNoTrans;
  for (int64_t i = 0; i < gemm.batch(); ++i) {
    if (gemm.dtype() == plan::DType::F32) {
      auto *a = static_cast<float *>(address(gemm.a())) + i * gemm.stride_a();
      auto *b = static_cast<float *>(address(gemm.b())) + i * gemm.stride_b();
      auto *c = static_cast<float *>(address(gemm.c())) + i * gemm.stride_c();
      cblas_sgemm(CblasRowMajor, ta, tb, gemm.m(), gemm.n(), gemm.k(),
                  gemm.alpha(), a, gemm.lda(), b, gemm.ldb(), gemm.beta(), c,
                  gemm.ldc());
    } else if (gemm.dtype() == plan::DType::F64) {
      auto *a = static_cast<double *>(address(gemm.a())) + i * gemm.stride_a();
      auto *b = static_cast<double *>(address(gemm.b())) + i * gemm.stride_b();
      auto *c = static_cast<double *>(address(gemm.c())) + i * gemm.stride_c();
      cblas_dgemm(CblasRowMajor, ta, tb, gemm.m(), gemm.n(), gemm.k(),
                  gemm.alpha(), a, gemm.lda(), b, gemm.ldb(), gemm.beta(), c,
                  gemm.ldc());
    } else {
      ADD_FAILURE() << "GEMM of an unsupported element type";
      return false;
    }
  }
  return true;
}

bool PlanRunner::run(const std::string &name, Chunking chunking) {
  if (std::vector<uint8_t> *status =
          find("kiln.status", plan::BufferKind::Status))
    std::fill(status->begin(), status->end(), 0);
  for (const plan::Entry *entry : *plan->entries()) {
    if (entry->name()->str() != name)
      continue;
    for (const plan::Op *op : *entry->ops()) {
      if (const plan::KernelCall *call = op->call_as_KernelCall()) {
        auto kernel = reinterpret_cast<KernelFn>(
            dlsym(library, call->symbol()->c_str()));
        if (!kernel) {
          ADD_FAILURE() << "kernels.so has no " << call->symbol()->str();
          return false;
        }
        std::vector<void *> pointers;
        for (uint32_t id : *call->buffers())
          pointers.push_back(address(id));
        int64_t range = call->range();
        EXPECT_GE(call->grain(), 1);
        int64_t size = chunking.size > 0 ? chunking.size : range;
        int64_t chunks = (range + size - 1) / size;
        for (int64_t i = 0; i < chunks; ++i) {
          int64_t chunk = chunking.reverse ? chunks - 1 - i : i;
          kernel(pointers.data(), chunk * size,
                 std::min(range, (chunk + 1) * size));
        }
      } else if (const plan::GemmCall *gemm = op->call_as_GemmCall()) {
        if (!runGemm(*gemm))
          return false;
      } else if (const plan::CopyCall *copy = op->call_as_CopyCall()) {
        std::memmove(address(copy->destination()), address(copy->source()),
                     copy->size_bytes());
      } else if (const plan::ZeroCall *zero = op->call_as_ZeroCall()) {
        std::memset(address(zero->buffer()), 0,
                    plan->buffers()->Get(zero->buffer())->size_bytes());
      }
    }
    return true;
  }
  ADD_FAILURE() << "the plan has no entry '" << name << "'";
  return false;
}

//===----------------------------------------------------------------------===//
// The comparison harness
//===----------------------------------------------------------------------===//

std::vector<uint8_t> kiln::test::bytesOf(const interp::Tensor &tensor) {
  auto copy = [](auto values) {
    const auto *begin = reinterpret_cast<const uint8_t *>(values.data());
    return std::vector<uint8_t>(begin,
                                begin + values.size() * sizeof(values[0]));
  };
  switch (tensor.getElementType()) {
  case interp::ElementType::F64:
    return copy(tensor.data<double>());
  case interp::ElementType::I32:
    return copy(tensor.data<int32_t>());
  case interp::ElementType::I64:
    return copy(tensor.data<int64_t>());
  default:
    return copy(tensor.data<float>());
  }
}

double kiln::test::relativeError(const interp::Tensor &reference,
                                 const std::vector<uint8_t> &computed) {
  double difference = 0.0, norm = 0.0;
  interp::ElementType type = reference.getElementType();
  for (int64_t i = 0, e = reference.getNumElements(); i < e; ++i) {
    double value;
    if (type == interp::ElementType::I32) {
      int32_t integer;
      std::memcpy(&integer, computed.data() + 4 * i, 4);
      value = integer;
    } else if (type == interp::ElementType::I64) {
      int64_t integer;
      std::memcpy(&integer, computed.data() + 8 * i, 8);
      value = static_cast<double>(integer);
    } else if (type == interp::ElementType::F64) {
      std::memcpy(&value, computed.data() + 8 * i, 8);
    } else {
      float single;
      std::memcpy(&single, computed.data() + 4 * i, 4);
      value = single;
    }
    double expected = reference.getDouble(i);
    difference += (value - expected) * (value - expected);
    norm += expected * expected;
  }
  if (norm == 0.0)
    return difference == 0.0 ? 0.0 : INFINITY;
  return std::sqrt(difference / norm);
}

/// The plan name of argument `index`, and its kind.
static std::pair<std::string, plan::BufferKind>
getArgumentBuffer(func::FuncOp function, unsigned index) {
  if (auto param = function.getArgAttrOfType<StringAttr>(
          index, graph::GraphDialect::kParamAttr))
    return {param.str(), plan::BufferKind::Param};
  if (auto state = function.getArgAttrOfType<StringAttr>(
          index, graph::GraphDialect::kStateAttr))
    return {state.str(), plan::BufferKind::OptimizerState};
  auto input = function.getArgAttrOfType<StringAttr>(
      index, graph::GraphDialect::kInputAttr);
  return {input ? input.str() : "", plan::BufferKind::Input};
}

/// The plan buffer result `index` ends in: its output buffer, or for a
/// `graph.update` result the parameter or state buffer it updates.
static std::pair<std::string, plan::BufferKind>
getResultBuffer(func::FuncOp function, unsigned index) {
  if (auto target = function.getResultAttrOfType<StringAttr>(
          index, graph::GraphDialect::kUpdateAttr)) {
    for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i) {
      auto buffer = getArgumentBuffer(function, i);
      if (buffer.first == target.str() &&
          buffer.second != plan::BufferKind::Input)
        return buffer;
    }
    ADD_FAILURE() << "result " << index << " updates unknown "
                  << target.str();
  }
  if (auto name = function.getResultAttrOfType<StringAttr>(
          index, graph::GraphDialect::kOutputAttr))
    return {name.str(), plan::BufferKind::Output};
  return {"loss", plan::BufferKind::Output};
}

Comparison kiln::test::compileAndCompare(
    ModuleOp module, StringRef functionName, StringRef entry,
    const std::map<std::string, InputRange> &ranges,
    const interp::RunOptions &options, bool initializeParams) {
  Comparison comparison;
  auto function = module.lookupSymbol<func::FuncOp>(functionName);
  if (!function) {
    ADD_FAILURE() << "no function @" << functionName.str();
    return comparison;
  }

  // Inputs: random (fixed seed), or the parameters' initializers.
  std::mt19937_64 random(42);
  std::vector<interp::Tensor> arguments;
  llvm::SmallVector<interp::InitializedParameter> parameters;
  if (initializeParams) {
    auto initialized = interp::initializeParameters(function, 7);
    if (!initialized) {
      ADD_FAILURE() << llvm::toString(initialized.takeError());
      return comparison;
    }
    parameters = std::move(*initialized);
  }
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i) {
    auto type = cast<RankedTensorType>(function.getArgument(i).getType());
    auto elementType = *interp::getElementType(type.getElementType());
    auto [name, kind] = getArgumentBuffer(function, i);
    auto param = llvm::find_if(parameters, [&](const auto &parameter) {
      return parameter.argumentIndex == i;
    });
    if (param != parameters.end()) {
      arguments.push_back(param->value);
      continue;
    }
    auto rangeIt = ranges.find(name);
    InputRange range = rangeIt == ranges.end() ? InputRange() : rangeIt->second;
    std::vector<double> values(type.getNumElements());
    if (interp::isFloat(elementType)) {
      std::uniform_real_distribution<double> uniform(range.low, range.high);
      for (double &value : values)
        value = uniform(random);
    } else {
      std::uniform_int_distribution<int64_t> uniform(
          static_cast<int64_t>(range.low),
          static_cast<int64_t>(range.high) - 1);
      for (double &value : values)
        value = static_cast<double>(uniform(random));
    }
    arguments.push_back(
        interp::Tensor::fromDoubles(elementType, type.getShape(), values));
  }
  auto references = interp::runFunction(function, arguments, options);
  if (!references) {
    ADD_FAILURE() << "interpreter: " << llvm::toString(references.takeError());
    return comparison;
  }
  std::vector<std::pair<std::string, plan::BufferKind>> resultBuffers;
  for (unsigned i = 0, e = function.getNumResults(); i < e; ++i)
    resultBuffers.push_back(getResultBuffer(function, i));
  std::vector<std::pair<std::string, plan::BufferKind>> argumentBuffers;
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
    argumentBuffers.push_back(getArgumentBuffer(function, i));

  // Compile a copy of the module into a temporary artifact.
  OwningOpRef<ModuleOp> compiled = cast<ModuleOp>(module->clone());
  PassManager pm(module.getContext());
  buildCompilePipeline(pm, {});
  if (failed(pm.run(*compiled))) {
    ADD_FAILURE() << "the kernel pipeline failed";
    return comparison;
  }
  llvm::SmallString<128> directory;
  if (llvm::sys::fs::createUniqueDirectory("kiln-host-test", directory)) {
    ADD_FAILURE() << "no temporary directory";
    return comparison;
  }
  if (failed(writeArtifact(*compiled, directory, {}))) {
    ADD_FAILURE() << "writing the artifact failed";
    llvm::sys::fs::remove_directories(directory);
    return comparison;
  }

  PlanRunner runner{std::string(directory)};
  std::vector<std::vector<uint8_t>> firstOutputs;
  for (Chunking chunking : {Chunking{0, false}, Chunking{1, true},
                            Chunking{3, true}}) {
    if (!runner.ok())
      break;
    for (auto [argument, buffer] : llvm::zip(arguments, argumentBuffers))
      if (std::vector<uint8_t> *bytes = runner.find(buffer.first, buffer.second))
        *bytes = bytesOf(argument);
    runner.setRng(options.seed, options.step, options.microBatch);
    if (!runner.run(entry.str(), chunking))
      break;
    EXPECT_EQ(runner.getStatus().first, 0) << "a kernel reported bad input";
    std::vector<std::vector<uint8_t>> outputs;
    for (auto [buffer, reference] : llvm::zip(resultBuffers, *references)) {
      std::vector<uint8_t> *bytes = runner.find(buffer.first, buffer.second);
      if (!bytes) {
        ADD_FAILURE() << "no buffer '" << buffer.first << "' for a result";
        continue;
      }
      outputs.push_back(*bytes);
      if (firstOutputs.empty())
        comparison.worstRelativeError = std::max(
            comparison.worstRelativeError, relativeError(reference, *bytes));
    }
    if (firstOutputs.empty())
      firstOutputs = outputs;
    else if (outputs != firstOutputs)
      comparison.chunkingIndependent = false;
  }
  llvm::sys::fs::remove_directories(directory);
  return comparison;
}

std::string kiln::test::instantiate(const char *source, llvm::StringRef type) {
  std::string text = source;
  for (size_t at = text.find("$T"); at != std::string::npos;
       at = text.find("$T", at))
    text.replace(at, 2, type.str());
  return text;
}
