//===- DynamicLibraryTest.cpp - The runtime's dlopen wrapper --------------===//
//
// Part of Kiln. DynamicLibrary opens what the runtime does not link (the
// CUDA driver, cuBLASLt, NCCL, OpenBLAS, an artifact's kernels): failures
// say why, symbols resolve to typed pointers, and the library is closed
// when the last owner goes, unless it is kept loaded.
//
//===----------------------------------------------------------------------===//

#include "DynamicLibrary.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <dlfcn.h>
#include <string>
#include <utility>

using namespace kiln::runtime;

namespace {

/// Whether `path` is loaded in this process (without loading it).
bool isLoaded(const char *path) {
  void *handle = ::dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (handle)
    ::dlclose(handle); // NOLOAD still counts a reference.
  return handle != nullptr;
}

TEST(DynamicLibraryTest, MissingLibrarySaysWhy) {
  DynamicLibrary library;
  std::string reason;
  EXPECT_FALSE(library.open("/nonexistent/libkiln_none.so", reason));
  EXPECT_FALSE(library.isOpen());
  EXPECT_NE(reason.find("/nonexistent/libkiln_none.so"), std::string::npos)
      << reason;
  EXPECT_EQ(library.address("cos"), nullptr);
}

TEST(DynamicLibraryTest, ResolvesTypedSymbols) {
  DynamicLibrary library;
  std::string reason;
  ASSERT_TRUE(library.open("libm.so.6", reason)) << reason;
  double (*cosine)(double) = nullptr;
  ASSERT_TRUE(library.resolve("cos", cosine));
  EXPECT_EQ(cosine(0.0), 1.0);
  double (*missing)(double) = cosine; // Set: the miss must clear it.
  EXPECT_FALSE(library.resolve("kiln_no_such_symbol", missing));
  EXPECT_EQ(missing, nullptr);
}

TEST(DynamicLibraryTest, ClosesWhenTheLastOwnerGoes) {
  const char *path = KILN_TEST_KERNELS;
  ASSERT_FALSE(isLoaded(path)) << "another test left " << path << " open";
  {
    DynamicLibrary library;
    std::string reason;
    ASSERT_TRUE(library.open(path, reason)) << reason;
    DynamicLibrary moved = std::move(library);
    EXPECT_FALSE(library.isOpen());
    EXPECT_TRUE(moved.isOpen());
    EXPECT_TRUE(isLoaded(path));
    // Moving over an open library closes that one.
    DynamicLibrary other;
    ASSERT_TRUE(other.open("libm.so.6", reason)) << reason;
    other = std::move(moved);
    EXPECT_TRUE(other.isOpen());
    EXPECT_TRUE(isLoaded(path));
  }
  EXPECT_FALSE(isLoaded(path));
}

// In a process of its own: the library stays loaded in it.
TEST(DynamicLibraryDeathTest, KeptLoadedOutlivesItsObject) {
  const char *path = KILN_TEST_KERNELS;
  EXPECT_EXIT(
      {
        if (isLoaded(path))
          std::_Exit(2);
        {
          DynamicLibrary library;
          std::string reason;
          if (!library.open(path, reason))
            std::_Exit(3);
          library.keepLoaded();
          if (library.isOpen())
            std::_Exit(4);
        }
        std::_Exit(isLoaded(path) ? 0 : 5);
      },
      ::testing::ExitedWithCode(0), "");
}

} // namespace
