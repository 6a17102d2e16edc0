/* Run-time tests of the hip backend, one scenario per process (the backend
 * loads its runtime once per process):
 *
 *   test_hip_load amd-no-device LIBRARY
 *       HRX_HIP_LIBRARY=LIBRARY names a real libamdhip64 on a machine without
 *       an AMD GPU: UNAVAILABLE, naming the library and the runtime's
 *       "no device" error; no crash.
 *   test_hip_load amd-no-device-opening LIBRARY
 *       The same, loaded for a device open: GPU_MAX_HW_QUEUES is applied
 *       right before the runtime's first call, and withdrawn when that
 *       runtime refuses.
 *   test_hip_load missing-library PATH
 *       HRX_HIP_LIBRARY=PATH does not exist: UNAVAILABLE naming PATH.
 *   test_hip_load amd-compile LIBRARY
 *       The batch kernel's source, users' kernels and the benchmark's
 *       kernels compile with the hiprtc inside the real libamdhip64 LIBRARY
 *       (ROCm 5) for two AMD architectures, giving ELF code objects; the
 *       toolchain describes the compiler; options reach it in order; a
 *       compile error carries its log; a kernel name of C++ linkage or one
 *       the source lacks is refused. No GPU needed.
 *   test_hip_load nvidia-compile NVRTC
 *       The same with the NVRTC library at path NVRTC (a toolkit's or the
 *       pip wheel's): cubins for sm_90 and sm_80, PTX for an architecture
 *       newer than the NVRTC knows, a refusal for one older than it
 *       supports; the batch kernel as PTX. No GPU needed.
 *   test_hip_load rtc-missing PATH
 *       HRX_RTC_LIBRARY=PATH does not exist: the toolchain and compiles are
 *       UNAVAILABLE, naming PATH and the variable.
 *   test_hip_load fake-cuda LIBRARY / fake-cuda-driver LIBRARY
 *       HRX_HIP_LIBRARY=LIBRARY is the stand-in libcudart of
 *       fake_cudart.c (built with and without cudaFuncGetParamInfo): the
 *       NVIDIA kernel path through the vtable, checked against what the
 *       stand-in saw (module checks and refusals, lookups and parameter
 *       layouts from the runtime or the driver, launches and graph kernel
 *       nodes with their arguments, unloads after a synchronize).
 *   test_hip_load device
 *       The normal search finds a GPU: every vtable entry is exercised and
 *       the data checked (run on a GPU machine).
 *
 * Needs only core/status.c and csrc/backends/hip/ (make -f tests/c/hip.mk
 * hip-load / hip-device). Exit status 0 on success. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "hal/driver.h"
#include "drivers/hip/hip_backend.h"
#include "drivers/hip/hip_batch.h"
#include "bench/bench_kernel_sources.h"
#include "drivers/hip/hip_connections.h"
#include "drivers/hip/hip_dynamic.h"
#include "drivers/hip/hip_kernels.h"
#include "base/status.h"
#include "fake_cudart.h"

/* The core's settings a driver is opened with here. */
static const hrx_hal_device_settings_t hrx_test_settings = {.batching = true};

static int failures;

#define CHECK(cond, ...)                                            \
  do {                                                              \
    if (!(cond)) {                                                  \
      ++failures;                                                   \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                 \
      fputc('\n', stderr);                                          \
    }                                                               \
  } while (0)

/* Fails the test (and returns 1 from the enclosing function) on error. */
#define CHECK_OK(expr)                                                     \
  do {                                                                     \
    hrx_status_t check_status_ = (expr);                                   \
    if (check_status_) {                                                   \
      ++failures;                                                          \
      fprintf(stderr, "FAIL %s:%d: %s: %s: %s\n", __FILE__, __LINE__,      \
              #expr, hrx_status_code_name(hrx_status_code(check_status_)), \
              hrx_status_message(check_status_));                         \
      hrx_status_free(check_status_);                                      \
      return 1;                                                            \
    }                                                                      \
  } while (0)

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Expects load() to fail with UNAVAILABLE, twice (the second from the
 * kept result), and device_open to fail the same way. Returns the message
 * of the first failure (caller frees) or NULL. */
static char* expect_unavailable(bool opening) {
  int count = -1;
  hrx_status_t status = hrx_hip_backend.load(opening, &count);
  CHECK(status != NULL, "load succeeded with %d devices", count);
  if (!status) return NULL;
  CHECK(hrx_status_code(status) == HRX_STATUS_UNAVAILABLE, "code %s: %s",
        hrx_status_code_name(hrx_status_code(status)),
        hrx_status_message(status));
  CHECK(count == -1, "out_device_count written on failure");
  char* message = strdup(hrx_status_message(status));
  printf("load: %s: %s\n", hrx_status_code_name(hrx_status_code(status)),
         message);
  hrx_status_free(status);

  status = hrx_hip_backend.load(opening, &count);
  CHECK(status && hrx_status_code(status) == HRX_STATUS_UNAVAILABLE &&
            strcmp(hrx_status_message(status), message) == 0,
        "second load differs: %s", hrx_status_message(status));
  hrx_status_free(status);

  hrx_backend_device_t* device = NULL;
  status = hrx_hip_backend.device_open(0, &hrx_test_settings, &device);
  CHECK(status && hrx_status_code(status) == HRX_STATUS_UNAVAILABLE,
        "device_open on an unavailable backend: %s",
        hrx_status_message(status));
  CHECK(device == NULL, "device written on failure");
  hrx_status_free(status);
  return message;
}

/* The connection budget around the runtime's first call (hipGetDeviceCount,
 * which refuses here): a load for an open applied GPU_MAX_HW_QUEUES right
 * before it, a listing load did not; the refused runtime's value is
 * withdrawn either way, leaving the environment as it was. */
static void check_budget_at_start(bool opening) {
  hrx_connection_budget_t seen;
  memset(&seen, 0, sizeof(seen));
  CHECK(hrx_hip_connections_last_start(&seen), "no runtime start recorded");
  CHECK(strcmp(seen.variable, "GPU_MAX_HW_QUEUES") == 0, "variable %s",
        seen.variable);
  if (opening) {
    CHECK(strcmp(seen.source, "hrx") == 0 &&
              seen.value == HRX_CONNECTIONS_WANTED(
                                HRX_DEFAULT_STREAM_QUEUE_COUNT),
          "an open's load started the runtime with %s=%d (%s)",
          seen.variable, seen.value, seen.source);
  } else {
    CHECK(strcmp(seen.source, "unset") == 0 && seen.value == 0,
          "a listing load set %s=%d (%s)", seen.variable, seen.value,
          seen.source);
  }
  hrx_connection_budget_t now;
  CHECK(!hrx_hip_connections_at_start(&now),
        "a refused runtime is reported as started (%s)", now.source);
  CHECK(getenv("GPU_MAX_HW_QUEUES") == NULL, "left GPU_MAX_HW_QUEUES=%s",
        getenv("GPU_MAX_HW_QUEUES"));
  CHECK(getenv("HRX_CONNECTION_BUDGET_SET") == NULL,
        "left HRX_CONNECTION_BUDGET_SET=%s",
        getenv("HRX_CONNECTION_BUDGET_SET"));
}

static int scenario_amd_no_device(const char* library, bool opening) {
  setenv("HRX_HIP_LIBRARY", library, 1);
  unsetenv("GPU_MAX_HW_QUEUES");
  unsetenv("HRX_CONNECTION_BUDGET_SET");
  char* message = expect_unavailable(opening);
  if (!message) return 1;
  CHECK(strstr(message, library) != NULL, "library not named: %s", message);
  CHECK(strstr(message, "loaded, but hipGetDeviceCount") != NULL,
        "not the runtime's refusal: %s", message);
  CHECK(strcasestr(message, "device") != NULL, "no 'device' text: %s",
        message);
  free(message);
  const char* loaded = hrx_hip_loaded_library();
  CHECK(loaded && strcmp(loaded, library) == 0, "hrx_hip_loaded_library: %s",
        loaded ? loaded : "(null)");
  const char* platform = hrx_hip_platform();
  CHECK(platform && strcmp(platform, "amd") == 0, "hrx_hip_platform: %s",
        platform ? platform : "(null)");
  check_budget_at_start(opening);
  return 0;
}

static int scenario_missing_library(const char* path) {
  setenv("HRX_HIP_LIBRARY", path, 1);
  char* message = expect_unavailable(true);
  if (!message) return 1;
  CHECK(strstr(message, "HRX_HIP_LIBRARY") != NULL, "variable not named: %s",
        message);
  CHECK(strstr(message, path) != NULL, "path not named: %s", message);
  free(message);
  CHECK(hrx_hip_loaded_library() == NULL, "hrx_hip_loaded_library: %s",
        hrx_hip_loaded_library());
  CHECK(hrx_hip_platform() == NULL, "hrx_hip_platform: %s",
        hrx_hip_platform());
  return 0;
}

/* ------------------------------------------------------------- kernels */

/* One source for both platforms: saxpy, a kernel that needs
 * options (HRX_SCALE defined, HRX_ORDER defined then undefined: the options
 * reach the compiler in order) and a C++-linkage kernel. */
static const char kernel_source[] =
    "#ifndef HRX_SCALE\n"
    "#error HRX_SCALE is not defined: options did not reach the compiler\n"
    "#endif\n"
    "#ifdef HRX_ORDER\n"
    "#error options were passed out of order\n"
    "#endif\n"
    "extern \"C\" __global__ void saxpy(float* y, const float* x, float a,\n"
    "                                   int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "extern \"C\" __global__ void scaled(unsigned int* out) {\n"
    "  out[blockIdx.x * blockDim.x + threadIdx.x] = HRX_SCALE;\n"
    "}\n"
    "/* Dynamic shared memory: each block sums 0..words-1 through it. */\n"
    "extern \"C\" __global__ void shared_sum(unsigned int* out,\n"
    "                                        unsigned int words) {\n"
    "  extern __shared__ unsigned int scratch[];\n"
    "  for (unsigned int i = threadIdx.x; i < words; i += blockDim.x)\n"
    "    scratch[i] = i;\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x == 0) {\n"
    "    unsigned int sum = 0;\n"
    "    for (unsigned int i = 0; i < words; ++i) sum += scratch[i];\n"
    "    out[blockIdx.x] = sum;\n"
    "  }\n"
    "}\n"
    "__global__ void cpp_linkage(int* p) { *p = 1; }\n";

static const char* const kernel_options[] = {"-DHRX_SCALE=3",
                                             "-DHRX_ORDER=1", "-UHRX_ORDER"};
static const char* const kernel_names[] = {"saxpy", "scaled", "shared_sum"};

/* Expects `status` to be a failure with `code` whose message contains
 * each of the NULL-terminated `needles`. Frees it. */
static void expect_failure(hrx_status_t status, hrx_status_code_t code,
                           const char* what, ...) {
  CHECK(status != NULL, "%s succeeded", what);
  if (!status) return;
  CHECK(hrx_status_code(status) == code, "%s: code %s: %s", what,
        hrx_status_code_name(hrx_status_code(status)),
        hrx_status_message(status));
  va_list needles;
  va_start(needles, what);
  for (const char* needle = va_arg(needles, const char*); needle;
       needle = va_arg(needles, const char*)) {
    CHECK(strstr(hrx_status_message(status), needle) != NULL,
          "%s: no \"%s\" in: %s", what, needle, hrx_status_message(status));
  }
  va_end(needles);
  printf("  %s: %s: %.300s%s\n", what,
         hrx_status_code_name(hrx_status_code(status)),
         hrx_status_message(status),
         strlen(hrx_status_message(status)) > 300 ? "..." : "");
  hrx_status_free(status);
}

/* The compile rules both platforms share, for `target`: the toolchain
 * describes what kernel_compile makes; user kernels with options in order,
 * the benchmark's kernels; a compile error carries the log; a C++ kernel
 * name is refused. Returns the image format the toolchain names. */
static int check_compile(const char* platform, const char* library,
                         const char* target, const char* want_language,
                         const char* want_format) {
  hrx_kernel_compiler_t toolchain;
  CHECK_OK(hrx_hip_kernel_toolchain(platform, library, target, &toolchain));
  printf("  %s: language %s, compiler \"%s\", target %s, format %s\n",
         target, toolchain.language, toolchain.compiler, toolchain.target,
         toolchain.image_format);
  CHECK(strcmp(toolchain.language, want_language) == 0, "language %s",
        toolchain.language);
  CHECK(strcmp(toolchain.target, target) == 0, "target %s", toolchain.target);
  CHECK(strcmp(toolchain.image_format, want_format) == 0, "format %s",
        toolchain.image_format);
  CHECK(strstr(toolchain.compiler, "rtc") != NULL ||
            strstr(toolchain.compiler, "amdhip64") != NULL,
        "compiler %s", toolchain.compiler);
  CHECK(strchr(toolchain.compiler, ' ') != NULL &&
            strstr(toolchain.compiler, "unknown") == NULL,
        "no version in \"%s\"", toolchain.compiler);

  void* image = NULL;
  size_t size = 0;
  CHECK_OK(hrx_hip_kernel_compile(platform, library, target, kernel_source,
                                  kernel_names, 3, kernel_options, 3, &image,
                                  &size));
  bool elf = size > 4 && memcmp(image, "\x7f" "ELF", 4) == 0;
  if (strcmp(want_format, "ptx") == 0) {
    CHECK(!elf && strstr((const char*)image, ".entry saxpy") != NULL,
          "%s: not PTX with saxpy (%zu bytes)", target, size);
  } else {
    CHECK(elf, "%s: not an ELF %s (%zu bytes)", target, want_format, size);
  }
  printf("  %s: user kernels, %zu bytes of %s\n", target, size, want_format);
  free(image);

  image = NULL;
  CHECK_OK(hrx_hip_kernel_compile(platform, library, target,
                                  hrx_bench_kernel_source("cuda"),
                                  hrx_bench_kernel_symbols,
                                  HRX_BENCH_KERNEL_COUNT, NULL, 0, &image,
                                  &size));
  CHECK(image && size > 4, "%s: empty benchmark kernels", target);
  printf("  %s: benchmark kernels, %zu bytes of %s\n", target, size,
         want_format);
  free(image);

  /* Without the options the source's #error fires: the log says which. */
  image = NULL;
  expect_failure(hrx_hip_kernel_compile(platform, library, target,
                                        kernel_source, kernel_names, 3, NULL,
                                        0, &image, &size),
                 HRX_STATUS_INVALID_ARGUMENT, "compile error",
                 "options did not reach the compiler", "saxpy", NULL);
  CHECK(image == NULL, "image written on failure");
  const char* broken = "extern \"C\" __global__ void k(int* p) { *p = q; }\n";
  const char* k_name = "k";
  expect_failure(hrx_hip_kernel_compile(platform, library, target, broken,
                                        &k_name, 1, NULL, 0, &image, &size),
                 HRX_STATUS_INVALID_ARGUMENT, "undefined identifier", "*p = q",
                 NULL);
  /* A kernel of C++ linkage cannot be looked up by its name. */
  const char* cpp_name = "cpp_linkage";
  expect_failure(hrx_hip_kernel_compile(platform, library, target,
                                        kernel_source, &cpp_name, 1,
                                        kernel_options, 3, &image, &size),
                 HRX_STATUS_INVALID_ARGUMENT, "C++ kernel name", "cpp_linkage",
                 "extern \"C\"", NULL);
  /* A name the source does not define. */
  const char* missing = "no_such_kernel";
  expect_failure(hrx_hip_kernel_compile(platform, library, target,
                                        kernel_source, &missing, 1,
                                        kernel_options, 3, &image, &size),
                 HRX_STATUS_INVALID_ARGUMENT, "missing kernel name",
                 "no_such_kernel", NULL);
  /* A bad option is the caller's too. */
  const char* bad_option = "--no-such-option-hrx";
  expect_failure(hrx_hip_kernel_compile(platform, library, target,
                                        kernel_source, kernel_names, 1,
                                        &bad_option, 1, &image, &size),
                 HRX_STATUS_INVALID_ARGUMENT, "bad option", NULL);
  return 0;
}

static int scenario_amd_compile(const char* library) {
  const char* targets[] = {"gfx90a:sramecc+:xnack-", "gfx1030"};
  for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); ++i) {
    char* image = NULL;
    size_t size = 0;
    char description[384] = "";
    hrx_status_t status = hrx_hip_batch_compile(
        "amd", library, targets[i], &image, &size, description,
        sizeof(description));
    CHECK(status == NULL, "compile for %s: %s", targets[i],
          hrx_status_message(status));
    hrx_status_free(status);
    if (!image) continue;
    CHECK(size > 4 && memcmp(image, "\x7f" "ELF", 4) == 0,
          "%s: not an ELF code object (%zu bytes)", targets[i], size);
    CHECK(strstr(description, "code object from") != NULL,
          "description: %s", description);
    printf("  %s: %zu bytes, %s\n", targets[i], size, description);
    free(image);
  }
  /* Users' kernels and the benchmark's, for two architectures. */
  if (check_compile("amd", library, "gfx90a", "hip", "hsaco")) return 1;
  if (check_compile("amd", library, "gfx1030", "hip", "hsaco")) return 1;
  hrx_kernel_compiler_t toolchain;
  expect_failure(hrx_hip_kernel_toolchain("amd", library, "sm_90", &toolchain),
                 HRX_STATUS_UNAVAILABLE, "an NVIDIA target on AMD", "sm_90",
                 NULL);
  return 0;
}

/* NVRTC from a toolkit or the pip wheel, no GPU: cubins for the exact
 * architecture, PTX for one newer than this NVRTC knows, a clear refusal
 * for one older than it supports, and the batch kernel as PTX. */
static int scenario_nvidia_compile(const char* library) {
  setenv("HRX_RTC_LIBRARY", library, 1);
  if (check_compile("nvidia", NULL, "sm_90", "cuda", "cubin")) return 1;
  if (check_compile("nvidia", NULL, "sm_80", "cuda", "cubin")) return 1;
  /* An architecture past the newest this NVRTC lists: PTX for the newest
   * one below it, which the driver compiles for the device. */
  hrx_kernel_compiler_t toolchain;
  CHECK_OK(hrx_hip_kernel_toolchain("nvidia", NULL, "sm_999", &toolchain));
  CHECK(strcmp(toolchain.image_format, "ptx") == 0, "sm_999 format %s",
        toolchain.image_format);
  if (check_compile("nvidia", NULL, "sm_999", "cuda", "ptx")) return 1;
  expect_failure(hrx_hip_kernel_toolchain("nvidia", NULL, "sm_10", &toolchain),
                 HRX_STATUS_UNAVAILABLE, "an architecture older than NVRTC's",
                 "sm_10", "HRX_RTC_LIBRARY", NULL);
  expect_failure(hrx_hip_kernel_toolchain("nvidia", NULL, "gfx90a", &toolchain),
                 HRX_STATUS_UNAVAILABLE, "an AMD target on NVIDIA", "gfx90a",
                 NULL);
  char* image = NULL;
  size_t size = 0;
  char description[384] = "";
  CHECK_OK(hrx_hip_batch_compile("nvidia", NULL, "sm_90", &image, &size,
                                 description, sizeof(description)));
  CHECK(strncmp(description, "PTX from libnvrtc.so", 20) == 0 &&
            strstr(description, "for compute_90") != NULL,
        "batch kernel: %s", description);
  CHECK(image && strstr(image, ".entry hrx_batch_execute") != NULL,
        "batch kernel is not PTX");
  printf("  batch kernel: %s\n", description);
  free(image);
  return 0;
}

/* No compiler where HRX_RTC_LIBRARY points: UNAVAILABLE naming the path and
 * the variable, from both the toolchain and a compile. */
static int scenario_rtc_missing(const char* path) {
  setenv("HRX_RTC_LIBRARY", path, 1);
  hrx_kernel_compiler_t toolchain;
  expect_failure(hrx_hip_kernel_toolchain("amd", NULL, "gfx90a", &toolchain),
                 HRX_STATUS_UNAVAILABLE, "toolchain", path, "HRX_RTC_LIBRARY",
                 "hiprtc", NULL);
  void* image = NULL;
  size_t size = 0;
  expect_failure(hrx_hip_kernel_compile("amd", NULL, "gfx90a", kernel_source,
                                        kernel_names, 1, NULL, 0, &image,
                                        &size),
                 HRX_STATUS_UNAVAILABLE, "compile", path, NULL);
  CHECK(image == NULL, "image written on failure");
  return 0;
}

/* ---------------------------------------------------------------- device */

typedef struct device_fixture_s {
  hrx_backend_device_t* device;
  const hrx_backend_vtable_t* vt;
} device_fixture_t;

/* A queue of the normal lane, and a wait for all of a queue's work. */
static hrx_status_t create_queue(device_fixture_t* f,
                                 hrx_native_queue_t** out_queue) {
  int native_priority = 0;
  return f->vt->queue.create(f->device, HRX_STREAM_PRIORITY_NORMAL, 0,
                             out_queue, &native_priority);
}

static hrx_status_t sync_queue(device_fixture_t* f, hrx_native_queue_t* queue) {
  bool done = false;
  return f->vt->queue.wait(f->device, queue, HRX_WAIT_FOREVER, &done);
}

static hrx_status_t sync_event(device_fixture_t* f, hrx_native_event_t* event) {
  bool done = false;
  return f->vt->event.wait(f->device, event, HRX_WAIT_FOREVER, &done);
}

static uint8_t pattern_byte(uint64_t seed, uint64_t i) {
  return (uint8_t)((i * 131u + seed * 7u + (i >> 9)) & 0xff);
}

/* Uploads `length` bytes of pattern `seed` to dst through a host buffer
 * that is overwritten right after the call (upload borrows it only for the
 * call). */
static int upload_pattern(device_fixture_t* f, hrx_native_queue_t* queue,
                          void* dst, uint64_t length, uint64_t seed) {
  uint8_t* host = malloc(length);
  if (!host) return 1;
  for (uint64_t i = 0; i < length; ++i) host[i] = pattern_byte(seed, i);
  hrx_status_t status = f->vt->queue.upload(f->device, queue, dst, host, length);
  memset(host, 0xEE, length);
  free(host);
  CHECK_OK(status);
  return 0;
}

/* Downloads and compares against pattern `seed`. */
static int expect_pattern(device_fixture_t* f, hrx_native_queue_t* queue,
                          const void* src, uint64_t length, uint64_t seed,
                          const char* what) {
  void* host = NULL;
  CHECK_OK(f->vt->memory.host_alloc(f->device, length, &host));
  memset(host, 0, length);
  CHECK_OK(f->vt->queue.download(f->device, queue, host, src, length));
  CHECK_OK(sync_queue(f, queue));
  const uint8_t* bytes = host;
  uint64_t bad = 0;
  for (uint64_t i = 0; i < length; ++i) {
    if (bytes[i] != pattern_byte(seed, i)) {
      if (bad == 0) {
        fprintf(stderr, "%s: byte %llu is %u, want %u\n", what,
                (unsigned long long)i, bytes[i], pattern_byte(seed, i));
      }
      ++bad;
    }
  }
  CHECK(bad == 0, "%s: %llu of %llu bytes differ", what,
        (unsigned long long)bad, (unsigned long long)length);
  f->vt->memory.host_free(f->device, host);
  return 0;
}

/* Downloads `count` slots of `slot` bytes at once; slot k must hold
 * pattern seed + k. */
static int expect_slots(device_fixture_t* f, hrx_native_queue_t* queue,
                        const uint8_t* region, uint64_t slot, int count,
                        uint64_t seed, const char* what) {
  uint64_t length = slot * (uint64_t)count;
  void* host = NULL;
  CHECK_OK(f->vt->memory.host_alloc(f->device, length, &host));
  CHECK_OK(f->vt->queue.download(f->device, queue, host, region, length));
  CHECK_OK(sync_queue(f, queue));
  const uint8_t* bytes = host;
  int bad_slots = 0;
  for (int k = 0; k < count; ++k) {
    for (uint64_t i = 0; i < slot; ++i) {
      if (bytes[(uint64_t)k * slot + i] != pattern_byte(seed + (uint64_t)k, i)) {
        ++bad_slots;
        break;
      }
    }
  }
  CHECK(bad_slots == 0, "%s: %d of %d slots differ", what, bad_slots, count);
  f->vt->memory.host_free(f->device, host);
  return bad_slots != 0;
}

typedef struct upload_thread_s {
  device_fixture_t* fixture;
  hrx_native_queue_t* shared_queue;  /* NULL: the thread makes its own */
  uint8_t* region;   /* device memory of `count` slots of `slot` bytes */
  uint64_t slot;
  int count;
  uint64_t seed;
  int result;
} upload_thread_t;

static void* upload_thread_main(void* arg) {
  upload_thread_t* t = arg;
  device_fixture_t* f = t->fixture;
  hrx_native_queue_t* queue = t->shared_queue;
  hrx_status_t status =
      queue ? NULL : create_queue(f, &queue);
  if (status) {
    fprintf(stderr, "thread queue_create: %s\n", hrx_status_message(status));
    hrx_status_free(status);
    t->result = 1;
    return NULL;
  }
  uint8_t* host = malloc(t->slot);
  for (int k = 0; k < t->count && t->result == 0; ++k) {
    for (uint64_t i = 0; i < t->slot; ++i) {
      host[i] = pattern_byte(t->seed + (uint64_t)k, i);
    }
    status = f->vt->queue.upload(f->device, queue, t->region + (uint64_t)k * t->slot,
                           host, t->slot);
    if (status) {
      fprintf(stderr, "thread upload: %s\n", hrx_status_message(status));
      hrx_status_free(status);
      t->result = 1;
    }
  }
  free(host);
  if (t->result == 0) {
    t->result = expect_slots(f, queue, t->region, t->slot, t->count, t->seed,
                             "thread upload");
  }
  if (!t->shared_queue) f->vt->queue.destroy(f->device, queue);
  return NULL;
}

/* The batch kernel against a host model: the benchmark's repeated copy,
 * dependent commands (sequential mode with barriers, unaligned and
 * byte-path commands) and independent multi-chunk commands (parallel
 * mode). */
static int exercise_batches(device_fixture_t* f, hrx_native_queue_t* queue) {
  const uint64_t size = 1u << 20;
  uint8_t* a = NULL;
  uint8_t* b = NULL;
  CHECK_OK(f->vt->memory.alloc(f->device, size, (void**)&a));
  CHECK_OK(f->vt->memory.alloc(f->device, size, (void**)&b));
  if (upload_pattern(f, queue, a, size, 11)) return 1;
  CHECK_OK(f->vt->queue.fill(f->device, queue, b, 0, size));
  uint8_t* model = calloc(1, size);
  uint8_t* source = malloc(size);
  for (uint64_t i = 0; i < size; ++i) source[i] = pattern_byte(11, i);
  hrx_batch_command_t c[HRX_BATCH_MAX_COMMANDS];
  uint32_t n = 0;
  uint32_t published = 0;
  /* 1: the same 4 KiB copy 160 times. */
  for (n = 0; n < HRX_BATCH_MAX_COMMANDS; ++n) {
    c[n] = (hrx_batch_command_t){.dst = b, .src = a, .length = 4096,
                                 .kind = HRX_BATCH_COPY};
  }
  memcpy(model, source, 4096);
  CHECK_OK(f->vt->queue.batch_submit(f->device, queue, c, n, &published));
  CHECK(published == n, "published %u of %u", published, n);
  /* 2: dependent commands, in order. */
  n = 0;
#define HRX_ADD_COPY(d, s, len)                                              \
  do {                                                                       \
    c[n++] = (hrx_batch_command_t){.dst = b + (d), .src = a + (s),           \
                                   .length = (len), .kind = HRX_BATCH_COPY}; \
    memcpy(model + (d), source + (s), (len));                                \
  } while (0)
#define HRX_ADD_FILL(d, len, v)                                              \
  do {                                                                       \
    c[n++] = (hrx_batch_command_t){.dst = b + (d), .length = (len),          \
                                   .kind = HRX_BATCH_FILL, .byte = (v)};     \
    memset(model + (d), (v), (len));                                         \
  } while (0)
  HRX_ADD_FILL(8192, 4096, 0x5a);
  /* b -> b copy depending on the fill (read after write). */
  c[n++] = (hrx_batch_command_t){.dst = b + 16384, .src = b + 8192,
                                 .length = 4096, .kind = HRX_BATCH_COPY};
  memcpy(model + 16384, model + 8192, 4096);
  HRX_ADD_COPY(8192 + 100, 3, 1000);        /* overwrite part of the fill */
  HRX_ADD_COPY(20001, 777, 5003);           /* byte path, odd sizes */
  HRX_ADD_FILL(30001, 99, 0xc3);
  HRX_ADD_COPY(65536, 65536, 65536);        /* 4 chunks in one block */
  for (int k = 0; k < 100; ++k) HRX_ADD_COPY(200000 + 17 * k, 5000 + k, 33);
  CHECK_OK(f->vt->queue.batch_submit(f->device, queue, c, n, &published));
  CHECK(published == n, "published %u of %u", published, n);
  /* 3: independent commands, parallel mode, multi-chunk. */
  n = 0;
  HRX_ADD_COPY(300000, 300000, 40000);
  HRX_ADD_COPY(400000 + 16, 400000, 50000);
  HRX_ADD_FILL(500000, 65536, 0x11);
  HRX_ADD_COPY(600003, 600001, 12345);
#undef HRX_ADD_COPY
#undef HRX_ADD_FILL
  CHECK_OK(f->vt->queue.batch_submit(f->device, queue, c, n, &published));
  CHECK_OK(sync_queue(f, queue));
  uint8_t* host = NULL;
  CHECK_OK(f->vt->memory.host_alloc(f->device, size, (void**)&host));
  CHECK_OK(f->vt->queue.download(f->device, queue, host, b, size));
  CHECK_OK(sync_queue(f, queue));
  uint64_t bad = 0;
  for (uint64_t i = 0; i < size; ++i) {
    if (host[i] != model[i]) {
      if (!bad) {
        fprintf(stderr, "batch: byte %llu is %u, want %u\n",
                (unsigned long long)i, host[i], model[i]);
      }
      ++bad;
    }
  }
  CHECK(bad == 0, "batch kernel: %llu of %llu bytes differ",
        (unsigned long long)bad, (unsigned long long)size);
  f->vt->memory.host_free(f->device, host);
  free(model);
  free(source);
  f->vt->memory.free(f->device, a);
  f->vt->memory.free(f->device, b);
  hrx_device_info_t info;
  CHECK_OK(f->vt->query_info(f->device, &info));
  printf("  batch publication: %s\n", info.batch_publication);
  CHECK(strstr(info.batch_publication, "unavailable") == NULL,
        "no batch kernel: %s", info.batch_publication);
  return 0;
}

static void count_host_call(void* user_data) {
  atomic_fetch_add((atomic_int*)user_data, 1);
}

/* The runtime's per-thread last error is clean: hrx reported its own
 * failures without leaving them for another library on the thread. */
static void expect_last_error_clean(const char* after) {
  if (!hrx_hip_rt.sym.GetLastError) return;
  hrx_hip_error_t last = hrx_hip_rt.sym.GetLastError();
  CHECK(last == hrx_hip_rt.platform->success, "%s left last error %d", after,
        (int)last);
}

/* Uploads `count` 32-bit words; downloads them back into `out`. */
static int upload_words(device_fixture_t* f, hrx_native_queue_t* queue,
                        void* dst, const void* words, size_t count) {
  CHECK_OK(f->vt->queue.upload(f->device, queue, dst, words, count * 4));
  return 0;
}

static int download_words(device_fixture_t* f, hrx_native_queue_t* queue,
                          void* out, const void* src, size_t count) {
  void* host = NULL;
  CHECK_OK(f->vt->memory.host_alloc(f->device, count * 4, &host));
  CHECK_OK(f->vt->queue.download(f->device, queue, host, src, count * 4));
  CHECK_OK(sync_queue(f, queue));
  memcpy(out, host, count * 4);
  f->vt->memory.host_free(f->device, host);
  return 0;
}

typedef struct launch_thread_s {
  device_fixture_t* fixture;
  hrx_native_kernel_t* tiny;
  unsigned int* out;  /* device: one word */
  int launches;
  int result;
} launch_thread_t;

/* Launches the tiny kernel `launches` times on a queue of its own. */
static void* launch_thread_main(void* arg) {
  launch_thread_t* t = arg;
  device_fixture_t* f = t->fixture;
  hrx_native_queue_t* queue = NULL;
  hrx_status_t status = create_queue(f, &queue);
  const void* args[] = {&t->out};
  const uint32_t sizes[] = {sizeof(void*)};
  hrx_kernel_launch_t launch = {.grid = {1, 1, 1}, .block = {32, 1, 1},
                                .arg_count = 1, .args = args,
                                .arg_sizes = sizes};
  for (int i = 0; !status && i < t->launches; ++i) {
    status = f->vt->kernel.launch(f->device, queue, t->tiny, &launch);
  }
  if (!status) status = sync_queue(f, queue);
  if (status) {
    fprintf(stderr, "launch thread: %s\n", hrx_status_message(status));
    hrx_status_free(status);
    t->result = 1;
  }
  if (queue) f->vt->queue.destroy(f->device, queue);
  return NULL;
}

/* The kernel entries of the vtable, alone: toolchain, compile, load, look
 * up with the parameter layout, launch and check the data, errors (compile
 * log, corrupt and foreign images, a missing name, a refused launch),
 * dynamic shared memory beyond 48 KiB, a kernel node in a native graph,
 * launches from several threads, and an unload that waits for a running
 * launch. */
static int exercise_kernels(device_fixture_t* f, hrx_native_queue_t* queue) {
  const hrx_backend_vtable_t* vt = f->vt;
  hrx_device_info_t info;
  CHECK_OK(vt->query_info(f->device, &info));
  bool nvidia = strcmp(info.platform, "nvidia") == 0;
  printf("  limits: %u threads per block, block %u x %u x %u, grid %u x %u "
         "x %u, %llu bytes of shared memory per block\n",
         info.max_threads_per_block, info.max_block_dim[0],
         info.max_block_dim[1], info.max_block_dim[2], info.max_grid_dim[0],
         info.max_grid_dim[1], info.max_grid_dim[2],
         (unsigned long long)info.max_shared_bytes_per_block);
  CHECK(info.max_threads_per_block >= 256, "max threads %u",
        info.max_threads_per_block);
  CHECK(info.max_block_dim[0] >= 256 && info.max_block_dim[1] >= 1 &&
            info.max_block_dim[2] >= 1,
        "block limits");
  CHECK(info.max_grid_dim[0] >= 65535 && info.max_grid_dim[1] >= 1 &&
            info.max_grid_dim[2] >= 1,
        "grid limits");
  CHECK(info.max_shared_bytes_per_block >= 32768, "shared %llu",
        (unsigned long long)info.max_shared_bytes_per_block);
  /* The opt-in maximum, beyond the 48 KiB every CUDA device has. */
  CHECK(!nvidia || info.max_shared_bytes_per_block > 49152,
        "shared %llu is not the opt-in maximum",
        (unsigned long long)info.max_shared_bytes_per_block);

  hrx_kernel_compiler_t toolchain;
  CHECK_OK(vt->kernel.toolchain(f->device, &toolchain));
  printf("  toolchain: %s, \"%s\", %s, %s\n", toolchain.language,
         toolchain.compiler, toolchain.target, toolchain.image_format);
  CHECK(strcmp(toolchain.language, nvidia ? "cuda" : "hip") == 0,
        "language %s", toolchain.language);
  CHECK(strcmp(toolchain.target, info.target) == 0, "target %s",
        toolchain.target);

  uint64_t t0 = now_ns();
  void* image = NULL;
  size_t size = 0;
  CHECK_OK(vt->kernel.compile(f->device, kernel_source, kernel_names, 3,
                              kernel_options, 3, &image, &size));
  uint64_t compile_ns = now_ns() - t0;
  hrx_native_module_t* module = NULL;
  t0 = now_ns();
  CHECK_OK(vt->kernel.module_load(f->device, image, size, &module));
  printf("  compiled %zu bytes of %s in %.1f ms, loaded in %.2f ms\n", size,
         toolchain.image_format, compile_ns / 1e6, (now_ns() - t0) / 1e6);
  free(image);

  /* saxpy: its parameters as the runtime lays them out. */
  hrx_native_kernel_t* saxpy = NULL;
  hrx_kernel_attributes_t ki;
  CHECK_OK(vt->kernel.module_get_kernel(f->device, module, "saxpy", &saxpy, &ki));
  printf("  saxpy: %d parameters", ki.param_count);
  for (int i = 0; i < ki.param_count; ++i) {
    printf(" [%u at %u]", ki.param_size[i], ki.param_offset[i]);
  }
  printf(", %u threads per block, %llu static + up to %llu dynamic shared "
         "bytes\n",
         ki.max_threads_per_block, (unsigned long long)ki.static_shared_bytes,
         (unsigned long long)ki.max_dynamic_shared_bytes);
  /* CUDA 12.8+ runtimes (and 12.5+ with a 12.4+ driver) tell the layout. */
  CHECK(!nvidia || ki.param_count == 4, "param_count %d", ki.param_count);
  if (ki.param_count == 4) {
    static const uint32_t want_size[] = {8, 8, 4, 4};
    static const uint32_t want_offset[] = {0, 8, 16, 20};
    for (int i = 0; i < 4; ++i) {
      CHECK(ki.param_size[i] == want_size[i] &&
                ki.param_offset[i] == want_offset[i],
            "parameter %d: %u bytes at %u", i, ki.param_size[i],
            ki.param_offset[i]);
    }
  }
  CHECK(ki.max_threads_per_block > 0 &&
            ki.max_threads_per_block <= info.max_threads_per_block,
        "kernel max threads %u", ki.max_threads_per_block);
  CHECK(ki.static_shared_bytes == 0, "saxpy static shared %llu",
        (unsigned long long)ki.static_shared_bytes);
  CHECK(ki.max_dynamic_shared_bytes == info.max_shared_bytes_per_block,
        "saxpy may use %llu dynamic shared bytes of %llu",
        (unsigned long long)ki.max_dynamic_shared_bytes,
        (unsigned long long)info.max_shared_bytes_per_block);
  /* On NVIDIA the driver's own parameter query agrees with what the
   * backend reported (the path taken where the runtime lacks one). */
  if (nvidia && hrx_hip_rt.sym.GetDriverEntryPointByVersion) {
    void* address = NULL;
    hrx_hip_driver_entry_status_t found = -1;
    hrx_hip_error_t err = hrx_hip_rt.sym.GetDriverEntryPointByVersion(
        "cuKernelGetParamInfo", &address,
        HRX_HIP_CUDA_KERNEL_PARAM_INFO_VERSION, HRX_HIP_CUDA_ENABLE_DEFAULT,
        &found);
    CHECK(err == 0 && found == 0 && address, "no cuKernelGetParamInfo: %d %d",
          (int)err, (int)found);
    if (address) {
      hrx_hip_driver_result_t (*param_info)(hrx_hip_kernel_t, size_t,
                                            size_t*, size_t*) = NULL;
      memcpy(&param_info, &address, sizeof(address));
      for (int i = 0; i < 5; ++i) {
        size_t offset = 0, psize = 0;
        hrx_hip_driver_result_t r =
            param_info((hrx_hip_kernel_t)saxpy, (size_t)i, &offset, &psize);
        if (i < 4) {
          CHECK(r == 0 && offset == ki.param_offset[i] &&
                    psize == ki.param_size[i],
                "driver parameter %d: %d, %zu at %zu", i, (int)r, psize,
                offset);
        } else {
          CHECK(r == HRX_HIP_CUDA_DRIVER_ERROR_INVALID_VALUE,
                "driver parameter past the last: %d", (int)r);
        }
      }
    }
  }

  /* saxpy on a queue, checked. */
  enum { kN = 1 << 20 };
  float* xs = malloc(kN * sizeof(float));
  float* ys = malloc(kN * sizeof(float));
  for (int i = 0; i < kN; ++i) {
    xs[i] = (float)(i % 1000) * 0.5f;
    ys[i] = 1.0f;
  }
  void* x = NULL;
  void* y = NULL;
  CHECK_OK(vt->memory.alloc(f->device, kN * sizeof(float), &x));
  CHECK_OK(vt->memory.alloc(f->device, kN * sizeof(float), &y));
  if (upload_words(f, queue, x, xs, kN) || upload_words(f, queue, y, ys, kN)) {
    return 1;
  }
  float a = 2.0f;
  int n = kN;
  const void* saxpy_args[] = {&y, &x, &a, &n};
  const uint32_t saxpy_sizes[] = {8, 8, 4, 4};
  hrx_kernel_launch_t launch = {.grid = {kN / 256, 1, 1}, .block = {256, 1, 1},
                                .shared_bytes = 0, .arg_count = 4,
                                .args = saxpy_args, .arg_sizes = saxpy_sizes};
  CHECK_OK(vt->kernel.launch(f->device, queue, saxpy, &launch));
  /* The values were copied at the call. */
  a = -100.0f;
  n = 0;
  if (download_words(f, queue, ys, y, kN)) return 1;
  int bad = 0;
  for (int i = 0; i < kN; ++i) {
    bad += ys[i] != 2.0f * ((float)(i % 1000) * 0.5f) + 1.0f;
  }
  CHECK(bad == 0, "saxpy: %d of %d values differ", bad, kN);

  /* scaled: the options reached the compiler (HRX_SCALE=3). */
  hrx_native_kernel_t* scaled = NULL;
  CHECK_OK(vt->kernel.module_get_kernel(f->device, module, "scaled", &scaled, &ki));
  enum { kWords = 256 };
  unsigned int words[kWords];
  unsigned int* out = NULL;
  CHECK_OK(vt->memory.alloc(f->device, kWords * 4, (void**)&out));
  CHECK_OK(vt->queue.fill(f->device, queue, out, 0, kWords * 4));
  const void* out_args[] = {&out};
  const uint32_t pointer_size[] = {sizeof(void*)};
  hrx_kernel_launch_t scaled_launch = {
      .grid = {4, 1, 1}, .block = {64, 1, 1}, .arg_count = 1,
      .args = out_args, .arg_sizes = pointer_size};
  CHECK_OK(vt->kernel.launch(f->device, queue, scaled, &scaled_launch));
  if (download_words(f, queue, words, out, kWords)) return 1;
  bad = 0;
  for (int i = 0; i < kWords; ++i) bad += words[i] != 3;
  CHECK(bad == 0, "scaled: %d words are not 3", bad);

  /* Dynamic shared memory beyond 48 KiB where the device allows it. */
  hrx_native_kernel_t* shared_sum = NULL;
  CHECK_OK(vt->kernel.module_get_kernel(f->device, module, "shared_sum", &shared_sum,
                                 &ki));
  unsigned int shared_words = (unsigned int)(ki.max_dynamic_shared_bytes / 4);
  if (shared_words > 25600) shared_words = 25600;  /* 100 KiB */
  CHECK(!nvidia || shared_words * 4u > 49152u,
        "only %u bytes of dynamic shared memory", shared_words * 4u);
  const void* sum_args[] = {&out, &shared_words};
  const uint32_t sum_sizes[] = {sizeof(void*), 4};
  hrx_kernel_launch_t sum_launch = {
      .grid = {2, 1, 1}, .block = {256, 1, 1},
      .shared_bytes = (uint64_t)shared_words * 4u, .arg_count = 2,
      .args = sum_args, .arg_sizes = sum_sizes};
  CHECK_OK(vt->kernel.launch(f->device, queue, shared_sum, &sum_launch));
  if (download_words(f, queue, words, out, 2)) return 1;
  unsigned int want_sum = 0;
  for (unsigned int i = 0; i < shared_words; ++i) want_sum += i;
  CHECK(words[0] == want_sum && words[1] == want_sum,
        "shared_sum over %u words: %u %u, want %u", shared_words, words[0],
        words[1], want_sum);
  printf("  shared_sum used %u bytes of dynamic shared memory\n",
         shared_words * 4u);

  /* A launch the runtime refuses returns its error and leaves the
   * runtime's last error clean. */
  hrx_kernel_launch_t too_big = scaled_launch;
  too_big.block[0] = info.max_threads_per_block * 2;
  expect_failure(vt->kernel.launch(f->device, queue, scaled, &too_big),
                 HRX_STATUS_DEVICE_ERROR, "a refused launch",
                 nvidia ? "cudaLaunchKernel" : "hipModuleLaunchKernel", NULL);
  expect_last_error_clean("a refused launch");
  /* The queue still works. */
  CHECK_OK(vt->kernel.launch(f->device, queue, scaled, &scaled_launch));
  CHECK_OK(sync_queue(f, queue));

  /* Errors through the vtable. */
  const char* broken = "extern \"C\" __global__ void k(int* p) { *p = q; }\n";
  const char* k_name = "k";
  image = NULL;
  expect_failure(vt->kernel.compile(f->device, broken, &k_name, 1, NULL, 0,
                                    &image, &size),
                 HRX_STATUS_INVALID_ARGUMENT, "compile error", "*p = q", NULL);
  hrx_native_module_t* bad_module = NULL;
  static const char garbage[64] = "this is not a kernel image";
  expect_failure(vt->kernel.module_load(f->device, garbage, sizeof(garbage),
                                 &bad_module),
                 HRX_STATUS_INVALID_ARGUMENT, "a corrupt image",
                 /* CUDA loads lazily: cudaLibraryLoadData may accept the
                  * bytes and cuLibraryGetModule refuse them, so the message
                  * names whichever call refused. */
                 nvidia ? "CUDA runtime" : "hipModuleLoadData",
                 "cannot load this image", NULL);
  CHECK(bad_module == NULL, "module written on failure");
  expect_last_error_clean("a corrupt image");
  expect_failure(vt->kernel.module_load(f->device, garbage, 0, &bad_module),
                 HRX_STATUS_INVALID_ARGUMENT, "an empty image", "empty", NULL);
  if (nvidia) {
    /* A cubin for another architecture family is refused at load. */
    const char* other = strcmp(info.target, "sm_80") == 0 ? "sm_90" : "sm_80";
    image = NULL;
    CHECK_OK(hrx_hip_kernel_compile("nvidia", NULL, other, kernel_source,
                                    kernel_names, 1, kernel_options, 3, &image,
                                    &size));
    expect_failure(vt->kernel.module_load(f->device, image, size, &bad_module),
                   HRX_STATUS_INVALID_ARGUMENT, "a foreign cubin",
                   "cannot load this image", NULL);
    CHECK(bad_module == NULL, "module written on failure");
    expect_last_error_clean("a foreign cubin");
    free(image);
    /* PTX for an older architecture loads (the driver compiles it). */
    char* ptx = NULL;
    char description[384];
    CHECK_OK(hrx_hip_batch_compile("nvidia", NULL, "sm_80", &ptx, &size,
                                   description, sizeof(description)));
    hrx_native_module_t* ptx_module = NULL;
    CHECK_OK(vt->kernel.module_load(f->device, ptx, size - 1, &ptx_module));
    hrx_native_kernel_t* batch = NULL;
    CHECK_OK(vt->kernel.module_get_kernel(f->device, ptx_module, "hrx_batch_execute",
                                   &batch, &ki));
    CHECK(ki.param_count == 1 && ki.param_size[0] > 3000,
          "batch kernel parameters: %d, %u bytes", ki.param_count,
          ki.param_size[0]);
    vt->kernel.module_unload(f->device, ptx_module);
    free(ptx);
  }
  hrx_native_kernel_t* missing = NULL;
  expect_failure(vt->kernel.module_get_kernel(f->device, module, "no_such_kernel",
                                       &missing, &ki),
                 HRX_STATUS_INVALID_ARGUMENT, "a missing kernel",
                 "no_such_kernel", "extern \"C\"", NULL);
  CHECK(missing == NULL, "kernel written on failure");
  expect_last_error_clean("a missing kernel");

  /* A kernel node in a native graph: fill, then scaled, then a copy; the
   * argument values are taken when the graph is made. */
  {
    unsigned int* copy_dst = NULL;
    CHECK_OK(vt->memory.alloc(f->device, kWords * 4, (void**)&copy_dst));
    unsigned int* node_out = out;
    const void* node_args[] = {&node_out};
    hrx_kernel_launch_t node_launch = scaled_launch;
    node_launch.args = node_args;
    const uint32_t after_fill = 0;
    const uint32_t after_kernel = 1;
    hrx_native_graph_node_t nodes[3] = {
        {.kind = HRX_NATIVE_GRAPH_FILL, .dst = out, .length = kWords * 4,
         .byte = 0},
        {.kind = HRX_NATIVE_GRAPH_KERNEL, .kernel = scaled,
         .launch = &node_launch, .after = &after_fill, .after_count = 1},
        {.kind = HRX_NATIVE_GRAPH_COPY, .dst = copy_dst, .src = out,
         .length = kWords * 4, .after = &after_kernel, .after_count = 1},
    };
    hrx_native_graph_t* graph = NULL;
    CHECK_OK(vt->graph.create(f->device, nodes, 3, &graph));
    node_out = NULL;
    for (int round = 0; round < 2; ++round) {
      CHECK_OK(vt->queue.fill(f->device, queue, copy_dst, 0xff, kWords * 4));
      CHECK_OK(vt->graph.launch(f->device, queue, graph));
    }
    if (download_words(f, queue, words, copy_dst, kWords)) return 1;
    bad = 0;
    for (int i = 0; i < kWords; ++i) bad += words[i] != 3;
    CHECK(bad == 0, "graph kernel node: %d words are not 3", bad);
    vt->graph.destroy(f->device, graph);
    vt->memory.free(f->device, copy_dst);
  }

  /* The benchmark's kernels: tiny from several threads at once, each on a
   * queue of its own, and spin under an unload that must wait for it. */
  image = NULL;
  CHECK_OK(vt->kernel.compile(f->device, hrx_bench_kernel_source("cuda"),
                              hrx_bench_kernel_symbols,
                              HRX_BENCH_KERNEL_COUNT, NULL, 0, &image,
                              &size));
  hrx_native_module_t* bench = NULL;
  CHECK_OK(vt->kernel.module_load(f->device, image, size, &bench));
  free(image);
  hrx_native_kernel_t* tiny = NULL;
  hrx_native_kernel_t* spin = NULL;
  CHECK_OK(vt->kernel.module_get_kernel(f->device, bench, "hrx_bench_tiny", &tiny,
                                 &ki));
  CHECK(!nvidia || (ki.param_count == 1 && ki.param_size[0] == 8),
        "tiny parameters %d", ki.param_count);
  CHECK_OK(vt->kernel.module_get_kernel(f->device, bench, "hrx_bench_spin", &spin,
                                 &ki));
  {
    enum { kThreads = 4, kLaunches = 5000 };
    unsigned int* counters = NULL;
    CHECK_OK(vt->memory.alloc(f->device, kThreads * 4, (void**)&counters));
    CHECK_OK(vt->queue.fill(f->device, queue, counters, 0, kThreads * 4));
    CHECK_OK(sync_queue(f, queue));
    pthread_t threads[kThreads];
    launch_thread_t args[kThreads];
    t0 = now_ns();
    for (int t = 0; t < kThreads; ++t) {
      args[t] = (launch_thread_t){f, tiny, counters + t, kLaunches, 0};
      pthread_create(&threads[t], NULL, launch_thread_main, &args[t]);
    }
    for (int t = 0; t < kThreads; ++t) {
      pthread_join(threads[t], NULL);
      CHECK(args[t].result == 0, "launch thread %d failed", t);
    }
    double seconds = (now_ns() - t0) / 1e9;
    if (download_words(f, queue, words, counters, kThreads)) return 1;
    for (int t = 0; t < kThreads; ++t) {
      CHECK(words[t] == kLaunches, "thread %d: %u of %d launches ran", t,
            words[t], kLaunches);
    }
    printf("  %d threads x %d tiny launches through the vtable: %.0f "
           "launches/s (incl. queue creation and synchronize)\n",
           kThreads, kLaunches, kThreads * kLaunches / seconds);
    vt->memory.free(f->device, counters);
  }
  {
    /* One thread, the lean path alone. */
    enum { kLaunches = 20000 };
    const void* tiny_args[] = {&out};
    hrx_kernel_launch_t tiny_launch = {
        .grid = {1, 1, 1}, .block = {32, 1, 1}, .arg_count = 1,
        .args = tiny_args, .arg_sizes = pointer_size};
    for (int i = 0; i < 1000; ++i) {
      CHECK_OK(vt->kernel.launch(f->device, queue, tiny, &tiny_launch));
    }
    CHECK_OK(sync_queue(f, queue));
    t0 = now_ns();
    for (int i = 0; i < kLaunches; ++i) {
      CHECK_OK(vt->kernel.launch(f->device, queue, tiny, &tiny_launch));
    }
    double us = (now_ns() - t0) / 1e3 / kLaunches;
    CHECK_OK(sync_queue(f, queue));
    printf("  one thread, tiny kernel_launch: %.2f us per launch\n", us);
  }
  {
    unsigned long long spin_ns = 50000000ull;  /* 50 ms */
    CHECK_OK(vt->queue.fill(f->device, queue, out, 0, 4));
    const void* spin_args[] = {&spin_ns, &out};
    const uint32_t spin_sizes[] = {8, sizeof(void*)};
    hrx_kernel_launch_t spin_launch = {
        .grid = {1, 1, 1}, .block = {32, 1, 1}, .arg_count = 2,
        .args = spin_args, .arg_sizes = spin_sizes};
    CHECK_OK(sync_queue(f, queue));
    t0 = now_ns();
    CHECK_OK(vt->kernel.launch(f->device, queue, spin, &spin_launch));
    vt->kernel.module_unload(f->device, bench);
    double unload_ms = (now_ns() - t0) / 1e6;
    uint64_t pending = 1;
    CHECK_OK(vt->queue.query(f->device, queue, &pending));
    CHECK(pending == 0, "the spin kernel still runs after module_unload");
    CHECK(unload_ms >= 40.0, "module_unload returned after %.1f ms, before "
          "the 50 ms launch ended", unload_ms);
    printf("  module_unload waited %.1f ms for a 50 ms launch\n", unload_ms);
    if (download_words(f, queue, words, out, 1)) return 1;
    CHECK(words[0] == 1, "spin kernel wrote %u", words[0]);
  }

  vt->kernel.module_unload(f->device, module);
  expect_last_error_clean("the kernel tests");
  vt->memory.free(f->device, out);
  vt->memory.free(f->device, x);
  vt->memory.free(f->device, y);
  free(xs);
  free(ys);
  return 0;
}

static int scenario_device(void) {
  int count = 0;
  CHECK_OK(hrx_hip_backend.load(true, &count));
  printf("library %s, platform %s, %d device(s)\n", hrx_hip_loaded_library(),
         hrx_hip_platform(), count);
  CHECK(count >= 1, "count %d", count);

  device_fixture_t f = {0};
  hrx_status_t status =
      hrx_hip_backend.device_open(count, &hrx_test_settings, &f.device);
  CHECK(status && hrx_status_code(status) == HRX_STATUS_OUT_OF_RANGE,
        "device_open(count): %s", hrx_status_message(status));
  hrx_status_free(status);
  CHECK_OK(hrx_hip_backend.device_open(0, &hrx_test_settings, &f.device));
  f.vt = f.device->vtable;

  hrx_device_info_t info;
  CHECK_OK(f.vt->query_info(f.device, &info));
  printf("info: backend=%s index=%d name=\"%s\" target=%s runtime=\"%s\" "
         "total=%llu max_native_queues=%d\n",
         info.backend, info.index, info.name, info.target, info.runtime,
         (unsigned long long)info.total_memory, info.max_native_queues);
  CHECK(strcmp(info.backend, "hip") == 0, "backend %s", info.backend);
  CHECK(info.name[0] != '\0', "empty name");
  CHECK(strncmp(info.target, "sm_", 3) == 0 ||
            strncmp(info.target, "gfx", 3) == 0,
        "target %s", info.target);
  CHECK(strstr(info.runtime, "runtime") != NULL, "runtime %s", info.runtime);
  CHECK(strcmp(info.platform, strncmp(info.target, "sm_", 3) == 0 ? "nvidia"
                                                                  : "amd") == 0,
        "platform %s for target %s", info.platform, info.target);
  CHECK(info.total_memory > 0, "total memory 0");
  CHECK(info.max_native_queues == 0, "max_native_queues %d",
        info.max_native_queues);
  uint64_t free_bytes = 0;
  CHECK_OK(f.vt->query_free_memory(f.device, &free_bytes));
  CHECK(free_bytes > 0 && free_bytes <= info.total_memory, "free %llu",
        (unsigned long long)free_bytes);

  hrx_native_queue_t* q1 = NULL;
  hrx_native_queue_t* q2 = NULL;
  CHECK_OK(create_queue(&f, &q1));
  CHECK_OK(create_queue(&f, &q2));
  CHECK(f.vt->queue.native_handle(q1) != NULL, "null native handle");
  CHECK(f.vt->queue.native_handle(q1) != f.vt->queue.native_handle(q2),
        "queues share a stream");

  /* Sizes crossing the ring / block boundary. */
  static const uint64_t sizes[] = {1, 100, 4096, 1u << 20, (4u << 20),
                                   (4u << 20) + 1, (6u << 20) + 3,
                                   (33u << 20) + 17};
  const uint64_t max_size = (33u << 20) + 17;
  void* a = NULL;
  void* b = NULL;
  CHECK_OK(f.vt->memory.alloc(f.device, max_size, &a));
  CHECK_OK(f.vt->memory.alloc(f.device, max_size, &b));
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
    uint64_t n = sizes[i];
    if (upload_pattern(&f, q1, a, n, i)) return 1;
    CHECK_OK(f.vt->queue.copy(f.device, q1, b, a, n));
    char what[64];
    snprintf(what, sizeof(what), "upload+copy of %llu bytes",
             (unsigned long long)n);
    if (expect_pattern(&f, q1, b, n, i, what)) return 1;
  }

  /* Fill, then cross-queue ordering through an event. */
  {
    const uint64_t n = 8u << 20;
    hrx_native_event_t* event = NULL;
    CHECK_OK(f.vt->event.create(f.device, &event));
    CHECK_OK(f.vt->queue.fill(f.device, q1, a, 0x5A, n));
    CHECK_OK(f.vt->event.record(f.device, q1, event));
    CHECK_OK(f.vt->queue.wait_event(f.device, q2, event));
    CHECK_OK(f.vt->queue.copy(f.device, q2, b, a, n));
    void* host = NULL;
    CHECK_OK(f.vt->memory.host_alloc(f.device, n, &host));
    CHECK_OK(f.vt->queue.download(f.device, q2, host, b, n));
    CHECK_OK(f.vt->event.record(f.device, q2, event));
    CHECK_OK(sync_event(&f, event));
    bool done = false;
    CHECK_OK(f.vt->event.query(f.device, event, &done));
    CHECK(done, "event not done after synchronize");
    const uint8_t* bytes = host;
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; ++i) bad += bytes[i] != 0x5A;
    CHECK(bad == 0, "fill/event/copy: %llu bytes differ",
          (unsigned long long)bad);
    f.vt->memory.host_free(f.device, host);
    f.vt->event.destroy(f.device, event);
  }

  /* Many small uploads: the ring wraps and fence slots are reused many
   * times over. */
  {
    const uint64_t slot = 4096;
    const int uploads = 20000;
    uint8_t* region = NULL;
    CHECK_OK(f.vt->memory.alloc(f.device, slot * (uint64_t)uploads, (void**)&region));
    /* A backlog ahead of the uploads, so that the fence slots run out while
     * their copies wait and uploads must wait for the oldest. */
    void* backlog = NULL;
    const uint64_t backlog_bytes = 1ull << 30;
    CHECK_OK(f.vt->memory.alloc(f.device, backlog_bytes, &backlog));
    for (int k = 0; k < 8; ++k) {
      CHECK_OK(f.vt->queue.fill(f.device, q1, backlog, (uint8_t)k, backlog_bytes));
    }
    uint8_t* host = malloc(slot);
    uint64_t start = now_ns();
    for (int k = 0; k < uploads; ++k) {
      for (uint64_t i = 0; i < slot; ++i) host[i] = pattern_byte(1000 + k, i);
      CHECK_OK(f.vt->queue.upload(f.device, q1, region + (uint64_t)k * slot, host,
                            slot));
    }
    uint64_t elapsed = now_ns() - start;
    free(host);
    CHECK_OK(sync_queue(&f, q1));
    printf("%d uploads of 4 KiB behind a backlog: %.2f us each (host time, "
           "incl. making the pattern)\n",
           uploads, (double)elapsed / uploads / 1000.0);
    if (expect_slots(&f, q2, region, slot, uploads, 1000, "small uploads")) {
      return 1;
    }
    f.vt->memory.free(f.device, backlog);
    f.vt->memory.free(f.device, region);
  }

  /* Concurrent uploads from four threads: two share q2, two have their
   * own queues. */
  {
    enum { kThreads = 4 };
    const uint64_t slot = 4096;
    const int per_thread = 3000;
    uint8_t* region = NULL;
    CHECK_OK(f.vt->memory.alloc(f.device, slot * per_thread * kThreads,
                         (void**)&region));
    pthread_t threads[kThreads];
    upload_thread_t args[kThreads];
    for (int t = 0; t < kThreads; ++t) {
      args[t] = (upload_thread_t){&f, t < 2 ? q2 : NULL,
                                  region + (uint64_t)t * slot * per_thread,
                                  slot, per_thread, 50000u * (t + 1), 0};
      pthread_create(&threads[t], NULL, upload_thread_main, &args[t]);
    }
    for (int t = 0; t < kThreads; ++t) {
      pthread_join(threads[t], NULL);
      CHECK(args[t].result == 0, "upload thread %d failed", t);
    }
    f.vt->memory.free(f.device, region);
  }

  /* Idle latency of a small copy then event_synchronize. */
  {
    hrx_native_event_t* event = NULL;
    CHECK_OK(f.vt->event.create(f.device, &event));
    enum { kSamples = 2000 };
    static uint64_t samples[kSamples];
    for (int k = 0; k < kSamples; ++k) {
      uint64_t t0 = now_ns();
      CHECK_OK(f.vt->queue.copy(f.device, q1, b, a, 4096));
      CHECK_OK(f.vt->event.record(f.device, q1, event));
      CHECK_OK(sync_event(&f, event));
      samples[k] = now_ns() - t0;
    }
    for (int i = 1; i < kSamples; ++i) {
      uint64_t v = samples[i];
      int j = i - 1;
      while (j >= 0 && samples[j] > v) {
        samples[j + 1] = samples[j];
        --j;
      }
      samples[j + 1] = v;
    }
    printf("4 KiB copy + record + event_synchronize: median %.1f us, "
           "p95 %.1f us\n",
           samples[kSamples / 2] / 1000.0,
           samples[(kSamples * 95 + 99) / 100 - 1] / 1000.0);
    f.vt->event.destroy(f.device, event);
  }

  /* Native graphs: fill a, copy a -> b after it, fill the head of b after
   * the copy; instantiated once, launched twice; then the host-function
   * entry orders a later copy after itself. */
  {
    const uint64_t n = 1u << 20;
    const uint32_t after_fill = 0;
    const uint32_t after_copy = 1;
    hrx_native_graph_node_t nodes[3] = {
        {.kind = HRX_NATIVE_GRAPH_FILL, .dst = a, .length = n, .byte = 0x11},
        {.kind = HRX_NATIVE_GRAPH_COPY, .dst = b, .src = a, .length = n,
         .after = &after_fill, .after_count = 1},
        {.kind = HRX_NATIVE_GRAPH_FILL, .dst = b, .length = 16, .byte = 0x22,
         .after = &after_copy, .after_count = 1},
    };
    hrx_native_graph_t* graph = NULL;
    CHECK_OK(f.vt->graph.create(f.device, nodes, 3, &graph));
    for (int round = 0; round < 2; ++round) {
      CHECK_OK(f.vt->queue.fill(f.device, q1, b, 0, n));
      CHECK_OK(f.vt->graph.launch(f.device, q1, graph));
    }
    uint8_t* host = NULL;
    CHECK_OK(f.vt->memory.host_alloc(f.device, n, (void**)&host));
    CHECK_OK(f.vt->queue.download(f.device, q1, host, b, n));
    CHECK_OK(sync_queue(&f, q1));
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; ++i) bad += host[i] != (i < 16 ? 0x22 : 0x11);
    CHECK(bad == 0, "native graph: %llu bytes differ", (unsigned long long)bad);
    /* Host time of one launch of 64 independent 4 KiB copies, against 64
     * separate copies (the point of a native graph: one call). */
    enum { kCopies = 64, kRounds = 200 };
    hrx_native_graph_node_t copies[kCopies];
    for (int k = 0; k < kCopies; ++k) {
      copies[k] = (hrx_native_graph_node_t){
          .kind = HRX_NATIVE_GRAPH_COPY, .dst = (uint8_t*)b + 4096u * k,
          .src = (uint8_t*)a + 4096u * k, .length = 4096};
    }
    hrx_native_graph_t* batch = NULL;
    CHECK_OK(f.vt->graph.create(f.device, copies, kCopies, &batch));
    uint64_t t0 = now_ns();
    for (int r = 0; r < kRounds; ++r) {
      CHECK_OK(f.vt->graph.launch(f.device, q1, batch));
    }
    uint64_t graph_ns = now_ns() - t0;
    CHECK_OK(sync_queue(&f, q1));
    t0 = now_ns();
    for (int r = 0; r < kRounds; ++r) {
      for (int k = 0; k < kCopies; ++k) {
        CHECK_OK(f.vt->queue.copy(f.device, q1, copies[k].dst, copies[k].src, 4096));
      }
    }
    uint64_t copy_ns = now_ns() - t0;
    CHECK_OK(sync_queue(&f, q1));
    printf("64 x 4 KiB copies: one native graph launch %.1f us, 64 copy "
           "calls %.1f us (host time per round)\n",
           graph_ns / 1000.0 / kRounds, copy_ns / 1000.0 / kRounds);
    /* A host function blocks the queue's later work until it returns. */
    static atomic_int host_calls;
    atomic_store(&host_calls, 0);
    CHECK_OK(f.vt->queue.fill(f.device, q1, a, 0x33, n));
    CHECK_OK(f.vt->queue.host_call(f.device, q1, count_host_call, &host_calls));
    CHECK_OK(f.vt->queue.copy(f.device, q1, b, a, n));
    CHECK_OK(f.vt->queue.download(f.device, q1, host, b, n));
    CHECK_OK(sync_queue(&f, q1));
    CHECK(atomic_load(&host_calls) == 1, "host function ran %d times",
          atomic_load(&host_calls));
    CHECK(host[0] == 0x33 && host[n - 1] == 0x33, "copy after host function");
    f.vt->memory.host_free(f.device, host);
    f.vt->graph.destroy(f.device, batch);
    f.vt->graph.destroy(f.device, graph);
  }

  /* Errors carry the runtime's names. */
  {
    void* huge = NULL;
    status = f.vt->memory.alloc(f.device, 1ull << 52, &huge);
    CHECK(status && hrx_status_code(status) == HRX_STATUS_OUT_OF_MEMORY,
          "huge alloc: %s %s",
          hrx_status_code_name(hrx_status_code(status)),
          hrx_status_message(status));
    CHECK(status && strstr(hrx_status_message(status), "Malloc failed: "),
          "message: %s", hrx_status_message(status));
    printf("huge alloc: %s: %s\n",
           hrx_status_code_name(hrx_status_code(status)),
           hrx_status_message(status));
    CHECK(huge == NULL, "out_ptr written on failure");
    hrx_status_free(status);
    /* The refusal is hrx's to report: the runtime's per-thread last error,
     * which other libraries on this thread read, is left clean. */
    CHECK(hrx_hip_rt.sym.GetLastError != NULL, "GetLastError not bound");
    if (hrx_hip_rt.sym.GetLastError) {
      hrx_hip_error_t last = hrx_hip_rt.sym.GetLastError();
      CHECK(hrx_hip_ok(last), "the failed Malloc left last error %d", (int)last);
    }
  }

  f.vt->memory.free(f.device, a);
  f.vt->memory.free(f.device, b);
  if (exercise_batches(&f, q1)) return 1;
  printf("kernels:\n");
  if (exercise_kernels(&f, q2)) return 1;
  f.vt->queue.destroy(f.device, q1);
  f.vt->queue.destroy(f.device, q2);
  f.vt->destroy(f.device);
  return 0;
}

/* ------------------------------------------------------------ fake CUDA */

/* Loads `text` as a module; the status of module_load. */
static hrx_status_t load_text(device_fixture_t* f, const char* text,
                              hrx_native_module_t** out_module) {
  /* No NUL passed: the backend terminates its copy itself. */
  return f->vt->kernel.module_load(f->device, text, strlen(text), out_module);
}

/* module_load refuses `text` with `code`, the message naming `api` (and
 * `also`, when given), and leaves no library loaded. */
static void expect_refused(device_fixture_t* f,
                           const fake_cudart_state_t* state,
                           const char* text, hrx_status_code_t code,
                           const char* what, const char* api,
                           const char* also) {
  int live = state->libraries_loaded - state->libraries_unloaded;
  hrx_native_module_t* module = NULL;
  expect_failure(load_text(f, text, &module), code, what, api, also, NULL);
  CHECK(module == NULL, "%s: module written on failure", what);
  CHECK(state->libraries_loaded - state->libraries_unloaded == live,
        "%s: a library stayed loaded", what);
  expect_last_error_clean(what);
}

/* module_load accepts `text` (the driver's answer was about the context,
 * not the image); unloads it again. */
static int expect_loaded(device_fixture_t* f, const char* text,
                         const char* what) {
  hrx_native_module_t* module = NULL;
  hrx_status_t status = load_text(f, text, &module);
  CHECK(status == NULL, "%s: %s", what, hrx_status_message(status));
  hrx_status_free(status);
  if (module) f->vt->kernel.module_unload(f->device, module);
  return 0;
}

/* The NVIDIA kernel path against the stand-in libcudart (fake_cudart.c):
 * limits, module checks and refusals, lookups with parameter layouts (from
 * cudaFuncGetParamInfo, or with `driver_params` from the driver's
 * cuKernelGetParamInfo), the shared-memory opt-in, launches and graph
 * kernel nodes with their argument values, refused launches, unloads that
 * synchronize first; and no compiler: UNAVAILABLE naming HRX_RTC_LIBRARY. */
static int scenario_fake_cuda(const char* library, bool driver_params) {
  setenv("HRX_HIP_LIBRARY", library, 1);
  setenv("HRX_RTC_LIBRARY", "/nonexistent/hrx-test/libnvrtc.so", 1);
  int count = 0;
  CHECK_OK(hrx_hip_backend.load(true, &count));
  CHECK(strcmp(hrx_hip_platform(), "nvidia") == 0, "platform %s",
        hrx_hip_platform());
  void* handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  fake_cudart_state_fn state_fn = NULL;
  void* address = handle ? dlsym(handle, "fake_cudart_state") : NULL;
  memcpy(&state_fn, &address, sizeof(address));
  CHECK(state_fn != NULL, "%s has no fake_cudart_state", library);
  if (!state_fn) return 1;
  const fake_cudart_state_t* state = state_fn();

  device_fixture_t fx = {0};
  device_fixture_t* f = &fx;
  /* Batching off: the batch kernel is not prepared (there is no compiler). */
  const hrx_hal_device_settings_t unbatched = {.batching = false};
  CHECK_OK(hrx_hip_backend.device_open(0, &unbatched, &fx.device));
  fx.vt = fx.device->vtable;
  const hrx_backend_vtable_t* vt = fx.vt;
  hrx_device_info_t info;
  CHECK_OK(vt->query_info(f->device, &info));
  CHECK(strcmp(info.target, "sm_90") == 0, "target %s", info.target);
  CHECK(info.max_threads_per_block == 1024 && info.max_block_dim[0] == 1024 &&
            info.max_block_dim[1] == 1024 && info.max_block_dim[2] == 64 &&
            info.max_grid_dim[0] == 2147483647u &&
            info.max_grid_dim[1] == 65535 && info.max_grid_dim[2] == 65535,
        "launch limits %u %u %u %u %u %u %u", info.max_threads_per_block,
        info.max_block_dim[0], info.max_block_dim[1], info.max_block_dim[2],
        info.max_grid_dim[0], info.max_grid_dim[1], info.max_grid_dim[2]);
  CHECK(info.max_shared_bytes_per_block == 232448,
        "shared %llu is not the opt-in maximum",
        (unsigned long long)info.max_shared_bytes_per_block);

  hrx_kernel_compiler_t toolchain;
  expect_failure(vt->kernel.toolchain(f->device, &toolchain),
                 HRX_STATUS_UNAVAILABLE, "no compiler", "NVRTC",
                 "HRX_RTC_LIBRARY", "/nonexistent/hrx-test/libnvrtc.so", NULL);
  void* image = NULL;
  size_t size = 0;
  expect_failure(vt->kernel.compile(f->device, "x", kernel_names, 1, NULL, 0,
                                    &image, &size),
                 HRX_STATUS_UNAVAILABLE, "compile without a compiler",
                 "HRX_RTC_LIBRARY", NULL);

  hrx_native_queue_t* queue = NULL;
  CHECK_OK(create_queue(f, &queue));

  static const char good[] =
      "FAKE-IMAGE\n"
      "kernel saxpy 0 8,8,4,4\n"
      "kernel big 1024 8,1,8\n"
      "kernel opaque 0 ?\n"
      "kernel none 0 -\n";
  hrx_native_module_t* module = NULL;
  CHECK_OK(load_text(f, good, &module));
  CHECK(state->driver_function_queries == 0,
        "the kernel check ran although cuLibraryGetModule loaded the image");

  hrx_native_kernel_t* saxpy = NULL;
  hrx_kernel_attributes_t ki;
  CHECK_OK(vt->kernel.module_get_kernel(f->device, module, "saxpy", &saxpy, &ki));
  CHECK(ki.param_count == 4, "saxpy: %d parameters", ki.param_count);
  static const uint32_t saxpy_offsets[] = {0, 8, 16, 20};
  static const uint32_t saxpy_sizes[] = {8, 8, 4, 4};
  for (int i = 0; i < 4; ++i) {
    CHECK(ki.param_offset[i] == saxpy_offsets[i] &&
              ki.param_size[i] == saxpy_sizes[i],
          "saxpy parameter %d: %u at %u", i, ki.param_size[i],
          ki.param_offset[i]);
  }
  CHECK(ki.max_threads_per_block == 1024 && ki.static_shared_bytes == 0 &&
            ki.max_dynamic_shared_bytes == 232448,
        "saxpy: %u threads, %llu static, %llu dynamic",
        ki.max_threads_per_block, (unsigned long long)ki.static_shared_bytes,
        (unsigned long long)ki.max_dynamic_shared_bytes);
  CHECK(state->max_dynamic_shared_set == 232448,
        "opt-in set to %d, want 232448", state->max_dynamic_shared_set);
  if (driver_params) {
    CHECK(state->driver_param_queries > 0 && state->runtime_param_queries == 0,
          "parameters not from cuKernelGetParamInfo");
  } else {
    CHECK(state->runtime_param_queries > 0 && state->driver_param_queries == 0,
          "parameters not from cudaFuncGetParamInfo");
  }

  hrx_native_kernel_t* kernel = NULL;
  CHECK_OK(vt->kernel.module_get_kernel(f->device, module, "big", &kernel, &ki));
  CHECK(ki.param_count == 3 && ki.param_offset[1] == 8 &&
            ki.param_size[1] == 1 && ki.param_offset[2] == 16 &&
            ki.param_size[2] == 8,
        "big: %d parameters", ki.param_count);
  CHECK(ki.static_shared_bytes == 1024 &&
            ki.max_dynamic_shared_bytes == 232448 - 1024,
        "big: %llu static, %llu dynamic",
        (unsigned long long)ki.static_shared_bytes,
        (unsigned long long)ki.max_dynamic_shared_bytes);
  CHECK_OK(vt->kernel.module_get_kernel(f->device, module, "opaque", &kernel, &ki));
  CHECK(ki.param_count == -1 && ki.param_size[0] == 0 &&
            ki.param_offset[0] == 0,
        "opaque: %d parameters", ki.param_count);
  CHECK_OK(vt->kernel.module_get_kernel(f->device, module, "none", &kernel, &ki));
  CHECK(ki.param_count == 0, "none: %d parameters", ki.param_count);
  kernel = NULL;
  expect_failure(vt->kernel.module_get_kernel(f->device, module, "missing", &kernel,
                                       &ki),
                 HRX_STATUS_INVALID_ARGUMENT, "a missing kernel",
                 "\"missing\"", "cudaLibraryGetKernel", "extern \"C\"", NULL);
  CHECK(kernel == NULL, "kernel written on failure");
  expect_last_error_clean("a missing kernel");

  /* A launch passes the handle, dimensions, shared bytes, queue and the
   * argument values (copied at the call). */
  void* y = (void*)(uintptr_t)0x1000;
  void* x = (void*)(uintptr_t)0x2000;
  float a = 2.5f;
  int n = 99;
  const void* args[] = {&y, &x, &a, &n};
  const uint32_t arg_sizes[] = {8, 8, 4, 4};
  hrx_kernel_launch_t launch = {.grid = {7, 2, 1}, .block = {128, 2, 1},
                                .shared_bytes = 4096, .arg_count = 4,
                                .args = args, .arg_sizes = arg_sizes};
  CHECK_OK(vt->kernel.launch(f->device, queue, saxpy, &launch));
  a = 0.0f;
  n = 0;
  const fake_cudart_launch_t* seen = &state->last_launch;
  float seen_a = 0.0f;
  int seen_n = 0;
  void* seen_y = NULL;
  memcpy(&seen_y, seen->values, 8);
  memcpy(&seen_a, seen->values + 16, 4);
  memcpy(&seen_n, seen->values + 20, 4);
  CHECK(seen->function == (const void*)saxpy && seen->grid[0] == 7 &&
            seen->grid[1] == 2 && seen->grid[2] == 1 &&
            seen->block[0] == 128 && seen->block[1] == 2 &&
            seen->shared == 4096 &&
            seen->stream == vt->queue.native_handle(queue),
        "the launch reached the runtime changed");
  CHECK(seen_y == y && seen_a == 2.5f && seen_n == 99,
        "launch arguments %p %g %d", seen_y, (double)seen_a, seen_n);
  int launches = state->launches;
  hrx_kernel_launch_t too_big = launch;
  too_big.block[0] = 2048;
  expect_failure(vt->kernel.launch(f->device, queue, saxpy, &too_big),
                 HRX_STATUS_DEVICE_ERROR, "a refused launch",
                 "cudaLaunchKernel", NULL);
  CHECK(state->launches == launches, "a refused launch counted");
  expect_last_error_clean("a refused launch");

  /* A graph kernel node gets the same, after its dependency. */
  {
    uint8_t* buffer = NULL;
    CHECK_OK(vt->memory.alloc(f->device, 64, (void**)&buffer));
    const uint32_t after_first = 0;
    const uint32_t after_kernel = 1;
    hrx_native_graph_node_t nodes[3] = {
        {.kind = HRX_NATIVE_GRAPH_FILL, .dst = buffer, .length = 32,
         .byte = 1},
        {.kind = HRX_NATIVE_GRAPH_KERNEL, .kernel = saxpy, .launch = &launch,
         .after = &after_first, .after_count = 1},
        {.kind = HRX_NATIVE_GRAPH_COPY, .dst = buffer + 32, .src = buffer,
         .length = 32, .after = &after_kernel, .after_count = 1},
    };
    a = 4.0f;
    n = 7;
    hrx_native_graph_t* graph = NULL;
    CHECK_OK(vt->graph.create(f->device, nodes, 3, &graph));
    const fake_cudart_launch_t* node = &state->kernel_node;
    memcpy(&seen_a, node->values + 16, 4);
    memcpy(&seen_n, node->values + 20, 4);
    CHECK(node->function == (const void*)saxpy && node->grid[0] == 7 &&
              node->block[1] == 2 && node->shared == 4096 &&
              seen_a == 4.0f && seen_n == 7,
          "kernel node: %g %d", (double)seen_a, seen_n);
    CHECK(state->kernel_node_dependencies == 1 &&
              state->kernel_node_first_dependency != NULL,
          "kernel node after %zu nodes", state->kernel_node_dependencies);
    CHECK_OK(vt->graph.launch(f->device, queue, graph));
    vt->graph.destroy(f->device, graph);
    vt->memory.free(f->device, buffer);
  }

  /* module_unload synchronizes the device before it unloads. */
  int synchronizes = state->device_synchronizes;
  vt->kernel.module_unload(f->device, module);
  CHECK(state->device_synchronizes > synchronizes &&
            state->synchronizes_at_last_unload == state->device_synchronizes,
        "module_unload did not synchronize first");

  /* Refusals: the runtime's and the driver's, nothing left loaded. */
  expect_refused(f, state, "NOT AN IMAGE", HRX_STATUS_INVALID_ARGUMENT,
                 "a corrupt image", "cudaLibraryLoadData",
                 "cannot load this image");
  expect_refused(f, state, "FAKE-IMAGE\nload=2\nkernel k 0 8\n",
                 HRX_STATUS_OUT_OF_MEMORY, "out of memory at load",
                 "cudaLibraryLoadData", NULL);
  expect_refused(f, state, "FAKE-IMAGE\nmodule=209\nkernel k 0 8\n",
                 HRX_STATUS_INVALID_ARGUMENT, "an image for another GPU",
                 "cuLibraryGetModule", "CUDA_ERROR_NO_BINARY_FOR_GPU");
  expect_refused(f, state, "FAKE-IMAGE\nmodule=2\nkernel k 0 8\n",
                 HRX_STATUS_OUT_OF_MEMORY, "out of memory in the context",
                 "cuLibraryGetModule", NULL);
  int queries = state->driver_function_queries;
  expect_refused(f, state, "FAKE-IMAGE\nmodule=500\nfunction=218\n"
                 "kernel k 0 8\n",
                 HRX_STATUS_INVALID_ARGUMENT, "a kernel that cannot load",
                 "cuKernelGetFunction", "cannot load this image");
  CHECK(state->driver_function_queries == queries + 1,
        "cuKernelGetFunction was not asked");
  expect_refused(f, state, "", HRX_STATUS_INVALID_ARGUMENT, "an empty image",
                 "empty", NULL);
  /* Answers about the context, not the image, leave it loaded. */
  expect_loaded(f, "FAKE-IMAGE\nmodule=201\nkernel k 0 8\n",
                "no context for cuLibraryGetModule");
  expect_loaded(f, "FAKE-IMAGE\nmodule=500\nfunction=201\nkernel k 0 8\n",
                "no context for cuKernelGetFunction");
  expect_loaded(f, "FAKE-IMAGE\nmodule=500\n", "no module, no kernels");

  /* The opt-in refused: the kernel keeps the runtime's limit. */
  CHECK_OK(load_text(f, "FAKE-IMAGE\nsetattr=1\nkernel k 0 8\n", &module));
  CHECK_OK(vt->kernel.module_get_kernel(f->device, module, "k", &kernel, &ki));
  CHECK(ki.max_dynamic_shared_bytes == 49152,
        "refused opt-in: %llu dynamic bytes",
        (unsigned long long)ki.max_dynamic_shared_bytes);
  expect_last_error_clean("a refused opt-in");
  vt->kernel.module_unload(f->device, module);

  /* More parameters than one launch passes. */
  char many[1024] = "FAKE-IMAGE\nkernel many 0 4";
  for (int i = 1; i <= HRX_KERNEL_MAX_ARGS; ++i) strcat(many, ",4");
  strcat(many, "\n");
  CHECK_OK(load_text(f, many, &module));
  expect_failure(vt->kernel.module_get_kernel(f->device, module, "many", &kernel,
                                       &ki),
                 HRX_STATUS_INVALID_ARGUMENT, "too many parameters",
                 "\"many\"", "more than 128", NULL);
  vt->kernel.module_unload(f->device, module);

  CHECK(state->libraries_loaded == state->libraries_unloaded,
        "%d libraries loaded, %d unloaded", state->libraries_loaded,
        state->libraries_unloaded);
  vt->queue.destroy(f->device, queue);
  vt->destroy(f->device);
  return 0;
}

int main(int argc, char** argv) {
  int rc = 2;
  if (argc == 3 && strcmp(argv[1], "amd-no-device") == 0) {
    rc = scenario_amd_no_device(argv[2], false);
  } else if (argc == 3 && strcmp(argv[1], "amd-no-device-opening") == 0) {
    rc = scenario_amd_no_device(argv[2], true);
  } else if (argc == 3 && strcmp(argv[1], "missing-library") == 0) {
    rc = scenario_missing_library(argv[2]);
  } else if (argc == 3 && strcmp(argv[1], "amd-compile") == 0) {
    rc = scenario_amd_compile(argv[2]);
  } else if (argc == 3 && strcmp(argv[1], "nvidia-compile") == 0) {
    rc = scenario_nvidia_compile(argv[2]);
  } else if (argc == 3 && strcmp(argv[1], "rtc-missing") == 0) {
    rc = scenario_rtc_missing(argv[2]);
  } else if (argc == 3 && strcmp(argv[1], "fake-cuda") == 0) {
    rc = scenario_fake_cuda(argv[2], false);
  } else if (argc == 3 && strcmp(argv[1], "fake-cuda-driver") == 0) {
    rc = scenario_fake_cuda(argv[2], true);
  } else if (argc == 2 && strcmp(argv[1], "device") == 0) {
    rc = scenario_device();
  } else {
    fprintf(stderr,
            "usage: %s amd-no-device LIBRARY | amd-no-device-opening "
            "LIBRARY | missing-library PATH | "
            "amd-compile LIBRARY | nvidia-compile NVRTC | rtc-missing PATH | "
            "fake-cuda LIBRARY | fake-cuda-driver LIBRARY | device\n",
            argv[0]);
    return 2;
  }
  if (rc == 0 && failures == 0) {
    printf("PASS %s\n", argv[1]);
    return 0;
  }
  printf("FAILED %s (%d failure(s))\n", argv[1], failures);
  return 1;
}
