/* The HIP runtime, loaded with dlopen: the library search, the symbol table
 * of hip_symbols.h bound to one platform (AMD: hip* in libamdhip64, NVIDIA:
 * cuda* in libcudart), the platform's constants, and native errors turned
 * into statuses. Private to csrc/drivers/hip.
 *
 * Threading: hrx_hip_runtime_load() is thread-safe and runs the search once
 * per process; after it succeeds, hrx_hip_rt is immutable and may be read
 * from any thread without locking. */
#ifndef HRX_DRIVERS_HIP_HIP_DYNAMIC_H_
#define HRX_DRIVERS_HIP_HIP_DYNAMIC_H_

#include <stdbool.h>

#include "hip_constants.h"
#include "hip_types.h"
#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One function-pointer type per entry: hrx_hip_pfn_<name>. */
#define HRX_HIP_REQUIRED(name, ret, params, amd_symbol, cuda_symbol) \
  typedef ret(*hrx_hip_pfn_##name) params;
#define HRX_HIP_OPTIONAL HRX_HIP_REQUIRED
#include "hip_symbols.h"
#undef HRX_HIP_REQUIRED
#undef HRX_HIP_OPTIONAL

typedef struct hrx_hip_symbols_s {
#define HRX_HIP_REQUIRED(name, ret, params, amd_symbol, cuda_symbol) \
  hrx_hip_pfn_##name name;
#define HRX_HIP_OPTIONAL HRX_HIP_REQUIRED
#include "hip_symbols.h"
#undef HRX_HIP_REQUIRED
#undef HRX_HIP_OPTIONAL
} hrx_hip_symbols_t;

/* The bound symbol name of each entry ("cudaMemcpyAsync"), NULL when the
 * entry did not resolve. Static strings. */
typedef struct hrx_hip_symbol_names_s {
#define HRX_HIP_REQUIRED(name, ret, params, amd_symbol, cuda_symbol) \
  const char* name;
#define HRX_HIP_OPTIONAL HRX_HIP_REQUIRED
#include "hip_symbols.h"
#undef HRX_HIP_REQUIRED
#undef HRX_HIP_OPTIONAL
} hrx_hip_symbol_names_t;

/* The numbers that differ (or could differ) between the two bindings. */
typedef struct hrx_hip_platform_s {
  const char* id;             /* "amd", "nvidia" */
  const char* runtime_label;  /* "HIP runtime", "CUDA runtime" */
  hrx_hip_error_t success;
  hrx_hip_error_t error_out_of_memory;
  hrx_hip_error_t error_no_device;
  hrx_hip_error_t error_not_ready;
  hrx_hip_error_t error_peer_access_already_enabled;
  hrx_hip_error_t error_host_memory_already_registered;
  unsigned int stream_non_blocking;
  unsigned int event_disable_timing;
  unsigned int event_default;  /* with timing */
  unsigned int host_alloc_default;
  unsigned int host_register_default;
  hrx_hip_memcpy_kind_t memcpy_host_to_device;
  hrx_hip_memcpy_kind_t memcpy_device_to_host;
  hrx_hip_memcpy_kind_t memcpy_device_to_device;
  hrx_hip_device_attr_t attr_compute_capability_major;
  hrx_hip_device_attr_t attr_compute_capability_minor;
  int prop_name_offset;
  /* Kernels: the launch limits, and the errors of a lookup that finds no
   * such kernel and of a parameter index past the last. */
  hrx_hip_device_attr_t attr_max_threads_per_block;
  hrx_hip_device_attr_t attr_max_block_dim[3];
  hrx_hip_device_attr_t attr_max_grid_dim[3];
  /* The most shared memory a kernel may opt in to per block (NVIDIA), or
   * simply may use (AMD, which has no opt-in). */
  hrx_hip_device_attr_t attr_max_shared_per_block;
  hrx_hip_error_t error_not_found;
  hrx_hip_error_t error_invalid_device_function;
  hrx_hip_error_t error_invalid_value;
} hrx_hip_platform_t;

extern const hrx_hip_platform_t hrx_hip_platform_amd;
extern const hrx_hip_platform_t hrx_hip_platform_nvidia;

typedef struct hrx_hip_runtime_s {
  const hrx_hip_platform_t* platform;  /* static */
  hrx_hip_symbols_t sym;
  hrx_hip_symbol_names_t names;
  void* library;           /* dlopen handle; never closed */
  char library_name[512];  /* as passed to dlopen */
  int device_count;        /* > 0 */
  int runtime_version;     /* 0 if the query failed */
  int driver_version;      /* 0 if the query failed */
} hrx_hip_runtime_t;

/* Valid once hrx_hip_runtime_load() has succeeded. */
extern hrx_hip_runtime_t hrx_hip_rt;

/* Takes a failure of hrx's own call off the calling thread's last-error
 * slot (hipGetLastError / cudaGetLastError). The runtime keeps the last
 * failure of any call per thread, and a library sharing the thread reads it
 * after its own launches (PyTorch does after every kernel): a refused
 * allocation of hrx would otherwise surface there as PyTorch's error.
 * "Not ready" is an answer, not a failure, and is left alone. */
void hrx_hip_forget_error(hrx_hip_error_t error);

/* True if `error` is the bound runtime's success code; a failure is
 * forgotten by the runtime (hrx_hip_forget_error): hrx reports it itself. */
static inline bool hrx_hip_ok(hrx_hip_error_t error) {
  if (error == hrx_hip_rt.platform->success) return true;
  hrx_hip_forget_error(error);
  return false;
}

/* Finds, loads and binds the runtime once per process and reports its device
 * count. Search order: $HRX_HIP_LIBRARY alone if set (an exact path; its
 * failure is reported as is); else libamdhip64 (.so, .so.6, .so.5,
 * /opt/rocm/lib), then libcudart (.so, .so.13, .so.12, .so.11.0), then
 * nvidia/cuda_runtime/lib/libcudart.so* and nvidia/cu13/lib/libcudart.so*
 * under each directory of $HRX_PYTHON_SITE_DIRS (':'-separated). A library
 * that loads but misses a required symbol or reports no device is skipped
 * for the next candidate. Failure: UNAVAILABLE, naming every library tried
 * with the loader's or the runtime's message; the same status (a fresh
 * copy) is returned on every later call. `opening`: the call opens a
 * device; if it is the one that starts the runtime, the connection budget
 * is applied right before the runtime's first call (hip_connections.h);
 * a listing call (false) leaves the environment alone. */
hrx_status_t hrx_hip_runtime_load(bool opening, int* out_device_count);

/* The library the load settled on: the one in use after success, or the one
 * whose runtime refused (no device, failed call, missing symbol) named by the
 * failure. NULL when no library loaded. Static after the load. */
const char* hrx_hip_runtime_library(void);
const hrx_hip_platform_t* hrx_hip_runtime_platform(void);

/* "name (description)" of a native error, into buffer. */
const char* hrx_hip_error_text(hrx_hip_error_t error, char* buffer,
                               size_t capacity);

/* A status for native error `error` returned by `api`:
 * "<api> failed: <error name> (<error string>)". A DEVICE_ERROR whose native
 * error is the platform's out-of-memory becomes OUT_OF_MEMORY. */
hrx_status_t hrx_hip_error_status_at(const char* file, int line,
                                     hrx_status_code_t code, const char* api,
                                     hrx_hip_error_t error);

/* HRX_HIP_ERROR(DEVICE_ERROR, MemcpyAsync, err) names the bound symbol. */
#define HRX_HIP_ERROR(code, name, error)                                  \
  hrx_hip_error_status_at(__FILE__, __LINE__, HRX_STATUS_##code,          \
                          hrx_hip_rt.names.name ? hrx_hip_rt.names.name   \
                                                : #name,                  \
                          (error))

/* Makes `device` current on the calling thread (hipSetDevice /
 * cudaSetDevice). Cached per thread when the process sees one device. */
hrx_status_t hrx_hip_make_current(int device);

#ifdef __cplusplus
}
#endif

#endif /* HRX_DRIVERS_HIP_HIP_DYNAMIC_H_ */
