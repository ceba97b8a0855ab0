//===- MemoryPlanTest.cpp - Planned arena against naive placement ----------===//
//
// Part of Kiln. Both example models compiled twice -- transients placed by
// the memory planner, and one after another by the naive pass -- and run
// through libkiln_runtime on the same parameters and inputs: every output,
// and after train_step every parameter and optimizer state, must be the
// same bytes. The planned entries are also checked by
// ArenaCheck (no two live transients overlap) and held to the figure of
// issue 4, arena <= 1.05 x live lower bound.
//
//===----------------------------------------------------------------------===//

#include "kiln/Artifact/Artifact.h"
#include "kiln/Dialect/Graph/Transforms/TrainStep.h"
#include "kiln/Dialect/Kernel/Analysis/ArenaCheck.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"
#include "kiln/Frontend/Frontend.h"
#include "kiln/InitKiln.h"
#include "kiln/Pipelines/CompilePipeline.h"
#include "kiln/runtime.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

using namespace mlir;
using namespace kiln;

namespace {

/// The bytes of every output, parameter and optimizer state (after a run)
/// by name.
using Outputs = std::map<std::string, std::vector<uint8_t>>;

/// Integer inputs draw from [0, bound); float inputs from [0, 1).
using InputBounds = std::map<std::string, int32_t>;

class MemoryPlanTest : public ::testing::Test {
protected:
  MemoryPlanTest() {
    DialectRegistry registry;
    registerKilnDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  ~MemoryPlanTest() override {
    for (const std::string &directory : directories)
      llvm::sys::fs::remove_directories(directory);
  }

  OwningOpRef<ModuleOp> loadExample(StringRef name) {
    std::string path = std::string(KILN_SOURCE_DIR) + "/examples/" + name.str();
    return frontend::loadModelFile(path, sourceMgr, context, llvm::errs());
  }

  /// Runs the kernel pipeline on a copy of `module` and returns it.
  OwningOpRef<ModuleOp> lower(ModuleOp module, bool naiveArena) {
    OwningOpRef<ModuleOp> copy(module.clone());
    PassManager pm(&context);
    CompileOptions options;
    options.naiveArena = naiveArena;
    buildCompilePipeline(pm, options);
    if (failed(pm.run(*copy)))
      return nullptr;
    return copy;
  }

  /// Writes the artifact of a lowered module into a fresh directory.
  std::string writeToDirectory(ModuleOp lowered) {
    llvm::SmallString<128> directory;
    EXPECT_FALSE(
        llvm::sys::fs::createUniqueDirectory("kiln-memory-plan", directory));
    directories.push_back(std::string(directory));
    EXPECT_TRUE(succeeded(writeArtifact(lowered, directory, {})));
    return std::string(directory);
  }

  /// Opens the artifact in `directory`, initializes the parameters with a
  /// fixed seed, binds inputs drawn from a fixed seed, runs `entry` twice
  /// (the second run finds the arena as the first left it) and returns
  /// every output, parameter and optimizer state.
  Outputs run(const std::string &directory, const char *entry,
              const InputBounds &bounds) {
    Outputs outputs;
    kiln_artifact *artifact = nullptr;
    if (kiln_artifact_open(directory.c_str(), &artifact) != KILN_OK) {
      ADD_FAILURE() << kiln_last_error();
      return outputs;
    }
    kiln_session *session = nullptr;
    EXPECT_EQ(kiln_session_create(artifact, "cpu", 2, &session), KILN_OK)
        << kiln_last_error();
    EXPECT_EQ(kiln_session_initialize(session, 1234), KILN_OK);
    size_t count = 0;
    kiln_artifact_buffer_count(artifact, &count);
    std::mt19937 random(99);
    std::vector<kiln_buffer_info> outputInfos, persistentInfos;
    for (size_t i = 0; i < count; ++i) {
      kiln_buffer_info info;
      kiln_artifact_buffer_info(artifact, i, &info);
      if (info.kind == KILN_BUFFER_OUTPUT)
        outputInfos.push_back(info);
      if (info.kind == KILN_BUFFER_PARAM ||
          info.kind == KILN_BUFFER_OPTIMIZER_STATE)
        persistentInfos.push_back(info);
      if (info.kind != KILN_BUFFER_INPUT)
        continue;
      std::vector<uint8_t> data(info.size_bytes);
      if (info.dtype == KILN_I32) {
        auto bound = bounds.find(info.name);
        int32_t limit = bound == bounds.end() ? 2 : bound->second;
        auto *values = reinterpret_cast<int32_t *>(data.data());
        for (size_t j = 0; j < data.size() / 4; ++j)
          values[j] = static_cast<int32_t>(random() % limit);
      } else {
        EXPECT_EQ(info.dtype, KILN_F32) << info.name;
        auto *values = reinterpret_cast<float *>(data.data());
        for (size_t j = 0; j < data.size() / 4; ++j)
          values[j] = static_cast<float>(random() % 1024) / 1024.0f;
      }
      EXPECT_EQ(kiln_session_bind_input(session, info.name, data.data(),
                                        info.dtype, info.shape, info.rank),
                KILN_OK)
          << kiln_session_last_error(session);
    }
    for (int step = 0; step < 2; ++step)
      EXPECT_EQ(kiln_session_run(session, entry), KILN_OK)
          << kiln_session_last_error(session);
    for (const kiln_buffer_info &info : outputInfos) {
      std::vector<uint8_t> bytes(info.size_bytes);
      if (kiln_session_read_output(session, info.name, info.dtype,
                                   bytes.data(), bytes.size()) == KILN_OK)
        outputs[info.name] = std::move(bytes);
    }
    for (const kiln_buffer_info &info : persistentInfos) {
      std::vector<uint8_t> bytes(info.size_bytes);
      EXPECT_EQ(kiln_session_get_buffer(session, info.name, bytes.data(),
                                        bytes.size()),
                KILN_OK);
      outputs[info.name] = std::move(bytes);
    }
    kiln_session_destroy(session);
    kiln_artifact_close(artifact);
    return outputs;
  }

  /// Checks every planned entry with ArenaCheck and the arena against the
  /// lower bound; returns the module's arena bytes.
  int64_t checkPlan(ModuleOp planned) {
    kernel::BufferAccessAnalysis access;
    for (auto entry : planned.getOps<kernel::EntryOp>()) {
      kernel::BufferLiveness liveness(entry, access);
      EXPECT_TRUE(succeeded(kernel::verifyArenaPlacement(
          liveness, entry->getAttrOfType<IntegerAttr>(kernel::kArenaBytesAttr)
                        .getInt())))
          << entry.getSymName().str();
    }
    auto arena = planned->getAttrOfType<IntegerAttr>(kernel::kArenaBytesAttr);
    auto bound =
        planned->getAttrOfType<IntegerAttr>(kernel::kLiveLowerBoundAttr);
    EXPECT_TRUE(arena && bound);
    if (!arena || !bound)
      return 0;
    EXPECT_LE(arena.getInt() * 100, bound.getInt() * 105);
    return arena.getInt();
  }

  /// Compiles `module` both ways, runs each of `entries` on both, and
  /// compares the outputs byte for byte.
  void comparePlannedWithNaive(ModuleOp module,
                               llvm::ArrayRef<const char *> entries,
                               const InputBounds &bounds) {
    OwningOpRef<ModuleOp> planned = lower(module, /*naiveArena=*/false);
    OwningOpRef<ModuleOp> naive = lower(module, /*naiveArena=*/true);
    ASSERT_TRUE(planned && naive);
    int64_t plannedArena = checkPlan(*planned);
    int64_t naiveArena =
        (*naive)->getAttrOfType<IntegerAttr>(kernel::kArenaBytesAttr).getInt();
    // Sharing must actually happen, or the comparison shows nothing.
    EXPECT_LT(plannedArena, naiveArena);
    std::string plannedDir = writeToDirectory(*planned);
    std::string naiveDir = writeToDirectory(*naive);
    for (const char *entry : entries) {
      Outputs fromPlanned = run(plannedDir, entry, bounds);
      Outputs fromNaive = run(naiveDir, entry, bounds);
      EXPECT_FALSE(fromPlanned.empty()) << entry;
      EXPECT_EQ(fromPlanned.size(), fromNaive.size()) << entry;
      for (const auto &[name, bytes] : fromPlanned) {
        auto other = fromNaive.find(name);
        ASSERT_NE(other, fromNaive.end()) << entry << ": " << name;
        EXPECT_TRUE(bytes == other->second)
            << entry << ": '" << name << "' differs";
      }
    }
  }

  MLIRContext context;
  llvm::SourceMgr sourceMgr;
  std::vector<std::string> directories;
};

} // namespace

TEST_F(MemoryPlanTest, MlpForwardIsBitIdenticalWithThePlannedArena) {
  OwningOpRef<ModuleOp> module = loadExample("mlp.kiln");
  ASSERT_TRUE(module);
  comparePlannedWithNaive(*module, {"predict", "eval_step"}, {{"y", 10}});
}

TEST_F(MemoryPlanTest, GptForwardIsBitIdenticalWithThePlannedArena) {
  OwningOpRef<ModuleOp> module = loadExample("gpt.kiln");
  ASSERT_TRUE(module);
  comparePlannedWithNaive(*module, {"predict", "eval_step"},
                          {{"tokens", 256}, {"targets", 256}});
}

/// Adds the training entries to `module`.
static bool addTrainStep(ModuleOp module) {
  FailureOr<graph::TrainSettings> settings =
      graph::TrainSettings::fromModule(module);
  return succeeded(settings) &&
         succeeded(graph::buildTrainFunctions(module, *settings));
}

TEST_F(MemoryPlanTest, MlpTrainStepIsBitIdenticalWithThePlannedArena) {
  OwningOpRef<ModuleOp> module = loadExample("mlp.kiln");
  ASSERT_TRUE(module && addTrainStep(*module));
  comparePlannedWithNaive(*module, {"train_step"}, {{"y", 10}});
}

TEST_F(MemoryPlanTest, GptTrainStepIsBitIdenticalWithThePlannedArena) {
  OwningOpRef<ModuleOp> module = loadExample("gpt.kiln");
  ASSERT_TRUE(module && addTrainStep(*module));
  comparePlannedWithNaive(*module, {"train_step"},
                          {{"tokens", 256}, {"targets", 256}});
}
