//===- KernelTileGemms.cpp - Fixed tiles of C for the cpu executor ---------===//
//
// Part of Kiln. --kernel-tile-gemms: every kernel.gemm gets the tiles of C
// (tile_m rows by tile_n columns) that the cpu executor computes as separate
// single-threaded library calls. They depend on the GEMM's shape alone, so
// the bytes of C are the same whatever the thread count.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include <algorithm>

namespace kiln::kernel {
#define GEN_PASS_DEF_KERNELTILEGEMMS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;
using namespace kiln::kernel;

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The size of each of `parts` tiles made of whole `block`s of a dim of
/// `size`, or 0 when one tile covers it.
int64_t tileSize(int64_t size, int64_t block, int64_t parts) {
  int64_t blocks = ceilDiv(size, block);
  parts = std::clamp<int64_t>(parts, 1, blocks);
  int64_t tile = ceilDiv(blocks, parts) * block;
  return tile >= size ? 0 : tile;
}

struct KernelTileGemmsPass
    : kiln::kernel::impl::KernelTileGemmsBase<KernelTileGemmsPass> {
  using KernelTileGemmsBase::KernelTileGemmsBase;

  void runOnOperation() override {
    int64_t tileWork = this->tileWork, maxTiles = this->maxTiles,
            block = this->block;
    if (tileWork < 1 || maxTiles < 1 || block < 1) {
      getOperation().emitError()
          << "kernel-tile-gemms: tile-work, max-tiles and block must be "
             "positive, got "
          << tileWork << ", " << maxTiles << ", " << block;
      return signalPassFailure();
    }
    Builder builder(&getContext());
    getOperation().walk([&](GemmOp gemm) {
      int64_t m = gemm.getM(), n = gemm.getN(), k = gemm.getK();
      // Multiply-adds, saturating: the shapes are verified positive.
      int64_t work = m > INT64_MAX / n ? INT64_MAX : m * n;
      work = work > INT64_MAX / k ? INT64_MAX : work * k;
      int64_t tiles = std::clamp<int64_t>(work / tileWork, 1, maxTiles);
      // Rows first: each tile then reads all of B.
      int64_t tileM = tileSize(m, block, tiles);
      int64_t rowTiles = tileM ? ceilDiv(m, tileM) : 1;
      int64_t tileN = tileSize(n, block, ceilDiv(tiles, rowTiles));
      gemm.setTileMAttr(builder.getI64IntegerAttr(tileM));
      gemm.setTileNAttr(builder.getI64IntegerAttr(tileN));
    });
  }
};

} // namespace
