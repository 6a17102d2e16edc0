/* A stand-in for libcudart, built as a shared library for the `fake-cuda`
 * scenarios of test_hip_fake_cudart.c: it exports the cuda* entry points
 * the hip backend binds (hip_symbols.h), with the real numbers of the
 * errors and attributes hrx reads, so that the backend's NVIDIA kernel path
 * (module checks, lookups, parameter layout, launches, graph kernel nodes
 * and their rewrites for launch batches, unloads) runs and is checked on
 * a machine without a GPU. Memory is host memory; commands run at once.
 *
 * Kernel images are text the fake parses (one directive per line):
 *   FAKE-IMAGE
 *   load=N      cudaLibraryLoadData returns N
 *   module=N    the driver's cuLibraryGetModule returns N (CUresult)
 *   function=N  the driver's cuKernelGetFunction returns N
 *   setattr=N   cudaFuncSetAttribute returns N
 *   kernel NAME STATIC_SHARED SIZES
 *       SIZES: parameter sizes, comma-separated ("-" for none), laid out
 *       with natural alignment; or "?" when the parameter query fails
 *       with cudaErrorNotSupported.
 * Built without cudaFuncGetParamInfo when FAKE_NO_FUNC_PARAM_INFO is
 * defined, so that the driver's cuKernelGetParamInfo is used, and without
 * cudaGraphNodeSetEnabled when FAKE_NO_NODE_ENABLE is, so that launch
 * batches take the path of runtimes that cannot turn graph nodes off
 * (exact-size graphs, as on ROCm before 5.3).
 *
 * What it saw is read through fake_cudart_state(). Not thread-safe beyond
 * what the scenario needs (one thread). */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cudart.h"

#define EXPORT __attribute__((visibility("default")))

/* cudaError_t / CUresult values (the same numbers where both exist). */
enum {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kInvalidConfiguration = 9,
  kNotSupported = 801,
  kSymbolNotFound = 500,
  kInvalidKernelImage = 200,
};

static fake_cudart_state_t state;
static _Thread_local int last_error;

static int fail(int error) {
  if (error) last_error = error;
  return error;
}

EXPORT const fake_cudart_state_t* fake_cudart_state(void) { return &state; }

typedef struct fake_kernel_s {
  char name[64];
  size_t static_shared;
  int param_count;  /* -1: the query fails */
  size_t sizes[FAKE_MAX_PARAMS];
  size_t offsets[FAKE_MAX_PARAMS];
  struct fake_library_s* library;
} fake_kernel_t;

typedef struct fake_library_s {
  int module_result;
  int function_result;
  int setattr_result;
  int kernel_count;
  fake_kernel_t kernels[8];
} fake_library_t;

/* ------------------------------------------------------------- devices */

EXPORT int cudaGetDeviceCount(int* count) {
  *count = 1;
  return kSuccess;
}
EXPORT int cudaSetDevice(int device) { return fail(device == 0 ? 0 : 101); }
EXPORT int cudaDeviceGetAttribute(int* value, int attr, int device) {
  (void)device;
  switch (attr) {
    case 75: *value = 9; break;           /* compute capability major */
    case 76: *value = 0; break;           /* minor */
    case 1: *value = 1024; break;         /* threads per block */
    case 2: *value = 1024; break;         /* block x */
    case 3: *value = 1024; break;
    case 4: *value = 64; break;
    case 5: *value = 2147483647; break;   /* grid x */
    case 6: *value = 65535; break;
    case 7: *value = 65535; break;
    case 97: *value = 232448; break;      /* shared per block, opt-in */
    default: *value = 0; break;
  }
  return kSuccess;
}
EXPORT int cudaGetDeviceProperties(void* prop, int device) {
  (void)device;
  strcpy((char*)prop, "Fake CUDA device");
  size_t total = (size_t)1 << 30;
  memcpy((char*)prop + 288, &total, sizeof(total));
  return kSuccess;
}
EXPORT int cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  *free_bytes = (size_t)1 << 29;
  *total_bytes = (size_t)1 << 30;
  return kSuccess;
}
EXPORT int cudaDeviceSynchronize(void) {
  ++state.device_synchronizes;
  return kSuccess;
}
EXPORT int cudaGetLastError(void) {
  int error = last_error;
  last_error = 0;
  return error;
}
EXPORT const char* cudaGetErrorName(int error) {
  switch (error) {
    case kSuccess: return "cudaSuccess";
    case kInvalidValue: return "cudaErrorInvalidValue";
    case kOutOfMemory: return "cudaErrorMemoryAllocation";
    case kSymbolNotFound: return "cudaErrorSymbolNotFound";
    case kInvalidKernelImage: return "cudaErrorInvalidKernelImage";
    default: return "cudaErrorFake";
  }
}
EXPORT const char* cudaGetErrorString(int error) {
  return error ? "fake failure" : "no error";
}
EXPORT int cudaRuntimeGetVersion(int* version) {
  *version = 13000;
  return kSuccess;
}
EXPORT int cudaDriverGetVersion(int* version) {
  *version = 13000;
  return kSuccess;
}

/* ------------------------------------------------------ streams, events */

/* A stream handle carries a mark, so that a call given anything else (a
 * pointer to the backend's own queue record, say) is caught: counted in
 * state.bad_streams and refused. NULL is the default stream. */
enum { kInvalidResourceHandle = 400 };
#define FAKE_STREAM_MARK 0x66616b6573747231ull
typedef struct fake_stream_s {
  uint64_t mark;
} fake_stream_t;

static int bad_stream(const void* stream) {
  if (!stream || ((const fake_stream_t*)stream)->mark == FAKE_STREAM_MARK) {
    return 0;
  }
  ++state.bad_streams;
  return fail(kInvalidResourceHandle);
}

EXPORT int cudaStreamCreateWithFlags(void** stream, unsigned int flags) {
  (void)flags;
  fake_stream_t* made = calloc(1, sizeof(*made));
  if (!made) return fail(kOutOfMemory);
  made->mark = FAKE_STREAM_MARK;
  *stream = made;
  return kSuccess;
}
EXPORT int cudaStreamDestroy(void* stream) {
  if (bad_stream(stream)) return kInvalidResourceHandle;
  free(stream);
  return kSuccess;
}
EXPORT int cudaStreamSynchronize(void* stream) {
  if (bad_stream(stream)) return kInvalidResourceHandle;
  return kSuccess;
}
EXPORT int cudaStreamQuery(void* stream) {
  if (bad_stream(stream)) return kInvalidResourceHandle;
  return kSuccess;
}
EXPORT int cudaStreamWaitEvent(void* stream, void* event, unsigned int f) {
  (void)event, (void)f;
  if (bad_stream(stream)) return kInvalidResourceHandle;
  return kSuccess;
}
EXPORT int cudaEventCreateWithFlags(void** event, unsigned int flags) {
  (void)flags;
  *event = malloc(16);
  return kSuccess;
}
EXPORT int cudaEventDestroy(void* event) {
  free(event);
  return kSuccess;
}
EXPORT int cudaEventRecord(void* event, void* stream) {
  (void)event;
  if (bad_stream(stream)) return kInvalidResourceHandle;
  return kSuccess;
}
EXPORT int cudaEventQuery(void* event) {
  (void)event;
  return kSuccess;
}
EXPORT int cudaEventSynchronize(void* event) {
  (void)event;
  return kSuccess;
}
EXPORT int cudaEventElapsedTime(float* ms, void* start, void* end) {
  (void)start, (void)end;
  *ms = 0.0f;
  return kSuccess;
}

/* -------------------------------------------------------------- memory */

EXPORT int cudaMalloc(void** ptr, size_t size) {
  *ptr = malloc(size ? size : 1);
  return *ptr ? kSuccess : fail(kOutOfMemory);
}
EXPORT int cudaFree(void* ptr) {
  free(ptr);
  return kSuccess;
}
/* Pinned memory, allocated (cudaHostAlloc) or registered: remembered, so
 * that registering pinned memory again or unregistering what was not
 * registered fails as the real runtime's does: registered memory again is
 * cudaErrorHostMemoryAlreadyRegistered (712), cudaHostAlloc'd memory
 * cudaErrorInvalidValue (the CUDA 13 runtime on the H200), and
 * unregistering what was not registered cudaErrorHostMemoryNotRegistered
 * (713). cudaHostGetFlags knows only cudaHostAlloc'd memory. */
enum { kPinnedSlots = 256 };
static struct {
  void* ptr;
  int registered;  /* 1: cudaHostRegister, 0: cudaHostAlloc */
} pinned_memory[kPinnedSlots];
static pthread_mutex_t pinned_mutex = PTHREAD_MUTEX_INITIALIZER;

/* Adds ptr; -1 when the table is full. Call with pinned_mutex. */
static int pinned_add(void* ptr, int registered) {
  for (int i = 0; i < kPinnedSlots; ++i) {
    if (!pinned_memory[i].ptr) {
      pinned_memory[i].ptr = ptr;
      pinned_memory[i].registered = registered;
      return i;
    }
  }
  return -1;
}

/* The slot of ptr, or -1. Call with pinned_mutex. */
static int pinned_find(const void* ptr) {
  for (int i = 0; i < kPinnedSlots; ++i) {
    if (pinned_memory[i].ptr == ptr) return i;
  }
  return -1;
}

EXPORT int cudaHostAlloc(void** ptr, size_t size, unsigned int flags) {
  (void)flags;
  int err = cudaMalloc(ptr, size);
  if (err) return err;
  pthread_mutex_lock(&pinned_mutex);
  pinned_add(*ptr, 0);  /* a full table only forgets it */
  pthread_mutex_unlock(&pinned_mutex);
  return kSuccess;
}
EXPORT int cudaFreeHost(void* ptr) {
  pthread_mutex_lock(&pinned_mutex);
  int slot = pinned_find(ptr);
  if (slot >= 0) pinned_memory[slot].ptr = NULL;
  pthread_mutex_unlock(&pinned_mutex);
  return cudaFree(ptr);
}
EXPORT int cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  (void)size;
  (void)flags;
  pthread_mutex_lock(&pinned_mutex);
  int err = kSuccess;
  int slot = pinned_find(ptr);
  if (slot >= 0) {
    err = pinned_memory[slot].registered ? 712 : kInvalidValue;
  } else if (pinned_add(ptr, 1) < 0) {
    err = kOutOfMemory;
  } else {
    state.host_registrations++;
  }
  pthread_mutex_unlock(&pinned_mutex);
  return fail(err);
}
EXPORT int cudaHostGetFlags(unsigned int* flags, void* ptr) {
  pthread_mutex_lock(&pinned_mutex);
  int slot = pinned_find(ptr);
  int err = slot >= 0 && !pinned_memory[slot].registered ? kSuccess
                                                         : kInvalidValue;
  pthread_mutex_unlock(&pinned_mutex);
  if (!err) *flags = 0;
  return fail(err);
}
EXPORT int cudaHostUnregister(void* ptr) {
  pthread_mutex_lock(&pinned_mutex);
  int slot = pinned_find(ptr);
  int err = slot >= 0 && pinned_memory[slot].registered ? kSuccess : 713;
  if (!err) {
    pinned_memory[slot].ptr = NULL;
    state.host_unregistrations++;
  }
  pthread_mutex_unlock(&pinned_mutex);
  return fail(err);
}
EXPORT int cudaMemcpyAsync(void* dst, const void* src, size_t size, int kind,
                           void* stream) {
  (void)kind;
  if (bad_stream(stream)) return kInvalidResourceHandle;
  memmove(dst, src, size);
  return kSuccess;
}
EXPORT int cudaMemsetAsync(void* dst, int value, size_t size, void* stream) {
  if (bad_stream(stream)) return kInvalidResourceHandle;
  memset(dst, value, size);
  return kSuccess;
}

/* ------------------------------------------------------------- kernels */

static size_t align_up(size_t value, size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

static void parse_sizes(fake_kernel_t* kernel, const char* sizes) {
  kernel->param_count = 0;
  if (strcmp(sizes, "?") == 0) {
    kernel->param_count = -1;
    return;
  }
  if (strcmp(sizes, "-") == 0) return;
  size_t offset = 0;
  for (const char* p = sizes; *p && kernel->param_count < FAKE_MAX_PARAMS;) {
    char* end = NULL;
    size_t size = strtoul(p, &end, 10);
    size_t alignment = size >= 8 ? 8 : size >= 4 ? 4 : size >= 2 ? 2 : 1;
    offset = align_up(offset, alignment);
    kernel->sizes[kernel->param_count] = size;
    kernel->offsets[kernel->param_count] = offset;
    ++kernel->param_count;
    offset += size;
    p = *end == ',' ? end + 1 : end;
  }
}

EXPORT int cudaLibraryLoadData(void** library, const void* code,
                               void* jit_options, void** jit_values,
                               unsigned int jit_count, void* options,
                               void** values, unsigned int count) {
  (void)jit_options, (void)jit_values, (void)jit_count, (void)options,
      (void)values, (void)count;
  const char* text = code;
  if (strncmp(text, "FAKE-IMAGE", 10) != 0) return fail(kInvalidKernelImage);
  fake_library_t* lib = calloc(1, sizeof(*lib));
  int load_result = 0;
  char* copy = strdup(text);
  char* save = NULL;
  for (char* line = strtok_r(copy, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    char name[64];
    char sizes[1024];
    size_t shared = 0;
    sscanf(line, "load=%d", &load_result);
    sscanf(line, "module=%d", &lib->module_result);
    sscanf(line, "function=%d", &lib->function_result);
    sscanf(line, "setattr=%d", &lib->setattr_result);
    if (sscanf(line, "kernel %63s %zu %1023s", name, &shared, sizes) == 3 &&
        lib->kernel_count < 8) {
      fake_kernel_t* k = &lib->kernels[lib->kernel_count++];
      snprintf(k->name, sizeof(k->name), "%s", name);
      k->static_shared = shared;
      k->library = lib;
      parse_sizes(k, sizes);
    }
  }
  free(copy);
  if (load_result) {
    free(lib);
    return fail(load_result);
  }
  ++state.libraries_loaded;
  *library = lib;
  return kSuccess;
}
EXPORT int cudaLibraryUnload(void* library) {
  free(library);
  ++state.libraries_unloaded;
  state.synchronizes_at_last_unload = state.device_synchronizes;
  return kSuccess;
}
EXPORT int cudaLibraryGetKernel(void** kernel, void* library,
                                const char* name) {
  fake_library_t* lib = library;
  for (int i = 0; i < lib->kernel_count; ++i) {
    if (strcmp(lib->kernels[i].name, name) == 0) {
      *kernel = &lib->kernels[i];
      return kSuccess;
    }
  }
  return fail(kSymbolNotFound);
}
EXPORT int cudaLibraryGetKernelCount(unsigned int* count, void* library) {
  *count = (unsigned int)((fake_library_t*)library)->kernel_count;
  return kSuccess;
}
EXPORT int cudaLibraryEnumerateKernels(void** kernels, unsigned int count,
                                       void* library) {
  fake_library_t* lib = library;
  for (unsigned int i = 0; i < count && (int)i < lib->kernel_count; ++i) {
    kernels[i] = &lib->kernels[i];
  }
  return kSuccess;
}
/* cudaFuncAttributes: sharedSizeBytes at 0, maxThreadsPerBlock at 24,
 * maxDynamicSharedSizeBytes at 44. */
EXPORT int cudaFuncGetAttributes(void* attributes, const void* function) {
  const fake_kernel_t* k = function;
  char* out = attributes;
  int threads = 1024;
  int dynamic = 49152 - (int)k->static_shared;
  memcpy(out, &k->static_shared, sizeof(size_t));
  memcpy(out + 24, &threads, sizeof(int));
  memcpy(out + 44, &dynamic, sizeof(int));
  return kSuccess;
}
EXPORT int cudaFuncSetAttribute(const void* function, int attribute,
                                int value) {
  const fake_kernel_t* k = function;
  if (k->library->setattr_result) return fail(k->library->setattr_result);
  if (attribute == 8) state.max_dynamic_shared_set = value;
  return kSuccess;
}

static int param_info(const fake_kernel_t* k, size_t index, size_t* offset,
                      size_t* size) {
  if (k->param_count < 0) return kNotSupported;
  if ((int)index >= k->param_count) return kInvalidValue;
  *offset = k->offsets[index];
  *size = k->sizes[index];
  return kSuccess;
}

#ifndef FAKE_NO_FUNC_PARAM_INFO
EXPORT int cudaFuncGetParamInfo(const void* function, size_t index,
                                size_t* offset, size_t* size) {
  ++state.runtime_param_queries;
  return fail(param_info(function, index, offset, size));
}
#endif

/* Copies the argument values of a launch as the kernel lays them out. */
static void capture(const fake_kernel_t* k, void** args,
                    fake_cudart_launch_t* out) {
  memset(out, 0, sizeof(*out));
  out->function = k;
  for (int i = 0; i < k->param_count; ++i) {
    if (k->offsets[i] + k->sizes[i] <= sizeof(out->values)) {
      memcpy(out->values + k->offsets[i], args[i], k->sizes[i]);
    }
  }
}

typedef struct dim3_s {
  unsigned int x, y, z;
} dim3_t;

EXPORT int cudaLaunchKernel(const void* function, dim3_t grid, dim3_t block,
                            void** args, size_t shared, void* stream) {
  const fake_kernel_t* k = function;
  if (bad_stream(stream)) return kInvalidResourceHandle;
  if ((uint64_t)block.x * block.y * block.z > 1024) {
    return fail(kInvalidConfiguration);
  }
  capture(k, args, &state.last_launch);
  state.last_launch.grid[0] = grid.x;
  state.last_launch.grid[1] = grid.y;
  state.last_launch.grid[2] = grid.z;
  state.last_launch.block[0] = block.x;
  state.last_launch.block[1] = block.y;
  state.last_launch.block[2] = block.z;
  state.last_launch.shared = shared;
  state.last_launch.stream = stream;
  ++state.launches;
  return kSuccess;
}

/* -------------------------------------------------------------- graphs */

typedef struct kernel_node_params_s {
  void* func;
  dim3_t grid;
  dim3_t block;
  unsigned int shared;
  void** kernel_params;
  void** extra;
} kernel_node_params_t;

/* Node handles: the graph owns its nodes, so they are never freed; each
 * is unique for the process. */
#define FAKE_MAX_NODES 4096
static char graph_nodes[FAKE_MAX_NODES];
static int graph_node_count;

static void* new_node(void) {
  return &graph_nodes[graph_node_count++ % FAKE_MAX_NODES];
}

/* A graph, and an instantiated one: its nodes in the order they were
 * added, with each kernel node's parameters (memset and memcpy nodes are
 * recorded as not kernels) and, in an exec, whether it is enabled. */
#define FAKE_MAX_GRAPH_NODES 256
typedef struct fake_graph_s {
  int count;
  void* node[FAKE_MAX_GRAPH_NODES];
  int kernel[FAKE_MAX_GRAPH_NODES];
  int enabled[FAKE_MAX_GRAPH_NODES];
  fake_cudart_launch_t params[FAKE_MAX_GRAPH_NODES];
} fake_graph_t;

static void* add_node(void* graph, int kernel) {
  fake_graph_t* g = graph;
  void* node = new_node();
  if (g->count < FAKE_MAX_GRAPH_NODES) {
    g->node[g->count] = node;
    g->kernel[g->count] = kernel;
    g->enabled[g->count] = 1;
    if (kernel) g->params[g->count] = state.kernel_node;
    ++g->count;
  }
  return node;
}

static int node_index(const fake_graph_t* g, const void* node) {
  for (int i = 0; i < g->count; ++i) {
    if (g->node[i] == node) return i;
  }
  return -1;
}

static void capture_node(const kernel_node_params_t* params,
                         fake_cudart_launch_t* out) {
  capture(params->func, params->kernel_params, out);
  out->grid[0] = params->grid.x;
  out->grid[1] = params->grid.y;
  out->grid[2] = params->grid.z;
  out->block[0] = params->block.x;
  out->block[1] = params->block.y;
  out->block[2] = params->block.z;
  out->shared = params->shared;
}

EXPORT int cudaGraphCreate(void** graph, unsigned int flags) {
  (void)flags;
  *graph = calloc(1, sizeof(fake_graph_t));
  return *graph ? kSuccess : fail(kOutOfMemory);
}
EXPORT int cudaGraphAddMemcpyNode1D(void** node, void* graph,
                                    void* const* deps, size_t count,
                                    void* dst, const void* src, size_t size,
                                    int kind) {
  (void)deps, (void)count, (void)dst, (void)src, (void)size, (void)kind;
  *node = add_node(graph, 0);
  return kSuccess;
}
EXPORT int cudaGraphAddMemsetNode(void** node, void* graph, void* const* deps,
                                  size_t count, const void* params) {
  (void)deps, (void)count, (void)params;
  *node = add_node(graph, 0);
  return kSuccess;
}
EXPORT int cudaGraphAddKernelNode(void** node, void* graph, void* const* deps,
                                  size_t count,
                                  const kernel_node_params_t* params) {
  if (params->extra) return fail(kInvalidValue);
  capture_node(params, &state.kernel_node);
  state.kernel_node_dependencies = count;
  state.kernel_node_first_dependency = count ? deps[0] : NULL;
  *node = add_node(graph, 1);
  return kSuccess;
}
EXPORT int cudaGraphInstantiateWithFlags(void** exec, void* graph,
                                         unsigned long long flags) {
  (void)flags;
  fake_graph_t* copy = malloc(sizeof(fake_graph_t));
  if (!copy) return fail(kOutOfMemory);
  *copy = *(const fake_graph_t*)graph;
  *exec = copy;
  return kSuccess;
}
EXPORT int cudaGraphExecKernelNodeSetParams(void* exec, void* node,
                                            const kernel_node_params_t* p) {
  fake_graph_t* g = exec;
  int i = node_index(g, node);
  if (i < 0 || !g->kernel[i] || p->extra) return fail(kInvalidValue);
  if ((uint64_t)p->block.x * p->block.y * p->block.z > 1024) {
    return fail(kInvalidConfiguration);
  }
  capture_node(p, &g->params[i]);
  ++state.graph_node_updates;
  return kSuccess;
}
#ifndef FAKE_NO_NODE_ENABLE
EXPORT int cudaGraphNodeSetEnabled(void* exec, void* node,
                                   unsigned int enabled) {
  fake_graph_t* g = exec;
  int i = node_index(g, node);
  if (i < 0) return fail(kInvalidValue);
  g->enabled[i] = enabled != 0;
  ++state.graph_node_switches;
  return kSuccess;
}
#endif
EXPORT int cudaGraphLaunch(void* exec, void* stream) {
  const fake_graph_t* g = exec;
  if (bad_stream(stream)) return kInvalidResourceHandle;
  ++state.graph_launches;
  state.last_graph_kernels = 0;
  for (int i = 0; i < g->count; ++i) {
    if (!g->kernel[i] || !g->enabled[i]) continue;
    if (state.graph_kernels_run < FAKE_MAX_GRAPH_LOG) {
      fake_cudart_launch_t* entry = &state.graph_log[state.graph_kernels_run];
      *entry = g->params[i];
      entry->stream = stream;
    }
    if (state.last_graph_kernels < FAKE_MAX_GRAPH_LOG) {
      fake_cudart_launch_t* entry =
          &state.last_graph_log[state.last_graph_kernels];
      *entry = g->params[i];
      entry->stream = stream;
    }
    ++state.last_graph_kernels;
    ++state.graph_kernels_run;
  }
  return kSuccess;
}
EXPORT int cudaGraphExecDestroy(void* exec) {
  free(exec);
  return kSuccess;
}
EXPORT int cudaGraphDestroy(void* graph) {
  free(graph);
  return kSuccess;
}

/* ------------------------------------------------------ the driver API */

static int driver_get_error_name(int error, const char** name) {
  *name = error == 209 ? "CUDA_ERROR_NO_BINARY_FOR_GPU" : "CUDA_ERROR_FAKE";
  return kSuccess;
}
static int driver_library_get_module(void** module, void* library) {
  fake_library_t* lib = library;
  if (lib->module_result) return lib->module_result;
  *module = lib;
  return kSuccess;
}
static int driver_kernel_get_function(void** function, void* kernel) {
  fake_kernel_t* k = kernel;
  ++state.driver_function_queries;
  if (k->library->function_result) return k->library->function_result;
  *function = k;
  return kSuccess;
}
static int driver_kernel_param_info(void* kernel, size_t index,
                                    size_t* offset, size_t* size) {
  ++state.driver_param_queries;
  return param_info(kernel, index, offset, size);
}

EXPORT int cudaGetDriverEntryPointByVersion(const char* symbol,
                                            void** function,
                                            unsigned int version,
                                            unsigned long long flags,
                                            int* status) {
  (void)flags;
  struct {
    const char* name;
    unsigned int version;
    void* address;
  } entries[] = {
      {"cuGetErrorName", 6000, (void*)driver_get_error_name},
      {"cuLibraryGetModule", 12000, (void*)driver_library_get_module},
      {"cuKernelGetFunction", 12000, (void*)driver_kernel_get_function},
      {"cuKernelGetParamInfo", 12040, (void*)driver_kernel_param_info},
  };
  for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); ++i) {
    if (strcmp(entries[i].name, symbol) == 0) {
      if (version < entries[i].version) {
        *status = 2;  /* version not sufficient */
        *function = NULL;
        return kSuccess;
      }
      *status = 0;
      *function = entries[i].address;
      return kSuccess;
    }
  }
  *status = 1;  /* symbol not found */
  *function = NULL;
  return kSuccess;
}
