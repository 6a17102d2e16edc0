/* The host backend: a real CPU device. Memory is host memory; native
 * queues are command rings served by the device's engines, a fixed set of
 * threads (host_engines.h, host_queue.h); events are (queue, ticket)
 * completion markers; host functions run on engine threads.
 *
 * The engines play the role of a GPU's hardware connections: queues beyond
 * the engine count take turns on them. The connection budget reports them
 * (variable HRX_HOST_ENGINES).
 *
 * Environment (read when a device is opened; a value that is not an integer
 * in range is refused with an error naming the variable):
 *   HRX_HOST_DEVICE_COUNT    devices the backend reports (default 1, 1-64;
 *                            read when the backend loads)
 *   HRX_HOST_ENGINES         engines serving the device's queues (default:
 *                            the CPUs this process may run on; 1-1024);
 *                            at most one engine per live queue runs
 *   HRX_HOST_ENGINE_SPIN_US  how long an idle engine spins before parking
 *                            (default 50; 0-1000000)
 *   HRX_HOST_MAX_QUEUES      live native queues a device accepts (default
 *                            0: unlimited); more is refused like a GPU
 *                            runtime refuses a queue, to test the pool's
 *                            capacity rule
 *   HRX_HOST_RING_CAPACITY   commands a queue holds before producers wait
 *                            (default 1024; 2-1048576)
 *   HRX_HOST_PEER_ACCESS     1 (default): copies between host devices are
 *                            direct (the devices share host memory); 0:
 *                            they are staged through host memory of the
 *                            stream's device, two copies, as between GPUs
 *                            without peer access
 *   HRX_HOST_CC              the C compiler of kernels (read at each
 *                            compile; host_kernel_compiler.h)
 * Replaced (refused, naming the replacement):
 *   HRX_HOST_SPIN_US         per-queue worker spin; now
 *                            HRX_HOST_ENGINE_SPIN_US
 *
 * Kernels are C, built by the system C compiler into shared objects
 * (host_kernel_compiler.h, host_kernel_module.h); a launch is a KERNEL
 * command whose blocks the engines run (host_grid.h). */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "base/environment.h"
#include "base/nonblocking.h"
#include "base/status.h"
#include "host_driver.h"
#include "host_grid.h"
#include "host_kernel_compiler.h"
#include "host_kernel_module.h"
#include "host_queue.h"

typedef struct hrx_host_device_s {
  hrx_backend_device_t base;
  int index;
  pthread_mutex_t mutex;
  int max_queues;                /* 0: unlimited */
  uint32_t ring_capacity;
  int queue_count;               /* live queues; guarded by mutex */
  int queue_capacity;            /* entries in `queues` */
  hrx_host_queue_t** queues;     /* live queues, retained; guarded by mutex */
  hrx_host_engines_t* engines;   /* owned */
  bool engines_from_user;        /* HRX_HOST_ENGINES was set */
  bool peer_access;              /* HRX_HOST_PEER_ACCESS */
  int connections_wanted;        /* the pool's last plan; guarded by mutex */
  hrx_host_compiler_t compiler;  /* kernels' C compiler */
} hrx_host_device_t;

/* A native queue handle is the host queue itself. */
#define HRX_HOST_QUEUE(q) ((hrx_host_queue_t*)(q))

typedef struct hrx_host_event_s {
  pthread_mutex_t mutex;
  hrx_host_queue_t* queue;       /* retained; NULL until recorded */
  uint64_t ticket;
  bool timing;                   /* records are STAMP commands */
  hrx_host_stamp_t* stamp;       /* retained; the last record's, or NULL */
} hrx_host_event_t;

#define HRX_HOST_EVENT(e) ((hrx_host_event_t*)(e))

/* Variables the backend no longer reads, each with what replaced it: set,
 * they are refused rather than silently ignored. */
static const struct {
  const char* name;
  const char* replacement;
} hrx_host_replaced_variables[] = {
    {"HRX_HOST_SPIN_US",
     "HRX_HOST_ENGINE_SPIN_US (queues are served by engines now; it sets how "
     "long an idle engine spins before parking, in microseconds)"},
};

static hrx_status_t hrx_host_check_replaced_variables(void) {
  size_t count = sizeof(hrx_host_replaced_variables) /
                 sizeof(hrx_host_replaced_variables[0]);
  for (size_t i = 0; i < count; ++i) {
    const char* text = getenv(hrx_host_replaced_variables[i].name);
    if (text && *text) {
      return hrx_make_status(
          HRX_STATUS_INVALID_ARGUMENT,
          "%s is no longer read by the host backend; use %s",
          hrx_host_replaced_variables[i].name,
          hrx_host_replaced_variables[i].replacement);
    }
  }
  return NULL;
}

static hrx_host_device_t* hrx_host_device_cast(hrx_backend_device_t* device) {
  return (hrx_host_device_t*)device;
}

static void hrx_host_device_destroy(hrx_backend_device_t* base) {
  hrx_host_device_t* device = hrx_host_device_cast(base);
  hrx_host_engines_destroy(device->engines);
  hrx_host_compiler_deinitialize(&device->compiler);
  pthread_mutex_destroy(&device->mutex);
  free(device->queues);
  free(device);
}

static hrx_status_t hrx_host_query_info(hrx_backend_device_t* base,
                                        hrx_device_info_t* out_info) {
  hrx_host_device_t* device = hrx_host_device_cast(base);
  memset(out_info, 0, sizeof(*out_info));
  snprintf(out_info->backend, sizeof(out_info->backend), "host");
  snprintf(out_info->platform, sizeof(out_info->platform), "cpu");
  out_info->index = device->index;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  snprintf(out_info->name, sizeof(out_info->name), "host CPU (%ld logical CPUs)",
           cpus);
  struct utsname uts;
  snprintf(out_info->target, sizeof(out_info->target), "host-%.56s",
           uname(&uts) == 0 ? uts.machine : "unknown");
  int engines = hrx_host_engines_count(device->engines);
  snprintf(out_info->runtime, sizeof(out_info->runtime),
           "hrx host backend (%d engine%s serve the queues)", engines,
           engines == 1 ? "" : "s");
  out_info->engines = engines;
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  out_info->total_memory =
      pages > 0 && page_size > 0 ? (uint64_t)pages * (uint64_t)page_size : 0;
  out_info->max_native_queues = device->max_queues;
  snprintf(out_info->launch_publication, sizeof(out_info->launch_publication),
           "gathered like small copies; a batch goes onto the queue's ring "
           "in one call, a ring command per launch");
  snprintf(out_info->batch_publication, sizeof(out_info->batch_publication),
           "one ring slot per batch");
  out_info->max_threads_per_block = HRX_HOST_MAX_THREADS_PER_BLOCK;
  out_info->max_block_dim[0] = HRX_HOST_MAX_BLOCK_X;
  out_info->max_block_dim[1] = HRX_HOST_MAX_BLOCK_Y;
  out_info->max_block_dim[2] = HRX_HOST_MAX_BLOCK_Z;
  out_info->max_grid_dim[0] = HRX_HOST_MAX_GRID_X;
  out_info->max_grid_dim[1] = HRX_HOST_MAX_GRID_Y;
  out_info->max_grid_dim[2] = HRX_HOST_MAX_GRID_Z;
  out_info->max_shared_bytes_per_block = HRX_HOST_MAX_SHARED_BYTES;
  return NULL;
}

static hrx_status_t hrx_host_query_free_memory(hrx_backend_device_t* base,
                                               uint64_t* out_free_bytes) {
  (void)base;
  long pages = sysconf(_SC_AVPHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  *out_free_bytes =
      pages > 0 && page_size > 0 ? (uint64_t)pages * (uint64_t)page_size : 0;
  return NULL;
}

/* A lane's place in the engines' order of precedence; reported as the
 * queue's native priority (numerically lower is more urgent, as with GPU
 * stream priorities). */
static hrx_host_lane_t hrx_host_lane_of(int priority) {
  switch (priority) {
    case HRX_STREAM_PRIORITY_HIGH: return HRX_HOST_LANE_HIGH;
    case HRX_STREAM_PRIORITY_LOW: return HRX_HOST_LANE_LOW;
    default: return HRX_HOST_LANE_NORMAL;
  }
}

static hrx_status_t hrx_host_queue_create_native(
    hrx_backend_device_t* base, int priority, uint32_t flags,
    hrx_native_queue_t** out, int* out_native_priority) {
  hrx_host_device_t* device = hrx_host_device_cast(base);
  hrx_status_t status = NULL;
  pthread_mutex_lock(&device->mutex);
  if (device->max_queues && device->queue_count >= device->max_queues) {
    status = hrx_make_status(
        HRX_STATUS_RESOURCE_EXHAUSTED,
        "host device %d refused a native queue: its limit of %d live queues "
        "is reached (HRX_HOST_MAX_QUEUES)",
        device->index, device->max_queues);
  } else if (device->queue_count == device->queue_capacity) {
    int capacity = device->queue_capacity ? device->queue_capacity * 2 : 16;
    hrx_host_queue_t** grown =
        realloc(device->queues, (size_t)capacity * sizeof(*grown));
    if (grown) {
      device->queues = grown;
      device->queue_capacity = capacity;
    } else {
      status = hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                               "cannot grow the host queue list");
    }
  }
  if (!status) {
    status = hrx_host_engines_reserve(device->engines, device->queue_count + 1);
  }
  hrx_host_queue_t* queue = NULL;
  hrx_host_lane_t lane = hrx_host_lane_of(priority);
  bool reserved = (flags & HRX_NATIVE_QUEUE_RESERVED) != 0;
  if (!status) {
    status = hrx_host_queue_create(device->ring_capacity, device->engines,
                                   lane, reserved, &queue);
  }
  if (!status) {
    if (out_native_priority) *out_native_priority = (int)lane;
    hrx_host_queue_retain(queue);
    device->queues[device->queue_count++] = queue;
    *out = (hrx_native_queue_t*)queue;
  }
  pthread_mutex_unlock(&device->mutex);
  return status;
}

/* Exact: the queue's tickets count the pending commands. */
static hrx_status_t hrx_host_queue_query(hrx_backend_device_t* base,
                                         hrx_native_queue_t* native,
                                         uint64_t* out_pending) {
  (void)base;
  *out_pending = hrx_host_queue_pending(HRX_HOST_QUEUE(native));
  return NULL;
}

static void hrx_host_queue_destroy_native(hrx_backend_device_t* base,
                                          hrx_native_queue_t* native) {
  hrx_host_device_t* device = hrx_host_device_cast(base);
  hrx_host_queue_t* queue = HRX_HOST_QUEUE(native);
  pthread_mutex_lock(&device->mutex);
  for (int i = 0; i < device->queue_count; ++i) {
    if (device->queues[i] == queue) {
      device->queues[i] = device->queues[--device->queue_count];
      break;
    }
  }
  pthread_mutex_unlock(&device->mutex);
  hrx_host_queue_shutdown(queue);
  hrx_host_queue_release(queue);
}

/* Engines are the host's connections: the pool's plan is only reported. */
static void hrx_host_plan_connections(hrx_backend_device_t* base, int wanted) {
  hrx_host_device_t* device = hrx_host_device_cast(base);
  pthread_mutex_lock(&device->mutex);
  device->connections_wanted = wanted;
  pthread_mutex_unlock(&device->mutex);
}

static void hrx_host_query_connections(hrx_backend_device_t* base,
                                       hrx_connection_budget_t* out_budget) {
  hrx_host_device_t* device = hrx_host_device_cast(base);
  memset(out_budget, 0, sizeof(*out_budget));
  snprintf(out_budget->variable, sizeof(out_budget->variable),
           "HRX_HOST_ENGINES");
  out_budget->value = hrx_host_engines_count(device->engines);
  snprintf(out_budget->source, sizeof(out_budget->source), "%s",
           device->engines_from_user ? "user" : "hrx");
  pthread_mutex_lock(&device->mutex);
  out_budget->wanted = device->connections_wanted;
  pthread_mutex_unlock(&device->mutex);
}

static void* hrx_host_queue_native_handle(hrx_native_queue_t* queue) {
  return queue;
}

/* A deadline timeout_ns from now, saturating. */
static uint64_t hrx_host_deadline(uint64_t timeout_ns) {
  uint64_t now = hrx_now_ns();
  return timeout_ns > UINT64_MAX - 1 - now ? UINT64_MAX - 1 : now + timeout_ns;
}

/* Waits for `ticket` of `queue`: to the end, or until the timeout. */
static bool hrx_host_wait_ticket(hrx_host_queue_t* queue, uint64_t ticket,
                                 uint64_t timeout_ns) {
  if (timeout_ns != HRX_WAIT_FOREVER) {
    return hrx_host_queue_wait_until(queue, ticket,
                                     hrx_host_deadline(timeout_ns));
  }
  hrx_host_queue_wait(queue, ticket);
  return true;
}

static hrx_status_t hrx_host_queue_wait_native(hrx_backend_device_t* base,
                                               hrx_native_queue_t* native,
                                               uint64_t timeout_ns,
                                               bool* out_done) {
  (void)base;
  hrx_host_queue_t* queue = HRX_HOST_QUEUE(native);
  *out_done =
      hrx_host_wait_ticket(queue, hrx_host_queue_tail(queue), timeout_ns);
  return NULL;
}

static hrx_status_t hrx_host_alloc(hrx_backend_device_t* base, uint64_t size,
                                   void** out_ptr) {
  (void)base;
  uint64_t rounded = (size + 63) & ~(uint64_t)63;
  void* ptr = rounded >= size ? aligned_alloc(64, rounded) : NULL;
  if (!ptr) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "host allocation of %llu bytes failed",
                           (unsigned long long)size);
  }
  *out_ptr = ptr;
  return NULL;
}

/* Waits for every command submitted so far on every live queue: after that,
 * no earlier work can touch the memory (the rule cudaFree follows). */
static void hrx_host_free(hrx_backend_device_t* base, void* ptr) {
  hrx_host_device_t* device = hrx_host_device_cast(base);
  if (!ptr) return;
  pthread_mutex_lock(&device->mutex);
  int n = device->queue_count;
  hrx_host_queue_t** queues = n ? malloc((size_t)n * sizeof(*queues)) : NULL;
  uint64_t* tails = n ? malloc((size_t)n * sizeof(*tails)) : NULL;
  if (n && (!queues || !tails)) {
    /* Cannot snapshot: wait under the lock instead (slower, still safe). */
    for (int i = 0; i < n; ++i) {
      hrx_host_queue_wait(device->queues[i],
                          hrx_host_queue_tail(device->queues[i]));
    }
    pthread_mutex_unlock(&device->mutex);
    free(queues);
    free(tails);
    free(ptr);
    return;
  }
  for (int i = 0; i < n; ++i) {
    queues[i] = device->queues[i];
    hrx_host_queue_retain(queues[i]);
    tails[i] = hrx_host_queue_tail(queues[i]);
  }
  pthread_mutex_unlock(&device->mutex);
  for (int i = 0; i < n; ++i) {
    hrx_host_queue_wait(queues[i], tails[i]);
    hrx_host_queue_release(queues[i]);
  }
  free(queues);
  free(tails);
  free(ptr);
}

/* Staging the core gives back only once no work uses it (hal/memory.h): no
 * wait. */
/* Host memory for transfers (hal/memory.h): page-aligned, as pinned
 * memory of a GPU runtime is, so that users see the same alignment on
 * every backend. */
static hrx_status_t hrx_host_host_alloc(hrx_backend_device_t* base,
                                        uint64_t size, void** out_ptr) {
  (void)base;
  const uint64_t page = 4096;
  uint64_t rounded = (size + page - 1) & ~(page - 1);
  void* ptr = rounded >= size ? aligned_alloc(page, rounded) : NULL;
  if (!ptr) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "host allocation of %llu bytes failed",
                           (unsigned long long)size);
  }
  *out_ptr = ptr;
  return NULL;
}

static void hrx_host_host_free(hrx_backend_device_t* base, void* ptr) {
  (void)base;
  free(ptr);
}

static hrx_status_t hrx_host_submit(hrx_native_queue_t* native,
                                    const hrx_host_command_t* command) {
  uint64_t ticket = 0;
  return hrx_host_queue_submit(HRX_HOST_QUEUE(native), command, &ticket);
}

static hrx_status_t hrx_host_copy(hrx_backend_device_t* base,
                                  hrx_native_queue_t* queue, void* dst,
                                  const void* src, uint64_t length) {
  (void)base;
  hrx_host_command_t command = {.kind = HRX_HOST_COMMAND_COPY,
                                .dst = dst, .src = src, .length = length};
  return hrx_host_submit(queue, &command);
}

static hrx_status_t hrx_host_fill(hrx_backend_device_t* base,
                                  hrx_native_queue_t* queue, void* dst,
                                  uint8_t byte, uint64_t length) {
  (void)base;
  hrx_host_command_t command = {.kind = HRX_HOST_COMMAND_FILL,
                                .dst = dst, .byte = byte, .length = length};
  return hrx_host_submit(queue, &command);
}

static hrx_status_t hrx_host_upload(hrx_backend_device_t* base,
                                    hrx_native_queue_t* queue, void* dst,
                                    const void* host_src, uint64_t length) {
  (void)base;
  /* The caller may reuse host_src as soon as we return: stage a copy. */
  void* staging = malloc(length);
  if (!staging) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot stage an upload of %llu bytes",
                           (unsigned long long)length);
  }
  memcpy(staging, host_src, length);
  hrx_host_command_t command = {.kind = HRX_HOST_COMMAND_COPY, .dst = dst,
                                .src = staging, .length = length,
                                .owned = staging};
  return hrx_host_submit(queue, &command);
}

/* host_src stays valid until the copy ran: no staging copy. */
static hrx_status_t hrx_host_upload_pinned(hrx_backend_device_t* base,
                                           hrx_native_queue_t* queue,
                                           void* dst, const void* host_src,
                                           uint64_t length) {
  return hrx_host_copy(base, queue, dst, host_src, length);
}

static hrx_status_t hrx_host_download(hrx_backend_device_t* base,
                                      hrx_native_queue_t* queue,
                                      void* host_dst, const void* src,
                                      uint64_t length) {
  return hrx_host_copy(base, queue, host_dst, src, length);
}

/* One ring slot per batch: it runs the commands in order. */
static hrx_status_t hrx_host_batch_submit(hrx_backend_device_t* base,
                                          hrx_native_queue_t* queue,
                                          const hrx_batch_command_t* commands,
                                          uint32_t count,
                                          uint32_t* out_published) {
  (void)base;
  *out_published = 0;
  hrx_batch_command_t* copy = malloc(count * sizeof(*copy));
  if (!copy) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a batch of %u commands", count);
  }
  memcpy(copy, commands, count * sizeof(*copy));
  hrx_host_command_t command = {.kind = HRX_HOST_COMMAND_BATCH,
                                .batch = copy, .length = count,
                                .owned = copy};
  hrx_status_t status = hrx_host_submit(queue, &command);
  if (!status) *out_published = count;
  return status;
}

/* Runs on an engine thread only (host_queue.h). */
static hrx_status_t hrx_host_queue_host_call(hrx_backend_device_t* base,
                                             hrx_native_queue_t* queue,
                                             hrx_queue_host_fn_t fn,
                                             void* user_data) {
  (void)base;
  hrx_host_command_t command = {.kind = HRX_HOST_COMMAND_HOST,
                                .host_fn = fn, .host_arg = user_data};
  return hrx_host_submit(queue, &command);
}

/* Another host device's memory is host memory too: direct, unless
 * HRX_HOST_PEER_ACCESS=0 asks for the staged path. */
static hrx_status_t hrx_host_peer_path(hrx_backend_device_t* base, int other,
                                       hrx_peer_path_t* out_path) {
  (void)other;
  *out_path = hrx_host_device_cast(base)->peer_access ? HRX_PEER_PATH_DIRECT
                                                      : HRX_PEER_PATH_STAGED;
  return NULL;
}

/* Direct: one copy. Staged: src to staging, then staging to dst, as one
 * batch in one ring slot (both or neither are queued). */
static hrx_status_t hrx_host_peer_copy(hrx_backend_device_t* base,
                                       hrx_native_queue_t* queue, void* dst,
                                       int dst_index, const void* src,
                                       int src_index, uint64_t length,
                                       void* staging) {
  (void)dst_index;
  (void)src_index;
  if (!staging) return hrx_host_copy(base, queue, dst, src, length);
  const hrx_batch_command_t legs[2] = {
      {.dst = staging, .src = src, .length = length, .kind = HRX_BATCH_COPY},
      {.dst = dst, .src = staging, .length = length, .kind = HRX_BATCH_COPY},
  };
  uint32_t published = 0;
  return hrx_host_batch_submit(base, queue, legs, 2, &published);
}

static hrx_status_t hrx_host_event_create(hrx_backend_device_t* base,
                                          hrx_native_event_t** out_event) {
  (void)base;
  hrx_host_event_t* event = calloc(1, sizeof(*event));
  if (!event) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY, "cannot allocate event");
  }
  pthread_mutex_init(&event->mutex, NULL);
  *out_event = (hrx_native_event_t*)event;
  return NULL;
}

static hrx_status_t hrx_host_event_create_timing(
    hrx_backend_device_t* base, hrx_native_event_t** out_event) {
  HRX_RETURN_IF_ERROR(hrx_host_event_create(base, out_event));
  HRX_HOST_EVENT(*out_event)->timing = true;
  return NULL;
}

static void hrx_host_event_destroy(hrx_backend_device_t* base,
                                   hrx_native_event_t* native) {
  (void)base;
  hrx_host_event_t* event = HRX_HOST_EVENT(native);
  hrx_host_stamp_release(event->stamp);
  hrx_host_queue_release(event->queue);
  pthread_mutex_destroy(&event->mutex);
  free(event);
}

/* Records at the queue's current end: every command accepted so far. */
static hrx_status_t hrx_host_event_record(hrx_backend_device_t* base,
                                          hrx_native_queue_t* native,
                                          hrx_native_event_t* native_event) {
  (void)base;
  hrx_host_queue_t* queue = HRX_HOST_QUEUE(native);
  hrx_host_event_t* event = HRX_HOST_EVENT(native_event);
  hrx_host_stamp_t* stamp = NULL;
  uint64_t end = 0;
  if (event->timing) {
    /* The clock is read as the queue passes a STAMP command. */
    stamp = hrx_host_stamp_create();
    if (!stamp) {
      return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                             "cannot allocate a timing record");
    }
    hrx_host_stamp_retain(stamp);
    hrx_host_command_t command = {.kind = HRX_HOST_COMMAND_STAMP,
                                  .stamp = stamp};
    hrx_status_t status = hrx_host_queue_submit(queue, &command, &end);
    if (status) {
      hrx_host_stamp_release(stamp);
      return status;
    }
  }
  hrx_host_queue_retain(queue);
  pthread_mutex_lock(&event->mutex);
  hrx_host_queue_t* previous = event->queue;
  hrx_host_stamp_t* previous_stamp = event->stamp;
  event->queue = queue;
  event->ticket = stamp ? end : hrx_host_queue_tail(queue);
  event->stamp = stamp;
  pthread_mutex_unlock(&event->mutex);
  hrx_host_queue_release(previous);
  hrx_host_stamp_release(previous_stamp);
  return NULL;
}

/* The completion time of a timing event's last record, or a failure. */
static hrx_status_t hrx_host_event_time(hrx_host_event_t* event,
                                        const char* role, uint64_t* out_ns) {
  pthread_mutex_lock(&event->mutex);
  uint64_t ns = event->stamp ? atomic_load(&event->stamp->ns) : 0;
  bool recorded = event->stamp != NULL;
  pthread_mutex_unlock(&event->mutex);
  if (!recorded) {
    return hrx_make_status(HRX_STATUS_FAILED_PRECONDITION,
                           "the %s event was never recorded", role);
  }
  if (!ns) {
    return hrx_make_status(HRX_STATUS_FAILED_PRECONDITION,
                           "the %s event is not complete yet; synchronize "
                           "it first",
                           role);
  }
  *out_ns = ns;
  return NULL;
}

static hrx_status_t hrx_host_event_elapsed_ms(hrx_backend_device_t* base,
                                              hrx_native_event_t* start,
                                              hrx_native_event_t* end,
                                              double* out_ms) {
  (void)base;
  uint64_t start_ns = 0, end_ns = 0;
  HRX_RETURN_IF_ERROR(
      hrx_host_event_time(HRX_HOST_EVENT(start), "start", &start_ns));
  HRX_RETURN_IF_ERROR(hrx_host_event_time(HRX_HOST_EVENT(end), "end", &end_ns));
  *out_ms = ((double)end_ns - (double)start_ns) / 1e6;
  return NULL;
}

/* Copies out the event's last record (queue retained), or NULL. */
static hrx_host_queue_t* hrx_host_event_snapshot(hrx_host_event_t* event,
                                                 uint64_t* out_ticket) {
  pthread_mutex_lock(&event->mutex);
  hrx_host_queue_t* queue = event->queue;
  if (queue) hrx_host_queue_retain(queue);
  *out_ticket = event->ticket;
  pthread_mutex_unlock(&event->mutex);
  return queue;
}

static hrx_status_t hrx_host_queue_wait_event(hrx_backend_device_t* base,
                                              hrx_native_queue_t* queue,
                                              hrx_native_event_t* native_event) {
  (void)base;
  uint64_t ticket = 0;
  hrx_host_queue_t* target =
      hrx_host_event_snapshot(HRX_HOST_EVENT(native_event), &ticket);
  if (!target) return NULL; /* never recorded: nothing to wait for */
  if (hrx_host_queue_is_complete(target, ticket)) {
    hrx_host_queue_release(target);
    return NULL;
  }
  hrx_host_command_t command = {.kind = HRX_HOST_COMMAND_WAIT,
                                .wait_queue = target, .wait_ticket = ticket};
  return hrx_host_submit(queue, &command);
}

static hrx_status_t hrx_host_event_query(hrx_backend_device_t* base,
                                         hrx_native_event_t* native_event,
                                         bool* out_done) {
  (void)base;
  uint64_t ticket = 0;
  hrx_host_queue_t* queue =
      hrx_host_event_snapshot(HRX_HOST_EVENT(native_event), &ticket);
  *out_done = !queue || hrx_host_queue_is_complete(queue, ticket);
  hrx_host_queue_release(queue);
  return NULL;
}

static hrx_status_t hrx_host_event_wait(hrx_backend_device_t* base,
                                        hrx_native_event_t* native_event,
                                        uint64_t timeout_ns, bool* out_done) {
  (void)base;
  uint64_t ticket = 0;
  hrx_host_queue_t* queue =
      hrx_host_event_snapshot(HRX_HOST_EVENT(native_event), &ticket);
  *out_done = true;
  if (queue) {
    *out_done = hrx_host_wait_ticket(queue, ticket, timeout_ns);
    hrx_host_queue_release(queue);
  }
  return NULL;
}

/* ---------------------------------------------------------------- kernels */

static hrx_status_t hrx_host_kernel_toolchain(hrx_backend_device_t* base,
                                              hrx_kernel_compiler_t* out) {
  return hrx_host_compiler_describe(&hrx_host_device_cast(base)->compiler,
                                    out);
}

static hrx_status_t hrx_host_kernel_compile(
    hrx_backend_device_t* base, const char* source, const char* const* names,
    size_t name_count, const char* const* options, size_t option_count,
    void** out_image, size_t* out_size,
    hrx_kernel_param_record_t* out_params) {
  /* The module records its kernels' parameters itself
   * (host_kernel_module.h). */
  (void)out_params;
  return hrx_host_compiler_compile(&hrx_host_device_cast(base)->compiler,
                                   source, names, name_count, options,
                                   option_count, out_image, out_size);
}

static hrx_status_t hrx_host_module_load_native(
    hrx_backend_device_t* base, const void* image, size_t size,
    hrx_native_module_t** out_module) {
  (void)base;
  return hrx_host_module_load(image, size, (hrx_host_module_t**)out_module);
}

/* The module goes once no launch of it is left (each grid holds it). */
static void hrx_host_module_unload_native(hrx_backend_device_t* base,
                                          hrx_native_module_t* module) {
  (void)base;
  hrx_host_module_release((hrx_host_module_t*)module);
}

static hrx_status_t hrx_host_module_get_kernel_native(
    hrx_backend_device_t* base, hrx_native_module_t* module, const char* name,
    hrx_native_kernel_t** out_kernel, hrx_kernel_attributes_t* out_info) {
  (void)base;
  return hrx_host_module_get_kernel((hrx_host_module_t*)module, name,
                                    (hrx_host_kernel_t**)out_kernel,
                                    out_info);
}

static hrx_status_t hrx_host_kernel_launch(hrx_backend_device_t* base,
                                           hrx_native_queue_t* queue,
                                           hrx_native_kernel_t* kernel,
                                           const hrx_kernel_launch_t* launch) {
  hrx_host_device_t* device = hrx_host_device_cast(base);
  uint64_t blocks = (uint64_t)launch->grid[0] * launch->grid[1] *
                    launch->grid[2];
  if (blocks > 1) {
    /* Engine threads start with queues; a grid may use every engine. With
     * at least one thread the launch runs, so a refused start is no
     * failure. Starting threads is a one-time wait: not in non-blocking
     * mode. */
    int engines = hrx_host_engines_count(device->engines);
    int wanted = blocks < (uint64_t)engines ? (int)blocks : engines;
    if (!hrx_host_engines_reserved(device->engines, wanted)) {
      if (hrx_nonblocking()) {
        return hrx_would_block("starting host engine threads for a grid");
      }
      hrx_status_free(hrx_host_engines_reserve(device->engines, wanted));
    }
  }
  hrx_host_grid_t* grid = NULL;
  HRX_RETURN_IF_ERROR(hrx_host_grid_create(
      device->engines, hrx_host_queue_lane(HRX_HOST_QUEUE(queue)),
      (hrx_host_kernel_t*)kernel, launch, &grid));
  hrx_host_command_t command = {.kind = HRX_HOST_COMMAND_KERNEL,
                                .grid = grid};
  return hrx_host_submit(queue, &command);
}

/* The launches one after another onto the queue's ring, in one call: the
 * core's locks and checks are paid once per batch, the ring's per launch
 * (a grid is one ring command, its blocks spread over the engines). */
static hrx_status_t hrx_host_kernel_launch_batch(
    hrx_backend_device_t* base, hrx_native_queue_t* queue,
    const hrx_batch_command_t* commands, uint32_t count,
    uint32_t* out_published) {
  *out_published = 0;
  for (uint32_t i = 0; i < count; ++i) {
    HRX_RETURN_IF_ERROR(hrx_host_kernel_launch(
        base, queue, commands[i].kernel, commands[i].launch));
    ++*out_published;
  }
  return NULL;
}

static bool hrx_host_kernel_launch_batch_by_default(
    hrx_backend_device_t* base) {
  (void)base;
  return true;
}

static const hrx_backend_vtable_t hrx_host_vtable = {
    .destroy = hrx_host_device_destroy,
    .query_info = hrx_host_query_info,
    .query_free_memory = hrx_host_query_free_memory,
    .plan_connections = hrx_host_plan_connections,
    .query_connections = hrx_host_query_connections,
    .peer_path = hrx_host_peer_path,
    .queue = {
        .create = hrx_host_queue_create_native,
        .destroy = hrx_host_queue_destroy_native,
        .query = hrx_host_queue_query,
        .native_handle = hrx_host_queue_native_handle,
        .copy = hrx_host_copy,
        .fill = hrx_host_fill,
        .upload = hrx_host_upload,
        .upload_pinned = hrx_host_upload_pinned,
        .download = hrx_host_download,
        .wait_event = hrx_host_queue_wait_event,
        .batch_submit = hrx_host_batch_submit,
        .host_call = hrx_host_queue_host_call,
        .wait = hrx_host_queue_wait_native,
        .peer_copy = hrx_host_peer_copy,
    },
    .memory = {
        .alloc = hrx_host_alloc,
        .free = hrx_host_free,
        .host_alloc = hrx_host_host_alloc,
        .host_free = hrx_host_host_free,
    },
    .event = {
        .create = hrx_host_event_create,
        .destroy = hrx_host_event_destroy,
        .record = hrx_host_event_record,
        .query = hrx_host_event_query,
        .wait = hrx_host_event_wait,
        .create_timing = hrx_host_event_create_timing,
        .elapsed_ms = hrx_host_event_elapsed_ms,
    },
    .kernel = {
        .toolchain = hrx_host_kernel_toolchain,
        .compile = hrx_host_kernel_compile,
        .module_load = hrx_host_module_load_native,
        .module_unload = hrx_host_module_unload_native,
        .module_get_kernel = hrx_host_module_get_kernel_native,
        .launch = hrx_host_kernel_launch,
        .launch_batch = hrx_host_kernel_launch_batch,
        .launch_batch_by_default = hrx_host_kernel_launch_batch_by_default,
    },
};

static hrx_status_t hrx_host_load(bool opening, int* out_device_count) {
  (void)opening;
  int64_t count = 1;
  HRX_RETURN_IF_ERROR(hrx_env_int("HRX_HOST_DEVICE_COUNT", 1, 1, 64, &count));
  *out_device_count = (int)count;
  return NULL;
}

/* The device's settings from the environment (see the top of this file). */
typedef struct hrx_host_settings_s {
  int64_t max_queues;
  int64_t ring_capacity;
  int64_t engines;
  bool engines_from_user;
  int64_t spin_us;
  bool peer_access;
} hrx_host_settings_t;

static hrx_status_t hrx_host_read_settings(hrx_host_settings_t* out) {
  HRX_RETURN_IF_ERROR(hrx_host_check_replaced_variables());
  HRX_RETURN_IF_ERROR(hrx_env_int("HRX_HOST_MAX_QUEUES", 0, 0, 1 << 20,
                                  &out->max_queues));
  HRX_RETURN_IF_ERROR(hrx_env_int("HRX_HOST_RING_CAPACITY", 1024, 2, 1 << 20,
                                  &out->ring_capacity));
  HRX_RETURN_IF_ERROR(hrx_env_int("HRX_HOST_ENGINES", hrx_env_usable_cpus(),
                                  1, 1024, &out->engines));
  const char* engines = getenv("HRX_HOST_ENGINES");
  out->engines_from_user = engines && *engines;
  HRX_RETURN_IF_ERROR(
      hrx_env_switch("HRX_HOST_PEER_ACCESS", true, &out->peer_access));
  return hrx_env_int("HRX_HOST_ENGINE_SPIN_US", 50, 0, 1000000,
                     &out->spin_us);
}

static hrx_status_t hrx_host_device_open(
    int index, const hrx_hal_device_settings_t* core_settings,
    hrx_backend_device_t** out_device) {
  (void)core_settings; /* batches need nothing prepared here */
  hrx_host_settings_t settings;
  HRX_RETURN_IF_ERROR(hrx_host_read_settings(&settings));
  hrx_host_device_t* device = calloc(1, sizeof(*device));
  if (!device) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate host device");
  }
  hrx_status_t status = hrx_host_engines_create(
      (int)settings.engines, (uint64_t)settings.spin_us * 1000u,
      &device->engines);
  if (status) {
    free(device);
    return status;
  }
  device->base.vtable = &hrx_host_vtable;
  device->index = index;
  pthread_mutex_init(&device->mutex, NULL);
  device->max_queues = (int)settings.max_queues;
  device->ring_capacity = (uint32_t)settings.ring_capacity;
  device->engines_from_user = settings.engines_from_user;
  device->peer_access = settings.peer_access;
  hrx_host_compiler_initialize(&device->compiler);
  *out_device = &device->base;
  return NULL;
}

const hrx_backend_t hrx_host_backend = {
    .name = "host",
    .load = hrx_host_load,
    .device_open = hrx_host_device_open,
    .host_functions_may_call_runtime = true,
};
