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
 * table that build exports. Error codes and names are the driver API's
 * (cuda.h).
 *
 *===----------------------------------------------------------------------===*/

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;

static int envInt(const char *name, int fallback) {
  const char *value = getenv(name);
  return value && *value ? atoi(value) : fallback;
}

/* The error `function` is told to return, else 0. */
static CUresult injected(const char *function) {
  const char *fail = getenv("KILN_FAKE_CUDA_FAIL");
  size_t length = strlen(function);
  if (!fail || strncmp(fail, function, length) != 0 || fail[length] != '=')
    return 0;
  return atoi(fail + length + 1);
}

static int initialized;

static CUresult fakeInit(unsigned flags) {
  (void)flags;
  CUresult error = injected("cuInit");
  if (!error)
    initialized = 1;
  return error;
}

static CUresult fakeDriverGetVersion(int *version) {
  *version = 13000;
  return injected("cuDriverGetVersion");
}

static CUresult fakeDeviceGetCount(int *count) {
  if (!initialized)
    return 3; /* CUDA_ERROR_NOT_INITIALIZED */
  *count = envInt("KILN_FAKE_CUDA_DEVICES", 1);
  return injected("cuDeviceGetCount");
}

static CUresult fakeDeviceGet(int *device, int ordinal) {
  if (ordinal < 0 || ordinal >= envInt("KILN_FAKE_CUDA_DEVICES", 1))
    return 101; /* CUDA_ERROR_INVALID_DEVICE */
  *device = ordinal;
  return injected("cuDeviceGet");
}

static CUresult fakeDeviceGetName(char *name, int length, int device) {
  (void)device;
  strncpy(name, "Kiln Fake GPU", (size_t)length);
  return injected("cuDeviceGetName");
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
  return injected("cuDeviceGetAttribute");
}

/* --- Contexts ------------------------------------------------------------ */

static int primaryRetains;
static char primaryContext; /* its address is the context handle */

static CUresult fakePrimaryCtxRetain(void **context, int device) {
  (void)device;
  CUresult error = injected("cuDevicePrimaryCtxRetain");
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
  return context == &primaryContext ? injected("cuCtxSetCurrent") : 201;
}

static CUresult fakeCtxSynchronize(void) {
  return injected("cuCtxSynchronize");
}

/* --- Memory --------------------------------------------------------------- */

static long liveAllocations;

/* How many allocations are not freed yet (for the tests' leak checks). */
__attribute__((visibility("default"))) long
kiln_fake_cuda_live_allocations(void) {
  return liveAllocations;
}

static CUresult fakeMemAlloc(unsigned long long *pointer, size_t bytes) {
  CUresult error = injected("cuMemAlloc");
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
  if (!pointer)
    return 1;
  free((void *)(uintptr_t)pointer);
  --liveAllocations;
  return injected("cuMemFree");
}

static CUresult fakeMemcpyHtoD(unsigned long long destination,
                               const void *source, size_t bytes) {
  memcpy((void *)(uintptr_t)destination, source, bytes);
  return injected("cuMemcpyHtoD");
}

static CUresult fakeMemcpyDtoH(void *destination, unsigned long long source,
                               size_t bytes) {
  memcpy(destination, (const void *)(uintptr_t)source, bytes);
  return injected("cuMemcpyDtoH");
}

static CUresult fakeMemcpyDtoD(unsigned long long destination,
                               unsigned long long source, size_t bytes) {
  memmove((void *)(uintptr_t)destination, (const void *)(uintptr_t)source,
          bytes);
  return injected("cuMemcpyDtoD");
}

static CUresult fakeMemsetD8(unsigned long long destination,
                             unsigned char value, size_t bytes) {
  memset((void *)(uintptr_t)destination, value, bytes);
  return injected("cuMemsetD8");
}

/* --- Modules and launches --------------------------------------------------
 */

typedef void (*HostKernel)(void **buffers, int64_t begin, int64_t end);

struct FakeFunction {
  HostKernel kernel;
  int arguments;
  struct FakeFunction *next;
};

/* A module owns the functions taken from it. */
struct FakeModule {
  void *emulator;
  const char *signatures;
  struct FakeFunction *functions;
};

static CUresult fakeModuleLoad(struct FakeModule **module, const char *path) {
  CUresult error = injected("cuModuleLoad");
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
  found->next = module->functions;
  module->functions = found;
  *function = found;
  return 0;
}

static CUresult fakeLaunchKernel(struct FakeFunction *function, unsigned gridX,
                                 unsigned gridY, unsigned gridZ,
                                 unsigned blockX, unsigned blockY,
                                 unsigned blockZ, unsigned sharedBytes,
                                 void *stream, void **parameters,
                                 void **extra) {
  (void)blockX;
  (void)stream;
  CUresult error = injected("cuLaunchKernel");
  if (error)
    return error;
  if (!function)
    return 400;
  /* The plans launch one-dimensional grids and blocks. */
  if (gridY != 1 || gridZ != 1 || blockY != 1 || blockZ != 1 || extra ||
      sharedBytes > 48 * 1024)
    return 1;
  void *buffers[256];
  if (function->arguments > 256)
    return 1;
  for (int i = 0; i < function->arguments; ++i)
    buffers[i] = (void *)(uintptr_t)(*(unsigned long long *)parameters[i]);
  function->kernel(buffers, 0, gridX);
  return 0;
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
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
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

struct Entry {
  const char *symbol;
  void *function;
};

__attribute__((visibility("default"))) CUresult
cuGetProcAddress_v2(const char *symbol, void **function, int cudaVersion,
                    uint64_t flags, int *symbolStatus) {
  (void)cudaVersion;
  (void)flags;
  const struct Entry entries[] = {
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
  *function = 0;
  if (symbolStatus)
    *symbolStatus = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
  return 500;          /* CUDA_ERROR_NOT_FOUND */
}
