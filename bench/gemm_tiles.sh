#!/usr/bin/env bash
# How the tiles of C change oneDNN's sgemm, one single-threaded call per
# tile as Kiln's cpu executor makes them, on GPT-2 small's products at one
# sequence (B = 1, T = 1024) and four (m = 4096):
#
#   bench/gemm_tiles.sh [THREADS]     (default: 2)
#
# Each line: a tiling's median time over 7 interleaved rounds and the median
# of its per-round ratios to the line's first tiling (< 1: faster). The
# first tiling of each product is what Kiln chose before tiles were bounded
# by their panel traffic (1/tm + 1/tn), the second what it chooses now.
#
# Hold the build lock while it runs: flock /tmp/kiln-build.lock bench/gemm_tiles.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
THREADS=${1:-2}
OUT=${KILN_BENCH_OUT:-$ROOT/build/bench}
mkdir -p "$OUT"
g++ -O2 -std=c++17 -o "$OUT/gemm_tiles" "$ROOT/bench/gemm_tiles.cpp" -ldnnl -lpthread
# oneDNN's OpenMP team stays at the calling thread, as in Kiln's executor.
run() { OMP_NUM_THREADS=1 "$OUT/gemm_tiles" "$THREADS" "$@"; }
run N N 1024 3072 768 64 768 512 768
run N T 1024 768 3072 64 192 512 0
run T N 768 3072 1024 64 512 0 512
run N N 1024 50257 768 64 12608 512 1600
run N N 4096 3072 768 64 0 512 768
run T N 768 3072 4096 64 512 0 512
# Small k: both kernels ran alike here, so such tiles stay
# (traffic-min-k = 256); the second tiling is what the bound would give.
run N T 2048 512 128 64 256 704 0
