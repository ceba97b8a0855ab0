// Tiles of one GEMM through oneDNN's sgemm, as Kiln's cpu executor runs
// them: each tile of C one single-threaded call, the tiles shared by a
// pool of threads. Prints each tiling's median time and its ratio to the
// first tiling given, measured interleaved (bench/gemm_tiles.sh builds and
// runs it on GPT-2 small's products).
//
//   gemm_tiles THREADS TRANSA TRANSB M N K TILE_M TILE_N [TILE_M TILE_N ...]
//
// TRANSA, TRANSB: N or T; a tile of 0 rows or columns is the whole dim.

#include <dnnl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

struct Product {
  char transA, transB;
  long m, n, k;
};

struct Tiling {
  long rows, cols;
};

long ceilDiv(long a, long b) { return (a + b - 1) / b; }

/// Seconds to compute C = op(A) op(B) (row-major) in `tiling`'s tiles over
/// `threads` threads.
double timeTiled(const Product &p, Tiling tiling, int threads, const float *a,
                 const float *b, float *c) {
  long rowTiles = ceilDiv(p.m, tiling.rows),
       colTiles = ceilDiv(p.n, tiling.cols);
  long lda = p.transA == 'N' ? p.k : p.m, ldb = p.transB == 'N' ? p.n : p.k;
  std::atomic<long> next{0};
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (long t; (t = next++) < rowTiles * colTiles;) {
      long row = t / colTiles * tiling.rows, col = t % colTiles * tiling.cols;
      long rows = std::min(tiling.rows, p.m - row),
           cols = std::min(tiling.cols, p.n - col);
      const float *tileA = p.transA == 'N' ? a + row * lda : a + row;
      const float *tileB = p.transB == 'N' ? b + col : b + col * ldb;
      if (dnnl_sgemm(p.transA, p.transB, rows, cols, p.k, 1.f, tileA, lda,
                     tileB, ldb, 0.f, c + row * p.n + col, p.n) != dnnl_success)
        failed = true;
    }
  };
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i)
    pool.emplace_back(work);
  work();
  for (std::thread &thread : pool)
    thread.join();
  if (failed) {
    std::fprintf(stderr, "error: dnnl_sgemm failed\n");
    std::exit(1);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t half = values.size() / 2;
  return values.size() % 2 ? values[half]
                           : (values[half - 1] + values[half]) / 2;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 9 || (argc - 7) % 2) {
    std::fprintf(stderr,
                 "usage: %s THREADS TRANSA TRANSB M N K TILE_M "
                 "TILE_N [TILE_M TILE_N ...]\n",
                 argv[0]);
    return 2;
  }
  int threads = std::atoi(argv[1]);
  Product p{argv[2][0], argv[3][0], std::atol(argv[4]), std::atol(argv[5]),
            std::atol(argv[6])};
  std::vector<Tiling> tilings;
  for (int i = 7; i + 1 < argc; i += 2) {
    long rows = std::atol(argv[i]), cols = std::atol(argv[i + 1]);
    tilings.push_back({rows > 0 ? rows : p.m, cols > 0 ? cols : p.n});
  }
  auto buffer = [](long elements) {
    auto *data = static_cast<float *>(
        std::aligned_alloc(64, ceilDiv(elements * 4, 64) * 64));
    for (long i = 0; i < elements; ++i)
      data[i] = float(i % 7) * 0.125f;
    return data;
  };
  float *a = buffer(p.m * p.k), *b = buffer(p.k * p.n), *c = buffer(p.m * p.n);
  constexpr int kRounds = 7;
  std::vector<std::vector<double>> seconds(tilings.size());
  timeTiled(p, tilings[0], threads, a, b, c); // Warms the JIT kernels.
  for (int round = 0; round < kRounds; ++round)
    for (size_t i = 0; i < tilings.size(); ++i)
      seconds[i].push_back(timeTiled(p, tilings[i], threads, a, b, c));
  for (size_t i = 0; i < tilings.size(); ++i) {
    std::vector<double> ratios;
    for (int round = 0; round < kRounds; ++round)
      ratios.push_back(seconds[i][round] / seconds[0][round]);
    double time = median(seconds[i]);
    std::printf("%c%c %ldx%ldx%ld, %d threads, tiles %ld x %ld "
                "(1/tm + 1/tn = %.4f): %.2f ms, %.1f GFLOP/s, %.3f x the "
                "first\n",
                p.transA, p.transB, p.m, p.n, p.k, threads, tilings[i].rows,
                tilings[i].cols, 1.0 / tilings[i].rows + 1.0 / tilings[i].cols,
                time * 1e3, 2.0 * p.m * p.n * p.k / time / 1e9, median(ratios));
  }
  std::free(a);
  std::free(b);
  std::free(c);
}
