//===- KernelTileGemms.cpp - Fixed tiles of C for the cpu executor --------===//
//
// Part of Kiln. --kernel-tile-gemms: every kernel.gemm gets the tiles of C
// (tile_m rows by tile_n columns) that the cpu executor computes as separate
// single-threaded library calls. They depend on the GEMM's shape alone, so
// the bytes of C are the same whatever the thread count.
//
// A tile of tm x tn reads tm + tn elements of A and B per k for tm * tn
// multiply-adds: 1/tm + 1/tn per multiply-add. A library packs those panels
// only when that is small enough to pay (oneDNN's sgemm on AVX2 below
// 0.0038); above, it runs kernels that read A and B in place, at half the
// speed here, once k reached 256 (below, both ran alike). `max-traffic`
// keeps every tile of a product that is itself below the bound, with k at
// least `traffic-min-k`, below it too, even at the cost of fewer tiles.
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

/// One dim cut into tiles of whole blocks: the tile size (0: one tile covers
/// the dim), how many tiles, and the smallest one (the remainder).
struct DimTiles {
  int64_t size = 0, count = 1, smallest = 0;
};

/// A dim of `size` cut into about `parts` tiles of whole `block`s.
DimTiles cutDim(int64_t size, int64_t block, int64_t parts) {
  int64_t blocks = ceilDiv(size, block);
  parts = std::clamp<int64_t>(parts, 1, blocks);
  int64_t tile = ceilDiv(blocks, parts) * block;
  if (tile >= size)
    return {0, 1, size};
  int64_t count = ceilDiv(size, tile);
  return {tile, count, size - (count - 1) * tile};
}

/// A and B elements read per multiply-add by a tile of rows x cols.
double traffic(int64_t rows, int64_t cols) {
  return 1.0 / double(rows) + 1.0 / double(cols);
}

/// The tiles of an m x n x k product: about `wanted` of them, rows first
/// (each tile then reads all of B, as the library packs it once per call),
/// unless that breaks `maxTraffic`; then the grid with the most tiles whose
/// smallest tile keeps within it, the squarest of those, if it has more
/// than one tile.
std::pair<DimTiles, DimTiles> chooseTiles(int64_t m, int64_t n, int64_t wanted,
                                          int64_t block, double maxTraffic) {
  DimTiles rows = cutDim(m, block, wanted);
  DimTiles cols = cutDim(n, block, ceilDiv(wanted, rows.count));
  if (maxTraffic <= 0 || traffic(m, n) > maxTraffic ||
      traffic(rows.smallest, cols.smallest) <= maxTraffic)
    return {rows, cols};
  std::pair<DimTiles, DimTiles> best = {cutDim(m, block, 1),
                                        cutDim(n, block, 1)};
  for (int64_t rowParts = 1; rowParts <= std::min(wanted, ceilDiv(m, block));
       ++rowParts) {
    DimTiles r = cutDim(m, block, rowParts);
    if (r.count != rowParts)
      continue; // Another part count gives the same cut.
    for (int64_t colParts = 1; r.count * colParts <= wanted; ++colParts) {
      DimTiles c = cutDim(n, block, colParts);
      if (c.count != colParts)
        continue;
      if (traffic(r.smallest, c.smallest) > maxTraffic)
        continue;
      int64_t tiles = r.count * c.count,
              bestTiles = best.first.count * best.second.count;
      if (tiles > bestTiles ||
          (tiles == bestTiles &&
           traffic(r.smallest, c.smallest) <
               traffic(best.first.smallest, best.second.smallest)))
        best = {r, c};
    }
  }
  // A single tile leaves the pool's other threads idle: on two threads that
  // costs about what the no-copy kernels cost, on more it costs more.
  if (best.first.count * best.second.count == 1)
    return {rows, cols};
  return best;
}

struct KernelTileGemmsPass
    : kiln::kernel::impl::KernelTileGemmsBase<KernelTileGemmsPass> {
  using KernelTileGemmsBase::KernelTileGemmsBase;

  void runOnOperation() override {
    int64_t tileWork = this->tileWork, maxTiles = this->maxTiles,
            block = this->block;
    double maxTraffic = this->maxTraffic;
    int64_t trafficMinK = this->trafficMinK;
    if (tileWork < 1 || maxTiles < 1 || block < 1) {
      getOperation().emitError()
          << "kernel-tile-gemms: tile-work, max-tiles and block must be "
             "positive, got "
          << tileWork << ", " << maxTiles << ", " << block;
      return signalPassFailure();
    }
    if (!(maxTraffic >= 0)) {
      getOperation().emitError()
          << "kernel-tile-gemms: max-traffic must be 0 (no bound) or "
             "positive, got "
          << maxTraffic;
      return signalPassFailure();
    }
    if (trafficMinK < 0 || (trafficMinK > 0 && maxTraffic == 0)) {
      getOperation().emitError()
          << "kernel-tile-gemms: traffic-min-k must be 0 or positive and "
             "needs max-traffic, got "
          << trafficMinK << " with max-traffic " << maxTraffic;
      return signalPassFailure();
    }
    Builder builder(&getContext());
    getOperation().walk([&](GemmOp gemm) {
      int64_t m = gemm.getM(), n = gemm.getN(), k = gemm.getK();
      // Multiply-adds, saturating: the shapes are verified positive.
      int64_t work = m > INT64_MAX / n ? INT64_MAX : m * n;
      work = work > INT64_MAX / k ? INT64_MAX : work * k;
      int64_t wanted = std::clamp<int64_t>(work / tileWork, 1, maxTiles);
      auto [rows, cols] =
          chooseTiles(m, n, wanted, block, k >= trafficMinK ? maxTraffic : 0);
      gemm.setTileMAttr(builder.getI64IntegerAttr(rows.size));
      gemm.setTileNAttr(builder.getI64IntegerAttr(cols.size));
    });
  }
};

} // namespace
