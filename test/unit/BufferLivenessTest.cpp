//===- BufferLivenessTest.cpp - The memory model on hand-made schedules ----===//
//
// Part of Kiln. BufferLiveness on small entries whose live ranges, slots,
// kinds and lower bounds are worked out by hand in the comments; and
// ArenaPacking on random blocks, checked for overlaps by brute force.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/Analysis/BufferLiveness.h"
#include "kiln/Dialect/Kernel/Transforms/ArenaPacking.h"
#include "kiln/InitKiln.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <random>

using namespace mlir;
using namespace kiln::kernel;

namespace {

class BufferLivenessTest : public ::testing::Test {
protected:
  BufferLivenessTest() {
    DialectRegistry registry;
    kiln::registerKilnDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Parses `source` and returns its entry @e.
  EntryOp parseEntry(StringRef source) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << source.str();
    if (!module)
      return {};
    for (auto entry : module->getOps<EntryOp>())
      if (entry.getSymName() == "e")
        return entry;
    ADD_FAILURE() << "no entry @e";
    return {};
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

/// An elementwise kernel on 16 floats.
constexpr llvm::StringLiteral kExpKernel = R"mlir(
  kernel.func @exp(%x: memref<16xf32>, %y: memref<16xf32>) attributes {grain = 16 : i64, range = 16 : i64} {
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                    iterator_types = ["parallel"]}
        ins(%x : memref<16xf32>) outs(%y : memref<16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %e = math.exp %in : f32
      linalg.yield %e : f32
    }
    kernel.return
  }
)mlir";

} // namespace

TEST_F(BufferLivenessTest, LowerBoundIsTheLargestSumOfLiveSizes) {
  // a: 64 B over [0, 2]; b: 128 B over [1, 4]; c: 256 B over [3, 5];
  // d: 12 B, aligned to 64, over [6, 6]; u is never touched.
  // Live bytes: 64, 192, 192, 384, 384, 256, 64.
  EntryOp entry = parseEntry(R"mlir(
    kernel.entry @e() {
      %a = kernel.alloc : memref<16xf32>
      %b = kernel.alloc : memref<32xf32>
      %c = kernel.alloc : memref<64xf32>
      %d = kernel.alloc : memref<3xf32>
      %u = kernel.alloc : memref<1024xf32>
      kernel.zero %a : memref<16xf32>
      kernel.zero %b : memref<32xf32>
      kernel.zero %a : memref<16xf32>
      kernel.zero %c : memref<64xf32>
      kernel.zero %b : memref<32xf32>
      kernel.zero %c : memref<64xf32>
      kernel.zero %d : memref<3xf32>
      kernel.return
    })mlir");
  ASSERT_TRUE(entry);
  BufferLiveness liveness(entry);
  ASSERT_EQ(liveness.getSchedule().size(), 7u);
  ArrayRef<Transient> transients = liveness.getTransients();
  ASSERT_EQ(transients.size(), 5u);
  EXPECT_EQ(transients[0].firstUse, 0);
  EXPECT_EQ(transients[0].lastUse, 2);
  EXPECT_EQ(transients[1].firstUse, 1);
  EXPECT_EQ(transients[1].lastUse, 4);
  EXPECT_EQ(transients[2].firstUse, 3);
  EXPECT_EQ(transients[2].lastUse, 5);
  EXPECT_EQ(transients[3].sizeInBytes, 64);
  EXPECT_FALSE(transients[4].isUsed());

  SmallVector<int64_t> totals;
  for (const LiveBytes &bytes : liveness.getLiveBytes())
    totals.push_back(bytes.total());
  EXPECT_EQ(totals, (SmallVector<int64_t>{64, 192, 192, 384, 384, 256, 64}));
  EXPECT_EQ(liveness.getLiveLowerBound(), 384);
  EXPECT_EQ(liveness.getPeakPoint(), 3);
  EXPECT_EQ(liveness.getTotalTransientBytes(), 64 + 128 + 256 + 64 + 4096);
}

TEST_F(BufferLivenessTest, AViewKeepsItsRootAlive) {
  // %a is written at 0 and read through %v at 2: live over [0, 2], with %b.
  EntryOp entry = parseEntry(R"mlir(
    kernel.entry @e(%y: memref<4x4xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
      %a = kernel.alloc : memref<16xf32>
      %v = kernel.view %a : memref<16xf32> -> memref<4x4xf32>
      kernel.zero %a : memref<16xf32>
      %b = kernel.alloc : memref<4x4xf32>
      kernel.zero %b : memref<4x4xf32>
      kernel.gemm %v, %b, %y {m = 4 : i64, n = 4 : i64, k = 4 : i64} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
      kernel.return
    })mlir");
  ASSERT_TRUE(entry);
  BufferLiveness liveness(entry);
  EXPECT_EQ(liveness.getTransients()[0].lastUse, 2);
  EXPECT_EQ(liveness.getLiveLowerBound(), 128);
  Value view = entry.getBody().front().getOperations().begin()->getNextNode()
                   ->getResult(0);
  EXPECT_EQ(liveness.lookupTransient(view), std::optional<unsigned>(0));
}

TEST_F(BufferLivenessTest, InPlaceResultsShareTheirInputsBytes) {
  // exp(x) -> a -> b -> c, each input dying where its output is defined: one
  // slot of 64 bytes; without reuse two buffers would be live at each launch.
  EntryOp entry = parseEntry((kExpKernel + R"mlir(
    kernel.entry @e(%x: memref<16xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                    %y: memref<16xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
      %a = kernel.alloc : memref<16xf32>
      kernel.launch @exp(%x, %a) : memref<16xf32>, memref<16xf32>
      %b = kernel.alloc : memref<16xf32>
      kernel.launch @exp(%a, %b) : memref<16xf32>, memref<16xf32>
      %c = kernel.alloc : memref<16xf32>
      kernel.launch @exp(%b, %c) : memref<16xf32>, memref<16xf32>
      kernel.copy %c, %y : memref<16xf32>, memref<16xf32>
      kernel.return
    })mlir").str());
  ASSERT_TRUE(entry);
  BufferLiveness liveness(entry);
  ASSERT_EQ(liveness.getInPlaceReuses().size(), 2u);
  EXPECT_EQ(liveness.getInPlaceReuses()[0].input, 0u);
  EXPECT_EQ(liveness.getInPlaceReuses()[0].output, 1u);
  ASSERT_EQ(liveness.getSlots().size(), 1u);
  EXPECT_EQ(liveness.getSlots()[0].members.size(), 3u);
  EXPECT_EQ(liveness.getSlots()[0].firstUse, 0);
  EXPECT_EQ(liveness.getSlots()[0].lastUse, 3);
  EXPECT_EQ(liveness.getLiveLowerBound(), 64);
  EXPECT_FALSE(liveness.writesInPlace(0));
  EXPECT_TRUE(liveness.writesInPlace(1));
  EXPECT_TRUE(liveness.writesInPlace(2));
  EXPECT_FALSE(liveness.writesInPlace(3));
}

TEST_F(BufferLivenessTest, NoReuseWhileTheInputIsStillRead) {
  EntryOp entry = parseEntry((kExpKernel + R"mlir(
    kernel.entry @e(%x: memref<16xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                    %y: memref<16xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "y"}) {
      %a = kernel.alloc : memref<16xf32>
      kernel.launch @exp(%x, %a) : memref<16xf32>, memref<16xf32>
      %b = kernel.alloc : memref<16xf32>
      kernel.launch @exp(%a, %b) : memref<16xf32>, memref<16xf32>
      kernel.copy %a, %y : memref<16xf32>, memref<16xf32>
      kernel.copy %b, %y : memref<16xf32>, memref<16xf32>
      kernel.return
    })mlir").str());
  ASSERT_TRUE(entry);
  BufferLiveness liveness(entry);
  EXPECT_TRUE(liveness.getInPlaceReuses().empty());
  EXPECT_EQ(liveness.getSlots().size(), 2u);
  EXPECT_EQ(liveness.getLiveLowerBound(), 128);
}

TEST_F(BufferLivenessTest, KindsAndTheForwardBackwardBoundary) {
  // Forward: %h (0), the loss (1); backward: %g (2, 3), reading %h at 3;
  // %w is one op's scratch (4); the update writes the parameter (5).
  // Boundary: point 1. %h is an activation saved across it; %g a gradient.
  EntryOp entry = parseEntry(R"mlir(
    kernel.func @acc(%x: memref<16xf32>, %y: memref<16xf32>) attributes {grain = 16 : i64, range = 16 : i64} {
      linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                      iterator_types = ["parallel"]}
          ins(%x : memref<16xf32>) outs(%y : memref<16xf32>) {
      ^bb0(%in: f32, %out: f32):
        %s = arith.addf %in, %out : f32
        linalg.yield %s : f32
      }
      kernel.return
    }
    kernel.entry @e(%p: memref<16xf32> {kernel.kind = #kernel.kind<param>, kernel.name = "p"},
                    %loss: memref<16xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "loss"}) {
      %h = kernel.alloc : memref<16xf32>
      kernel.copy %p, %h : memref<16xf32>, memref<16xf32>
      kernel.copy %h, %loss : memref<16xf32>, memref<16xf32>
      %g = kernel.alloc : memref<16xf32>
      kernel.zero %g : memref<16xf32>
      kernel.launch @acc(%h, %g) : memref<16xf32>, memref<16xf32>
      %w = kernel.alloc : memref<64xf32>
      kernel.zero %w : memref<64xf32>
      kernel.copy %loss, %p : memref<16xf32>, memref<16xf32>
      kernel.return
    })mlir");
  ASSERT_TRUE(entry);
  BufferLiveness liveness(entry);
  ASSERT_EQ(liveness.getForwardBackwardBoundary(), std::optional<int64_t>(1));
  ArrayRef<Transient> transients = liveness.getTransients();
  EXPECT_EQ(transients[0].kind, TransientKind::Activation);
  EXPECT_EQ(transients[1].kind, TransientKind::Gradient);
  EXPECT_EQ(transients[2].kind, TransientKind::Workspace);
  EXPECT_EQ(liveness.getSavedActivationBytes(), 64);
  // @acc reads and writes %g.
  EXPECT_TRUE(liveness.writesInPlace(3));
  ArrayRef<LiveBytes> live = liveness.getLiveBytes();
  ASSERT_EQ(live.size(), 6u);
  EXPECT_EQ(live[3].activation, 64);
  EXPECT_EQ(live[3].gradient, 64);
  EXPECT_EQ(live[4].workspace, 256);
  EXPECT_EQ(live[4].activation, 0);
  EXPECT_EQ(live[5].total(), 0);
}

TEST_F(BufferLivenessTest, EntriesWithoutUpdatesHaveNoBoundary) {
  EntryOp entry = parseEntry(R"mlir(
    kernel.entry @e(%loss: memref<16xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "loss"}) {
      %h = kernel.alloc : memref<16xf32>
      kernel.zero %h : memref<16xf32>
      kernel.copy %h, %loss : memref<16xf32>, memref<16xf32>
      kernel.return
    })mlir");
  ASSERT_TRUE(entry);
  BufferLiveness liveness(entry);
  EXPECT_FALSE(liveness.getForwardBackwardBoundary());
  EXPECT_EQ(liveness.getTransients()[0].kind, TransientKind::Activation);
  EXPECT_EQ(liveness.getSavedActivationBytes(), 0);
}

/// Random blocks: every heuristic's placement keeps interfering blocks
/// apart, and the best arena is at least the live lower bound.
TEST(ArenaPackingTest, RandomBlocksNeverOverlapWhileLive) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 50; ++trial) {
    int points = 1 + random() % 40;
    SmallVector<PackingBlock> blocks;
    for (int i = 0, n = 1 + random() % 60; i < n; ++i) {
      int64_t first = random() % points;
      int64_t last = first + random() % (points - first);
      blocks.push_back({64 * (1 + static_cast<int64_t>(random() % 16)), first,
                        random() % 10 == 0 ? first - 1 : last});
    }
    int64_t lowerBound = 0;
    for (int point = 0; point < points; ++point) {
      int64_t live = 0;
      for (const PackingBlock &block : blocks)
        if (block.isLive() && block.first <= point && point <= block.last)
          live += block.size;
      lowerBound = std::max(lowerBound, live);
    }
    ArenaPacking packing = packArena(blocks);
    EXPECT_GE(packing.arenaBytes, lowerBound);
    for (size_t i = 0; i < blocks.size(); ++i) {
      EXPECT_EQ(packing.offsets[i] % 64, 0);
      EXPECT_LE(packing.offsets[i] + blocks[i].size, packing.arenaBytes);
      for (size_t j = i + 1; j < blocks.size(); ++j) {
        if (!blocks[i].interferesWith(blocks[j]))
          continue;
        bool apart =
            packing.offsets[i] + blocks[i].size <= packing.offsets[j] ||
            packing.offsets[j] + blocks[j].size <= packing.offsets[i];
        EXPECT_TRUE(apart) << "trial " << trial << ": blocks " << i << ", "
                           << j;
      }
    }
  }
}

TEST(ArenaPackingTest, NestedLifetimesPackToTheLowerBound) {
  // A long-lived block and short ones that come and go beside it. Live
  // bytes: 384, 448, 448, 448, 384, 384, 384, 448, 448, 448.
  SmallVector<PackingBlock> blocks = {
      {256, 0, 9}, {128, 0, 2}, {64, 1, 3}, {128, 3, 6}, {192, 7, 9}};
  ArenaPacking packing = packArena(blocks);
  EXPECT_EQ(packing.arenaBytes, 448);
}
