#include "hip_dynamic.h"

#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip_connections.h"

const hrx_hip_platform_t hrx_hip_platform_amd = {
    .id = "amd",
    .runtime_label = "HIP runtime",
    .success = HRX_HIP_AMD_SUCCESS,
    .error_out_of_memory = HRX_HIP_AMD_ERROR_OUT_OF_MEMORY,
    .error_no_device = HRX_HIP_AMD_ERROR_NO_DEVICE,
    .error_not_ready = HRX_HIP_AMD_ERROR_NOT_READY,
    .error_peer_access_already_enabled =
        HRX_HIP_AMD_ERROR_PEER_ACCESS_ALREADY_ENABLED,
    .error_host_memory_already_registered =
        HRX_HIP_AMD_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
    .stream_non_blocking = HRX_HIP_AMD_STREAM_NON_BLOCKING,
    .event_disable_timing = HRX_HIP_AMD_EVENT_DISABLE_TIMING,
    .event_default = HRX_HIP_AMD_EVENT_DEFAULT,
    .host_alloc_default = HRX_HIP_AMD_HOST_ALLOC_DEFAULT,
    .host_register_default = HRX_HIP_AMD_HOST_REGISTER_DEFAULT,
    .memcpy_host_to_device = HRX_HIP_AMD_MEMCPY_HOST_TO_DEVICE,
    .memcpy_device_to_host = HRX_HIP_AMD_MEMCPY_DEVICE_TO_HOST,
    .memcpy_device_to_device = HRX_HIP_AMD_MEMCPY_DEVICE_TO_DEVICE,
    .attr_compute_capability_major = HRX_HIP_AMD_ATTR_COMPUTE_CAPABILITY_MAJOR,
    .attr_compute_capability_minor = HRX_HIP_AMD_ATTR_COMPUTE_CAPABILITY_MINOR,
    .prop_name_offset = HRX_HIP_AMD_PROP_NAME_OFFSET,
    .attr_max_threads_per_block = HRX_HIP_AMD_ATTR_MAX_THREADS_PER_BLOCK,
    .attr_max_block_dim = {HRX_HIP_AMD_ATTR_MAX_BLOCK_DIM_X,
                           HRX_HIP_AMD_ATTR_MAX_BLOCK_DIM_Y,
                           HRX_HIP_AMD_ATTR_MAX_BLOCK_DIM_Z},
    .attr_max_grid_dim = {HRX_HIP_AMD_ATTR_MAX_GRID_DIM_X,
                          HRX_HIP_AMD_ATTR_MAX_GRID_DIM_Y,
                          HRX_HIP_AMD_ATTR_MAX_GRID_DIM_Z},
    .attr_max_shared_per_block = HRX_HIP_AMD_ATTR_MAX_SHARED_PER_BLOCK,
    .error_not_found = HRX_HIP_AMD_ERROR_NOT_FOUND,
    .error_invalid_device_function =
        HRX_HIP_AMD_ERROR_INVALID_DEVICE_FUNCTION,
    .error_invalid_value = HRX_HIP_AMD_ERROR_INVALID_VALUE,
};

const hrx_hip_platform_t hrx_hip_platform_nvidia = {
    .id = "nvidia",
    .runtime_label = "CUDA runtime",
    .success = HRX_HIP_CUDA_SUCCESS,
    .error_out_of_memory = HRX_HIP_CUDA_ERROR_OUT_OF_MEMORY,
    .error_no_device = HRX_HIP_CUDA_ERROR_NO_DEVICE,
    .error_not_ready = HRX_HIP_CUDA_ERROR_NOT_READY,
    .error_peer_access_already_enabled =
        HRX_HIP_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
    .error_host_memory_already_registered =
        HRX_HIP_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
    .stream_non_blocking = HRX_HIP_CUDA_STREAM_NON_BLOCKING,
    .event_disable_timing = HRX_HIP_CUDA_EVENT_DISABLE_TIMING,
    .event_default = HRX_HIP_CUDA_EVENT_DEFAULT,
    .host_alloc_default = HRX_HIP_CUDA_HOST_ALLOC_DEFAULT,
    .host_register_default = HRX_HIP_CUDA_HOST_REGISTER_DEFAULT,
    .memcpy_host_to_device = HRX_HIP_CUDA_MEMCPY_HOST_TO_DEVICE,
    .memcpy_device_to_host = HRX_HIP_CUDA_MEMCPY_DEVICE_TO_HOST,
    .memcpy_device_to_device = HRX_HIP_CUDA_MEMCPY_DEVICE_TO_DEVICE,
    .attr_compute_capability_major = HRX_HIP_CUDA_ATTR_COMPUTE_CAPABILITY_MAJOR,
    .attr_compute_capability_minor = HRX_HIP_CUDA_ATTR_COMPUTE_CAPABILITY_MINOR,
    .prop_name_offset = HRX_HIP_CUDA_PROP_NAME_OFFSET,
    .attr_max_threads_per_block = HRX_HIP_CUDA_ATTR_MAX_THREADS_PER_BLOCK,
    .attr_max_block_dim = {HRX_HIP_CUDA_ATTR_MAX_BLOCK_DIM_X,
                           HRX_HIP_CUDA_ATTR_MAX_BLOCK_DIM_Y,
                           HRX_HIP_CUDA_ATTR_MAX_BLOCK_DIM_Z},
    .attr_max_grid_dim = {HRX_HIP_CUDA_ATTR_MAX_GRID_DIM_X,
                          HRX_HIP_CUDA_ATTR_MAX_GRID_DIM_Y,
                          HRX_HIP_CUDA_ATTR_MAX_GRID_DIM_Z},
    .attr_max_shared_per_block = HRX_HIP_CUDA_ATTR_MAX_SHARED_PER_BLOCK_OPTIN,
    .error_not_found = HRX_HIP_CUDA_ERROR_NOT_FOUND,
    .error_invalid_device_function =
        HRX_HIP_CUDA_ERROR_INVALID_DEVICE_FUNCTION,
    .error_invalid_value = HRX_HIP_CUDA_ERROR_INVALID_VALUE,
};

hrx_hip_runtime_t hrx_hip_rt;

/* The outcome of the one search, kept to answer every later load() call. */
static pthread_once_t hrx_hip_load_once_control = PTHREAD_ONCE_INIT;
/* The `opening` argument of the hrx_hip_runtime_load call on this thread:
 * pthread_once runs the search on the first caller's thread, which reads
 * its own value. */
static _Thread_local bool hrx_hip_load_opening = false;
/* The process that loaded the runtime: a forked child cannot use it (the
 * CUDA and HIP runtimes do not support fork() after initialization). */
static pid_t hrx_hip_load_pid;
static hrx_status_code_t hrx_hip_load_code = HRX_STATUS_UNAVAILABLE;
/* Why the search failed, whole (malloc'd once; NULL if that failed). */
static char* hrx_hip_load_message;
/* Published (release) at the end of the search; read without the once
 * control so that the queries never trigger a load. */
static char hrx_hip_settled_library_buffer[512];
static _Atomic(const char*) hrx_hip_settled_library;
static _Atomic(const hrx_hip_platform_t*) hrx_hip_settled_platform;

/* Appends printf-style text to *text (malloc'd; NULL is empty), growing
 * it: a reason is never cut. Out of memory, *text keeps what it had. */
static void hrx_hip_append(char** text, const char* format, ...)
    __attribute__((format(printf, 2, 3)));
static void hrx_hip_append(char** text, const char* format, ...) {
  va_list args;
  va_start(args, format);
  int n = vsnprintf(NULL, 0, format, args);
  va_end(args);
  size_t used = *text ? strlen(*text) : 0;
  char* grown = n < 0 ? NULL : realloc(*text, used + (size_t)n + 1);
  if (!grown) return;
  va_start(args, format);
  vsnprintf(grown + used, (size_t)n + 1, format, args);
  va_end(args);
  *text = grown;
}

static const char* hrx_hip_error_text_of(const hrx_hip_runtime_t* rt,
                                         hrx_hip_error_t error, char* buffer,
                                         size_t capacity) {
  const char* name = NULL;
  const char* text = NULL;
  if (rt->sym.GetErrorName) name = rt->sym.GetErrorName(error);
  if (rt->sym.GetErrorString) text = rt->sym.GetErrorString(error);
  if (name && text && strcmp(name, text) != 0) {
    snprintf(buffer, capacity, "%s (%s)", name, text);
  } else if (name || text) {
    snprintf(buffer, capacity, "%s", name ? name : text);
  } else {
    snprintf(buffer, capacity, "error %d", (int)error);
  }
  return buffer;
}

const char* hrx_hip_error_text(hrx_hip_error_t error, char* buffer,
                               size_t capacity) {
  return hrx_hip_error_text_of(&hrx_hip_rt, error, buffer, capacity);
}

void hrx_hip_forget_error(hrx_hip_error_t error) {
  if (error != hrx_hip_rt.platform->error_not_ready &&
      hrx_hip_rt.sym.GetLastError) {
    (void)hrx_hip_rt.sym.GetLastError();
  }
}

hrx_status_t hrx_hip_error_status_at(const char* file, int line,
                                     hrx_status_code_t code, const char* api,
                                     hrx_hip_error_t error) {
  if (code == HRX_STATUS_DEVICE_ERROR && hrx_hip_rt.platform &&
      error == hrx_hip_rt.platform->error_out_of_memory) {
    code = HRX_STATUS_OUT_OF_MEMORY;
  }
  char text[512];
  return hrx_status_make_at(file, line, code, "%s failed: %s", api,
                            hrx_hip_error_text(error, text, sizeof(text)));
}

/* Per-thread cache of the device made current by this backend; only trusted
 * when the process sees one device (nothing else can then be current). */
static _Thread_local int hrx_hip_current_device = -1;

hrx_status_t hrx_hip_make_current(int device) {
  if (hrx_hip_rt.device_count == 1 && hrx_hip_current_device == device) {
    return NULL;
  }
  hrx_hip_error_t err = hrx_hip_rt.sym.SetDevice(device);
  if (!hrx_hip_ok(err)) {
    hrx_hip_current_device = -1;
    return HRX_HIP_ERROR(DEVICE_ERROR, SetDevice, err);
  }
  hrx_hip_current_device = device;
  return NULL;
}

/* ------------------------------------------------------------------ load */

typedef enum hrx_hip_attempt_e {
  HRX_HIP_ATTEMPT_OK,
  HRX_HIP_ATTEMPT_NOT_LOADED,  /* dlopen failed */
  HRX_HIP_ATTEMPT_REFUSED,     /* loaded, but unusable */
  HRX_HIP_ATTEMPT_SEEN,        /* the same library as an earlier candidate */
} hrx_hip_attempt_t;

static bool hrx_hip_symbol_absent(const char* symbol) {
  return strcmp(symbol, "HRX_HIP_ABSENT") == 0;
}

/* Binds every entry of the table for `platform`. On a missing required
 * symbol, writes its name to *out_missing and returns false. */
static bool hrx_hip_bind(void* library, const hrx_hip_platform_t* platform,
                         hrx_hip_runtime_t* rt, const char** out_missing) {
  bool amd = platform == &hrx_hip_platform_amd;
  const char* symbol;
  void* address;
#define HRX_HIP_BIND(name, amd_symbol, cuda_symbol, required)               \
  symbol = amd ? #amd_symbol : #cuda_symbol;                                \
  address = hrx_hip_symbol_absent(symbol) ? NULL : dlsym(library, symbol);  \
  if (!address && (required)) {                                             \
    *out_missing = symbol;                                                  \
    return false;                                                           \
  }                                                                         \
  rt->names.name = address ? symbol : NULL;                                 \
  /* dlsym's object pointer to a function pointer, as POSIX requires. */    \
  memcpy(&rt->sym.name, &address, sizeof(address));
#define HRX_HIP_REQUIRED(name, ret, params, amd_symbol, cuda_symbol) \
  HRX_HIP_BIND(name, amd_symbol, cuda_symbol, true)
#define HRX_HIP_OPTIONAL(name, ret, params, amd_symbol, cuda_symbol) \
  HRX_HIP_BIND(name, amd_symbol, cuda_symbol, false)
#include "hip_symbols.h"
#undef HRX_HIP_REQUIRED
#undef HRX_HIP_OPTIONAL
#undef HRX_HIP_BIND
  if (!rt->sym.GetDevicePropertiesVersioned && !rt->sym.GetDeviceProperties) {
    *out_missing = amd ? "hipGetDevicePropertiesR0600 or hipGetDeviceProperties"
                       : "cudaGetDeviceProperties_v2 or cudaGetDeviceProperties";
    return false;
  }
  return true;
}

typedef struct hrx_hip_search_s {
  hrx_hip_runtime_t found;
  bool ok;
  /* The first library that loaded but was unusable, and its platform. */
  char first_refused[512];
  const hrx_hip_platform_t* first_refused_platform;
  char* refused;     /* owned: why libraries that loaded were unusable */
  char* not_loaded;  /* owned: dlerror text of the others */
  /* Handles already tried: sonames and paths often name the same file. */
  void* seen[32];
  int seen_count;
} hrx_hip_search_t;

/* Loads `path` and, if it is a HIP or CUDA runtime with a device, fills *rt.
 * Otherwise appends why to `why` and says how far it got. */
static hrx_hip_attempt_t hrx_hip_try_library(hrx_hip_search_t* search,
                                             const char* path,
                                             hrx_hip_runtime_t* rt,
                                             char** why) {
  memset(rt, 0, sizeof(*rt));
  dlerror();
  /* Never closed: a GPU runtime that has initialised cannot be unloaded
   * safely, and one that has not costs only its mapping. */
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* error = dlerror();
    hrx_hip_append(why, "%s", error ? error : path);
    return HRX_HIP_ATTEMPT_NOT_LOADED;
  }
  for (int i = 0; i < search->seen_count; ++i) {
    if (search->seen[i] == library) return HRX_HIP_ATTEMPT_SEEN;
  }
  if (search->seen_count < (int)(sizeof(search->seen) / sizeof(search->seen[0]))) {
    search->seen[search->seen_count++] = library;
  }
  const hrx_hip_platform_t* platform = NULL;
  if (dlsym(library, "hipGetDeviceCount")) {
    platform = &hrx_hip_platform_amd;
  } else if (dlsym(library, "cudaGetDeviceCount")) {
    platform = &hrx_hip_platform_nvidia;
  } else {
    hrx_hip_append(why,
                   "%s loaded, but it exports neither hipGetDeviceCount nor "
                   "cudaGetDeviceCount",
                   path);
    return HRX_HIP_ATTEMPT_REFUSED;
  }
  rt->platform = platform;
  rt->library = library;
  snprintf(rt->library_name, sizeof(rt->library_name), "%s", path);

  const char* missing = NULL;
  if (!hrx_hip_bind(library, platform, rt, &missing)) {
    hrx_hip_append(why,
                   "%s loaded, but its required symbol %s is missing", path,
                   missing);
    return HRX_HIP_ATTEMPT_REFUSED;
  }

  /* The runtime's first call, where it reads the connection budget
   * variable: a load made by opening a device applies the budget just
   * before it; a load made by listing backends leaves the process
   * environment alone (hip_connections.h). */
  hrx_hip_connections_saved_t saved;
  hrx_hip_connections_before_start(platform->id, hrx_hip_load_opening,
                                   &saved);
  int count = 0;
  hrx_hip_error_t err = rt->sym.GetDeviceCount(&count);
  hrx_hip_attempt_t result = HRX_HIP_ATTEMPT_OK;
  if (err != platform->success) {
    char text[512];
    hrx_hip_append(why, "%s loaded, but %s failed: %s", path,
                   rt->names.GetDeviceCount,
                   hrx_hip_error_text_of(rt, err, text, sizeof(text)));
    result = HRX_HIP_ATTEMPT_REFUSED;
  } else if (count <= 0) {
    hrx_hip_append(why, "%s loaded, but %s reports no device",
                   path, rt->names.GetDeviceCount);
    result = HRX_HIP_ATTEMPT_REFUSED;
  } else {
    rt->device_count = count;
    if (rt->sym.RuntimeGetVersion(&rt->runtime_version) != platform->success) {
      rt->runtime_version = 0;
    }
    if (rt->sym.DriverGetVersion(&rt->driver_version) != platform->success) {
      rt->driver_version = 0;
    }
  }
  /* A refused runtime's library is skipped: the next one starts afresh. */
  if (result != HRX_HIP_ATTEMPT_OK) hrx_hip_connections_withdraw(&saved);
  return result;
}


/* Tries one candidate; returns true once a runtime is found. */
static bool hrx_hip_search_try(hrx_hip_search_t* search, const char* path) {
  if (search->ok) return true;
  char* why = NULL;
  hrx_hip_attempt_t attempt =
      hrx_hip_try_library(search, path, &search->found, &why);
  if (attempt == HRX_HIP_ATTEMPT_OK || attempt == HRX_HIP_ATTEMPT_SEEN) {
    free(why);
    search->ok = attempt == HRX_HIP_ATTEMPT_OK;
    return search->ok;
  }
  if (attempt == HRX_HIP_ATTEMPT_REFUSED && !search->first_refused[0] &&
      search->found.platform) {
    snprintf(search->first_refused, sizeof(search->first_refused), "%s",
             path);
    search->first_refused_platform = search->found.platform;
  }
  char** list = attempt == HRX_HIP_ATTEMPT_REFUSED ? &search->refused
                                                   : &search->not_loaded;
  hrx_hip_append(list, "%s%s", *list ? "; " : "", why ? why : "");
  free(why);
  return false;
}

/* The pip nvidia-cuda-runtime wheels, under each $HRX_PYTHON_SITE_DIRS
 * entry. */
static bool hrx_hip_search_site_dirs(hrx_hip_search_t* search) {
  const char* dirs = getenv("HRX_PYTHON_SITE_DIRS");
  if (!dirs || !dirs[0]) return false;
  static const char* const patterns[] = {
      "nvidia/cuda_runtime/lib/libcudart.so*",
      "nvidia/cu13/lib/libcudart.so*",
  };
  const char* cursor = dirs;
  while (*cursor) {
    size_t length = strcspn(cursor, ":");
    if (length > 0 && length < 1024) {
      for (size_t p = 0; p < sizeof(patterns) / sizeof(patterns[0]); ++p) {
        char pattern[1200];
        snprintf(pattern, sizeof(pattern), "%.*s/%s", (int)length, cursor,
                 patterns[p]);
        glob_t matches;
        if (glob(pattern, 0, NULL, &matches) == 0) {
          for (size_t i = 0; i < matches.gl_pathc; ++i) {
            if (hrx_hip_search_try(search, matches.gl_pathv[i])) {
              globfree(&matches);
              return true;
            }
          }
        }
        globfree(&matches);
      }
    }
    cursor += length;
    if (*cursor == ':') ++cursor;
  }
  return false;
}

/* Runs the whole search into *search; on failure writes
 * hrx_hip_load_message. */
static void hrx_hip_search(hrx_hip_search_t* search) {
  memset(search, 0, sizeof(*search));
  const char* override = getenv("HRX_HIP_LIBRARY");
  if (override && override[0]) {
    if (!hrx_hip_search_try(search, override)) {
      hrx_hip_append(&hrx_hip_load_message, "HRX_HIP_LIBRARY=%s: %s",
                     override,
                     search->refused ? search->refused : search->not_loaded);
    }
    return;
  }
  static const char* const candidates[] = {
      "libamdhip64.so",  "libamdhip64.so.6", "libamdhip64.so.5",
      "/opt/rocm/lib/libamdhip64.so",
      "libcudart.so",    "libcudart.so.13",  "libcudart.so.12",
      "libcudart.so.11.0",
  };
  for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); ++i) {
    if (hrx_hip_search_try(search, candidates[i])) return;
  }
  if (hrx_hip_search_site_dirs(search)) return;
  if (search->refused) {
    hrx_hip_append(&hrx_hip_load_message, "%s; also tried: %s",
                   search->refused,
                   search->not_loaded ? search->not_loaded : "nothing else");
  } else {
    hrx_hip_append(&hrx_hip_load_message,
                   "no HIP or CUDA runtime library found; tried: %s",
                   search->not_loaded ? search->not_loaded : "nothing");
  }
}

static void hrx_hip_settle(const char* library,
                           const hrx_hip_platform_t* platform) {
  if (!library || !library[0] || !platform) return;
  snprintf(hrx_hip_settled_library_buffer,
           sizeof(hrx_hip_settled_library_buffer), "%s", library);
  atomic_store_explicit(&hrx_hip_settled_platform, platform,
                        memory_order_release);
  atomic_store_explicit(&hrx_hip_settled_library,
                        hrx_hip_settled_library_buffer, memory_order_release);
}

static void hrx_hip_load_once(void) {
  static hrx_hip_search_t search;  /* large; used once */
  hrx_hip_search(&search);
  free(search.refused);
  free(search.not_loaded);
  if (search.ok) {
    hrx_hip_rt = search.found;
    hrx_hip_settle(hrx_hip_rt.library_name, hrx_hip_rt.platform);
    hrx_hip_load_code = HRX_STATUS_OK;
    hrx_hip_load_pid = getpid();
  } else {
    hrx_hip_settle(search.first_refused, search.first_refused_platform);
  }
}

hrx_status_t hrx_hip_runtime_load(bool opening, int* out_device_count) {
  hrx_hip_load_opening = opening;
  pthread_once(&hrx_hip_load_once_control, hrx_hip_load_once);
  hrx_hip_load_opening = false;
  if (hrx_hip_load_code != HRX_STATUS_OK) {
    return hrx_make_status(hrx_hip_load_code, "%s",
                           hrx_hip_load_message
                               ? hrx_hip_load_message
                               : "no usable HIP or CUDA runtime (out of "
                                 "memory while describing the search)");
  }
  if (getpid() != hrx_hip_load_pid) {
    return hrx_make_status(
        HRX_STATUS_FAILED_PRECONDITION,
        "the %s was initialized in process %d before it forked this "
        "one (%d); it cannot be used in a forked child. Start workers with "
        "the 'spawn' or 'forkserver' method",
        hrx_hip_rt.platform->runtime_label, (int)hrx_hip_load_pid,
        (int)getpid());
  }
  *out_device_count = hrx_hip_rt.device_count;
  return NULL;
}

const char* hrx_hip_runtime_library(void) {
  return atomic_load_explicit(&hrx_hip_settled_library, memory_order_acquire);
}

const hrx_hip_platform_t* hrx_hip_runtime_platform(void) {
  return atomic_load_explicit(&hrx_hip_settled_platform, memory_order_acquire);
}
