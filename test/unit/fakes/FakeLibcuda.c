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
 * Error codes and names are the driver API's (cuda.h).
 *
 *===----------------------------------------------------------------------===*/

#include <stdint.h>
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
