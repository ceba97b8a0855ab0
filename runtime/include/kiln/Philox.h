// Philox.h - Kiln's counter-based random number generator.
//
// Part of Kiln's runtime support: plain C++17, no LLVM/MLIR.
//
// Philox 4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as
// easy as 1, 2, 3", SC 2011): a 64-bit key and a 128-bit counter map to four
// 32-bit words through 10 rounds. Every random number in Kiln comes from it:
// parameter initializers, dropout masks, the reference interpreter and both
// backends. The backends must reproduce the scheme below bit for bit.
//
// Keying scheme (the contract; do not change without versioning checkpoints):
//
//   key[0]     = low 32 bits of the run seed
//   key[1]     = high 32 bits of the run seed
//   counter[0] = low 32 bits of the block index  (block = element index / 4)
//   counter[1] = high 32 bits of the block index
//   counter[2] = stream: the dropout op's `stream` attribute, or for an
//                initializer hashName(parameter name)
//   counter[3] = step: the training step (0-based) for dropout, or
//                kInitializerStep (0xFFFFFFFF) for initializers
//
// Element e of a tensor (row-major linear index) uses word (e % 4) of the
// block e / 4. Derived values:
//
//   uniform(w)   = (w >> 8) * 2^-24, a float in [0, 1), exact in float.
//   dropout      keeps element e iff (w >> 8) >= dropoutThreshold(rate),
//                i.e. iff uniform(w) >= rate, compared exactly in integers.
//   normal       Box-Muller over word pairs of one block: words (0, 1) give
//                the normals of lanes 0 (cosine) and 1 (sine), words (2, 3)
//                those of lanes 2 (cosine) and 3 (sine). With a = the even
//                word and b = the odd word of the pair:
//                  u1 = ((a >> 8) + 1) * 2^-24   in (0, 1]  (log is finite)
//                  u2 = (b >> 8) * 2^-24         in [0, 1)
//                  r  = sqrt(-2 ln u1),  theta = 2 pi u2
//                  lane even: r cos(theta),  lane odd: r sin(theta)
//                computed in double; callers round the result to their type.
//
// Exactness: raw words, uniforms and dropout decisions are integer (or
// exactly rounded) arithmetic, so every backend reproduces them bit for bit.
// Normals go through log, sqrt, sin and cos in double, whose last bit may
// differ between libm and a GPU's math library; rounding to f32 almost always
// hides that, but compare initializer normals across backends to 1 f32 ulp.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PHILOX_H
#define KILN_PHILOX_H

#include <cmath>
#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define KILN_PHILOX_FN __host__ __device__ inline
#else
#define KILN_PHILOX_FN inline
#endif

namespace kiln {
namespace philox {

/// Four 32-bit words: a counter, or one output block.
struct Block {
  uint32_t word[4];
};

/// The 64-bit key as two 32-bit words.
struct Key {
  uint32_t word[2];
};

/// The step word that initializers use, so that their streams never collide
/// with dropout's (whose steps are < 0xFFFFFFFF).
constexpr uint32_t kInitializerStep = 0xFFFFFFFFu;

namespace detail {
constexpr uint32_t kMultiplier0 = 0xD2511F53u;
constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;

/// High and low halves of the 64-bit product a * b.
KILN_PHILOX_FN void mulHiLo(uint32_t a, uint32_t b, uint32_t &hi,
                            uint32_t &lo) {
  uint64_t product = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  hi = static_cast<uint32_t>(product >> 32);
  lo = static_cast<uint32_t>(product);
}

/// One Philox round: two multiplications, the key mixed into the high halves.
KILN_PHILOX_FN Block round(Block c, Key k) {
  uint32_t hi0, lo0, hi1, lo1;
  mulHiLo(kMultiplier0, c.word[0], hi0, lo0);
  mulHiLo(kMultiplier1, c.word[2], hi1, lo1);
  Block out;
  out.word[0] = hi1 ^ c.word[1] ^ k.word[0];
  out.word[1] = lo1;
  out.word[2] = hi0 ^ c.word[3] ^ k.word[1];
  out.word[3] = lo0;
  return out;
}
} // namespace detail

/// Philox 4x32 with 10 rounds: the raw bijection of the counter under `key`.
KILN_PHILOX_FN Block philox4x32_10(Block counter, Key key) {
  for (int i = 0; i < 10; ++i) {
    if (i > 0) {
      key.word[0] += detail::kWeyl0;
      key.word[1] += detail::kWeyl1;
    }
    counter = detail::round(counter, key);
  }
  return counter;
}

/// The key of a run seed: low word first.
KILN_PHILOX_FN Key keyFromSeed(uint64_t seed) {
  Key key;
  key.word[0] = static_cast<uint32_t>(seed);
  key.word[1] = static_cast<uint32_t>(seed >> 32);
  return key;
}

/// The counter of one block of four elements in (stream, step).
KILN_PHILOX_FN Block counterFor(uint64_t blockIndex, uint32_t stream,
                                uint32_t step) {
  Block counter;
  counter.word[0] = static_cast<uint32_t>(blockIndex);
  counter.word[1] = static_cast<uint32_t>(blockIndex >> 32);
  counter.word[2] = stream;
  counter.word[3] = step;
  return counter;
}

/// The four random words of the block holding `element`: its own word is
/// word[element % 4].
KILN_PHILOX_FN Block blockFor(uint64_t seed, uint32_t step, uint32_t stream,
                              uint64_t element) {
  return philox4x32_10(counterFor(element / 4, stream, step),
                       keyFromSeed(seed));
}

/// The random word of one element (see the keying scheme above).
KILN_PHILOX_FN uint32_t wordFor(uint64_t seed, uint32_t step, uint32_t stream,
                                uint64_t element) {
  return blockFor(seed, step, stream, element).word[element % 4];
}

/// A uniform float in [0, 1) from the top 24 bits of a word.
KILN_PHILOX_FN float uniformFromWord(uint32_t word) {
  return static_cast<float>(word >> 8) * (1.0f / 16777216.0f);
}

/// The smallest 24-bit value a word's top bits must reach to be kept by
/// dropout of `rate`: ceil(rate * 2^24). Rates are in [0, 1).
KILN_PHILOX_FN uint32_t dropoutThreshold(double rate) {
  return static_cast<uint32_t>(std::ceil(rate * 16777216.0));
}

/// Whether dropout keeps the element whose random word is `word`.
KILN_PHILOX_FN bool dropoutKeeps(uint32_t word, uint32_t threshold) {
  return (word >> 8) >= threshold;
}

/// A standard normal from the pair of words (even, odd) of one block; `sine`
/// selects the odd lane's value (see the scheme above).
KILN_PHILOX_FN double normalFromWords(uint32_t evenWord, uint32_t oddWord,
                                      bool sine) {
  const double kTwoPi = 6.283185307179586476925286766559;
  double u1 = (static_cast<double>(evenWord >> 8) + 1.0) / 16777216.0;
  double u2 = static_cast<double>(oddWord >> 8) / 16777216.0;
  double radius = std::sqrt(-2.0 * std::log(u1));
  double theta = kTwoPi * u2;
  return sine ? radius * std::sin(theta) : radius * std::cos(theta);
}

/// The standard normal of one element: lanes pair up as (0, 1) and (2, 3).
KILN_PHILOX_FN double normalFor(uint64_t seed, uint32_t step, uint32_t stream,
                                uint64_t element) {
  Block block = blockFor(seed, step, stream, element);
  unsigned lane = static_cast<unsigned>(element % 4);
  unsigned even = lane & ~1u;
  return normalFromWords(block.word[even], block.word[even + 1],
                         (lane & 1u) != 0);
}

/// FNV-1a (32-bit) of a parameter name's bytes: the initializer stream, so
/// that a parameter's values depend on its name only, not on its position.
KILN_PHILOX_FN uint32_t hashName(const char *name, size_t length) {
  uint32_t hash = 0x811C9DC5u;
  for (size_t i = 0; i < length; ++i) {
    hash ^= static_cast<unsigned char>(name[i]);
    hash *= 0x01000193u;
  }
  return hash;
}

} // namespace philox
} // namespace kiln

#endif // KILN_PHILOX_H
