/* The hip driver: the hal/device.h vtable over the HIP runtime (AMD) or the CUDA
 * runtime (NVIDIA), bound by hip_dynamic.c.
 *
 * A native queue is a non-blocking stream with the graphs its launch
 * batches run in (hrx_hip_queue_t, hip_launch_graphs.h); a native event is
 * an event created with timing disabled, and the hrx_native_event_t*
 * handed to the core is that runtime handle itself, as are modules and
 * kernels (hip_kernels.h). Every entry point that reaches the device
 * first makes it current on the calling thread; compiling needs no
 * device. */
#include "hip_backend.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hal/driver.h"
#include "hip_batch.h"
#include "hip_connections.h"
#include "hip_dynamic.h"
#include "hip_kernels.h"
#include "hip_launch_graphs.h"
#include "hip_staging.h"
#include "base/clock.h"
#include "base/environment.h"
#include "base/nonblocking.h"

typedef struct hrx_hip_device_s {
  hrx_backend_device_t base;  /* first member */
  int index;
  hrx_device_info_t info;       /* filled at open; immutable */
  bool batching;                /* the core's setting at open: prepare the
                                   batch kernel ahead of the first batch */
  hrx_hip_staging_t* staging;   /* owned */
  hrx_hip_batch_t* batch;       /* owned; the batch kernel */
  /* The native context is created by the first entry point that needs it
   * (hrx_hip_enter), not at open: on NVIDIA that is when
   * CUDA_DEVICE_MAX_CONNECTIONS is read, and the pool may still be resized
   * before. context_mutex guards the fields below; context_ready is also
   * read without it (acquire) once set. */
  pthread_mutex_t context_mutex;
  atomic_bool context_ready;
  int connections_wanted;
  hrx_connection_budget_t connections;  /* what the runtime started with */
  bool priority_range;          /* the runtime reported one */
  int priority_least;           /* numerically largest (CUDA: 0) */
  int priority_greatest;        /* numerically smallest (H200: -5) */
  /* Per other device index (hrx_hip_rt.device_count entries; owned): peer
   * access from this device to that one has been enabled. */
  atomic_bool* peer_enabled;
} hrx_hip_device_t;

static const hrx_backend_vtable_t hrx_hip_vtable;

static hrx_hip_device_t* hrx_hip_device_cast(hrx_backend_device_t* device) {
  return (hrx_hip_device_t*)device;
}

/* A native queue. */
typedef struct hrx_hip_queue_s {
  hrx_hip_stream_t stream;
  hrx_hip_launch_graphs_t* launch_graphs;  /* owned */
} hrx_hip_queue_t;

static hrx_hip_queue_t* hrx_hip_queue_cast(hrx_native_queue_t* queue) {
  return (hrx_hip_queue_t*)queue;
}

static hrx_hip_stream_t hrx_hip_stream_of(hrx_native_queue_t* queue) {
  return hrx_hip_queue_cast(queue)->stream;
}

static hrx_hip_event_t hrx_hip_event_of(hrx_native_event_t* event) {
  return (hrx_hip_event_t)event;
}

static bool hrx_hip_nvidia(void) {
  return hrx_hip_rt.platform == &hrx_hip_platform_nvidia;
}

/* Creates the native context once: makes the device current (cudaSetDevice
 * creates the primary context since CUDA 12) and reads the stream priority
 * range. */
static hrx_status_t hrx_hip_activate(hrx_hip_device_t* device) {
  hrx_status_t status = NULL;
  pthread_mutex_lock(&device->context_mutex);
  if (!atomic_load(&device->context_ready)) {
    /* The budget took effect (or not) when the runtime started. */
    device->connections.wanted = device->connections_wanted;
    status = hrx_hip_make_current(device->index);
    if (!status && hrx_hip_rt.sym.DeviceGetStreamPriorityRange) {
      int least = 0;
      int greatest = 0;
      if (hrx_hip_ok(hrx_hip_rt.sym.DeviceGetStreamPriorityRange(
              &least, &greatest))) {
        device->priority_range = true;
        device->priority_least = least;
        device->priority_greatest = greatest;
      }
    }
    if (!status) atomic_store(&device->context_ready, true);
  }
  pthread_mutex_unlock(&device->context_mutex);
  /* The batch kernel deferred by device_open (NVIDIA); prepare runs once. */
  if (!status && hrx_hip_nvidia() && device->batching) {
    hrx_hip_batch_prepare(device->batch);
  }
  return status;
}

static hrx_status_t hrx_hip_enter(hrx_backend_device_t* base) {
  hrx_hip_device_t* device = hrx_hip_device_cast(base);
  if (!atomic_load_explicit(&device->context_ready, memory_order_acquire)) {
    HRX_RETURN_IF_ERROR(hrx_hip_activate(device));
  }
  return hrx_hip_make_current(device->index);
}

/* ------------------------------------------------------------------ load */

static hrx_status_t hrx_hip_load(bool opening, int* out_device_count) {
  return hrx_hip_runtime_load(opening, out_device_count);
}

const char* hrx_hip_loaded_library(void) { return hrx_hip_runtime_library(); }

const char* hrx_hip_platform(void) {
  const hrx_hip_platform_t* platform = hrx_hip_runtime_platform();
  return platform ? platform->id : NULL;
}

/* ---------------------------------------------------------------- device */

/* True if `text` starts an AMD ISA name: "gfx" and a hex digit. */
static bool hrx_hip_looks_like_gfx(const char* text, size_t available) {
  return available >= 4 && memcmp(text, "gfx", 3) == 0 &&
         ((text[3] >= '0' && text[3] <= '9') ||
          (text[3] >= 'a' && text[3] <= 'f'));
}

/* Copies the ISA name at `text` up to its first ':' (feature suffixes such as
 * ":sramecc+:xnack-") or NUL. */
static void hrx_hip_copy_isa(const char* text, size_t available, char* out,
                             size_t capacity) {
  size_t n = 0;
  while (n < available && n + 1 < capacity && text[n] && text[n] != ':') {
    out[n] = text[n];
    ++n;
  }
  out[n] = '\0';
}

/* gcnArchName from a hipDeviceProp_t buffer. The offset depends on which
 * entry point filled it; if the bytes there are not an ISA name (an unknown
 * layout), the first NUL-preceded "gfx<hex>" string after `name` is used. */
static void hrx_hip_amd_target(const char* props, bool versioned_layout,
                               char* out, size_t capacity) {
  size_t offset = versioned_layout ? HRX_HIP_AMD_PROP_R0600_GCN_ARCH_NAME_OFFSET
                                   : HRX_HIP_AMD_PROP_R0000_GCN_ARCH_NAME_OFFSET;
  if (hrx_hip_looks_like_gfx(props + offset,
                             HRX_HIP_AMD_PROP_GCN_ARCH_NAME_SIZE)) {
    hrx_hip_copy_isa(props + offset, HRX_HIP_AMD_PROP_GCN_ARCH_NAME_SIZE, out,
                     capacity);
    return;
  }
  for (size_t i = HRX_HIP_AMD_PROP_NAME_SIZE;
       i + 4 < HRX_HIP_DEVICE_PROP_BUFFER_SIZE; ++i) {
    if (props[i - 1] == '\0' &&
        hrx_hip_looks_like_gfx(props + i,
                               HRX_HIP_DEVICE_PROP_BUFFER_SIZE - i)) {
      hrx_hip_copy_isa(props + i, HRX_HIP_DEVICE_PROP_BUFFER_SIZE - i, out,
                       capacity);
      return;
    }
  }
  snprintf(out, capacity, "gfx-unknown");
}

static const char* hrx_hip_basename(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* Fills the device's static description. The device is current. */
static hrx_status_t hrx_hip_describe(int index, hrx_device_info_t* info) {
  const hrx_hip_runtime_t* rt = &hrx_hip_rt;
  memset(info, 0, sizeof(*info));
  snprintf(info->backend, sizeof(info->backend), "hip");
  snprintf(info->platform, sizeof(info->platform), "%s", rt->platform->id);
  info->index = index;
  info->max_native_queues = 0;

  /* Properties go into a zeroed buffer larger than any known layout; only
   * `name` (offset 0 everywhere) and AMD's gcnArchName are read. */
  char* props = calloc(1, HRX_HIP_DEVICE_PROP_BUFFER_SIZE);
  if (!props) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a device property buffer");
  }
  bool versioned = rt->sym.GetDevicePropertiesVersioned != NULL;
  hrx_hip_error_t err =
      versioned ? rt->sym.GetDevicePropertiesVersioned(
                      (hrx_hip_device_prop_t*)props, index)
                : rt->sym.GetDeviceProperties((hrx_hip_device_prop_t*)props,
                                              index);
  if (!hrx_hip_ok(err)) {
    free(props);
    return versioned ? HRX_HIP_ERROR(DEVICE_ERROR,
                                     GetDevicePropertiesVersioned, err)
                     : HRX_HIP_ERROR(DEVICE_ERROR, GetDeviceProperties, err);
  }

  _Static_assert(sizeof(info->name) == HRX_HIP_AMD_PROP_NAME_SIZE &&
                     sizeof(info->name) == HRX_HIP_CUDA_PROP_NAME_SIZE,
                 "hrx_device_info_t.name holds a runtime's device name");
  if (!rt->sym.DeviceGetName ||
      !hrx_hip_ok(rt->sym.DeviceGetName(info->name, (int)sizeof(info->name),
                                        index))) {
    memcpy(info->name, props + rt->platform->prop_name_offset,
           sizeof(info->name));
  }
  info->name[sizeof(info->name) - 1] = '\0';

  if (rt->platform == &hrx_hip_platform_amd) {
    hrx_hip_amd_target(props, versioned, info->target, sizeof(info->target));
  } else {
    int major = 0;
    int minor = 0;
    err = rt->sym.DeviceGetAttribute(
        &major, rt->platform->attr_compute_capability_major, index);
    if (hrx_hip_ok(err)) {
      err = rt->sym.DeviceGetAttribute(
          &minor, rt->platform->attr_compute_capability_minor, index);
    }
    if (!hrx_hip_ok(err)) {
      free(props);
      return HRX_HIP_ERROR(DEVICE_ERROR, DeviceGetAttribute, err);
    }
    snprintf(info->target, sizeof(info->target), "sm_%d%d", major, minor);
  }
  /* Launch limits: attributes, which need no context. */
  struct {
    hrx_hip_device_attr_t attr;
    uint32_t* out;
  } limits[] = {
      {rt->platform->attr_max_threads_per_block, &info->max_threads_per_block},
      {rt->platform->attr_max_block_dim[0], &info->max_block_dim[0]},
      {rt->platform->attr_max_block_dim[1], &info->max_block_dim[1]},
      {rt->platform->attr_max_block_dim[2], &info->max_block_dim[2]},
      {rt->platform->attr_max_grid_dim[0], &info->max_grid_dim[0]},
      {rt->platform->attr_max_grid_dim[1], &info->max_grid_dim[1]},
      {rt->platform->attr_max_grid_dim[2], &info->max_grid_dim[2]},
  };
  for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); ++i) {
    int value = 0;
    err = rt->sym.DeviceGetAttribute(&value, limits[i].attr, index);
    if (!hrx_hip_ok(err)) {
      free(props);
      return HRX_HIP_ERROR(DEVICE_ERROR, DeviceGetAttribute, err);
    }
    *limits[i].out = value > 0 ? (uint32_t)value : 0;
  }
  int shared = 0;
  err = rt->sym.DeviceGetAttribute(
      &shared, rt->platform->attr_max_shared_per_block, index);
  if (!hrx_hip_ok(err)) {
    free(props);
    return HRX_HIP_ERROR(DEVICE_ERROR, DeviceGetAttribute, err);
  }
  info->max_shared_bytes_per_block = shared > 0 ? (uint64_t)shared : 0;

  if (rt->platform == &hrx_hip_platform_nvidia) {
    /* From the properties: cudaMemGetInfo would create the context. */
    size_t total_bytes = 0;
    memcpy(&total_bytes, props + HRX_HIP_CUDA_PROP_TOTAL_GLOBAL_MEM_OFFSET,
           sizeof(total_bytes));
    info->total_memory = total_bytes;
  }
  free(props);

  if (rt->platform != &hrx_hip_platform_nvidia) {
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    err = rt->sym.MemGetInfo(&free_bytes, &total_bytes);
    if (!hrx_hip_ok(err)) return HRX_HIP_ERROR(DEVICE_ERROR, MemGetInfo, err);
    info->total_memory = total_bytes;
  }

  snprintf(info->runtime, sizeof(info->runtime), "%s %d (%.60s), driver %d",
           rt->platform->runtime_label, rt->runtime_version,
           hrx_hip_basename(rt->library_name), rt->driver_version);
  return NULL;
}

/* The budget in effect for the runtime, as a device reports it. */
static void hrx_hip_device_budget(hrx_connection_budget_t* out_budget) {
  memset(out_budget, 0, sizeof(*out_budget));
  if (!hrx_hip_connections_at_start(out_budget)) {
    snprintf(out_budget->source, sizeof(out_budget->source), "not applicable");
    return;
  }
  if (strcmp(out_budget->source, "unset") == 0) {
    snprintf(out_budget->source, sizeof(out_budget->source),
             "runtime-started");
  }
}

static hrx_status_t hrx_hip_device_open(
    int index, const hrx_hal_device_settings_t* settings,
    hrx_backend_device_t** out_device) {
  int count = 0;
  HRX_RETURN_IF_ERROR(hrx_hip_runtime_load(true, &count));
  if (index < 0 || index >= count) {
    return hrx_make_status(HRX_STATUS_OUT_OF_RANGE,
                           "hip device %d does not exist (%d devices)", index,
                           count);
  }
  hrx_hip_device_t* device = calloc(1, sizeof(*device));
  if (!device) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a hip device");
  }
  /* The connection budget was applied (or not) when the runtime started
   * (hrx_hip_runtime_load, hip_connections.h): report what the runtime
   * started with. With nothing set then (a listing started it), the open
   * can no longer give the budget an effect: "runtime-started". */
  hrx_hip_device_budget(&device->connections);
  /* NVIDIA: no context yet (hrx_hip_activate). AMD: the device is made
   * current for hipMemGetInfo. */
  if (!hrx_hip_nvidia()) {
    hrx_status_t current = hrx_hip_make_current(index);
    if (current) {
      free(device);
      return current;
    }
  }
  device->peer_enabled = calloc((size_t)count, sizeof(atomic_bool));
  if (!device->peer_enabled) {
    free(device);
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a hip device");
  }
  for (int i = 0; i < count; ++i) atomic_init(&device->peer_enabled[i], false);
  device->base.vtable = &hrx_hip_vtable;
  device->index = index;
  device->batching = settings->batching;
  pthread_mutex_init(&device->context_mutex, NULL);
  atomic_init(&device->context_ready, false);
  device->connections_wanted =
      HRX_CONNECTIONS_WANTED(HRX_DEFAULT_STREAM_QUEUE_COUNT);
  hrx_status_t status = hrx_hip_describe(index, &device->info);
  if (!status) {
    status = hrx_hip_staging_create(settings->streaming_copies,
                                    &device->staging);
  }
  if (!status) {
    status = hrx_hip_batch_create(index, device->info.target, &device->batch);
    if (status) hrx_hip_staging_destroy(device->staging);
  }
  if (status) {
    pthread_mutex_destroy(&device->context_mutex);
    free(device->peer_enabled);
    free(device);
    return status;
  }
  /* The kernel is compiled now unless the device's streams start with
   * batching off (the core's setting, HRX_BATCHING=0); then the first batch
   * prepares it. On NVIDIA loading it needs the
   * context, which must not exist before the pool is sized: it is prepared
   * when the context is created (hrx_hip_activate). */
  if (!hrx_hip_nvidia() && device->batching) {
    hrx_hip_batch_prepare(device->batch);
  }
  hrx_hip_batch_describe(device->batch, device->info.batch_publication,
                         sizeof(device->info.batch_publication));
  hrx_hip_launch_graphs_describe(device->info.launch_publication,
                                 sizeof(device->info.launch_publication));
  *out_device = &device->base;
  return NULL;
}

static void hrx_hip_device_destroy(hrx_backend_device_t* base) {
  hrx_hip_device_t* device = hrx_hip_device_cast(base);
  if (!atomic_load(&device->context_ready)) {
    /* Nothing native was made: no queue, allocation or staging block. */
    hrx_hip_staging_destroy(device->staging);
    pthread_mutex_destroy(&device->context_mutex);
    free(device->peer_enabled);
    free(device);
    return;
  }
  hrx_status_t status = hrx_hip_enter(base);
  if (!status) {
    /* Staging is freed only once no copy can read it: every queue was
     * synchronized when destroyed, and this makes it certain. */
    hrx_hip_rt.sym.DeviceSynchronize();
    hrx_hip_staging_destroy(device->staging);
  }
  hrx_hip_batch_destroy(device->batch);
  /* Without a current device the staging memory cannot be freed safely;
   * it is left to the runtime's process teardown. */
  hrx_status_free(status);
  pthread_mutex_destroy(&device->context_mutex);
  free(device->peer_enabled);
  free(device);
}

static hrx_status_t hrx_hip_query_info(hrx_backend_device_t* base,
                                       hrx_device_info_t* out_info) {
  hrx_hip_device_t* device = hrx_hip_device_cast(base);
  *out_info = device->info;
  /* Settles once the kernel is prepared (with the context on NVIDIA). */
  hrx_hip_batch_describe(device->batch, out_info->batch_publication,
                         sizeof(out_info->batch_publication));
  return NULL;
}

static hrx_status_t hrx_hip_query_free_memory(hrx_backend_device_t* base,
                                              uint64_t* out_free_bytes) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  hrx_hip_error_t err = hrx_hip_rt.sym.MemGetInfo(&free_bytes, &total_bytes);
  if (!hrx_hip_ok(err)) return HRX_HIP_ERROR(DEVICE_ERROR, MemGetInfo, err);
  *out_free_bytes = free_bytes;
  return NULL;
}

/* ---------------------------------------------------------------- queues */

/* The runtime's priority for a lane: high = greatest, low = least, normal
 * = 0 within the range (CUDA's range is [greatest, 0], so there low and
 * normal are the same; HIP's is usually [-1, 1]). */
static int hrx_hip_native_priority(const hrx_hip_device_t* device,
                                   int priority) {
  int least = device->priority_least;
  int greatest = device->priority_greatest;
  if (priority == HRX_STREAM_PRIORITY_HIGH) return greatest;
  if (priority == HRX_STREAM_PRIORITY_LOW) return least;
  int lo = greatest < least ? greatest : least;
  int hi = greatest < least ? least : greatest;
  return 0 < lo ? lo : 0 > hi ? hi : 0;
}

/* `flags` are ignored: HRX_NATIVE_QUEUE_RESERVED has no HIP or CUDA
 * counterpart (the runtime maps streams to hardware connections itself). */
static hrx_status_t hrx_hip_queue_create(hrx_backend_device_t* base,
                                         int priority, uint32_t flags,
                                         hrx_native_queue_t** out_queue,
                                         int* out_native_priority) {
  (void)flags;
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  hrx_hip_device_t* device = hrx_hip_device_cast(base);
  hrx_hip_queue_t* queue = calloc(1, sizeof(*queue));
  if (queue) queue->launch_graphs = hrx_hip_launch_graphs_create();
  if (!queue || !queue->launch_graphs) {
    free(queue);
    return hrx_make_status(HRX_STATUS_RESOURCE_EXHAUSTED,
                           "cannot allocate a queue: out of memory");
  }
  hrx_status_t status = NULL;
  int native = 0;
  if (!device->priority_range || !hrx_hip_rt.sym.StreamCreateWithPriority) {
    /* No priorities here: every lane gets a plain stream. */
    hrx_hip_error_t err = hrx_hip_rt.sym.StreamCreateWithFlags(
        &queue->stream, hrx_hip_rt.platform->stream_non_blocking);
    if (!hrx_hip_ok(err)) {
      status = HRX_HIP_ERROR(RESOURCE_EXHAUSTED, StreamCreateWithFlags, err);
    }
  } else {
    native = hrx_hip_native_priority(device, priority);
    hrx_hip_error_t err = hrx_hip_rt.sym.StreamCreateWithPriority(
        &queue->stream, hrx_hip_rt.platform->stream_non_blocking, native);
    if (!hrx_hip_ok(err)) {
      status =
          HRX_HIP_ERROR(RESOURCE_EXHAUSTED, StreamCreateWithPriority, err);
    }
  }
  if (status) {
    hrx_hip_launch_graphs_destroy(queue->launch_graphs);
    free(queue);
    return status;
  }
  *out_queue = (hrx_native_queue_t*)queue;
  *out_native_priority = native;
  return NULL;
}

/* hipStreamQuery / cudaStreamQuery: idle (0) or busy (UINT64_MAX). */
static hrx_status_t hrx_hip_queue_query(hrx_backend_device_t* base,
                                        hrx_native_queue_t* queue,
                                        uint64_t* out_pending) {
  if (!hrx_hip_rt.sym.StreamQuery) {
    *out_pending = UINT64_MAX;
    return NULL;
  }
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  hrx_hip_error_t err = hrx_hip_rt.sym.StreamQuery(hrx_hip_stream_of(queue));
  if (err == hrx_hip_rt.platform->error_not_ready) {
    *out_pending = UINT64_MAX;
    return NULL;
  }
  if (!hrx_hip_ok(err)) return HRX_HIP_ERROR(DEVICE_ERROR, StreamQuery, err);
  *out_pending = 0;
  return NULL;
}

static void hrx_hip_plan_connections(hrx_backend_device_t* base, int wanted) {
  hrx_hip_device_t* device = hrx_hip_device_cast(base);
  pthread_mutex_lock(&device->context_mutex);
  /* The budget was fixed when the runtime started; the plan is kept only
   * to report what the pool would have wanted. */
  device->connections_wanted = wanted;
  pthread_mutex_unlock(&device->context_mutex);
}

static void hrx_hip_query_connections(hrx_backend_device_t* base,
                                      hrx_connection_budget_t* out_budget) {
  hrx_hip_device_t* device = hrx_hip_device_cast(base);
  pthread_mutex_lock(&device->context_mutex);
  *out_budget = device->connections;
  out_budget->wanted = device->connections_wanted;
  pthread_mutex_unlock(&device->context_mutex);
}

static void hrx_hip_queue_destroy(hrx_backend_device_t* base,
                                  hrx_native_queue_t* queue) {
  hrx_status_t status = hrx_hip_enter(base);
  hrx_status_free(status);
  hrx_hip_stream_t stream = hrx_hip_stream_of(queue);
  /* hal/queue.h: wait for the queue's submitted work first. */
  hrx_hip_rt.sym.StreamSynchronize(stream);
  hrx_hip_launch_graphs_destroy(hrx_hip_queue_cast(queue)->launch_graphs);
  hrx_hip_rt.sym.StreamDestroy(stream);
  free(hrx_hip_queue_cast(queue));
}

static void* hrx_hip_queue_native_handle(hrx_native_queue_t* queue) {
  return (void*)hrx_hip_stream_of(queue);
}

/* ---------------------------------------------------------------- memory */

static hrx_status_t hrx_hip_alloc(hrx_backend_device_t* base, uint64_t size,
                                  void** out_ptr) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  void* ptr = NULL;
  hrx_hip_error_t err = hrx_hip_rt.sym.Malloc(&ptr, (size_t)size);
  if (!hrx_hip_ok(err)) return HRX_HIP_ERROR(DEVICE_ERROR, Malloc, err);
  *out_ptr = ptr;
  return NULL;
}

/* hipFree / cudaFree synchronize with the device before releasing the
 * memory, so no work submitted before the call can still touch it: that is
 * hal/memory.h's deferral rule. */
static void hrx_hip_free(hrx_backend_device_t* base, void* ptr) {
  hrx_status_free(hrx_hip_enter(base));
  hrx_hip_rt.sym.Free(ptr);
}

static hrx_status_t hrx_hip_host_alloc(hrx_backend_device_t* base,
                                       uint64_t size, void** out_ptr) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  void* ptr = NULL;
  hrx_hip_error_t err = hrx_hip_rt.sym.HostAlloc(
      &ptr, (size_t)size, hrx_hip_rt.platform->host_alloc_default);
  if (!hrx_hip_ok(err)) return HRX_HIP_ERROR(DEVICE_ERROR, HostAlloc, err);
  *out_ptr = ptr;
  return NULL;
}

/* The core frees staging only once no copy uses it (hal/memory.h), so no
 * device-wide synchronize here; the runtime's own pinned free may still
 * synchronize, which is why the core pools its staging (core/staging.h). */
static void hrx_hip_host_free(hrx_backend_device_t* base, void* ptr) {
  hrx_status_free(hrx_hip_enter(base));
  hrx_hip_rt.sym.HostFree(ptr);
}

/* Whether the runtime allocated the page-locked memory at `ptr` itself
 * (hipHostMalloc / cudaHostAlloc, e.g. another library's pinned pool): its
 * flags can be read. The runtime's last error is left clean. */
static bool hrx_hip_runtime_allocated_host(void* ptr) {
  if (!hrx_hip_rt.sym.HostGetFlags) return false;
  unsigned int flags = 0;
  hrx_hip_error_t err = hrx_hip_rt.sym.HostGetFlags(&flags, ptr);
  if (hrx_hip_ok(err)) return true;
  hrx_hip_forget_error(err);
  return false;
}

/* Page-locks caller memory for asynchronous copies (hal/memory.h). Memory
 * pinned already is usable as it is and stays its owner's to unpin
 * (*out_registered false): the runtime refuses memory registered before
 * (by hrx or another library) as "already registered", and memory it
 * allocated page-locked itself as an invalid value (the CUDA runtime
 * does), which the allocation's flags tell apart from a bad range. */
static hrx_status_t hrx_hip_host_register(hrx_backend_device_t* base,
                                          void* ptr, uint64_t size,
                                          bool* out_registered) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  if (!hrx_hip_rt.sym.HostRegister || !hrx_hip_rt.sym.HostUnregister) {
    return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                           "the HIP runtime has no host memory registration "
                           "(hipHostRegister / cudaHostRegister)");
  }
  hrx_hip_error_t err = hrx_hip_rt.sym.HostRegister(
      ptr, (size_t)size, hrx_hip_rt.platform->host_register_default);
  if (err == hrx_hip_rt.platform->error_host_memory_already_registered ||
      (err == hrx_hip_rt.platform->error_invalid_value &&
       hrx_hip_runtime_allocated_host(ptr))) {
    hrx_hip_forget_error(err);
    *out_registered = false;
    return NULL;
  }
  if (!hrx_hip_ok(err)) {
    return HRX_HIP_ERROR(INVALID_ARGUMENT, HostRegister, err);
  }
  *out_registered = true;
  return NULL;
}

static void hrx_hip_host_unregister(hrx_backend_device_t* base, void* ptr) {
  hrx_status_free(hrx_hip_enter(base));
  hrx_hip_rt.sym.HostUnregister(ptr);
}

/* -------------------------------------------------------------- commands */

static hrx_status_t hrx_hip_copy(hrx_backend_device_t* base,
                                 hrx_native_queue_t* queue, void* dst,
                                 const void* src, uint64_t length) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  hrx_hip_error_t err = hrx_hip_rt.sym.MemcpyAsync(
      dst, src, (size_t)length, hrx_hip_rt.platform->memcpy_device_to_device,
      hrx_hip_stream_of(queue));
  if (!hrx_hip_ok(err)) return HRX_HIP_ERROR(DEVICE_ERROR, MemcpyAsync, err);
  return NULL;
}

static hrx_status_t hrx_hip_fill(hrx_backend_device_t* base,
                                 hrx_native_queue_t* queue, void* dst,
                                 uint8_t byte, uint64_t length) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  hrx_hip_error_t err = hrx_hip_rt.sym.MemsetAsync(
      dst, (int)byte, (size_t)length, hrx_hip_stream_of(queue));
  if (!hrx_hip_ok(err)) return HRX_HIP_ERROR(DEVICE_ERROR, MemsetAsync, err);
  return NULL;
}

static hrx_status_t hrx_hip_upload(hrx_backend_device_t* base,
                                   hrx_native_queue_t* queue, void* dst,
                                   const void* host_src, uint64_t length) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  HRX_RETURN_IF_ERROR(hrx_hip_staging_upload(hrx_hip_device_cast(base)->staging,
                                             hrx_hip_stream_of(queue), dst,
                                             host_src, length));
  return NULL;
}

static hrx_status_t hrx_hip_upload_pinned(hrx_backend_device_t* base,
                                          hrx_native_queue_t* queue,
                                          void* dst, const void* host_src,
                                          uint64_t length) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  hrx_hip_error_t err = hrx_hip_rt.sym.MemcpyAsync(
      dst, host_src, (size_t)length,
      hrx_hip_rt.platform->memcpy_host_to_device, hrx_hip_stream_of(queue));
  if (!hrx_hip_ok(err)) return HRX_HIP_ERROR(DEVICE_ERROR, MemcpyAsync, err);
  return NULL;
}

static hrx_status_t hrx_hip_download(hrx_backend_device_t* base,
                                     hrx_native_queue_t* queue,
                                     void* host_dst, const void* src,
                                     uint64_t length) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  hrx_hip_error_t err = hrx_hip_rt.sym.MemcpyAsync(
      host_dst, src, (size_t)length,
      hrx_hip_rt.platform->memcpy_device_to_host, hrx_hip_stream_of(queue));
  if (!hrx_hip_ok(err)) return HRX_HIP_ERROR(DEVICE_ERROR, MemcpyAsync, err);
  return NULL;
}

/* ---------------------------------------------------------------- events */

static hrx_status_t hrx_hip_event_create_flags(hrx_backend_device_t* base,
                                               unsigned int flags,
                                               hrx_native_event_t** out_event) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  hrx_hip_event_t event = NULL;
  hrx_hip_error_t err = hrx_hip_rt.sym.EventCreateWithFlags(&event, flags);
  if (!hrx_hip_ok(err)) {
    return HRX_HIP_ERROR(DEVICE_ERROR, EventCreateWithFlags, err);
  }
  *out_event = (hrx_native_event_t*)event;
  return NULL;
}

static hrx_status_t hrx_hip_event_create(hrx_backend_device_t* base,
                                         hrx_native_event_t** out_event) {
  return hrx_hip_event_create_flags(
      base, hrx_hip_rt.platform->event_disable_timing, out_event);
}

static hrx_status_t hrx_hip_event_create_timing(
    hrx_backend_device_t* base, hrx_native_event_t** out_event) {
  return hrx_hip_event_create_flags(base, hrx_hip_rt.platform->event_default,
                                    out_event);
}

/* hipEventElapsedTime / cudaEventElapsedTime: not ready means an event is
 * not complete; an event never recorded is refused as an invalid handle. */
static hrx_status_t hrx_hip_event_elapsed_ms(hrx_backend_device_t* base,
                                             hrx_native_event_t* start,
                                             hrx_native_event_t* end,
                                             double* out_ms) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  float ms = 0.0f;
  hrx_hip_error_t err = hrx_hip_rt.sym.EventElapsedTime(
      &ms, hrx_hip_event_of(start), hrx_hip_event_of(end));
  if (err == hrx_hip_rt.platform->error_not_ready) {
    return hrx_make_status(HRX_STATUS_FAILED_PRECONDITION,
                           "an event is not complete yet; synchronize it "
                           "first");
  }
  if (!hrx_hip_ok(err)) {
    return hrx_status_annotate(
        HRX_HIP_ERROR(FAILED_PRECONDITION, EventElapsedTime, err),
        "both events must have been recorded");
  }
  *out_ms = ms;
  return NULL;
}

static void hrx_hip_event_destroy(hrx_backend_device_t* base,
                                  hrx_native_event_t* event) {
  hrx_status_free(hrx_hip_enter(base));
  hrx_hip_rt.sym.EventDestroy(hrx_hip_event_of(event));
}

static hrx_status_t hrx_hip_event_record(hrx_backend_device_t* base,
                                         hrx_native_queue_t* queue,
                                         hrx_native_event_t* event) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  hrx_hip_error_t err = hrx_hip_rt.sym.EventRecord(hrx_hip_event_of(event),
                                                   hrx_hip_stream_of(queue));
  if (!hrx_hip_ok(err)) return HRX_HIP_ERROR(DEVICE_ERROR, EventRecord, err);
  return NULL;
}

static hrx_status_t hrx_hip_queue_wait_event(hrx_backend_device_t* base,
                                             hrx_native_queue_t* queue,
                                             hrx_native_event_t* event) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  hrx_hip_error_t err = hrx_hip_rt.sym.StreamWaitEvent(
      hrx_hip_stream_of(queue), hrx_hip_event_of(event), 0);
  if (!hrx_hip_ok(err)) {
    return HRX_HIP_ERROR(DEVICE_ERROR, StreamWaitEvent, err);
  }
  return NULL;
}

static hrx_status_t hrx_hip_event_query(hrx_backend_device_t* base,
                                        hrx_native_event_t* event,
                                        bool* out_done) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  hrx_hip_error_t err = hrx_hip_rt.sym.EventQuery(hrx_hip_event_of(event));
  if (err == hrx_hip_rt.platform->error_not_ready) {
    *out_done = false;
    return NULL;
  }
  if (!hrx_hip_ok(err)) return HRX_HIP_ERROR(DEVICE_ERROR, EventQuery, err);
  *out_done = true;
  return NULL;
}

/* Polls for a bounded HRX_HIP_EVENT_SPIN_NS before the runtime's own wait,
 * so that work finishing within a few microseconds is seen at once. */
#define HRX_HIP_EVENT_SPIN_NS 20000ull

static hrx_status_t hrx_hip_foreign_stream_wait_event(
    hrx_backend_device_t* base, void* foreign_stream,
    hrx_native_event_t* event) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  hrx_hip_error_t err = hrx_hip_rt.sym.StreamWaitEvent(
      (hrx_hip_stream_t)foreign_stream, hrx_hip_event_of(event), 0);
  if (!hrx_hip_ok(err)) {
    return HRX_HIP_ERROR(DEVICE_ERROR, StreamWaitEvent, err);
  }
  return NULL;
}

/* event_wait with no limit (the caller entered the device). */
static hrx_status_t hrx_hip_event_wait_forever(hrx_native_event_t* event) {
  hrx_hip_event_t native = hrx_hip_event_of(event);
  uint64_t deadline = hrx_now_ns() + HRX_HIP_EVENT_SPIN_NS;
  for (;;) {
    hrx_hip_error_t err = hrx_hip_rt.sym.EventQuery(native);
    if (hrx_hip_ok(err)) return NULL;
    if (err != hrx_hip_rt.platform->error_not_ready) {
      return HRX_HIP_ERROR(DEVICE_ERROR, EventQuery, err);
    }
    if (hrx_now_ns() >= deadline) break;
  }
  hrx_hip_error_t err = hrx_hip_rt.sym.EventSynchronize(native);
  if (!hrx_hip_ok(err)) {
    return HRX_HIP_ERROR(DEVICE_ERROR, EventSynchronize, err);
  }
  return NULL;
}

/* --------------------------------------------------------------- batches */

/* One launch of the batch kernel; without it (or if its launch fails) one
 * native call per command, stopping at the first failure. */
static hrx_status_t hrx_hip_batch_submit(hrx_backend_device_t* base,
                                         hrx_native_queue_t* queue,
                                         const hrx_batch_command_t* commands,
                                         uint32_t count,
                                         uint32_t* out_published) {
  *out_published = 0;
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  hrx_hip_device_t* device = hrx_hip_device_cast(base);
  /* A command too large for the kernel's grid sends the batch natively. */
  bool fits = hrx_hip_batch_fits(commands, count);
  if (fits && hrx_nonblocking() && !hrx_hip_batch_prepared(device->batch)) {
    /* Batching was off when the device opened: the first batch compiles
     * the kernel (hal/objects.h, non-blocking mode). */
    return hrx_would_block("the batch kernel to be compiled");
  }
  if (fits &&
      hrx_hip_batch_prepare(device->batch)) {
    hrx_status_t status = hrx_hip_batch_launch(
        device->batch, hrx_hip_stream_of(queue), commands, count);
    if (!status) {
      *out_published = count;
      return NULL;
    }
    /* Counted in the device's batch_publication; this batch falls back. */
    hrx_status_free(status);
  }
  for (uint32_t i = 0; i < count; ++i) {
    const hrx_batch_command_t* c = &commands[i];
    hrx_status_t status =
        c->kind == HRX_BATCH_FILL
            ? hrx_hip_fill(base, queue, c->dst, c->byte, c->length)
            : hrx_hip_copy(base, queue, c->dst, c->src, c->length);
    if (status) return status;
    ++*out_published;
  }
  return NULL;
}

/* ----------------------------------------------------- host functions */

/* hipLaunchHostFunc / cudaLaunchHostFunc: fn runs on the runtime's host
 * thread once the stream's earlier work is done; later work waits for it. */
static hrx_status_t hrx_hip_queue_host_call(hrx_backend_device_t* base,
                                            hrx_native_queue_t* queue,
                                            hrx_queue_host_fn_t fn,
                                            void* user_data) {
  if (!hrx_hip_rt.sym.LaunchHostFunc) {
    return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                           "the %s has no LaunchHostFunc entry point, so "
                           "graphs with host callbacks cannot run on it",
                           hrx_hip_rt.platform->runtime_label);
  }
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  hrx_hip_error_t err = hrx_hip_rt.sym.LaunchHostFunc(
      hrx_hip_stream_of(queue), fn, user_data);
  if (!hrx_hip_ok(err)) {
    return HRX_HIP_ERROR(DEVICE_ERROR, LaunchHostFunc, err);
  }
  return NULL;
}

/* --------------------------------------------------------- between devices */

/* Whether the runtime has the peer entry points at all. */
static bool hrx_hip_has_peer(void) {
  return hrx_hip_rt.sym.DeviceCanAccessPeer &&
         hrx_hip_rt.sym.DeviceEnablePeerAccess &&
         hrx_hip_rt.sym.MemcpyPeerAsync;
}

/* Peer when the runtime says this device can access the other's memory
 * (hipDeviceCanAccessPeer / cudaDeviceCanAccessPeer, a query of the two
 * devices that needs no context), else staged. */
static hrx_status_t hrx_hip_peer_path(hrx_backend_device_t* base, int other,
                                      hrx_peer_path_t* out_path) {
  hrx_hip_device_t* device = hrx_hip_device_cast(base);
  if (!hrx_hip_has_peer()) {
    *out_path = HRX_PEER_PATH_STAGED;
    return NULL;
  }
  int can_access = 0;
  hrx_hip_error_t err =
      hrx_hip_rt.sym.DeviceCanAccessPeer(&can_access, device->index, other);
  if (!hrx_hip_ok(err)) {
    return HRX_HIP_ERROR(DEVICE_ERROR, DeviceCanAccessPeer, err);
  }
  *out_path = can_access ? HRX_PEER_PATH_PEER : HRX_PEER_PATH_STAGED;
  return NULL;
}

/* Enables access from this device (current) to `other`'s memory, once;
 * "already enabled" (another thread, or another library) is success. */
static hrx_status_t hrx_hip_enable_peer(hrx_hip_device_t* device, int other) {
  if (atomic_load(&device->peer_enabled[other])) return NULL;
  hrx_hip_error_t err = hrx_hip_rt.sym.DeviceEnablePeerAccess(other, 0);
  if (!hrx_hip_ok(err) &&
      err != hrx_hip_rt.platform->error_peer_access_already_enabled) {
    return HRX_HIP_ERROR(DEVICE_ERROR, DeviceEnablePeerAccess, err);
  }
  atomic_store(&device->peer_enabled[other], true);
  return NULL;
}

/* Peer: one hipMemcpyPeerAsync / cudaMemcpyPeerAsync on the stream, with
 * peer access enabled first. Staged: device to host into `staging`, then
 * host to device, both on the stream (a copy may name memory of another
 * device than its stream's). If the second leg is refused, the first is
 * waited for, so that the staging memory is free when the copy fails. */
static hrx_status_t hrx_hip_peer_copy(hrx_backend_device_t* base,
                                      hrx_native_queue_t* queue, void* dst,
                                      int dst_index, const void* src,
                                      int src_index, uint64_t length,
                                      void* staging) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  hrx_hip_device_t* device = hrx_hip_device_cast(base);
  hrx_hip_stream_t stream = hrx_hip_stream_of(queue);
  if (!staging) {
    if (!hrx_hip_has_peer()) {
      return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                             "the %s has no peer copies",
                             hrx_hip_rt.platform->runtime_label);
    }
    int other = dst_index == device->index ? src_index : dst_index;
    HRX_RETURN_IF_ERROR(hrx_hip_enable_peer(device, other));
    hrx_hip_error_t err = hrx_hip_rt.sym.MemcpyPeerAsync(
        dst, dst_index, src, src_index, (size_t)length, stream);
    if (!hrx_hip_ok(err)) {
      return HRX_HIP_ERROR(DEVICE_ERROR, MemcpyPeerAsync, err);
    }
    return NULL;
  }
  hrx_hip_error_t err = hrx_hip_rt.sym.MemcpyAsync(
      staging, src, (size_t)length,
      hrx_hip_rt.platform->memcpy_device_to_host, stream);
  if (!hrx_hip_ok(err)) return HRX_HIP_ERROR(DEVICE_ERROR, MemcpyAsync, err);
  err = hrx_hip_rt.sym.MemcpyAsync(dst, staging, (size_t)length,
                                   hrx_hip_rt.platform->memcpy_host_to_device,
                                   stream);
  if (!hrx_hip_ok(err)) {
    hrx_hip_rt.sym.StreamSynchronize(stream);
    return HRX_HIP_ERROR(DEVICE_ERROR, MemcpyAsync, err);
  }
  return NULL;
}

/* ---------------------------------------------------------------- graphs */

/* A native graph is the instantiated executable graph itself; the graph it
 * was instantiated from is destroyed at once (the executable is
 * independent of it). */
static hrx_hip_graph_exec_t hrx_hip_graph_exec_of(hrx_native_graph_t* graph) {
  return (hrx_hip_graph_exec_t)graph;
}

static bool hrx_hip_has_graphs(void) {
  const hrx_hip_symbols_t* sym = &hrx_hip_rt.sym;
  return sym->GraphCreate && sym->GraphAddMemcpyNode1D &&
         sym->GraphAddMemsetNode && sym->GraphInstantiateWithFlags &&
         sym->GraphLaunch && sym->GraphExecDestroy && sym->GraphDestroy;
}

/* Adds one memcpy, memset or kernel node after `deps`. */
static hrx_status_t hrx_hip_graph_add_node(hrx_hip_graph_t graph,
                                           const hrx_native_graph_node_t* node,
                                           const hrx_hip_graph_node_t* deps,
                                           hrx_hip_graph_node_t* out_node) {
  const hrx_hip_runtime_t* rt = &hrx_hip_rt;
  hrx_hip_error_t err;
  if (node->kind == HRX_NATIVE_GRAPH_KERNEL) {
    return hrx_hip_graph_add_kernel_node(graph, deps, node->after_count,
                                         node->kernel, node->launch,
                                         out_node);
  }
  if (node->kind == HRX_NATIVE_GRAPH_COPY) {
    err = rt->sym.GraphAddMemcpyNode1D(out_node, graph, deps, node->after_count,
                                       node->dst, node->src,
                                       (size_t)node->length,
                                       rt->platform->memcpy_device_to_device);
    if (!hrx_hip_ok(err)) {
      return HRX_HIP_ERROR(DEVICE_ERROR, GraphAddMemcpyNode1D, err);
    }
    return NULL;
  }
  /* One row of `length` one-byte elements; the pitch of a single row is
   * its width (CUDA ignores it, HIP checks it is at least the width). */
  if (rt->platform == &hrx_hip_platform_amd) {
    hrx_hip_amd_memset_params_t params = {
        .dst = node->dst, .element_size = 1, .height = 1,
        .pitch = (size_t)node->length, .value = node->byte,
        .width = (size_t)node->length};
    err = rt->sym.GraphAddMemsetNode(out_node, graph, deps, node->after_count,
                                     (const hrx_hip_memset_params_t*)&params);
  } else {
    hrx_hip_cuda_memset_params_t params = {
        .dst = node->dst, .pitch = (size_t)node->length, .value = node->byte,
        .element_size = 1, .width = (size_t)node->length, .height = 1};
    err = rt->sym.GraphAddMemsetNode(out_node, graph, deps, node->after_count,
                                     (const hrx_hip_memset_params_t*)&params);
  }
  if (!hrx_hip_ok(err)) {
    return HRX_HIP_ERROR(DEVICE_ERROR, GraphAddMemsetNode, err);
  }
  return NULL;
}

static hrx_status_t hrx_hip_graph_create(hrx_backend_device_t* base,
                                         const hrx_native_graph_node_t* nodes,
                                         size_t count,
                                         hrx_native_graph_t** out_graph) {
  if (!hrx_hip_has_graphs()) {
    return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                           "the %s lacks the graph entry points",
                           hrx_hip_rt.platform->runtime_label);
  }
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  const hrx_hip_symbols_t* sym = &hrx_hip_rt.sym;
  uint32_t most_deps = 1;
  for (size_t i = 0; i < count; ++i) {
    if (nodes[i].after_count > most_deps) most_deps = nodes[i].after_count;
  }
  hrx_hip_graph_node_t* handles = calloc(count ? count : 1, sizeof(*handles));
  hrx_hip_graph_node_t* deps = calloc(most_deps, sizeof(*deps));
  if (!handles || !deps) {
    free(handles);
    free(deps);
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot describe a native graph of %zu nodes",
                           count);
  }
  hrx_hip_graph_t graph = NULL;
  hrx_hip_error_t err = sym->GraphCreate(&graph, 0);
  hrx_status_t status =
      hrx_hip_ok(err) ? NULL : HRX_HIP_ERROR(DEVICE_ERROR, GraphCreate, err);
  for (size_t i = 0; !status && i < count; ++i) {
    for (uint32_t k = 0; k < nodes[i].after_count; ++k) {
      deps[k] = handles[nodes[i].after[k]];
    }
    status = hrx_hip_graph_add_node(graph, &nodes[i], deps, &handles[i]);
  }
  hrx_hip_graph_exec_t exec = NULL;
  if (!status) {
    err = sym->GraphInstantiateWithFlags(&exec, graph, 0);
    if (!hrx_hip_ok(err)) {
      status = HRX_HIP_ERROR(DEVICE_ERROR, GraphInstantiateWithFlags, err);
    }
  }
  if (graph) sym->GraphDestroy(graph);
  free(handles);
  free(deps);
  if (status) return status;
  *out_graph = (hrx_native_graph_t*)exec;
  return NULL;
}

static hrx_status_t hrx_hip_graph_launch(hrx_backend_device_t* base,
                                         hrx_native_queue_t* queue,
                                         hrx_native_graph_t* graph) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  hrx_hip_error_t err = hrx_hip_rt.sym.GraphLaunch(
      hrx_hip_graph_exec_of(graph), hrx_hip_stream_of(queue));
  if (!hrx_hip_ok(err)) return HRX_HIP_ERROR(DEVICE_ERROR, GraphLaunch, err);
  return NULL;
}

/* Launches may still run: the device is synchronized first (as host_free
 * does), so the executable is never destroyed under them. */
static void hrx_hip_graph_destroy(hrx_backend_device_t* base,
                                  hrx_native_graph_t* graph) {
  hrx_status_free(hrx_hip_enter(base));
  hrx_hip_rt.sym.DeviceSynchronize();
  hrx_hip_rt.sym.GraphExecDestroy(hrx_hip_graph_exec_of(graph));
}

/* Polls hipEventQuery (is_event) or hipStreamQuery on `handle` until it
 * reports done, fails, or about timeout_ns pass: it polls without sleeping
 * for the first HRX_HIP_WAIT_SPIN_NS (as the runtimes' own synchronize
 * spins, so short waits keep their latency; a sleep costs at least the
 * kernel's 50 us timer slack), then between sleeps that double from 5 us up
 * to 100 us, so a long wait costs about 1 % of a core in queries and is
 * noticed within about 0.15 ms of completion. */
#define HRX_HIP_WAIT_SPIN_NS 1000000ull

static hrx_status_t hrx_hip_poll(bool is_event, void* handle,
                                 uint64_t timeout_ns, bool* out_done) {
  uint64_t start = hrx_now_ns();
  uint64_t sleep_ns = 5000;
  for (;;) {
    hrx_hip_error_t err =
        is_event ? hrx_hip_rt.sym.EventQuery((hrx_hip_event_t)handle)
                 : hrx_hip_rt.sym.StreamQuery((hrx_hip_stream_t)handle);
    if (hrx_hip_ok(err)) {
      *out_done = true;
      return NULL;
    }
    if (err != hrx_hip_rt.platform->error_not_ready) {
      return is_event ? HRX_HIP_ERROR(DEVICE_ERROR, EventQuery, err)
                      : HRX_HIP_ERROR(DEVICE_ERROR, StreamQuery, err);
    }
    uint64_t elapsed = hrx_now_ns() - start;
    if (elapsed >= timeout_ns) {
      *out_done = false;
      return NULL;
    }
    if (elapsed < HRX_HIP_WAIT_SPIN_NS) continue;
    uint64_t left = timeout_ns - elapsed;
    uint64_t nap = sleep_ns < left ? sleep_ns : left;
    struct timespec ts = hrx_clock_timespec(nap);
    nanosleep(&ts, NULL);
    if (sleep_ns < 100000) sleep_ns *= 2;
  }
}

static hrx_status_t hrx_hip_queue_wait(hrx_backend_device_t* base,
                                       hrx_native_queue_t* queue,
                                       uint64_t timeout_ns, bool* out_done) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  if (timeout_ns == HRX_WAIT_FOREVER) {
    hrx_hip_error_t err =
        hrx_hip_rt.sym.StreamSynchronize(hrx_hip_stream_of(queue));
    if (!hrx_hip_ok(err)) {
      return HRX_HIP_ERROR(DEVICE_ERROR, StreamSynchronize, err);
    }
    *out_done = true;
    return NULL;
  }
  if (!hrx_hip_rt.sym.StreamQuery) {
    /* Without a stream query the caller waits on an event it records. */
    *out_done = false;
    return NULL;
  }
  return hrx_hip_poll(false, (void*)hrx_hip_stream_of(queue), timeout_ns,
                      out_done);
}

static hrx_status_t hrx_hip_event_wait(hrx_backend_device_t* base,
                                       hrx_native_event_t* event,
                                       uint64_t timeout_ns, bool* out_done) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  if (timeout_ns == HRX_WAIT_FOREVER) {
    *out_done = true;
    return hrx_hip_event_wait_forever(event);
  }
  return hrx_hip_poll(true, (void*)event, timeout_ns, out_done);
}

/* --------------------------------------------------------------- kernels */

/* Compiling needs no context (NVIDIA creates none for it). */
static hrx_status_t hrx_hip_kernel_toolchain_of(
    hrx_backend_device_t* base, hrx_kernel_compiler_t* out_toolchain) {
  return hrx_hip_kernel_toolchain(hrx_hip_rt.platform->id,
                                  hrx_hip_rt.library_name,
                                  hrx_hip_device_cast(base)->info.target,
                                  out_toolchain);
}

static hrx_status_t hrx_hip_kernel_compile_for(
    hrx_backend_device_t* base, const char* source, const char* const* names,
    size_t name_count, const char* const* options, size_t option_count,
    void** out_image, size_t* out_size,
    hrx_kernel_param_record_t* out_params) {
  return hrx_hip_kernel_compile(
      hrx_hip_rt.platform->id, hrx_hip_rt.library_name,
      hrx_hip_device_cast(base)->info.target, source, names, name_count,
      options, option_count, out_image, out_size, out_params);
}

static hrx_status_t hrx_hip_module_load_on(hrx_backend_device_t* base,
                                           const void* image, size_t size,
                                           hrx_native_module_t** out_module) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  return hrx_hip_module_load(image, size, out_module);
}

/* hal/kernel.h: no launch of the module's kernels may still run. The backend
 * does not track which queues launched a kernel (that would cost every
 * launch a record), so it synchronizes the device, as graph_destroy and
 * the runtime's own free do; modules are unloaded rarely (the core's
 * kernel cache keeps them for the live device). */
static void hrx_hip_module_unload_on(hrx_backend_device_t* base,
                                     hrx_native_module_t* module) {
  hrx_status_free(hrx_hip_enter(base));
  (void)hrx_hip_ok(hrx_hip_rt.sym.DeviceSynchronize());
  hrx_hip_module_unload(module);
}

static hrx_status_t hrx_hip_module_get_kernel_of(
    hrx_backend_device_t* base, hrx_native_module_t* module, const char* name,
    hrx_native_kernel_t** out_kernel, hrx_kernel_attributes_t* out_info) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  return hrx_hip_module_get_kernel(module, name,
                                   &hrx_hip_device_cast(base)->info,
                                   out_kernel, out_info);
}

static hrx_status_t hrx_hip_kernel_launch_on(
    hrx_backend_device_t* base, hrx_native_queue_t* queue,
    hrx_native_kernel_t* kernel, const hrx_kernel_launch_t* launch) {
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  return hrx_hip_kernel_launch(kernel, hrx_hip_stream_of(queue), launch);
}

/* A batch of launches as graph launches where the runtime has what they
 * need; what the graphs did not publish goes out one launch each, so that
 * a launch the runtime refuses is the one reported. */
static hrx_status_t hrx_hip_kernel_launch_batch(
    hrx_backend_device_t* base, hrx_native_queue_t* queue,
    const hrx_batch_command_t* commands, uint32_t count,
    uint32_t* out_published) {
  *out_published = 0;
  HRX_RETURN_IF_ERROR(hrx_hip_enter(base));
  hrx_hip_stream_t stream = hrx_hip_stream_of(queue);
  hrx_hip_launch_graphs_t* graphs = hrx_hip_queue_cast(queue)->launch_graphs;
  if (hrx_hip_launch_graphs_supported()) {
    if (hrx_nonblocking() && !hrx_hip_launch_graphs_ready(graphs, count)) {
      /* hal/objects.h, non-blocking mode: no one-time preparation. */
      return hrx_would_block("a launch graph to be instantiated");
    }
    /* A failure here leaves the rest to the plain launches below. */
    hrx_status_free(hrx_hip_launch_graphs_submit(graphs, stream, commands,
                                                 count, out_published));
  }
  for (uint32_t i = *out_published; i < count; ++i) {
    HRX_RETURN_IF_ERROR(hrx_hip_kernel_launch(commands[i].kernel, stream,
                                              commands[i].launch));
    ++*out_published;
  }
  return NULL;
}

/* On NVIDIA; HIP's graph updates have had correctness and speed bugs, so
 * on AMD launches are gathered only when HRX_BATCH_LAUNCHES=1 asks for it,
 * until a measurement there says otherwise. */
static bool hrx_hip_kernel_launch_batch_by_default(
    hrx_backend_device_t* base) {
  (void)base;
  return hrx_hip_nvidia() && hrx_hip_launch_graphs_supported();
}

static void hrx_hip_kernel_describe_image_of(
    hrx_backend_device_t* base, const void* image, size_t size,
    const char* const* names, size_t name_count,
    hrx_kernel_param_record_t* out_params) {
  (void)base;
  hrx_hip_kernel_describe_image(hrx_hip_rt.platform->id, image, size, names,
                                name_count, out_params);
}

/* ---------------------------------------------------------------- tables */

static const hrx_backend_vtable_t hrx_hip_vtable = {
    .destroy = hrx_hip_device_destroy,
    .query_info = hrx_hip_query_info,
    .query_free_memory = hrx_hip_query_free_memory,
    .plan_connections = hrx_hip_plan_connections,
    .query_connections = hrx_hip_query_connections,
    .peer_path = hrx_hip_peer_path,
    .queue = {
        .create = hrx_hip_queue_create,
        .destroy = hrx_hip_queue_destroy,
        .query = hrx_hip_queue_query,
        .native_handle = hrx_hip_queue_native_handle,
        .copy = hrx_hip_copy,
        .fill = hrx_hip_fill,
        .upload = hrx_hip_upload,
        .upload_pinned = hrx_hip_upload_pinned,
        .download = hrx_hip_download,
        .foreign_stream_wait_event = hrx_hip_foreign_stream_wait_event,
        .wait_event = hrx_hip_queue_wait_event,
        .batch_submit = hrx_hip_batch_submit,
        .host_call = hrx_hip_queue_host_call,
        .wait = hrx_hip_queue_wait,
        .peer_copy = hrx_hip_peer_copy,
    },
    .memory = {
        .alloc = hrx_hip_alloc,
        .free = hrx_hip_free,
        .host_alloc = hrx_hip_host_alloc,
        .host_free = hrx_hip_host_free,
        .host_register = hrx_hip_host_register,
        .host_unregister = hrx_hip_host_unregister,
    },
    .event = {
        .create = hrx_hip_event_create,
        .create_timing = hrx_hip_event_create_timing,
        .elapsed_ms = hrx_hip_event_elapsed_ms,
        .destroy = hrx_hip_event_destroy,
        .record = hrx_hip_event_record,
        .query = hrx_hip_event_query,
        .wait = hrx_hip_event_wait,
    },
    .graph = {
        .create = hrx_hip_graph_create,
        .launch = hrx_hip_graph_launch,
        .destroy = hrx_hip_graph_destroy,
    },
    .kernel = {
        .toolchain = hrx_hip_kernel_toolchain_of,
        .compile = hrx_hip_kernel_compile_for,
        .module_load = hrx_hip_module_load_on,
        .module_unload = hrx_hip_module_unload_on,
        .module_get_kernel = hrx_hip_module_get_kernel_of,
        .launch = hrx_hip_kernel_launch_on,
        .launch_batch = hrx_hip_kernel_launch_batch,
        .launch_batch_by_default = hrx_hip_kernel_launch_batch_by_default,
        .describe_image = hrx_hip_kernel_describe_image_of,
    },
};

static void hrx_hip_describe_backend(hrx_backend_info_t* out_info) {
  const char* library = hrx_hip_loaded_library();
  const char* platform = hrx_hip_platform();
  snprintf(out_info->library, sizeof(out_info->library), "%s",
           library ? library : "");
  snprintf(out_info->platform, sizeof(out_info->platform), "%s",
           platform ? platform : "");
  if (platform && hrx_hip_connections_variable(platform)) {
    out_info->has_connections = true;
    /* Once the runtime has started, what it started with; before, the
     * variable as it is now. */
    if (!hrx_hip_connections_at_start(&out_info->connections)) {
      hrx_hip_connections_current(platform, &out_info->connections);
    }
  }
}

const hrx_backend_t hrx_hip_backend = {
    .name = "hip",
    .load = hrx_hip_load,
    .device_open = hrx_hip_device_open,
    .describe = hrx_hip_describe_backend,
    /* cudaLaunchHostFunc / hipLaunchHostFunc: "host functions must not make
     * any CUDA API calls" (the runtime answers cudaErrorNotPermitted). */
    .host_functions_may_call_runtime = false,
};
