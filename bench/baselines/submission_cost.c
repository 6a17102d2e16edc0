/* Submission cost and idle latency of a 4 KiB device-to-device copy: hrx
 * (a pool stream, public C API) against a plain loop of the runtime's own
 * async copy on one native stream, measured in the same process.
 *
 * The plain loop calls the runtime library the hip backend loaded
 * (libcudart or libamdhip64) through dlsym, with the same signatures on both
 * platforms. Prints one JSON object.
 *
 * Build and run: bench/scripts/submission_cost.sh [hip|host] (needs only gcc;
 * no GPU SDK).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/hip/hip_backend.h"
#include "hrx.h"

enum { kBytes = 4096, kCalls = 2048, kReps = 21, kLatencySamples = 2000 };

typedef int (*malloc_fn)(void**, size_t);
typedef int (*free_fn)(void*);
typedef int (*stream_create_fn)(void**, unsigned);
typedef int (*stream_fn)(void*);
typedef int (*memcpy_async_fn)(void*, const void*, size_t, int, void*);

static int compare_u64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

/* Nearest rank, as hrx.bench.stats. */
static uint64_t percentile(uint64_t* values, int n, int p) {
  qsort(values, (size_t)n, sizeof(*values), compare_u64);
  int rank = (n * p + 99) / 100;
  return values[rank > 0 ? rank - 1 : 0];
}

static void die(const char* what, hrx_status_t status) {
  fprintf(stderr, "%s: %s\n", what, hrx_status_message(status));
  exit(1);
}

int main(int argc, char** argv) {
  const char* backend = argc > 1 ? argv[1] : "hip";
  hrx_device_t* device = NULL;
  hrx_status_t status = hrx_device_open(backend, 0, &device);
  if (status) die("open", status);
  hrx_stream_t* stream = NULL;
  hrx_buffer_t *src = NULL, *dst = NULL;
  if ((status = hrx_stream_create(device, &stream)) ||
      (status = hrx_buffer_allocate(device, kBytes, &src)) ||
      (status = hrx_buffer_allocate(device, kBytes, &dst))) {
    die("setup", status);
  }
  hrx_view_t s = {src, 0, kBytes}, d = {dst, 0, kBytes};
  uint64_t hrx_call[kReps], hrx_latency[kLatencySamples];
  for (int r = 0; r < kReps; ++r) {
    uint64_t t0 = hrx_now_ns();
    for (int i = 0; i < kCalls; ++i) hrx_status_free(hrx_stream_copy(stream, d, s));
    hrx_call[r] = (hrx_now_ns() - t0) / kCalls;
    hrx_status_free(hrx_stream_synchronize(stream));
  }
  for (int i = 0; i < kLatencySamples; ++i) {
    uint64_t t0 = hrx_now_ns();
    hrx_status_free(hrx_stream_copy(stream, d, s));
    hrx_status_free(hrx_stream_synchronize(stream));
    hrx_latency[i] = hrx_now_ns() - t0;
  }

  /* The plain loop, on the runtime the hip backend uses. */
  const char* library = hrx_hip_loaded_library();
  const char* platform = hrx_hip_platform();
  double plain_call_median = -1, plain_lat_median = -1, plain_lat_p95 = -1;
  if (strcmp(backend, "hip") == 0 && library && platform) {
    void* handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
    const char* prefix = strcmp(platform, "nvidia") == 0 ? "cuda" : "hip";
    char name[64];
#define BIND(var, type, suffix) \
  snprintf(name, sizeof(name), "%s%s", prefix, suffix); \
  type var = (type)dlsym(handle, name);
    BIND(rt_malloc, malloc_fn, "Malloc");
    BIND(rt_free, free_fn, "Free");
    BIND(rt_stream_create, stream_create_fn, "StreamCreateWithFlags");
    BIND(rt_stream_sync, stream_fn, "StreamSynchronize");
    BIND(rt_stream_destroy, stream_fn, "StreamDestroy");
    BIND(rt_memcpy_async, memcpy_async_fn, "MemcpyAsync");
    void *a = NULL, *b = NULL, *native = NULL;
    rt_malloc(&a, kBytes);
    rt_malloc(&b, kBytes);
    rt_stream_create(&native, 1 /* non-blocking */);
    uint64_t plain_call[kReps], plain_latency[kLatencySamples];
    for (int r = 0; r < kReps; ++r) {
      uint64_t t0 = hrx_now_ns();
      for (int i = 0; i < kCalls; ++i) {
        rt_memcpy_async(b, a, kBytes, 3 /* device to device */, native);
      }
      plain_call[r] = (hrx_now_ns() - t0) / kCalls;
      rt_stream_sync(native);
    }
    for (int i = 0; i < kLatencySamples; ++i) {
      uint64_t t0 = hrx_now_ns();
      rt_memcpy_async(b, a, kBytes, 3, native);
      rt_stream_sync(native);
      plain_latency[i] = hrx_now_ns() - t0;
    }
    plain_call_median = percentile(plain_call, kReps, 50) / 1e3;
    plain_lat_median = percentile(plain_latency, kLatencySamples, 50) / 1e3;
    plain_lat_p95 = percentile(plain_latency, kLatencySamples, 95) / 1e3;
    rt_stream_destroy(native);
    rt_free(a);
    rt_free(b);
  }
  double hrx_call_median = percentile(hrx_call, kReps, 50) / 1e3;
  printf("{\"backend\": \"%s\", \"library\": \"%s\", \"bytes\": %d, "
         "\"calls_per_rep\": %d, \"reps\": %d, "
         "\"hrx_call_us_median\": %.3f, \"plain_call_us_median\": %.3f, "
         "\"hrx_over_plain_call_cost\": %.3f, "
         "\"hrx_idle_latency_us_median\": %.2f, "
         "\"hrx_idle_latency_us_p95\": %.2f, "
         "\"plain_idle_latency_us_median\": %.2f, "
         "\"plain_idle_latency_us_p95\": %.2f}\n",
         backend, library ? library : "", kBytes, kCalls, kReps,
         hrx_call_median, plain_call_median,
         plain_call_median > 0 ? hrx_call_median / plain_call_median : -1.0,
         percentile(hrx_latency, kLatencySamples, 50) / 1e3,
         percentile(hrx_latency, kLatencySamples, 95) / 1e3, plain_lat_median,
         plain_lat_p95);
  hrx_buffer_release(src);
  hrx_buffer_release(dst);
  hrx_stream_release(stream);
  hrx_device_release(device);
  return 0;
}
