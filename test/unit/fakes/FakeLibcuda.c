/*===- FakeLibcuda.c - A driver for machines without a GPU ----------------===
 *
 * Part of Kiln's tests. A stand-in for libcuda.so.1, loaded through
 * KILN_LIBCUDA=<this library>: it exports cuGetProcAddress_v2 and the entry
 * points the runtime takes from it, and behaves as the environment says:
 *
 *   KILN_FAKE_CUDA_DEVICES=N    how many GPUs it sees (default 1)
 *   KILN_FAKE_CUDA_ARCH=XY      their compute capability (default 90)
 *   KILN_FAKE_CUDA_FAIL=F=E     entry point F returns error E
 *   KILN_FAKE_CUDA_MISSING=F    cuGetProcAddress does not find F
 *
 * Device memory is host memory (a device pointer is the address of a
 * 64-byte aligned allocation). A module is its file's directory: loading
 * kernels.ptx or kernels.cubin loads the GPU emulator's host build beside
 * it (kernels.emu.so, the same kernels compiled for the host, blocks
 * [begin, end) per call), and a launch runs the named kernel's blocks
 * [0, grid) through it, its arguments counted from the kernel signature
 * table that build exports. Streams, events, graphs and pinned memory are
 * FakeStreams.c's: work on a stream runs when something waits for it, and a
 * graph replays what its capture froze. KILN_FAKE_CUDA_TRACE=FILE logs each
 * call. Error codes and names are the driver API's (cuda.h).
 *
 *===----------------------------------------------------------------------===*/

#include "FakeStreams.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int envInt(const char *name, int fallback) {
  const char *value = getenv(name);
  return value && *value ? atoi(value) : fallback;
}

CUresult fakeInjected(const char *function) {
  const char *fail = getenv("KILN_FAKE_CUDA_FAIL");
  size_t length = strlen(function);
  if (!fail || strncmp(fail, function, length) != 0 || fail[length] != '=')
    return 0;
  return atoi(fail + length + 1);
}

static int initialized;

static CUresult fakeInit(unsigned flags) {
  (void)flags;
  CUresult error = fakeInjected("cuInit");
  if (!error)
    initialized = 1;
  return error;
}

static CUresult fakeDriverGetVersion(int *version) {
  *version = 13000;
  return fakeInjected("cuDriverGetVersion");
}

static CUresult fakeDeviceGetCount(int *count) {
  if (!initialized)
    return 3; /* CUDA_ERROR_NOT_INITIALIZED */
  *count = envInt("KILN_FAKE_CUDA_DEVICES", 1);
  return fakeInjected("cuDeviceGetCount");
}

static CUresult fakeDeviceGet(int *device, int ordinal) {
  if (ordinal < 0 || ordinal >= envInt("KILN_FAKE_CUDA_DEVICES", 1))
    return 101; /* CUDA_ERROR_INVALID_DEVICE */
  *device = ordinal;
  return fakeInjected("cuDeviceGet");
}

static CUresult fakeDeviceGetName(char *name, int length, int device) {
  (void)device;
  strncpy(name, "Kiln Fake GPU", (size_t)length);
  return fakeInjected("cuDeviceGetName");
}

static CUresult fakeDeviceGetAttribute(int *value, int attribute, int device) {
  (void)device;
  int arch = envInt("KILN_FAKE_CUDA_ARCH", 90);
  if (attribute == 75) /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
    *value = arch / 10;
  else if (attribute == 76) /* ..._MINOR */
    *value = arch % 10;
  else
    return 1; /* CUDA_ERROR_INVALID_VALUE */
  return fakeInjected("cuDeviceGetAttribute");
}

/* --- Contexts ------------------------------------------------------------ */

static int primaryRetains;
static char primaryContext; /* its address is the context handle */

static CUresult fakePrimaryCtxRetain(void **context, int device) {
  fakeTrace("cuDevicePrimaryCtxRetain device %d", device);
  CUresult error = fakeInjected("cuDevicePrimaryCtxRetain");
  if (error)
    return error;
  ++primaryRetains;
  *context = &primaryContext;
  return 0;
}

static CUresult fakePrimaryCtxRelease(int device) {
  (void)device;
  if (primaryRetains <= 0)
    return 201; /* CUDA_ERROR_INVALID_CONTEXT */
  --primaryRetains;
  return 0;
}

static CUresult fakeCtxSetCurrent(void *context) {
  return context == &primaryContext ? fakeInjected("cuCtxSetCurrent") : 201;
}

static CUresult fakeCtxSynchronize(void) {
  fakeTrace("cuCtxSynchronize");
  if (fakeRefuseDuringCapture())
    return kCudaErrorCaptureUnsupported;
  fakeDrainAll();
  return fakeInjected("cuCtxSynchronize");
}

/* --- Memory --------------------------------------------------------------- */

static long liveAllocations;

/* How many allocations are not freed yet (for the tests' leak checks). */
__attribute__((visibility("default"))) long
kiln_fake_cuda_live_allocations(void) {
  return liveAllocations;
}

static CUresult fakeMemAlloc(unsigned long long *pointer, size_t bytes) {
  fakeTrace("cuMemAlloc %zu", bytes);
  if (fakeRefuseDuringCapture())
    return kCudaErrorCaptureUnsupported;
  CUresult error = fakeInjected("cuMemAlloc");
  if (error)
    return error;
  void *memory = aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!memory)
    return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  ++liveAllocations;
  *pointer = (unsigned long long)(uintptr_t)memory;
  return 0;
}

static CUresult fakeMemFree(unsigned long long pointer) {
  fakeTrace("cuMemFree");
  if (fakeRefuseDuringCapture())
    return kCudaErrorCaptureUnsupported;
  if (!pointer)
    return 1;
  /* Like the driver's, a free waits for the work that may use it. */
  fakeDrainAll();
  free((void *)(uintptr_t)pointer);
  --liveAllocations;
  return fakeInjected("cuMemFree");
}

/* The synchronous calls run on the legacy stream: after the blocking
   streams' work (not the non-blocking ones'), never during a capture. */
static CUresult synchronousCall(const char *name, size_t bytes) {
  fakeTrace("%s %zu", name, bytes);
  if (fakeRefuseDuringCapture())
    return kCudaErrorCaptureUnsupported;
  fakeDrainBlocking();
  return fakeInjected(name);
}

static CUresult fakeMemcpyHtoD(unsigned long long destination,
                               const void *source, size_t bytes) {
  CUresult error = synchronousCall("cuMemcpyHtoD", bytes);
  if (!error)
    memcpy((void *)(uintptr_t)destination, source, bytes);
  return error;
}

static CUresult fakeMemcpyDtoH(void *destination, unsigned long long source,
                               size_t bytes) {
  CUresult error = synchronousCall("cuMemcpyDtoH", bytes);
  if (!error)
    memcpy(destination, (const void *)(uintptr_t)source, bytes);
  return error;
}

static CUresult fakeMemcpyDtoD(unsigned long long destination,
                               unsigned long long source, size_t bytes) {
  CUresult error = synchronousCall("cuMemcpyDtoD", bytes);
  if (!error)
    memmove((void *)(uintptr_t)destination, (const void *)(uintptr_t)source,
            bytes);
  return error;
}

static CUresult fakeMemsetD8(unsigned long long destination,
                             unsigned char value, size_t bytes) {
  CUresult error = synchronousCall("cuMemsetD8", bytes);
  if (!error)
    memset((void *)(uintptr_t)destination, value, bytes);
  return error;
}

/* --- Modules and launches --------------------------------------------------
 */

struct FakeFunction {
  HostKernel kernel;
  int arguments;
  /* cuFuncSetAttribute's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES. */
  int maxDynamicShared;
  char name[256];
  struct FakeFunction *next;
};

/* A module owns the functions taken from it. */
struct FakeModule {
  void *emulator;
  const char *signatures;
  struct FakeFunction *functions;
};

static CUresult fakeModuleLoad(struct FakeModule **module, const char *path) {
  CUresult error = fakeInjected("cuModuleLoad");
  if (error)
    return error;
  FILE *file = fopen(path, "rb");
  if (!file)
    return 301; /* CUDA_ERROR_FILE_NOT_FOUND */
  fclose(file);
  char emulator[4096];
  const char *slash = strrchr(path, '/');
  int directory = slash ? (int)(slash - path) : 1;
  snprintf(emulator, sizeof emulator, "%.*s/kernels.emu.so", directory,
           slash ? path : ".");
  void *handle = dlopen(emulator, RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return 218; /* CUDA_ERROR_INVALID_PTX: nothing to run it with */
  struct FakeModule *loaded = calloc(1, sizeof *loaded);
  loaded->emulator = handle;
  loaded->signatures = dlsym(handle, "kiln_kernel_signatures");
  *module = loaded;
  return 0;
}

static CUresult fakeModuleUnload(struct FakeModule *module) {
  if (!module)
    return 400; /* CUDA_ERROR_INVALID_HANDLE */
  while (module->functions) {
    struct FakeFunction *next = module->functions->next;
    free(module->functions);
    module->functions = next;
  }
  dlclose(module->emulator);
  free(module);
  return 0;
}

/* The buffers kernel `name` takes: its line of the signature table,
   "SYMBOL RANGE BYTES0 BYTES1 ...", has two words more. */
static int countArguments(const char *signatures, const char *name) {
  size_t length = strlen(name);
  for (const char *line = signatures; line && *line;) {
    const char *end = strchr(line, '\n');
    if (!end)
      end = line + strlen(line);
    if ((size_t)(end - line) > length && strncmp(line, name, length) == 0 &&
        line[length] == ' ') {
      int words = 0;
      for (const char *c = line; c < end; ++c)
        if (*c != ' ' && (c == line || c[-1] == ' '))
          ++words;
      return words - 2;
    }
    line = *end ? end + 1 : end;
  }
  return -1;
}

static CUresult fakeModuleGetFunction(struct FakeFunction **function,
                                      struct FakeModule *module,
                                      const char *name) {
  if (!module)
    return 400;
  HostKernel kernel = (HostKernel)dlsym(module->emulator, name);
  int arguments =
      module->signatures ? countArguments(module->signatures, name) : -1;
  if (!kernel || arguments < 0)
    return 500; /* CUDA_ERROR_NOT_FOUND */
  struct FakeFunction *found = calloc(1, sizeof *found);
  found->kernel = kernel;
  found->arguments = arguments;
  found->maxDynamicShared = 48 * 1024;
  snprintf(found->name, sizeof found->name, "%s", name);
  found->next = module->functions;
  module->functions = found;
  *function = found;
  return 0;
}

/* sm_90's most dynamic shared memory per block, opted in. */
static const int kMaxOptInShared = 227 * 1024;

static CUresult fakeFuncSetAttribute(struct FakeFunction *function,
                                     int attribute, int value) {
  fakeTrace("cuFuncSetAttribute %d %d", attribute, value);
  if (!function)
    return kCudaErrorInvalidHandle;
  if (attribute != 8) /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    return kCudaErrorInvalidValue;
  if (value < 0 || value > kMaxOptInShared)
    return kCudaErrorInvalidValue;
  function->maxDynamicShared = value;
  return fakeInjected("cuFuncSetAttribute");
}

/* The kernel's blocks as stream work, its parameters' values copied now
   (as the driver copies them at the launch). */
static CUresult fakeLaunchKernel(struct FakeFunction *function, unsigned gridX,
                                 unsigned gridY, unsigned gridZ,
                                 unsigned blockX, unsigned blockY,
                                 unsigned blockZ, unsigned sharedBytes,
                                 void *stream, void **parameters,
                                 void **extra) {
  fakeTrace("cuLaunchKernel %s %u %u %u", function ? function->name : "?",
            gridX, blockX, sharedBytes);
  CUresult error = fakeInjected("cuLaunchKernel");
  if (error)
    return error;
  if (!function)
    return kCudaErrorInvalidHandle;
  /* The plans launch one-dimensional grids and blocks. */
  if (gridY != 1 || gridZ != 1 || blockY != 1 || blockZ != 1 || extra ||
      (int)sharedBytes > function->maxDynamicShared || blockX > 1024 ||
      gridX == 0)
    return kCudaErrorInvalidValue;
  struct FakeWork *work = fakeNewWork(kWorkLaunch);
  work->kernel = function->kernel;
  work->grid = gridX;
  work->bufferCount = function->arguments;
  work->buffers = calloc((size_t)function->arguments + 1, sizeof(void *));
  for (int i = 0; i < function->arguments; ++i)
    work->buffers[i] =
        (void *)(uintptr_t)(*(unsigned long long *)parameters[i]);
  return fakeSubmit(stream, work);
}

struct ErrorText {
  CUresult code;
  const char *name, *text;
};
static const struct ErrorText kErrors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {301, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {401, "CUDA_ERROR_ILLEGAL_STATE",
     "the operation cannot be performed in the present state"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
};

static const struct ErrorText *findError(CUresult code) {
  for (size_t i = 0; i < sizeof kErrors / sizeof kErrors[0]; ++i)
    if (kErrors[i].code == code)
      return &kErrors[i];
  return 0;
}

static CUresult fakeGetErrorName(CUresult error, const char **name) {
  const struct ErrorText *found = findError(error);
  if (!found)
    return 1;
  *name = found->name;
  return 0;
}

static CUresult fakeGetErrorString(CUresult error, const char **text) {
  const struct ErrorText *found = findError(error);
  if (!found)
    return 1;
  *text = found->text;
  return 0;
}

__attribute__((visibility("default"))) CUresult
cuGetProcAddress_v2(const char *symbol, void **function, int cudaVersion,
                    uint64_t flags, int *symbolStatus) {
  (void)cudaVersion;
  (void)flags;
  const struct FakeEntry entries[] = {
      {"cuInit", (void *)fakeInit},
      {"cuDriverGetVersion", (void *)fakeDriverGetVersion},
      {"cuDeviceGetCount", (void *)fakeDeviceGetCount},
      {"cuDeviceGet", (void *)fakeDeviceGet},
      {"cuDeviceGetName", (void *)fakeDeviceGetName},
      {"cuDeviceGetAttribute", (void *)fakeDeviceGetAttribute},
      {"cuGetErrorName", (void *)fakeGetErrorName},
      {"cuGetErrorString", (void *)fakeGetErrorString},
      {"cuDevicePrimaryCtxRetain", (void *)fakePrimaryCtxRetain},
      {"cuDevicePrimaryCtxRelease", (void *)fakePrimaryCtxRelease},
      {"cuCtxSetCurrent", (void *)fakeCtxSetCurrent},
      {"cuCtxSynchronize", (void *)fakeCtxSynchronize},
      {"cuModuleLoad", (void *)fakeModuleLoad},
      {"cuModuleUnload", (void *)fakeModuleUnload},
      {"cuModuleGetFunction", (void *)fakeModuleGetFunction},
      {"cuMemAlloc", (void *)fakeMemAlloc},
      {"cuMemFree", (void *)fakeMemFree},
      {"cuMemcpyHtoD", (void *)fakeMemcpyHtoD},
      {"cuMemcpyDtoH", (void *)fakeMemcpyDtoH},
      {"cuMemcpyDtoD", (void *)fakeMemcpyDtoD},
      {"cuMemsetD8", (void *)fakeMemsetD8},
      {"cuLaunchKernel", (void *)fakeLaunchKernel},
      {"cuFuncSetAttribute", (void *)fakeFuncSetAttribute},
  };
  const char *missing = getenv("KILN_FAKE_CUDA_MISSING");
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; ++i)
    if (strcmp(entries[i].symbol, symbol) == 0 &&
        !(missing && strcmp(missing, symbol) == 0)) {
      *function = entries[i].function;
      if (symbolStatus)
        *symbolStatus = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
      return 0;
    }
  for (size_t i = 0; i < kFakeStreamEntryCount; ++i)
    if (strcmp(kFakeStreamEntries[i].symbol, symbol) == 0 &&
        !(missing && strcmp(missing, symbol) == 0)) {
      *function = kFakeStreamEntries[i].function;
      if (symbolStatus)
        *symbolStatus = 0;
      return 0;
    }
  *function = 0;
  if (symbolStatus)
    *symbolStatus = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
  return 500;          /* CUDA_ERROR_NOT_FOUND */
}
