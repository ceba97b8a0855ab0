//===- RuntimeErrorsTest.cpp - Every failure of the C API is reported -----===//
//
// Part of Kiln. Each error path returns its status and a message that names
// the call and what was wrong: missing or foreign plan files, unknown schema
// versions, inconsistent plans, missing kernels, devices, and inputs of the
// wrong name, shape or dtype.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"

using namespace kiln;
using namespace kiln::test;
using DType = plan::DType;
using Kind = plan::BufferKind;

namespace {

/// A small valid plan: predict(x f32[2, 3]) -> y = x + x.
std::string addPlan(uint32_t version = KILN_PLAN_SCHEMA_VERSION,
                    const char *symbol = "kiln_test_add") {
  PlanWriter w;
  uint32_t x = w.buffer("x", Kind::Input, DType::F32, {2, 3});
  uint32_t y = w.buffer("y", Kind::Output, DType::F32, {2, 3});
  w.kernel(symbol, {x, x, y}, 6, 1);
  w.entry("predict", {x}, {y});
  return w.finish(version);
}

kiln_status openArtifact(const TempDir &dir, const std::string &plan,
                         kiln_artifact **artifact) {
  writeArtifact(dir.path(), plan);
  return kiln_artifact_open(dir.path().c_str(), artifact);
}

TEST(RuntimeErrors, MissingDirectoryOrPlan) {
  kiln_artifact *artifact = nullptr;
  expectError(kiln_artifact_open("/nonexistent/kiln.d", &artifact),
              KILN_ERROR_IO, {"kiln_artifact_open: ", "/nonexistent/kiln.d"});
  EXPECT_EQ(artifact, nullptr);
  TempDir dir;
  expectError(kiln_artifact_open(dir.path().c_str(), &artifact), KILN_ERROR_IO,
              {"plan.kpl"});
  expectError(kiln_artifact_open(nullptr, &artifact),
              KILN_ERROR_INVALID_ARGUMENT, {"directory is null"});
}

TEST(RuntimeErrors, NotAPlan) {
  TempDir dir;
  kiln_artifact *artifact = nullptr;
  expectError(openArtifact(dir, "this is not a flatbuffer at all", &artifact),
              KILN_ERROR_INVALID_FORMAT,
              {"plan.kpl: not a Kiln plan", "'KPLN'", "found identifier"});
  expectError(openArtifact(dir, "KPL", &artifact), KILN_ERROR_INVALID_FORMAT,
              {"a file of 3 bytes"});
  // The right identifier on a damaged body.
  std::string plan = addPlan();
  expectError(openArtifact(dir, plan.substr(0, plan.size() / 2), &artifact),
              KILN_ERROR_INVALID_FORMAT, {"corrupt"});
}

TEST(RuntimeErrors, UnknownSchemaVersionNamesBoth) {
  TempDir dir;
  kiln_artifact *artifact = nullptr;
  expectError(openArtifact(dir, addPlan(99), &artifact), KILN_ERROR_VERSION,
              {"schema version 99",
               "executes version " + std::to_string(KILN_PLAN_SCHEMA_VERSION)});
}

TEST(RuntimeErrors, MissingKernelSymbolIsNamed) {
  TempDir dir;
  kiln_artifact *artifact = nullptr;
  expectError(
      openArtifact(dir,
                   addPlan(KILN_PLAN_SCHEMA_VERSION, "kiln_k_does_not_exist"),
                   &artifact),
      KILN_ERROR_KERNELS, {"'kiln_k_does_not_exist'", "missing 1"});
  // And a kernels file that is not there.
  TempDir empty;
  writeFile(empty.file("plan.kpl"), addPlan());
  expectError(kiln_artifact_open(empty.path().c_str(), &artifact),
              KILN_ERROR_KERNELS, {"dlopen", "kernels.so"});
}

TEST(RuntimeErrors, InconsistentPlansAreRejected) {
  TempDir dir;
  kiln_artifact *artifact = nullptr;
  {
    PlanWriter w;
    uint32_t x = w.buffer("x", Kind::Input, DType::F32, {4});
    w.kernel("kiln_test_add", {x, x, 9}, 4, 1, "graph.add", 12);
    w.entry("predict", {x}, {});
    expectError(openArtifact(dir, w.finish(), &artifact),
                KILN_ERROR_INVALID_FORMAT,
                {"entry 'predict' op 0 (model.kiln:12:3)",
                 "buffer id 9 is out of range"});
  }
  {
    PlanWriter w;
    uint32_t a = w.buffer("a", Kind::Input, DType::F32, {4, 4});
    uint32_t c = w.buffer("c", Kind::Output, DType::F32, {4, 4});
    // Two batch entries of 16 elements do not fit in a 16-element A.
    w.gemm(plan::CreateGemmCall(w.fbb, a, a, c, 4, 4, 4, 2, false, false, 4, 4,
                                4, 16, 0, 0, 1.0, 0.0, DType::F32));
    w.entry("predict", {a}, {c});
    expectError(openArtifact(dir, w.finish(), &artifact),
                KILN_ERROR_INVALID_FORMAT,
                {"GEMM operand A ('a') needs 32 elements but the buffer "
                 "holds 16"});
  }
  {
    PlanWriter w;
    w.buffer("a", Kind::Input, DType::F32, {4});
    w.buffer("a", Kind::Output, DType::F32, {4});
    expectError(openArtifact(dir, w.finish(), &artifact),
                KILN_ERROR_INVALID_FORMAT, {"two buffers are named 'a'"});
  }
  {
    PlanWriter w;
    w.buffer("t", Kind::Transient, DType::F32, {32});
    w.arenaBytes = 64; // The transient needs 128.
    expectError(openArtifact(dir, w.finish(), &artifact),
                KILN_ERROR_INVALID_FORMAT,
                {"buffer 0 ('t')", "inside the arena of 64 bytes"});
  }
  {
    PlanWriter w;
    uint32_t a = w.buffer("a", Kind::Input, DType::F32, {4});
    uint32_t b = w.buffer("b", Kind::Output, DType::F32, {2});
    w.copy(a, b, 16);
    w.entry("predict", {a}, {b});
    expectError(openArtifact(dir, w.finish(), &artifact),
                KILN_ERROR_INVALID_FORMAT, {"copy of 16 bytes from 'a'"});
  }
  EXPECT_EQ(artifact, nullptr);
}

TEST(RuntimeErrors, Devices) {
  TempDir dir;
  kiln_artifact *artifact = nullptr;
  ASSERT_EQ(openArtifact(dir, addPlan(), &artifact), KILN_OK)
      << kiln_last_error();
  kiln_session *session = nullptr;
  {
    // A cpu artifact is not for device "cuda", driver or not.
    ScopedEnvironment library("KILN_LIBCUDA", KILN_FAKE_LIBCUDA);
    expectError(kiln_session_create(artifact, "cuda", 0, &session),
                KILN_ERROR_INVALID_ARGUMENT,
                {"compiled for target 'cpu', not for device 'cuda'"});
  }
  expectError(kiln_session_create(artifact, "tpu", 0, &session),
              KILN_ERROR_INVALID_ARGUMENT, {"unknown device 'tpu'"});
  expectError(kiln_session_create(artifact, "cpu", 100000, &session),
              KILN_ERROR_INVALID_ARGUMENT,
              {"thread count 100000 is outside [0, 4096]"});
  expectError(kiln_session_create(artifact, "cpu", -1, &session),
              KILN_ERROR_INVALID_ARGUMENT, {"thread count -1"});
  EXPECT_EQ(session, nullptr);
  // A session keeps its artifact alive after the caller closes it.
  ASSERT_EQ(kiln_session_create(artifact, "cpu", 0, &session), KILN_OK);
  kiln_artifact_close(artifact);
  int32_t threads = 0;
  EXPECT_EQ(kiln_session_num_threads(session, &threads), KILN_OK);
  EXPECT_GE(threads, 1);
  std::vector<float> x(6, 1.0f);
  int64_t shape[] = {2, 3};
  ASSERT_EQ(kiln_session_bind_input(session, "x", x.data(), KILN_F32, shape, 2),
            KILN_OK);
  EXPECT_EQ(kiln_session_run(session, "predict"), KILN_OK);
  kiln_session_destroy(session);
}

TEST(RuntimeErrors, CudaPlanOnCpu) {
  TempDir dir;
  PlanWriter w;
  w.buffer("x", Kind::Input, DType::F32, {2});
  writeFile(dir.file("plan.kpl"),
            w.finish(KILN_PLAN_SCHEMA_VERSION, "cuda", "kernels.ptx"));
  kiln_artifact *artifact = nullptr;
  // A cuda artifact opens (for `kiln inspect`) but does not run on the cpu.
  ASSERT_EQ(kiln_artifact_open(dir.path().c_str(), &artifact), KILN_OK)
      << kiln_last_error();
  kiln_session *session = nullptr;
  expectError(kiln_session_create(artifact, "cpu", 1, &session),
              KILN_ERROR_INVALID_ARGUMENT,
              {"compiled for target 'cuda', not for device 'cpu'"});
  kiln_artifact_close(artifact);
}

/// A cuda artifact on device "cuda" through the fake driver: one for a
/// newer GPU than the one found is refused naming both; one it could run
/// but whose module file is missing fails loading it, naming the file.
/// Writes `w`'s plan into `dir` as a cuda plan for `arch` (null: none)
/// whose kernels file is kernels.ptx, and opens it.
kiln_status openCudaPlan(TempDir &dir, PlanWriter &w, const char *arch,
                         kiln_artifact **artifact) {
  writeFile(dir.file("plan.kpl"),
            w.finish(KILN_PLAN_SCHEMA_VERSION, "cuda", "kernels.ptx", 0, arch));
  return kiln_artifact_open(dir.path().c_str(), artifact);
}

/// A cuda plan of one input, opened from `dir`.
kiln_status openInputOnlyCudaPlan(TempDir &dir, const char *arch,
                                  kiln_artifact **artifact) {
  PlanWriter w;
  w.buffer("x", Kind::Input, DType::F32, {2});
  return openCudaPlan(dir, w, arch, artifact);
}

/// A cuda plan's launches within a block's limits: dynamic shared memory
/// past 48 KiB up to what the plan's GPU lets a kernel opt in to.
TEST(RuntimeErrors, CudaLaunchLimits) {
  struct Case {
    const char *arch;
    int64_t sharedBytes;
    const char *refusal; // null: accepted
  };
  const Case cases[] = {
      {"sm_90", 64 << 10, nullptr},
      {"sm_90", 227 << 10, nullptr},
      {"sm_90", (227 << 10) + 4, "at most 227 KiB of dynamic shared memory"},
      {"sm_80", 163 << 10, nullptr},
      {"sm_80", 170 << 10, "at most 163 KiB of dynamic shared memory"},
      {nullptr, (48 << 10) + 4, "at most 48 KiB of dynamic shared memory"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(c.arch ? c.arch : "no arch") + " " +
                 std::to_string(c.sharedBytes));
    TempDir dir;
    PlanWriter w;
    uint32_t x = w.buffer("x", Kind::Input, DType::F32, {6});
    uint32_t y = w.buffer("y", Kind::Output, DType::F32, {6});
    w.gpuKernel("kiln_test_add", {x, x, y}, 6, 32, "graph.add", 3,
                c.sharedBytes);
    w.entry("predict", {x}, {y});
    kiln_artifact *artifact = nullptr;
    kiln_status status = openCudaPlan(dir, w, c.arch, &artifact);
    if (c.refusal)
      expectError(status, KILN_ERROR_INVALID_FORMAT,
                  {"kernel 'kiln_test_add' launches 6 blocks of 32 threads",
                   c.refusal});
    else
      EXPECT_EQ(status, KILN_OK) << kiln_last_error();
    kiln_artifact_close(artifact);
  }
}

TEST(RuntimeErrors, CudaPlanOnTheFakeDriver) {
  ScopedEnvironment library("KILN_LIBCUDA", KILN_FAKE_LIBCUDA);
  ScopedEnvironment arch("KILN_FAKE_CUDA_ARCH", "80");
  {
    // Without a driver: which library, and why.
    ScopedEnvironment absent("KILN_LIBCUDA", "/nonexistent/libcuda.so.1");
    TempDir dir;
    kiln_artifact *artifact = nullptr;
    ASSERT_EQ(openInputOnlyCudaPlan(dir, nullptr, &artifact), KILN_OK)
        << kiln_last_error();
    kiln_session *session = nullptr;
    expectError(kiln_session_create(artifact, "cuda", 1, &session),
                KILN_ERROR_DEVICE,
                {"kiln_session_create: device 'cuda': no NVIDIA driver: "
                 "/nonexistent/libcuda.so.1 cannot be loaded"});
    kiln_artifact_close(artifact);
  }
  {
    // A GPU index the driver does not have.
    TempDir dir;
    kiln_artifact *artifact = nullptr;
    ASSERT_EQ(openInputOnlyCudaPlan(dir, nullptr, &artifact), KILN_OK)
        << kiln_last_error();
    kiln_session_options options;
    kiln_session_options_init(&options);
    options.device = "cuda";
    options.device_index = 1;
    kiln_session *session = nullptr;
    expectError(kiln_session_create_with_options(artifact, &options, &session),
                KILN_ERROR_DEVICE,
                {"device 'cuda': no CUDA device 1: the driver sees 1"});
    kiln_artifact_close(artifact);
  }
  for (const char *planArch : {"sm_90", "sm_80"}) {
    SCOPED_TRACE(planArch);
    TempDir dir;
    kiln_artifact *artifact = nullptr;
    ASSERT_EQ(openInputOnlyCudaPlan(dir, planArch, &artifact), KILN_OK)
        << kiln_last_error();
    kiln_session *session = nullptr;
    if (std::string(planArch) == "sm_90")
      expectError(kiln_session_create(artifact, "cuda", 1, &session),
                  KILN_ERROR_INVALID_ARGUMENT,
                  {"was compiled for sm_90; the GPU is Kiln Fake GPU (sm_80)",
                   "compile it with --arch=sm_80"});
    else
      expectError(kiln_session_create(artifact, "cuda", 1, &session),
                  KILN_ERROR_DEVICE,
                  {"device 'cuda': cuModuleLoad: CUDA_ERROR_FILE_NOT_FOUND "
                   "(file not found) loading " +
                   dir.file("kernels.ptx")});
    EXPECT_EQ(session, nullptr);
    kiln_artifact_close(artifact);
  }
}

/// kiln_session_create_with_options: the defaults make a cpu session; what
/// it cannot do yet, or what makes no sense, is refused, never ignored.
TEST(RuntimeErrors, SessionOptions) {
  TempDir dir;
  kiln_artifact *artifact = nullptr;
  ASSERT_EQ(openArtifact(dir, addPlan(), &artifact), KILN_OK)
      << kiln_last_error();
  kiln_session_options options;
  kiln_session_options_init(&options);
  EXPECT_EQ(options.struct_size, sizeof options);
  EXPECT_STREQ(options.device, "cpu");
  EXPECT_EQ(options.world_size, 1);
  options.num_threads = 3;
  kiln_session *session = nullptr;
  ASSERT_EQ(kiln_session_create_with_options(artifact, &options, &session),
            KILN_OK)
      << kiln_last_error();
  int32_t threads = 0;
  EXPECT_EQ(kiln_session_num_threads(session, &threads), KILN_OK);
  EXPECT_EQ(threads, 3);
  kiln_session_destroy(session);
  session = nullptr;

  kiln_session_options world = options;
  world.world_size = 2;
  world.rank = 1;
  expectError(kiln_session_create_with_options(artifact, &world, &session),
              KILN_ERROR_UNSUPPORTED,
              {"rank 1 of world size 2: this runtime runs one process"});
  kiln_session_options index = options;
  index.device_index = 1;
  expectError(kiln_session_create_with_options(artifact, &index, &session),
              KILN_ERROR_INVALID_ARGUMENT, {"device index 1 for device 'cpu'"});
  kiln_session_options uninitialized = options;
  uninitialized.struct_size = 0;
  expectError(
      kiln_session_create_with_options(artifact, &uninitialized, &session),
      KILN_ERROR_INVALID_ARGUMENT,
      {"options.struct_size is 0; call kiln_session_options_init first"});
  EXPECT_EQ(session, nullptr);
  kiln_artifact_close(artifact);
}

TEST(RuntimeErrors, InputsOfTheWrongNameShapeOrDtype) {
  Loaded loaded;
  ASSERT_EQ(loaded.open(addPlan()), KILN_OK) << kiln_last_error();
  std::vector<float> x(6, 1.0f);
  int64_t transposed[] = {3, 2};
  expectError(kiln_session_bind_input(loaded.session, "x", x.data(), KILN_F32,
                                      transposed, 2),
              KILN_ERROR_INVALID_ARGUMENT,
              {"kiln_session_bind_input: input 'x' expects f32[2, 3] but was "
               "given f32[3, 2]"});
  EXPECT_EQ(std::string(kiln_session_last_error(loaded.session)),
            kiln_last_error());
  int64_t shape[] = {2, 3};
  expectError(kiln_session_bind_input(loaded.session, "x", x.data(), KILN_I32,
                                      shape, 2),
              KILN_ERROR_INVALID_ARGUMENT,
              {"input 'x' expects f32[2, 3] but was given i32[2, 3]"});
  expectError(kiln_session_bind_input(loaded.session, "tokens", x.data(),
                                      KILN_F32, shape, 2),
              KILN_ERROR_INVALID_ARGUMENT,
              {"no input 'tokens' (its inputs: 'x')"});
  // Output y is not an input either.
  expectError(kiln_session_bind_input(loaded.session, "y", x.data(), KILN_F32,
                                      shape, 2),
              KILN_ERROR_INVALID_ARGUMENT, {"no input 'y'"});
  // Running before binding.
  expectError(kiln_session_run(loaded.session, "predict"),
              KILN_ERROR_INVALID_ARGUMENT,
              {"entry 'predict' reads input 'x', which was never bound"});
  expectError(kiln_session_run(loaded.session, "train_step"),
              KILN_ERROR_INVALID_ARGUMENT,
              {"no entry point 'train_step' (its entries: 'predict')"});
}

TEST(RuntimeErrors, KernelStatusNamesTheOpAndTheBadId) {
  PlanWriter w;
  uint32_t ids = w.buffer("tokens", Kind::Input, DType::I32, {5});
  uint32_t table =
      w.buffer("wte", Kind::Param, DType::F32, {8}, w.init("ones", 0));
  uint32_t out = w.buffer("x", Kind::Output, DType::F32, {5});
  uint32_t status = w.buffer("kiln.status", Kind::Status, DType::I64, {2});
  w.kernel("kiln_test_gather", {ids, table, out, status}, 5, 1, "graph.embed",
           14);
  w.entry("predict", {ids}, {out});
  Loaded loaded;
  ASSERT_EQ(loaded.open(w.finish()), KILN_OK) << kiln_last_error();
  ASSERT_EQ(kiln_session_initialize(loaded.session, 0), KILN_OK);
  int32_t bad[5] = {1, 2, 300, 3, 4};
  int64_t shape[] = {5};
  ASSERT_EQ(kiln_session_bind_input(loaded.session, "tokens", bad, KILN_I32,
                                    shape, 1),
            KILN_OK);
  expectError(kiln_session_run(loaded.session, "predict"),
              KILN_ERROR_INVALID_ARGUMENT,
              {"kiln_session_run: model.kiln:14:3: op 'graph.embed'",
               "embedding id 300 is out of range"});
  // The status is cleared before each run: good ids pass afterwards.
  int32_t good[5] = {1, 2, 7, 3, 4};
  ASSERT_EQ(kiln_session_bind_input(loaded.session, "tokens", good, KILN_I32,
                                    shape, 1),
            KILN_OK);
  EXPECT_EQ(kiln_session_run(loaded.session, "predict"), KILN_OK)
      << kiln_last_error();
  int64_t report[2] = {0, 0};
  expectError(kiln_session_set_buffer(loaded.session, "kiln.status", report,
                                      sizeof report),
              KILN_ERROR_INVALID_ARGUMENT, {"the runtime fills this status"});
}

TEST(RuntimeErrors, BufferAccess) {
  Loaded loaded;
  PlanWriter w;
  uint32_t x = w.buffer("x", Kind::Input, DType::F32, {2});
  uint32_t t = w.buffer("t", Kind::Transient, DType::F32, {2});
  uint32_t y = w.buffer("y", Kind::Output, DType::F32, {2});
  w.kernel("kiln_test_add", {x, x, t}, 2, 1);
  w.kernel("kiln_test_add", {t, x, y}, 2, 1);
  w.entry("predict", {x}, {y});
  ASSERT_EQ(loaded.open(w.finish()), KILN_OK) << kiln_last_error();
  float values[2] = {1, 2};
  expectError(kiln_session_get_buffer(loaded.session, "t", values, 8),
              KILN_ERROR_INVALID_ARGUMENT, {"'t': it is a transient"});
  expectError(kiln_session_get_buffer(loaded.session, "y", values, 4),
              KILN_ERROR_INVALID_ARGUMENT,
              {"buffer 'y' (f32[2]) holds 8 bytes, not 4"});
  expectError(kiln_session_get_buffer(loaded.session, "nope", values, 8),
              KILN_ERROR_INVALID_ARGUMENT, {"no buffer of that name"});
  expectError(
      kiln_session_read_output(loaded.session, "y", KILN_F64, values, 8),
      KILN_ERROR_INVALID_ARGUMENT,
      {"output 'y' is f32[2] but was read as f64"});
  expectError(
      kiln_session_read_output(loaded.session, "x", KILN_F32, values, 8),
      KILN_ERROR_INVALID_ARGUMENT, {"no output 'x' (its outputs: 'y')"});
  // Zero-copy binding through the session's storage counts as binding.
  void *data = nullptr;
  ASSERT_EQ(kiln_session_buffer_data(loaded.session, "x", &data), KILN_OK);
  std::memcpy(data, values, sizeof values);
  ASSERT_EQ(kiln_session_run(loaded.session, "predict"), KILN_OK)
      << kiln_last_error();
  float result[2];
  ASSERT_EQ(kiln_session_read_output(loaded.session, "y", KILN_F32, result,
                                     sizeof result),
            KILN_OK);
  EXPECT_EQ(result[0], 3.0f);
  EXPECT_EQ(result[1], 6.0f);

  size_t index = 0;
  ASSERT_EQ(kiln_artifact_find_buffer(loaded.artifact, "t", &index), KILN_OK);
  kiln_buffer_info info;
  ASSERT_EQ(kiln_artifact_buffer_info(loaded.artifact, index, &info), KILN_OK);
  EXPECT_STREQ(info.name, "t");
  EXPECT_EQ(info.kind, KILN_BUFFER_TRANSIENT);
  EXPECT_EQ(info.dtype, KILN_F32);
  ASSERT_EQ(info.rank, 1);
  EXPECT_EQ(info.shape[0], 2);
  EXPECT_EQ(info.arena_offset, 0);
  expectError(kiln_artifact_buffer_info(loaded.artifact, 3, &info),
              KILN_ERROR_INVALID_ARGUMENT, {"buffer index 3 is out of range"});
}

} // namespace
