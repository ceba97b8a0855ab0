//===- NcclTest.cpp - The cuda device's NCCL loader -----------------------===//
//
// Part of Kiln. devices/cuda/Nccl.h: the NCCL values and the config layout
// the runtime declares for itself against the toolkit's nccl.h, the one
// line it gives when NCCL does not load, and a group id made through the
// C API (the fake NCCL, fakes/FakeNccl.c, where MPI was found). Its
// collectives run in lit: test/CLI/data-parallel-cuda.test.
//
//===----------------------------------------------------------------------===//

#include "devices/cuda/Nccl.h"
#include "RuntimeTestUtil.h"
#include "kiln/runtime.h"

#include <cstddef>

#if defined(KILN_HAVE_CUDA_H) && __has_include(<nccl.h>)
#include <nccl.h>
#define KILN_HAVE_NCCL_H
#endif

using namespace kiln;
using namespace kiln::test;

namespace {

#ifdef KILN_HAVE_NCCL_H
// The values the runtime declares for itself are the toolkit's, and its
// config is a prefix of ncclConfig_t (NCCL reads `size` bytes of it).
static_assert(cuda::kNcclSuccess == ncclSuccess);
static_assert(cuda::kNcclInProgress == ncclInProgress);
static_assert(cuda::kNcclFloat32 == ncclFloat32);
static_assert(cuda::kNcclSum == ncclSum);
static_assert(cuda::kNcclUniqueIdBytes == NCCL_UNIQUE_ID_BYTES);
static_assert(cuda::kNcclUniqueIdBytes == KILN_NCCL_UNIQUE_ID_BYTES);
static_assert(cuda::kNcclUndefined == NCCL_CONFIG_UNDEF_INT);
static_assert(offsetof(cuda::NcclConfig, magic) ==
              offsetof(ncclConfig_t, magic));
static_assert(offsetof(cuda::NcclConfig, version) ==
              offsetof(ncclConfig_t, version));
static_assert(offsetof(cuda::NcclConfig, blocking) ==
              offsetof(ncclConfig_t, blocking));
static_assert(offsetof(cuda::NcclConfig, maxCTAs) ==
              offsetof(ncclConfig_t, maxCTAs));
static_assert(offsetof(cuda::NcclConfig, netName) ==
              offsetof(ncclConfig_t, netName));
static_assert(sizeof(cuda::NcclConfig) <= sizeof(ncclConfig_t));

TEST(Nccl, ConfigIsTheInitializersPrefix) {
  ncclConfig_t theirs = NCCL_CONFIG_INITIALIZER;
  cuda::NcclConfig ours;
  EXPECT_EQ(ours.magic, theirs.magic);
  EXPECT_EQ(ours.cgaClusterSize, theirs.cgaClusterSize);
  EXPECT_EQ(ours.netName, theirs.netName);
  // Non-blocking, where NCCL's default is blocking.
  EXPECT_EQ(ours.blocking, 0);
  EXPECT_EQ(ours.size, sizeof ours);
}
#endif

/// Loads the NCCL that KILN_LIBNCCL names; the error when it fails.
std::string loadError(const std::string &path) {
  ScopedEnvironment library("KILN_LIBNCCL", path);
  std::string error;
  std::unique_ptr<cuda::Nccl> nccl = cuda::Nccl::load(error);
  EXPECT_EQ(nccl == nullptr, !error.empty());
  return error;
}

TEST(Nccl, NoLibraryIsOneLineNamingIt) {
  std::string error = loadError("/nonexistent/libnccl.so.2");
  expectContains(error,
                 {"no NCCL: /nonexistent/libnccl.so.2 cannot be loaded"});
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

TEST(Nccl, ALibraryWithoutItsEntryPointsIsRefused) {
  // The fake driver loads, but it is no NCCL.
  std::string error = loadError(KILN_FAKE_LIBCUDA);
  expectContains(error,
                 {"has no ncclGetVersion", "Kiln needs NCCL 2.14 or later"});
}

TEST(Nccl, UniqueIdThroughTheCApi) {
  unsigned char id[KILN_NCCL_UNIQUE_ID_BYTES];
  // The size is checked before NCCL is loaded.
  expectError(kiln_nccl_unique_id(id, 64, nullptr), KILN_ERROR_INVALID_ARGUMENT,
              {"has 128 bytes, not 64"});
  {
    ScopedEnvironment library("KILN_LIBNCCL", "/nonexistent/libnccl.so.2");
    expectError(kiln_nccl_unique_id(id, sizeof id, nullptr), KILN_ERROR_DEVICE,
                {"no NCCL"});
  }
#ifdef KILN_FAKE_NCCL
  ScopedEnvironment library("KILN_LIBNCCL", KILN_FAKE_NCCL);
  char *description = nullptr;
  ASSERT_EQ(kiln_nccl_unique_id(id, sizeof id, &description), KILN_OK)
      << kiln_last_error();
  EXPECT_EQ(std::string(reinterpret_cast<char *>(id), 14), "kiln-fake-nccl");
  EXPECT_EQ(std::string(description),
            std::string("NCCL 2.28.0 (") + KILN_FAKE_NCCL + ")");
  kiln_string_free(description);
#endif
}

TEST(Nccl, TheCpuDevicesRefuseToJoin) {
  PlanWriter w;
  w.buffer("w.grad_acc", plan::BufferKind::Gradient, plan::DType::F32, {4});
  Loaded loaded;
  ASSERT_EQ(loaded.open(w.finish()), KILN_OK) << kiln_last_error();
  unsigned char id[KILN_NCCL_UNIQUE_ID_BYTES] = {};
  ASSERT_EQ(kiln_session_set_data_parallel(loaded.session, 1, 2), KILN_OK);
  expectError(kiln_session_join_nccl(loaded.session, id, sizeof id, -1),
              KILN_ERROR_INVALID_ARGUMENT, {"must not be negative"});
  expectError(kiln_session_join_nccl(loaded.session, id, sizeof id, 0),
              KILN_ERROR_UNSUPPORTED,
              {"no collectives of its own", "kiln_session_buffer_data"});
  const char *names[] = {"w.grad_acc"};
  expectError(kiln_session_sum_over_ranks(loaded.session, names, 1),
              KILN_ERROR_UNSUPPORTED, {"no collectives of its own"});
  const char *unknown[] = {"nothing"};
  expectError(kiln_session_sum_over_ranks(loaded.session, unknown, 1),
              KILN_ERROR_INVALID_ARGUMENT,
              {"cannot sum over the ranks 'nothing'"});
  // ZeRO-1's reduce and gather in parts: the parts must tile the buffer,
  // and the cpu devices have no collectives to run them with.
  const uint64_t halves[] = {2, 2}, short_[] = {2, 1};
  for (int32_t gather : {0, 1})
    expectError(
        kiln_session_parts_over_ranks(loaded.session, names, 1, halves, gather),
        KILN_ERROR_UNSUPPORTED, {"no collectives of its own"});
  expectError(
      kiln_session_parts_over_ranks(loaded.session, names, 1, short_, 0),
      KILN_ERROR_INVALID_ARGUMENT,
      {"the ranks' parts of 'w.grad_acc' hold 3 values, the buffer 4"});
  expectError(
      kiln_session_parts_over_ranks(loaded.session, unknown, 1, halves, 1),
      KILN_ERROR_INVALID_ARGUMENT,
      {"cannot gather in parts over the ranks 'nothing'"});
  // The plan's sums in parts are the device's own collectives too.
  expectError(
      kiln_session_reduce_in_parts(loaded.session, "w.grad_acc", halves),
      KILN_ERROR_UNSUPPORTED, {"no collectives of its own"});
}

} // namespace
