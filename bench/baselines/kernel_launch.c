/* Launch rate of the benchmark's tiny kernel (hrx_bench_tiny,
 * csrc/bench/bench_kernel_sources.h) from T threads, each on a native
 * stream of its own (created non-blocking), N launches each: the plain-C
 * baseline that hrx's own launch rate is measured against.
 *
 * The kernel is compiled by the hip backend (kernel_compile, so with the
 * same compiler and image format as hrx). Then, by driver:
 *   c-runtime  a plain loop of the runtime's own launch call, bound with
 *              dlsym on the runtime library the hip backend loaded: the
 *              image is loaded with cudaLibraryLoadData / hipModuleLoadData
 *              and launched with cudaLaunchKernel (the cudaKernel_t as the
 *              function) / hipModuleLaunchKernel, on streams made with
 *              cudaStreamCreateWithFlags / hipStreamCreateWithFlags
 *              (non-blocking, as hrx's queues are).
 *   c-function NVIDIA only: the same image, kernel and streams as
 *              c-runtime, launched through the driver API instead:
 *              cuKernelGetFunction turns the cudaKernel_t (a CUkernel)
 *              into the context's CUfunction once, and each launch is
 *              cuLaunchKernel on the cudaStream_t (a CUstream). Both entry
 *              points come from cudaGetDriverEntryPointByVersion (runtime
 *              12.5+), else cudaGetDriverEntryPoint, so nothing links
 *              libcuda. Beside c-runtime with many threads it shows whether
 *              the runtime's cudaLaunchKernel path is what caps the rate.
 *              On AMD it is refused (exit status 3): HIP has no separate
 *              driver entry points.
 *   c-backend  the same loop through the hip backend's vtable
 *              (module_load, module_get_kernel, kernel_launch on queues of
 *              queue_create): what the backend adds to the runtime call.
 * Each thread first launches 1000 times and waits (warm-up); then all start
 * together and `seconds` is the wall time until the last thread has made
 * its N launch calls (the launches' execution is waited for afterwards,
 * outside the time). Every launch's counter is checked at the end.
 *
 * With --sync-each every timed launch is followed by a synchronize of its
 * stream (queue): N isolated launches, whose latency is seconds / N.
 *
 * Prints one JSON line: {"driver": D, "threads": T, "launches": N,
 * "sync_each": B, "seconds": S, "launches_per_s": T*N/S}; exit status 1 on
 * any failure, 2 on bad arguments, 3 for c-function on AMD.
 *
 * Usage: kernel_launch [--threads T] [--launches N] [--driver D]
 * [--sync-each] (defaults 1, 100000, c-runtime; a later option wins).
 * Build and run:
 * bench/scripts/kernel_launch_baseline.sh [args] (needs only gcc and a GPU
 * runtime with its compiler; no GPU SDK). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/device.h"
#include "drivers/hip/hip_backend.h"
#include "bench/bench_kernel_sources.h"
#include "hrx.h"

enum { kWarmup = 1000, kBlockThreads = 32 };

typedef struct dim3_s {
  unsigned int x, y, z;
} dim3_t;

/* The CUDA driver API's handles and the two entry points c-function calls,
 * at the versions it asks for (the PFN_<name>_v<version> typedefs of
 * cudaTypedefs.h). Compiled with -DKERNEL_LAUNCH_CHECK_CUDA and a CUDA
 * toolkit's include directory (-fsyntax-only is enough), the handles are
 * the toolkit's own and the prototypes are checked against its typedefs
 * (tests/bench/test_kernel_launch_baseline.py does that where a toolkit is
 * installed). */
#ifdef KERNEL_LAUNCH_CHECK_CUDA
#include <cudaTypedefs.h>
typedef CUresult cu_result_t;
typedef CUkernel cu_kernel_t;
typedef CUfunction cu_function_t;
typedef CUstream cu_stream_t;
#else
typedef int cu_result_t;
typedef struct cu_kernel_opaque_s* cu_kernel_t;
typedef struct cu_function_opaque_s* cu_function_t;
typedef struct cu_stream_opaque_s* cu_stream_t;
#endif
#define CU_KERNEL_GET_FUNCTION_VERSION 12000u
#define CU_LAUNCH_KERNEL_VERSION 4000u
typedef cu_result_t (*cu_kernel_get_function_fn)(cu_function_t* function,
                                                 cu_kernel_t kernel);
typedef cu_result_t (*cu_launch_kernel_fn)(
    cu_function_t function, unsigned int grid_x, unsigned int grid_y,
    unsigned int grid_z, unsigned int block_x, unsigned int block_y,
    unsigned int block_z, unsigned int shared_bytes, cu_stream_t stream,
    void** params, void** extra);
#ifdef KERNEL_LAUNCH_CHECK_CUDA
_Static_assert(__builtin_types_compatible_p(cu_kernel_get_function_fn,
                                            PFN_cuKernelGetFunction_v12000),
               "cuKernelGetFunction's prototype at version 12000");
_Static_assert(CU_KERNEL_GET_FUNCTION_VERSION == 12000u,
               "the version of PFN_cuKernelGetFunction_v12000");
_Static_assert(__builtin_types_compatible_p(cu_launch_kernel_fn,
                                            PFN_cuLaunchKernel_v4000),
               "cuLaunchKernel's prototype at version 4000");
_Static_assert(CU_LAUNCH_KERNEL_VERSION == 4000u,
               "the version of PFN_cuLaunchKernel_v4000");
_Static_assert(CUDA_SUCCESS == 0, "CUresult's success");
#endif

/* The runtime entry points, with the shapes both runtimes share (results
 * are int, handles pointers). */
typedef struct runtime_s {
  bool amd;
  int (*set_device)(int);
  int (*malloc_)(void**, size_t);
  int (*free_)(void*);
  int (*memset_)(void*, int, size_t);
  int (*stream_create)(void**, unsigned int);
  int (*stream_sync)(void*);
  int (*stream_destroy)(void*);
  int (*memcpy_)(void*, const void*, size_t, int);
  int (*device_sync)(void);
  /* NVIDIA */
  int (*library_load)(void**, const void*, void*, void**, unsigned int,
                      void*, void**, unsigned int);
  int (*library_get_kernel)(void**, void*, const char*);
  int (*launch)(const void*, dim3_t, dim3_t, void**, size_t, void*);
  /* NVIDIA, optional (NULL where the runtime lacks them): the driver API's
   * entry points, by version (12.5+) or the runtime's own (12.0+). */
  int (*entry_point_by_version)(const char*, void**, unsigned int,
                                unsigned long long, int*);
  int (*entry_point)(const char*, void**, unsigned long long, int*);
  /* AMD */
  int (*module_load)(void**, const void*);
  int (*module_get_function)(void**, void*, const char*);
  int (*module_launch)(void*, unsigned int, unsigned int, unsigned int,
                       unsigned int, unsigned int, unsigned int, unsigned int,
                       void*, void**, void**);
} runtime_t;

/* How the workers launch. */
typedef enum launch_path_e {
  kPathRuntime,   /* c-runtime */
  kPathFunction,  /* c-function */
  kPathBackend,   /* c-backend */
} launch_path_t;

typedef struct shared_s {
  const char* driver;
  launch_path_t path;
  runtime_t rt;
  void* function;  /* c-runtime, c-function: cudaKernel_t / hipFunction_t */
  cu_function_t cu_function;       /* c-function: the context's CUfunction */
  cu_launch_kernel_fn cu_launch;   /* c-function */
  hrx_backend_device_t* backend;
  hrx_native_kernel_t* kernel;  /* c-backend */
  long launches;
  bool sync_each;   /* each timed launch followed by its stream's wait */
  pthread_barrier_t start;
  pthread_barrier_t done_warmup;
} shared_t;

typedef struct worker_s {
  shared_t* shared;
  unsigned int* counter;  /* device memory: one word */
  int failures;
  uint64_t end_ns;        /* when its last launch call returned */
  void* stream;           /* c-runtime, c-function */
  hrx_native_queue_t* queue;  /* c-backend */
  pthread_t thread;
} worker_t;

static void die(const char* what, hrx_status_t status) {
  fprintf(stderr, "kernel_launch: %s: %s\n", what,
          status ? hrx_status_message(status) : "failed");
  exit(1);
}

static void* bind(void* library, bool amd, const char* suffix) {
  char name[96];
  snprintf(name, sizeof(name), "%s%s", amd ? "hip" : "cuda", suffix);
  void* address = dlsym(library, name);
  if (!address) {
    fprintf(stderr, "kernel_launch: %s not found\n", name);
    exit(1);
  }
  return address;
}

#define BIND(rt, field, library, suffix) \
  memcpy(&(rt)->field, &(void*){bind(library, (rt)->amd, suffix)}, sizeof(void*))
/* An entry point the runtime may lack: left NULL then. */
#define BIND_OPTIONAL(rt, field, library, name) \
  memcpy(&(rt)->field, &(void*){dlsym(library, name)}, sizeof(void*))

static void bind_runtime(runtime_t* rt, const char* library_name,
                         const char* platform) {
  void* library = dlopen(library_name, RTLD_NOW | RTLD_NOLOAD);
  if (!library) {
    fprintf(stderr, "kernel_launch: %s is not loaded\n", library_name);
    exit(1);
  }
  rt->amd = strcmp(platform, "amd") == 0;
  BIND(rt, set_device, library, "SetDevice");
  BIND(rt, malloc_, library, "Malloc");
  BIND(rt, free_, library, "Free");
  BIND(rt, memset_, library, "Memset");
  BIND(rt, stream_create, library, "StreamCreateWithFlags");
  BIND(rt, stream_sync, library, "StreamSynchronize");
  BIND(rt, stream_destroy, library, "StreamDestroy");
  BIND(rt, memcpy_, library, "Memcpy");
  BIND(rt, device_sync, library, "DeviceSynchronize");
  if (rt->amd) {
    BIND(rt, module_load, library, "ModuleLoadData");
    BIND(rt, module_get_function, library, "ModuleGetFunction");
    BIND(rt, module_launch, library, "ModuleLaunchKernel");
  } else {
    BIND(rt, library_load, library, "LibraryLoadData");
    BIND(rt, library_get_kernel, library, "LibraryGetKernel");
    BIND(rt, launch, library, "LaunchKernel");
    BIND_OPTIONAL(rt, entry_point_by_version, library,
                  "cudaGetDriverEntryPointByVersion");
    BIND_OPTIONAL(rt, entry_point, library, "cudaGetDriverEntryPoint");
  }
}

/* The driver entry point `symbol` at ABI `version`, or NULL with the
 * reason printed. cudaGetDriverEntryPoint, the fallback, gives the newest
 * ABI the runtime knows, which for the two entry points used here is the
 * only one. */
static void* driver_entry_point(const runtime_t* rt, const char* symbol,
                                unsigned int version) {
  void* address = NULL;
  int found = -1;  /* cudaDriverEntryPointQueryResult; 0 is success */
  int err;
  const char* how;
  if (rt->entry_point_by_version) {
    how = "cudaGetDriverEntryPointByVersion";
    err = rt->entry_point_by_version(symbol, &address, version,
                                     0 /* cudaEnableDefault */, &found);
  } else if (rt->entry_point) {
    how = "cudaGetDriverEntryPoint";
    err = rt->entry_point(symbol, &address, 0 /* cudaEnableDefault */,
                          &found);
  } else {
    fprintf(stderr, "kernel_launch: the runtime has neither "
                    "cudaGetDriverEntryPointByVersion nor "
                    "cudaGetDriverEntryPoint\n");
    return NULL;
  }
  if (err != 0 || found != 0 || !address) {
    fprintf(stderr, "kernel_launch: %s(\"%s\", %u) failed (error %d, query "
            "result %d)\n", how, symbol, version, err, found);
    return NULL;
  }
  return address;
}

/* One plain runtime launch of the tiny kernel (c-runtime), or one driver
 * API launch (c-function). */
static inline int runtime_launch(const shared_t* s, void** args,
                                 void* stream) {
  if (s->path == kPathFunction) {
    return (int)s->cu_launch(s->cu_function, 1, 1, 1, kBlockThreads, 1, 1, 0,
                             (cu_stream_t)stream, args, NULL);
  }
  if (s->rt.amd) {
    return s->rt.module_launch(s->function, 1, 1, 1, kBlockThreads, 1, 1, 0,
                               stream, args, NULL);
  }
  dim3_t grid = {1, 1, 1};
  dim3_t block = {kBlockThreads, 1, 1};
  return s->rt.launch(s->function, grid, block, args, 0, stream);
}

static void* worker_main(void* arg) {
  worker_t* w = arg;
  shared_t* s = w->shared;
  bool backend = s->path == kPathBackend;
  void* stream = NULL;
  hrx_native_queue_t* queue = NULL;
  bool done = false;
  const hrx_backend_vtable_t* vt = s->backend->vtable;
  void* args[] = {&w->counter};
  const uint32_t arg_sizes[] = {sizeof(void*)};
  hrx_kernel_launch_t launch = {
      .grid = {1, 1, 1}, .block = {kBlockThreads, 1, 1}, .arg_count = 1,
      .args = (const void* const*)args, .arg_sizes = arg_sizes};
  if (backend) {
    int native_priority = 0;
    hrx_status_t status = vt->queue.create(
        s->backend, HRX_STREAM_PRIORITY_NORMAL, 0, &queue, &native_priority);
    if (status) die("queue_create", status);
  } else {
    if (s->rt.set_device(0) != 0 ||
        s->rt.stream_create(&stream, 1 /* non-blocking */) != 0) {
      die("the runtime's stream", NULL);
    }
  }
  long total = kWarmup + s->launches;
  for (long i = 0; i < total; ++i) {
    if (i == kWarmup) {
      if (backend) {
        hrx_status_free(vt->queue.wait(s->backend, queue, HRX_WAIT_FOREVER,
                                       &done));
      } else {
        s->rt.stream_sync(stream);
      }
      pthread_barrier_wait(&s->done_warmup);
      pthread_barrier_wait(&s->start);
    }
    if (backend) {
      hrx_status_t status =
          vt->kernel.launch(s->backend, queue, s->kernel, &launch);
      if (status) {
        ++w->failures;
        hrx_status_free(status);
      }
    } else if (runtime_launch(s, args, stream) != 0) {
      ++w->failures;
    }
    if (s->sync_each && i >= kWarmup) {
      if (backend) {
        hrx_status_free(vt->queue.wait(s->backend, queue, HRX_WAIT_FOREVER,
                                       &done));
      } else if (s->rt.stream_sync(stream) != 0) {
        ++w->failures;
      }
    }
  }
  w->end_ns = hrx_now_ns();
  if (backend) {
    hrx_status_free(
        vt->queue.wait(s->backend, queue, HRX_WAIT_FOREVER, &done));
  } else {
    s->rt.stream_sync(stream);
  }
  w->stream = stream;
  w->queue = queue;
  return NULL;
}

int main(int argc, char** argv) {
  int threads = 1;
  long launches = 100000;
  const char* driver = "c-runtime";
  bool sync_each = false;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--sync-each") == 0) {
      sync_each = true;
      continue;
    }
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--launches") == 0 && i + 1 < argc) {
      launches = atol(argv[++i]);
    } else if (strcmp(argv[i], "--driver") == 0 && i + 1 < argc) {
      driver = argv[++i];
    } else {
      fprintf(stderr,
              "usage: %s [--threads T] [--launches N] [--driver "
              "c-runtime|c-function|c-backend] [--sync-each]\n",
              argv[0]);
      return 2;
    }
  }
  launch_path_t path = kPathRuntime;
  bool known = true;
  if (strcmp(driver, "c-function") == 0) {
    path = kPathFunction;
  } else if (strcmp(driver, "c-backend") == 0) {
    path = kPathBackend;
  } else if (strcmp(driver, "c-runtime") != 0) {
    known = false;
  }
  if (threads < 1 || threads > 1024 || launches < 1 || !known) {
    fprintf(stderr, "kernel_launch: threads in [1, 1024], launches >= 1, "
                    "driver c-runtime, c-function or c-backend\n");
    return 2;
  }

  hrx_device_t* device = NULL;
  hrx_status_t status = hrx_device_open("hip", 0, &device);
  if (status) die("open the hip device", status);
  shared_t s = {.driver = driver, .path = path, .launches = launches,
                .sync_each = sync_each};
  s.backend = hrx_device_backend(device);
  const hrx_backend_vtable_t* vt = s.backend->vtable;
  void* image = NULL;
  size_t size = 0;
  const char* tiny = hrx_bench_kernel_symbols[HRX_BENCH_KERNEL_TINY];
  hrx_kernel_param_record_t params = {.count = -1}; /* types: unused */
  status = vt->kernel.compile(s.backend, hrx_bench_kernel_source("cuda"),
                              &tiny, 1, NULL, 0, &image, &size, &params);
  if (status) die("compile the tiny kernel", status);
  bind_runtime(&s.rt, hrx_hip_loaded_library(), hrx_hip_platform());
  if (path == kPathFunction && s.rt.amd) {
    fprintf(stderr, "kernel_launch: c-function launches through the CUDA "
                    "driver API; this is AMD's HIP runtime, which has no "
                    "separate driver entry points\n");
    return 3;
  }
  hrx_native_module_t* module = NULL;
  if (path == kPathBackend) {
    hrx_kernel_attributes_t info;
    if ((status = vt->kernel.module_load(s.backend, image, size, &module)) ||
        (status = vt->kernel.module_get_kernel(s.backend, module, tiny, &s.kernel,
                                        &info))) {
      die("load the tiny kernel through the backend", status);
    }
  } else {
    void* handle = NULL;
    s.rt.set_device(0);
    int err = s.rt.amd ? s.rt.module_load(&handle, image)
                       : s.rt.library_load(&handle, image, NULL, NULL, 0,
                                           NULL, NULL, 0);
    if (err == 0) {
      err = s.rt.amd ? s.rt.module_get_function(&s.function, handle, tiny)
                     : s.rt.library_get_kernel(&s.function, handle, tiny);
    }
    if (err != 0) {
      fprintf(stderr, "kernel_launch: the runtime refused the image (%d)\n",
              err);
      return 1;
    }
  }
  free(image);

  s.rt.set_device(0);
  unsigned int* counters = NULL;
  if (s.rt.malloc_((void**)&counters, (size_t)threads * 4) != 0 ||
      s.rt.memset_(counters, 0, (size_t)threads * 4) != 0 ||
      s.rt.device_sync() != 0) {
    die("allocate the counters", NULL);
  }
  if (path == kPathFunction) {
    /* The primary context is current on this thread now (the runtime made
     * it so); the CUfunction is that context's, which every worker's
     * stream belongs to as well. */
    cu_kernel_get_function_fn get_function = NULL;
    void* address = driver_entry_point(&s.rt, "cuKernelGetFunction",
                                       CU_KERNEL_GET_FUNCTION_VERSION);
    memcpy(&get_function, &address, sizeof(address));
    address = driver_entry_point(&s.rt, "cuLaunchKernel",
                                 CU_LAUNCH_KERNEL_VERSION);
    memcpy(&s.cu_launch, &address, sizeof(address));
    if (!get_function || !s.cu_launch) return 1;
    cu_result_t result =
        get_function(&s.cu_function, (cu_kernel_t)s.function);
    if (result != 0 || !s.cu_function) {
      fprintf(stderr, "kernel_launch: cuKernelGetFunction failed (CUresult "
                      "%d)\n", (int)result);
      return 1;
    }
  }
  worker_t* workers = calloc((size_t)threads, sizeof(*workers));
  pthread_barrier_init(&s.done_warmup, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&s.start, NULL, (unsigned)threads + 1);
  for (int t = 0; t < threads; ++t) {
    workers[t].shared = &s;
    workers[t].counter = counters + t;
    pthread_create(&workers[t].thread, NULL, worker_main, &workers[t]);
  }
  pthread_barrier_wait(&s.done_warmup);
  uint64_t t0 = hrx_now_ns();
  pthread_barrier_wait(&s.start);
  int failures = 0;
  uint64_t t1 = t0;
  for (int t = 0; t < threads; ++t) {
    pthread_join(workers[t].thread, NULL);
    failures += workers[t].failures;
    if (workers[t].end_ns > t1) t1 = workers[t].end_ns;
  }
  double seconds = (double)(t1 - t0) / 1e9;

  /* Every launch ran: each counter saw warm-up plus measured launches. */
  unsigned int* host = calloc((size_t)threads, 4);
  if (s.rt.memcpy_(host, counters, (size_t)threads * 4,
                   2 /* device to host, synchronous */) != 0) {
    die("read the counters", NULL);
  }
  for (int t = 0; t < threads; ++t) {
    if (host[t] != (unsigned int)(kWarmup + launches)) {
      fprintf(stderr, "kernel_launch: thread %d: %u of %ld launches ran\n", t,
              host[t], kWarmup + launches);
      ++failures;
    }
  }
  if (failures) {
    fprintf(stderr, "kernel_launch: %d failures\n", failures);
    return 1;
  }
  printf("{\"driver\": \"%s\", \"threads\": %d, \"launches\": %ld, "
         "\"sync_each\": %s, \"seconds\": %.6f, \"launches_per_s\": "
         "%.1f}\n",
         driver, threads, launches, sync_each ? "true" : "false", seconds,
         (double)threads * (double)launches / seconds);
  for (int t = 0; t < threads; ++t) {
    if (workers[t].queue) vt->queue.destroy(s.backend, workers[t].queue);
    if (workers[t].stream) s.rt.stream_destroy(workers[t].stream);
  }
  if (module) vt->kernel.module_unload(s.backend, module);
  s.rt.free_(counters);
  free(host);
  free(workers);
  hrx_device_release(device);
  return 0;
}
