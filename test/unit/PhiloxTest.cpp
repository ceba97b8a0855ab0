//===- PhiloxTest.cpp - Tests of Kiln's Philox 4x32-10 --------------------===//
//
// Part of Kiln. The raw generator against the Random123 known-answer
// vectors, the keying scheme's word layout, and the derived distributions.
//
//===----------------------------------------------------------------------===//

#include "kiln/Philox.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace kiln::philox;

namespace {

Block makeBlock(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return Block{{a, b, c, d}};
}

void expectBlock(Block actual, Block expected) {
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(actual.word[i], expected.word[i]) << "word " << i;
}

// Random123's kat_vectors for philox4x32_10 (counter words, key words,
// expected output), also used by TensorFlow's Philox tests.
TEST(Philox, KnownAnswerZero) {
  expectBlock(philox4x32_10(makeBlock(0, 0, 0, 0), Key{{0, 0}}),
              makeBlock(0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8));
}

TEST(Philox, KnownAnswerAllOnes) {
  expectBlock(
      philox4x32_10(makeBlock(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff),
                    Key{{0xffffffff, 0xffffffff}}),
      makeBlock(0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd));
}

TEST(Philox, KnownAnswerPi) {
  expectBlock(
      philox4x32_10(makeBlock(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344),
                    Key{{0xa4093822, 0x299f31d0}}),
      makeBlock(0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1));
}

// The documented layout: key = (seed lo, seed hi), counter = (block lo,
// block hi, stream, step), element e -> word e % 4 of block e / 4.
TEST(Philox, KeyingSchemeLayout) {
  const uint64_t seed = 0x0000000100000002ull;
  Block raw = philox4x32_10(makeBlock(2, 0, 7, 3), Key{{2, 1}});
  for (uint64_t e = 8; e < 12; ++e)
    EXPECT_EQ(wordFor(seed, /*step=*/3, /*stream=*/7, e), raw.word[e - 8]);

  // The block index's high word is counter word 1.
  const uint64_t far = (1ull << 34) + 5; // block 2^32 + 1, lane 1
  Block rawFar = philox4x32_10(makeBlock(1, 1, 7, 3), Key{{2, 1}});
  EXPECT_EQ(wordFor(seed, 3, 7, far), rawFar.word[1]);
}

TEST(Philox, DistinctStreamsStepsAndSeedsDiffer) {
  uint32_t base = wordFor(1, 0, 0, 0);
  EXPECT_NE(base, wordFor(2, 0, 0, 0));
  EXPECT_NE(base, wordFor(1, 1, 0, 0));
  EXPECT_NE(base, wordFor(1, 0, 1, 0));
  EXPECT_NE(base, wordFor(1, 0, 0, 1));
  EXPECT_NE(base, wordFor(1ull << 32, 0, 0, 0)); // the seed's high word counts
}

TEST(Philox, UniformUsesTheTop24Bits) {
  EXPECT_EQ(uniformFromWord(0), 0.0f);
  EXPECT_EQ(uniformFromWord(0x000000ff), 0.0f); // low 8 bits are dropped
  EXPECT_EQ(uniformFromWord(0x80000000), 0.5f);
  EXPECT_EQ(uniformFromWord(0xffffffff), 1.0f - std::ldexp(1.0f, -24));
  EXPECT_LT(uniformFromWord(0xffffffff), 1.0f);
}

TEST(Philox, DropoutThresholdIsExact) {
  EXPECT_EQ(dropoutThreshold(0.0), 0u);
  EXPECT_EQ(dropoutThreshold(0.5), 1u << 23);
  EXPECT_EQ(dropoutThreshold(0.1), 1677722u); // ceil(0.1 * 2^24)
  // Rate 0 keeps everything; rate 0.5 keeps exactly the upper half.
  EXPECT_TRUE(dropoutKeeps(0, dropoutThreshold(0.0)));
  EXPECT_FALSE(dropoutKeeps(0x7fffffff, dropoutThreshold(0.5)));
  EXPECT_TRUE(dropoutKeeps(0x80000000, dropoutThreshold(0.5)));
}

TEST(Philox, DropoutKeepsTheExpectedFraction) {
  const double rate = 0.3;
  const uint32_t threshold = dropoutThreshold(rate);
  const int n = 200000;
  int kept = 0;
  for (int e = 0; e < n; ++e)
    kept += dropoutKeeps(wordFor(42, 5, 9, e), threshold);
  double fraction = static_cast<double>(kept) / n;
  double sigma = std::sqrt(rate * (1 - rate) / n);
  EXPECT_NEAR(fraction, 1 - rate, 5 * sigma);
}

TEST(Philox, BoxMullerHandWorkedValues) {
  // (a >> 8) = 2^23 - 1 gives u1 = 0.5, so r = sqrt(2 ln 2).
  const uint32_t half = (0x7fffffu) << 8;
  const double radius = 1.1774100225154747;
  EXPECT_NEAR(normalFromWords(half, 0, /*sine=*/false), radius, 1e-15);
  EXPECT_NEAR(normalFromWords(half, 0, /*sine=*/true), 0.0, 1e-15);
  // (b >> 8) = 2^22 gives u2 = 1/4, theta = pi / 2.
  const uint32_t quarter = (1u << 22) << 8;
  EXPECT_NEAR(normalFromWords(half, quarter, true), radius, 1e-15);
  EXPECT_NEAR(normalFromWords(half, quarter, false), 0.0, 1e-15);
  // The largest word gives u1 = 1: radius 0, never log(0).
  EXPECT_EQ(normalFromWords(0xffffffff, 12345, false), 0.0);
  EXPECT_TRUE(std::isfinite(normalFromWords(0, 0, false)));
}

TEST(Philox, NormalPairsLanesWithinABlock) {
  Block block = blockFor(7, 2, 11, 0);
  EXPECT_EQ(normalFor(7, 2, 11, 0),
            normalFromWords(block.word[0], block.word[1], false));
  EXPECT_EQ(normalFor(7, 2, 11, 1),
            normalFromWords(block.word[0], block.word[1], true));
  EXPECT_EQ(normalFor(7, 2, 11, 2),
            normalFromWords(block.word[2], block.word[3], false));
  EXPECT_EQ(normalFor(7, 2, 11, 3),
            normalFromWords(block.word[2], block.word[3], true));
}

TEST(Philox, NormalMoments) {
  const int n = 200000;
  double sum = 0, squares = 0;
  for (int e = 0; e < n; ++e) {
    double z = normalFor(1234, kInitializerStep, 99, e);
    sum += z;
    squares += z * z;
  }
  double mean = sum / n, variance = squares / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 5.0 / std::sqrt(n));
  EXPECT_NEAR(variance, 1.0, 5.0 * std::sqrt(2.0 / n));
}

TEST(Philox, HashNameIsFnv1a) {
  // Published FNV-1a 32-bit test vectors.
  EXPECT_EQ(hashName("", 0), 0x811c9dc5u);
  EXPECT_EQ(hashName("a", 1), 0xe40c292cu);
  EXPECT_EQ(hashName("foobar", 6), 0xbf9cf968u);
}

} // namespace
