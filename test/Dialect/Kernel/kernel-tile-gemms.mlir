// RUN: kiln-opt %s -split-input-file -kernel-tile-gemms | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kernel-tile-gemms="tile-work=1048576 max-tiles=8 block=32" | FileCheck %s --check-prefix=SMALL
// RUN: not kiln-opt %s -split-input-file -kernel-tile-gemms="max-tiles=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: kiln-opt %s -split-input-file -kernel-tile-gemms="max-traffic=0.0036 traffic-min-k=256" | FileCheck %s --check-prefix=BOUND
// RUN: not kiln-opt %s -split-input-file -kernel-tile-gemms="max-traffic=-1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-TRAFFIC
// BAD-TRAFFIC: error: kernel-tile-gemms: max-traffic must be 0 (no bound) or positive, got -1
// RUN: not kiln-opt %s -split-input-file -kernel-tile-gemms="traffic-min-k=256" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-MIN-K
// BAD-MIN-K: error: kernel-tile-gemms: traffic-min-k must be 0 or positive and needs max-traffic, got 256 with max-traffic 0

// The GPT example's q/k/v product, 2048 x 384 x 128 = 48 * 2^21
// multiply-adds: 48 tiles wanted, 32 blocks of 64 rows, each cut in 2 of
// 192 columns. With tiles of 2^20, at most 8, of 32-row blocks: 8 tiles of
// 256 rows, whole columns.
// With the traffic bound as well: k = 128 is below traffic-min-k, so the
// tiles stay.
// CHECK-LABEL: kernel.entry @qkv
// CHECK: kernel.gemm {{.*}}tile_m = 64 : i64, tile_n = 192 : i64
// BOUND-LABEL: kernel.entry @qkv
// BOUND: kernel.gemm {{.*}}tile_m = 64 : i64, tile_n = 192 : i64
// SMALL-LABEL: kernel.entry @qkv
// SMALL: kernel.gemm {{.*}}n = 384 : i64, tile_m = 256 : i64} :
// BAD: error: kernel-tile-gemms: tile-work, max-tiles and block must be positive, got 2097152, 0, 64
kernel.entry @qkv(%a: memref<2048x128xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                  %b: memref<128x384xf32> {kernel.kind = #kernel.kind<param>, kernel.name = "b"},
                  %c: memref<2048x384xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  kernel.gemm %a, %b, %c {m = 2048 : i64, n = 384 : i64, k = 128 : i64} : memref<2048x128xf32>, memref<128x384xf32>, memref<2048x384xf32>
  kernel.return
}

// -----

// A small product stays one call: 0, the whole dim, is the default and is
// not printed.
// CHECK-LABEL: kernel.entry @small
// CHECK: kernel.gemm %{{.*}} {k = 64 : i64, m = 32 : i64, n = 10 : i64} :
kernel.entry @small(%a: memref<32x64xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                    %b: memref<64x10xf32> {kernel.kind = #kernel.kind<param>, kernel.name = "b"},
                    %c: memref<32x10xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  kernel.gemm %a, %b, %c {m = 32 : i64, n = 10 : i64, k = 64 : i64} : memref<32x64xf32>, memref<64x10xf32>, memref<32x10xf32>
  kernel.return
}

// -----

// Few rows, many columns (a weight gradient, k = batch rows): the tiles
// come from column blocks. 128 x 1024 x 2048 = 128 * 2^21, capped at 64
// tiles: 2 row blocks, each cut into 32 parts of its 16 column blocks, so
// one 64-column block each (32 tiles).
// CHECK-LABEL: kernel.entry @wide
// CHECK: kernel.gemm {{.*}}tile_m = 64 : i64, tile_n = 64 : i64
kernel.entry @wide(%a: memref<2048x128xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                   %b: memref<2048x1024xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "b"},
                   %c: memref<128x1024xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  kernel.gemm %a, %b, %c {m = 128 : i64, n = 1024 : i64, k = 2048 : i64, transpose_a} : memref<2048x128xf32>, memref<2048x1024xf32>, memref<128x1024xf32>
  kernel.return
}

// -----

// GPT-2 small's MLP product at one sequence, 1024 x 3072 x 768: 64 tiles
// wanted, 64 x 768 without a bound (1/64 + 1/768 = 0.0169 elements of A and
// B per multiply-add). Under 0.0036 the most tiles are 8: 512 x 768 (0.0033)
// or 1024 x 384 (0.0036), and the squarer wins; 3 row tiles would leave one
// of 256 rows (0.0039 at best).
// CHECK-LABEL: kernel.entry @mlp
// CHECK: kernel.gemm {{.*}}tile_m = 64 : i64, tile_n = 768 : i64
// BOUND-LABEL: kernel.entry @mlp
// BOUND: kernel.gemm {{.*}}tile_m = 512 : i64, tile_n = 768 : i64
kernel.entry @mlp(%a: memref<1024x768xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                  %b: memref<768x3072xf32> {kernel.kind = #kernel.kind<param>, kernel.name = "b"},
                  %c: memref<1024x3072xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  kernel.gemm %a, %b, %c {m = 1024 : i64, n = 3072 : i64, k = 768 : i64} : memref<1024x768xf32>, memref<768x3072xf32>, memref<1024x3072xf32>
  kernel.return
}

// -----

// A product that is itself over the bound (64 columns: 1/64 alone) is tiled
// as without it.
// BOUND-LABEL: kernel.entry @narrow
// BOUND: kernel.gemm {{.*}}tile_m = 64 : i64} :
kernel.entry @narrow(%a: memref<1024x1024xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                     %b: memref<1024x64xf32> {kernel.kind = #kernel.kind<param>, kernel.name = "b"},
                     %c: memref<1024x64xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  kernel.gemm %a, %b, %c {m = 1024 : i64, n = 64 : i64, k = 1024 : i64} : memref<1024x1024xf32>, memref<1024x64xf32>, memref<1024x64xf32>
  kernel.return
}

// -----

// 768 x 768 x 1024: under the bound only one tile is left (two of 384
// columns read 0.0039), which would idle the pool: the tiles stay as
// without a bound, 12 row tiles of 64, each cut into 6 of 128 columns.
// BOUND-LABEL: kernel.entry @square
// BOUND: kernel.gemm {{.*}}tile_m = 64 : i64, tile_n = 128 : i64
kernel.entry @square(%a: memref<768x1024xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "a"},
                     %b: memref<1024x768xf32> {kernel.kind = #kernel.kind<param>, kernel.name = "b"},
                     %c: memref<768x768xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "c"}) {
  kernel.gemm %a, %b, %c {m = 768 : i64, n = 768 : i64, k = 1024 : i64} : memref<768x1024xf32>, memref<1024x768xf32>, memref<768x768xf32>
  kernel.return
}
