/* The fault-injecting wrapper described in fault_backend.h. Queues are
 * wrapped (queue_native_handle receives no device, so the queue must carry
 * its way to the wrapped backend); events and memory pass through as the
 * wrapped backend's own handles. */
#include "fault_backend.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"

typedef enum hrx_fault_op_e {
  HRX_FAULT_ALLOC,
  HRX_FAULT_HOST_ALLOC,
  HRX_FAULT_QUEUE_CREATE,
  HRX_FAULT_COPY,
  HRX_FAULT_FILL,
  HRX_FAULT_UPLOAD,
  HRX_FAULT_DOWNLOAD,
  HRX_FAULT_EVENT_CREATE,
  HRX_FAULT_EVENT_RECORD,
  HRX_FAULT_WAIT_EVENT,
  HRX_FAULT_SYNCHRONIZE,
  HRX_FAULT_EVENT_SYNCHRONIZE,
  HRX_FAULT_PEER_COPY,
  HRX_FAULT_LAUNCH,
  HRX_FAULT_OP_COUNT,
} hrx_fault_op_t;

static const char* const hrx_fault_op_names[HRX_FAULT_OP_COUNT] = {
    "alloc",        "host_alloc",   "queue_create", "copy",
    "fill",         "upload",       "download",     "event_create",
    "event_record", "wait_event",   "synchronize",  "event_synchronize",
    "peer_copy",    "launch",
};

#define HRX_FAULT_GRAMMAR                                                    \
  "expected comma-separated OP:K (fail the K-th call), OP:K+ (the K-th and " \
  "later), OP:P%% (with probability P percent), seed:N, no_kernels or "      \
  "none; OP is one "                                                         \
  "of alloc, host_alloc, queue_create, copy, fill, upload, download, "       \
  "event_create, event_record, wait_event, synchronize, event_synchronize, " \
  "peer_copy, launch"

enum { HRX_FAULT_MAX_RULES = 32 };

typedef enum { HRX_FAULT_NTH, HRX_FAULT_FROM, HRX_FAULT_PERCENT } hrx_fault_kind_t;

typedef struct {
  hrx_fault_op_t op;
  hrx_fault_kind_t kind;
  uint64_t k;       /* NTH, FROM: call number */
  double percent;   /* PERCENT */
} hrx_fault_rule_t;

typedef struct hrx_fault_device_s {
  hrx_backend_device_t base;        /* first member; vtable points below */
  hrx_backend_vtable_t vtable;      /* optional entries as the inner's */
  hrx_backend_device_t* inner;      /* owned */
  int rule_count;
  bool no_kernels;                  /* offer no kernel entries */
  hrx_fault_rule_t rules[HRX_FAULT_MAX_RULES];
  atomic_uint_fast64_t calls[HRX_FAULT_OP_COUNT];
  pthread_mutex_t rng_mutex;
  uint64_t rng;                     /* xorshift64 state; rng_mutex */
} hrx_fault_device_t;

typedef struct hrx_fault_queue_s {
  hrx_native_queue_t* inner;        /* owned by the wrapped backend */
  hrx_backend_device_t* device;     /* borrowed: the wrapped device */
} hrx_fault_queue_t;

static atomic_llong hrx_fault_live_queues;
static atomic_llong hrx_fault_live_events;
static atomic_llong hrx_fault_live_allocations;
static atomic_llong hrx_fault_live_host_allocations;
static atomic_llong hrx_fault_live_graphs;
static atomic_llong hrx_fault_live_devices;
static atomic_llong hrx_fault_injected;
static atomic_llong hrx_fault_native_commands;
static atomic_llong hrx_fault_live_modules;
static atomic_llong hrx_fault_kernel_compiles;

void hrx_fault_query_counts(hrx_fault_counts_t* out_counts) {
  out_counts->queues = atomic_load(&hrx_fault_live_queues);
  out_counts->events = atomic_load(&hrx_fault_live_events);
  out_counts->allocations = atomic_load(&hrx_fault_live_allocations);
  out_counts->host_allocations = atomic_load(&hrx_fault_live_host_allocations);
  out_counts->graphs = atomic_load(&hrx_fault_live_graphs);
  out_counts->devices = atomic_load(&hrx_fault_live_devices);
  out_counts->faults_injected = atomic_load(&hrx_fault_injected);
  out_counts->native_commands = atomic_load(&hrx_fault_native_commands);
  out_counts->modules = atomic_load(&hrx_fault_live_modules);
  out_counts->kernel_compiles = atomic_load(&hrx_fault_kernel_compiles);
}

static hrx_fault_device_t* hrx_fault_cast(hrx_backend_device_t* device) {
  return (hrx_fault_device_t*)device;
}

static hrx_fault_queue_t* hrx_fault_queue_of(hrx_native_queue_t* queue) {
  return (hrx_fault_queue_t*)queue;
}

#define HRX_INNER(base) (hrx_fault_cast(base)->inner)
#define HRX_INNER_VT(base) (HRX_INNER(base)->vtable)
#define HRX_INNER_QUEUE(queue) (hrx_fault_queue_of(queue)->inner)

/* ------------------------------------------------------------------ rules */

static hrx_status_t hrx_fault_parse_rule(const char* text, size_t length,
                                         hrx_fault_device_t* device) {
  char rule[96];
  if (length == 0 || length >= sizeof(rule)) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "HRX_FAULTS rule '%.*s' is %s; " HRX_FAULT_GRAMMAR,
                           (int)(length > 40 ? 40 : length), text,
                           length ? "too long" : "empty");
  }
  memcpy(rule, text, length);
  rule[length] = '\0';
  if (strcmp(rule, "none") == 0) return NULL;
  if (strcmp(rule, "no_kernels") == 0) {
    device->no_kernels = true;
    return NULL;
  }
  char* colon = strchr(rule, ':');
  if (!colon || colon[1] == '\0') {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "HRX_FAULTS rule '%s' has no ':VALUE'; "
                           HRX_FAULT_GRAMMAR, rule);
  }
  *colon = '\0';
  const char* value = colon + 1;
  char* end = NULL;
  if (strcmp(rule, "seed") == 0) {
    errno = 0;
    unsigned long long seed = strtoull(value, &end, 10);
    if (errno || *end || value[0] == '-') {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "HRX_FAULTS seed '%s' is not a non-negative "
                             "integer; " HRX_FAULT_GRAMMAR, value);
    }
    /* xorshift64 needs a non-zero state. */
    device->rng = seed * 0x9E3779B97F4A7C15ull + 1;
    if (!device->rng) device->rng = 1;
    return NULL;
  }
  int op = -1;
  for (int i = 0; i < HRX_FAULT_OP_COUNT; ++i) {
    if (strcmp(rule, hrx_fault_op_names[i]) == 0) op = i;
  }
  if (op < 0) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "HRX_FAULTS names unknown call '%s'; "
                           HRX_FAULT_GRAMMAR, rule);
  }
  if (device->rule_count == HRX_FAULT_MAX_RULES) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "HRX_FAULTS has more than %d rules",
                           HRX_FAULT_MAX_RULES);
  }
  hrx_fault_rule_t parsed = {.op = (hrx_fault_op_t)op};
  size_t n = strlen(value);
  errno = 0;
  if (value[n - 1] == '%') {
    double percent = strtod(value, &end);
    if (errno || end != value + n - 1 || !(percent > 0.0) || percent > 100.0) {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "HRX_FAULTS probability '%s' for %s must be a "
                             "percentage in (0, 100]; " HRX_FAULT_GRAMMAR,
                             value, rule);
    }
    parsed.kind = HRX_FAULT_PERCENT;
    parsed.percent = percent;
  } else {
    bool from = value[n - 1] == '+';
    unsigned long long k = strtoull(value, &end, 10);
    if (errno || end != value + n - (from ? 1 : 0) || value[0] == '-' ||
        k == 0) {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "HRX_FAULTS call number '%s' for %s must be a "
                             "positive integer (calls count from 1); "
                             HRX_FAULT_GRAMMAR, value, rule);
    }
    parsed.kind = from ? HRX_FAULT_FROM : HRX_FAULT_NTH;
    parsed.k = k;
  }
  device->rules[device->rule_count++] = parsed;
  return NULL;
}

static hrx_status_t hrx_fault_parse(const char* spec,
                                    hrx_fault_device_t* device) {
  device->rng = 0x9E3779B97F4A7C16ull;
  const char* p = spec;
  for (;;) {
    const char* comma = strchr(p, ',');
    size_t length = comma ? (size_t)(comma - p) : strlen(p);
    HRX_RETURN_IF_ERROR(hrx_fault_parse_rule(p, length, device));
    if (!comma) break;
    p = comma + 1;
  }
  return NULL;
}

static double hrx_fault_random_percent(hrx_fault_device_t* device) {
  pthread_mutex_lock(&device->rng_mutex);
  uint64_t x = device->rng;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  device->rng = x;
  pthread_mutex_unlock(&device->rng_mutex);
  return (double)(x >> 11) * (100.0 / 9007199254740992.0);
}

/* Counts a call of `op`; returns the injected failure if a rule hits it. */
static hrx_status_t hrx_fault_check(hrx_backend_device_t* base,
                                    hrx_fault_op_t op) {
  hrx_fault_device_t* device = hrx_fault_cast(base);
  uint64_t call = atomic_fetch_add(&device->calls[op], 1) + 1;
  bool hit = false;
  for (int i = 0; i < device->rule_count && !hit; ++i) {
    const hrx_fault_rule_t* rule = &device->rules[i];
    if (rule->op != op) continue;
    switch (rule->kind) {
      case HRX_FAULT_NTH:
        hit = call == rule->k;
        break;
      case HRX_FAULT_FROM:
        hit = call >= rule->k;
        break;
      case HRX_FAULT_PERCENT:
        hit = hrx_fault_random_percent(device) < rule->percent;
        break;
    }
  }
  if (!hit) return NULL;
  atomic_fetch_add(&hrx_fault_injected, 1);
  hrx_status_code_t code = HRX_STATUS_DEVICE_ERROR;
  if (op == HRX_FAULT_ALLOC || op == HRX_FAULT_HOST_ALLOC) {
    code = HRX_STATUS_OUT_OF_MEMORY;
  } else if (op == HRX_FAULT_QUEUE_CREATE) {
    code = HRX_STATUS_RESOURCE_EXHAUSTED;
  }
  return hrx_make_status(code, "injected fault: %s call #%llu failed (HRX_FAULTS)",
                         hrx_fault_op_names[op], (unsigned long long)call);
}

/* The end of a checked call: an answer of WOULD_BLOCK from the inner
 * backend (the caller's non-blocking mode) means the call did nothing, so
 * it is taken back from the schedule's count, and a native command
 * (`command`) is counted only when it was made. Returns `status`. */
static hrx_status_t hrx_fault_finish(hrx_backend_device_t* base,
                                     hrx_fault_op_t op, bool command,
                                     hrx_status_t status) {
  if (hrx_status_code(status) == HRX_STATUS_WOULD_BLOCK) {
    atomic_fetch_sub(&hrx_fault_cast(base)->calls[op], 1);
  } else if (command) {
    atomic_fetch_add(&hrx_fault_native_commands, 1);
  }
  return status;
}

/* ---------------------------------------------------------------- device */

static void hrx_fault_destroy(hrx_backend_device_t* base) {
  hrx_fault_device_t* device = hrx_fault_cast(base);
  device->inner->vtable->destroy(device->inner);
  pthread_mutex_destroy(&device->rng_mutex);
  free(device);
  atomic_fetch_sub(&hrx_fault_live_devices, 1);
}

static hrx_status_t hrx_fault_query_info(hrx_backend_device_t* base,
                                         hrx_device_info_t* out_info) {
  return HRX_INNER_VT(base)->query_info(HRX_INNER(base), out_info);
}

static hrx_status_t hrx_fault_query_free_memory(hrx_backend_device_t* base,
                                                uint64_t* out_free_bytes) {
  return HRX_INNER_VT(base)->query_free_memory(HRX_INNER(base), out_free_bytes);
}

/* ---------------------------------------------------------------- queues */

static hrx_status_t hrx_fault_queue_create(hrx_backend_device_t* base,
                                           int priority, uint32_t flags,
                                           hrx_native_queue_t** out_queue,
                                           int* out_native_priority) {
  HRX_RETURN_IF_ERROR(hrx_fault_check(base, HRX_FAULT_QUEUE_CREATE));
  hrx_fault_queue_t* queue = calloc(1, sizeof(*queue));
  if (!queue) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a fault-wrapper queue");
  }
  hrx_status_t status = HRX_INNER_VT(base)->queue.create(
      HRX_INNER(base), priority, flags, &queue->inner, out_native_priority);
  if (status) {
    free(queue);
    return status;
  }
  queue->device = HRX_INNER(base);
  atomic_fetch_add(&hrx_fault_live_queues, 1);
  *out_queue = (hrx_native_queue_t*)queue;
  return NULL;
}

/* Queue queries and the connection budget pass through (no faults). */
static hrx_status_t hrx_fault_queue_query(hrx_backend_device_t* base,
                                          hrx_native_queue_t* queue,
                                          uint64_t* out_pending) {
  return HRX_INNER_VT(base)->queue.query(HRX_INNER(base),
                                         HRX_INNER_QUEUE(queue), out_pending);
}

static void hrx_fault_plan_connections(hrx_backend_device_t* base,
                                       int wanted) {
  HRX_INNER_VT(base)->plan_connections(HRX_INNER(base), wanted);
}

static void hrx_fault_query_connections(hrx_backend_device_t* base,
                                        hrx_connection_budget_t* out_budget) {
  HRX_INNER_VT(base)->query_connections(HRX_INNER(base), out_budget);
}

static void hrx_fault_queue_destroy(hrx_backend_device_t* base,
                                    hrx_native_queue_t* queue) {
  HRX_INNER_VT(base)->queue.destroy(HRX_INNER(base), HRX_INNER_QUEUE(queue));
  free(queue);
  atomic_fetch_sub(&hrx_fault_live_queues, 1);
}

static void* hrx_fault_queue_native_handle(hrx_native_queue_t* queue) {
  hrx_fault_queue_t* wrapped = hrx_fault_queue_of(queue);
  return wrapped->device->vtable->queue.native_handle(wrapped->inner);
}

/* ---------------------------------------------------------------- memory */

static hrx_status_t hrx_fault_alloc(hrx_backend_device_t* base, uint64_t size,
                                    void** out_ptr) {
  HRX_RETURN_IF_ERROR(hrx_fault_check(base, HRX_FAULT_ALLOC));
  HRX_RETURN_IF_ERROR(HRX_INNER_VT(base)->memory.alloc(HRX_INNER(base), size, out_ptr));
  atomic_fetch_add(&hrx_fault_live_allocations, 1);
  return NULL;
}

static void hrx_fault_free(hrx_backend_device_t* base, void* ptr) {
  if (!ptr) return;
  HRX_INNER_VT(base)->memory.free(HRX_INNER(base), ptr);
  atomic_fetch_sub(&hrx_fault_live_allocations, 1);
}

static hrx_status_t hrx_fault_host_alloc(hrx_backend_device_t* base,
                                         uint64_t size, void** out_ptr) {
  HRX_RETURN_IF_ERROR(hrx_fault_check(base, HRX_FAULT_HOST_ALLOC));
  HRX_RETURN_IF_ERROR(
      HRX_INNER_VT(base)->memory.host_alloc(HRX_INNER(base), size, out_ptr));
  atomic_fetch_add(&hrx_fault_live_host_allocations, 1);
  return NULL;
}

static void hrx_fault_host_free(hrx_backend_device_t* base, void* ptr) {
  if (!ptr) return;
  HRX_INNER_VT(base)->memory.host_free(HRX_INNER(base), ptr);
  atomic_fetch_sub(&hrx_fault_live_host_allocations, 1);
}

/* Registration passes through (no fault point of its own); a driver
 * without one only has its ranges tracked by the core, which is what
 * success here gives. */
static hrx_status_t hrx_fault_host_register(hrx_backend_device_t* base,
                                            void* ptr, uint64_t size,
                                            bool* out_registered) {
  const hrx_hal_memory_vtable_t* memory = &HRX_INNER_VT(base)->memory;
  if (!memory->host_register) {
    *out_registered = false;
    return NULL;
  }
  return memory->host_register(HRX_INNER(base), ptr, size, out_registered);
}

static void hrx_fault_host_unregister(hrx_backend_device_t* base, void* ptr) {
  const hrx_hal_memory_vtable_t* memory = &HRX_INNER_VT(base)->memory;
  if (memory->host_unregister) memory->host_unregister(HRX_INNER(base), ptr);
}

/* -------------------------------------------------------------- commands */

static hrx_status_t hrx_fault_copy(hrx_backend_device_t* base,
                                   hrx_native_queue_t* queue, void* dst,
                                   const void* src, uint64_t length) {
  HRX_RETURN_IF_ERROR(hrx_fault_check(base, HRX_FAULT_COPY));
  return hrx_fault_finish(
      base, HRX_FAULT_COPY, true,
      HRX_INNER_VT(base)->queue.copy(HRX_INNER(base), HRX_INNER_QUEUE(queue), dst,
                               src, length));
}

/* Device indices and the other device's memory pass through: the wrapped
 * backend knows its devices by index. */
static hrx_status_t hrx_fault_peer_path(hrx_backend_device_t* base, int other,
                                        hrx_peer_path_t* out_path) {
  return HRX_INNER_VT(base)->peer_path(HRX_INNER(base), other, out_path);
}

static hrx_status_t hrx_fault_peer_copy(hrx_backend_device_t* base,
                                        hrx_native_queue_t* queue, void* dst,
                                        int dst_index, const void* src,
                                        int src_index, uint64_t length,
                                        void* staging) {
  HRX_RETURN_IF_ERROR(hrx_fault_check(base, HRX_FAULT_PEER_COPY));
  return hrx_fault_finish(
      base, HRX_FAULT_PEER_COPY, true,
      HRX_INNER_VT(base)->queue.peer_copy(HRX_INNER(base), HRX_INNER_QUEUE(queue),
                                    dst, dst_index, src, src_index, length,
                                    staging));
}

static hrx_status_t hrx_fault_fill(hrx_backend_device_t* base,
                                   hrx_native_queue_t* queue, void* dst,
                                   uint8_t byte, uint64_t length) {
  HRX_RETURN_IF_ERROR(hrx_fault_check(base, HRX_FAULT_FILL));
  return hrx_fault_finish(
      base, HRX_FAULT_FILL, true,
      HRX_INNER_VT(base)->queue.fill(HRX_INNER(base), HRX_INNER_QUEUE(queue), dst,
                               byte, length));
}

static hrx_status_t hrx_fault_upload(hrx_backend_device_t* base,
                                     hrx_native_queue_t* queue, void* dst,
                                     const void* host_src, uint64_t length) {
  HRX_RETURN_IF_ERROR(hrx_fault_check(base, HRX_FAULT_UPLOAD));
  return hrx_fault_finish(
      base, HRX_FAULT_UPLOAD, false,
      HRX_INNER_VT(base)->queue.upload(HRX_INNER(base), HRX_INNER_QUEUE(queue), dst,
                                 host_src, length));
}

/* Counted and failed as an upload (the kind it replaces). */
static hrx_status_t hrx_fault_upload_pinned(hrx_backend_device_t* base,
                                            hrx_native_queue_t* queue,
                                            void* dst, const void* host_src,
                                            uint64_t length) {
  HRX_RETURN_IF_ERROR(hrx_fault_check(base, HRX_FAULT_UPLOAD));
  const hrx_backend_vtable_t* inner = HRX_INNER_VT(base);
  hrx_status_t status =
      inner->queue.upload_pinned
          ? inner->queue.upload_pinned(HRX_INNER(base), HRX_INNER_QUEUE(queue),
                                       dst, host_src, length)
          : inner->queue.upload(HRX_INNER(base), HRX_INNER_QUEUE(queue), dst,
                                host_src, length);
  return hrx_fault_finish(base, HRX_FAULT_UPLOAD, false, status);
}

static hrx_status_t hrx_fault_download(hrx_backend_device_t* base,
                                       hrx_native_queue_t* queue,
                                       void* host_dst, const void* src,
                                       uint64_t length) {
  HRX_RETURN_IF_ERROR(hrx_fault_check(base, HRX_FAULT_DOWNLOAD));
  return HRX_INNER_VT(base)->queue.download(HRX_INNER(base), HRX_INNER_QUEUE(queue),
                                      host_dst, src, length);
}

/* ---------------------------------------------------------------- events */

static hrx_status_t hrx_fault_event_create(hrx_backend_device_t* base,
                                           hrx_native_event_t** out_event) {
  HRX_RETURN_IF_ERROR(hrx_fault_check(base, HRX_FAULT_EVENT_CREATE));
  HRX_RETURN_IF_ERROR(
      HRX_INNER_VT(base)->event.create(HRX_INNER(base), out_event));
  atomic_fetch_add(&hrx_fault_live_events, 1);
  return NULL;
}

static hrx_status_t hrx_fault_event_create_timing(
    hrx_backend_device_t* base, hrx_native_event_t** out_event) {
  HRX_RETURN_IF_ERROR(hrx_fault_check(base, HRX_FAULT_EVENT_CREATE));
  HRX_RETURN_IF_ERROR(
      HRX_INNER_VT(base)->event.create_timing(HRX_INNER(base), out_event));
  atomic_fetch_add(&hrx_fault_live_events, 1);
  return NULL;
}

static hrx_status_t hrx_fault_event_elapsed_ms(hrx_backend_device_t* base,
                                               hrx_native_event_t* start,
                                               hrx_native_event_t* end,
                                               double* out_ms) {
  return HRX_INNER_VT(base)->event.elapsed_ms(HRX_INNER(base), start, end,
                                              out_ms);
}

static hrx_status_t hrx_fault_foreign_stream_wait_event(
    hrx_backend_device_t* base, void* foreign_stream,
    hrx_native_event_t* event) {
  HRX_RETURN_IF_ERROR(hrx_fault_check(base, HRX_FAULT_WAIT_EVENT));
  return HRX_INNER_VT(base)->queue.foreign_stream_wait_event(HRX_INNER(base),
                                                       foreign_stream, event);
}

static void hrx_fault_event_destroy(hrx_backend_device_t* base,
                                    hrx_native_event_t* event) {
  HRX_INNER_VT(base)->event.destroy(HRX_INNER(base), event);
  atomic_fetch_sub(&hrx_fault_live_events, 1);
}

static hrx_status_t hrx_fault_event_record(hrx_backend_device_t* base,
                                           hrx_native_queue_t* queue,
                                           hrx_native_event_t* event) {
  HRX_RETURN_IF_ERROR(hrx_fault_check(base, HRX_FAULT_EVENT_RECORD));
  return hrx_fault_finish(
      base, HRX_FAULT_EVENT_RECORD, false,
      HRX_INNER_VT(base)->event.record(HRX_INNER(base),
                                       HRX_INNER_QUEUE(queue), event));
}

static hrx_status_t hrx_fault_queue_wait_event(hrx_backend_device_t* base,
                                               hrx_native_queue_t* queue,
                                               hrx_native_event_t* event) {
  HRX_RETURN_IF_ERROR(hrx_fault_check(base, HRX_FAULT_WAIT_EVENT));
  return hrx_fault_finish(
      base, HRX_FAULT_WAIT_EVENT, false,
      HRX_INNER_VT(base)->queue.wait_event(HRX_INNER(base),
                                           HRX_INNER_QUEUE(queue), event));
}

static hrx_status_t hrx_fault_event_query(hrx_backend_device_t* base,
                                          hrx_native_event_t* event,
                                          bool* out_done) {
  return HRX_INNER_VT(base)->event.query(HRX_INNER(base), event, out_done);
}

/* The call a batch command counts as. */
static hrx_fault_op_t hrx_fault_batch_op(const hrx_batch_command_t* command) {
  switch (command->kind) {
    case HRX_BATCH_FILL: return HRX_FAULT_FILL;
    case HRX_BATCH_LAUNCH: return HRX_FAULT_LAUNCH;
    default: return HRX_FAULT_COPY;
  }
}

/* One command through the inner backend's own call. */
static hrx_status_t hrx_fault_inner_one(hrx_backend_device_t* inner,
                                        hrx_native_queue_t* native,
                                        const hrx_batch_command_t* c) {
  const hrx_backend_vtable_t* vt = inner->vtable;
  switch (c->kind) {
    case HRX_BATCH_FILL:
      return vt->queue.fill(inner, native, c->dst, c->byte, c->length);
    case HRX_BATCH_LAUNCH:
      return vt->kernel.launch(inner, native, c->kernel, c->launch);
    default:
      return vt->queue.copy(inner, native, c->dst, c->src, c->length);
  }
}

/* A batch (copies and fills for batch_submit, launches for launch_batch)
 * counts one call per command. A fault at command i publishes the
 * commands before it (as the inner backend would when it fails part-way)
 * and fails the rest. */
static hrx_status_t hrx_fault_batch(hrx_backend_device_t* base,
                                    hrx_native_queue_t* queue,
                                    const hrx_batch_command_t* commands,
                                    uint32_t count, uint32_t* out_published,
                                    bool launches) {
  *out_published = 0;
  hrx_backend_device_t* inner = HRX_INNER(base);
  hrx_native_queue_t* native = HRX_INNER_QUEUE(queue);
  hrx_status_t fault = NULL;
  uint32_t good = 0;
  while (good < count && !fault) {
    fault = hrx_fault_check(base, hrx_fault_batch_op(&commands[good]));
    if (!fault) ++good;
  }
  hrx_status_t status = NULL;
  if (good >= 2) {
    status = launches ? inner->vtable->kernel.launch_batch(
                            inner, native, commands, good, out_published)
                      : inner->vtable->queue.batch_submit(
                            inner, native, commands, good, out_published);
  } else if (good == 1) {
    status = hrx_fault_inner_one(inner, native, &commands[0]);
    if (!status) *out_published = 1;
  }
  if (hrx_status_code(status) == HRX_STATUS_WOULD_BLOCK) {
    /* The commands from *out_published on were not made (non-blocking
     * mode): their calls, and the fault that stopped the batch, are taken
     * back, so the retry meets the same schedule. */
    hrx_fault_device_t* device = hrx_fault_cast(base);
    uint32_t checked = fault ? good + 1 : good;
    for (uint32_t i = *out_published; i < checked; ++i) {
      atomic_fetch_sub(&device->calls[hrx_fault_batch_op(&commands[i])], 1);
    }
    if (fault) atomic_fetch_sub(&hrx_fault_injected, 1);
    hrx_status_free(fault);
    if (*out_published) atomic_fetch_add(&hrx_fault_native_commands, 1);
    return status;
  }
  if (good) atomic_fetch_add(&hrx_fault_native_commands, 1);
  if (status) {
    hrx_status_free(fault);
    return status;
  }
  return fault;
}

static hrx_status_t hrx_fault_batch_submit(hrx_backend_device_t* base,
                                           hrx_native_queue_t* queue,
                                           const hrx_batch_command_t* commands,
                                           uint32_t count,
                                           uint32_t* out_published) {
  return hrx_fault_batch(base, queue, commands, count, out_published, false);
}

/* Host functions and native graphs pass through (no faults of their own);
 * graphs are counted. */
static hrx_status_t hrx_fault_queue_host_call(hrx_backend_device_t* base,
                                              hrx_native_queue_t* queue,
                                              hrx_queue_host_fn_t fn,
                                              void* user_data) {
  return HRX_INNER_VT(base)->queue.host_call(
      HRX_INNER(base), HRX_INNER_QUEUE(queue), fn, user_data);
}

static hrx_status_t hrx_fault_graph_create(hrx_backend_device_t* base,
                                           const hrx_native_graph_node_t* nodes,
                                           size_t count,
                                           hrx_native_graph_t** out_graph) {
  HRX_RETURN_IF_ERROR(HRX_INNER_VT(base)->graph.create(HRX_INNER(base), nodes,
                                                       count, out_graph));
  atomic_fetch_add(&hrx_fault_live_graphs, 1);
  return NULL;
}

static hrx_status_t hrx_fault_graph_launch(hrx_backend_device_t* base,
                                           hrx_native_queue_t* queue,
                                           hrx_native_graph_t* graph) {
  return HRX_INNER_VT(base)->graph.launch(HRX_INNER(base),
                                          HRX_INNER_QUEUE(queue), graph);
}

static void hrx_fault_graph_destroy(hrx_backend_device_t* base,
                                    hrx_native_graph_t* graph) {
  HRX_INNER_VT(base)->graph.destroy(HRX_INNER(base), graph);
  atomic_fetch_sub(&hrx_fault_live_graphs, 1);
}

/* Kernels: compiles are counted and modules counted live; launches are
 * commands (fault op "launch", DEVICE_ERROR like a refused launch). */
static hrx_status_t hrx_fault_kernel_toolchain(hrx_backend_device_t* base,
                                               hrx_kernel_compiler_t* out) {
  return HRX_INNER_VT(base)->kernel.toolchain(HRX_INNER(base), out);
}

static hrx_status_t hrx_fault_kernel_compile(
    hrx_backend_device_t* base, const char* source, const char* const* names,
    size_t name_count, const char* const* options, size_t option_count,
    void** out_image, size_t* out_size,
    hrx_kernel_param_record_t* out_params) {
  atomic_fetch_add(&hrx_fault_kernel_compiles, 1);
  return HRX_INNER_VT(base)->kernel.compile(HRX_INNER(base), source, names,
                                            name_count, options, option_count,
                                            out_image, out_size, out_params);
}

static hrx_status_t hrx_fault_module_load(hrx_backend_device_t* base,
                                          const void* image, size_t size,
                                          hrx_native_module_t** out_module) {
  HRX_RETURN_IF_ERROR(HRX_INNER_VT(base)->kernel.module_load(HRX_INNER(base), image,
                                                      size, out_module));
  atomic_fetch_add(&hrx_fault_live_modules, 1);
  return NULL;
}

static void hrx_fault_module_unload(hrx_backend_device_t* base,
                                    hrx_native_module_t* module) {
  HRX_INNER_VT(base)->kernel.module_unload(HRX_INNER(base), module);
  atomic_fetch_sub(&hrx_fault_live_modules, 1);
}

static hrx_status_t hrx_fault_module_get_kernel(
    hrx_backend_device_t* base, hrx_native_module_t* module, const char* name,
    hrx_native_kernel_t** out_kernel, hrx_kernel_attributes_t* out_info) {
  return HRX_INNER_VT(base)->kernel.module_get_kernel(HRX_INNER(base), module, name,
                                               out_kernel, out_info);
}

static hrx_status_t hrx_fault_kernel_launch(hrx_backend_device_t* base,
                                            hrx_native_queue_t* queue,
                                            hrx_native_kernel_t* kernel,
                                            const hrx_kernel_launch_t* launch) {
  HRX_RETURN_IF_ERROR(hrx_fault_check(base, HRX_FAULT_LAUNCH));
  return hrx_fault_finish(
      base, HRX_FAULT_LAUNCH, true,
      HRX_INNER_VT(base)->kernel.launch(HRX_INNER(base),
                                        HRX_INNER_QUEUE(queue), kernel,
                                        launch));
}

static hrx_status_t hrx_fault_kernel_launch_batch(
    hrx_backend_device_t* base, hrx_native_queue_t* queue,
    const hrx_batch_command_t* commands, uint32_t count,
    uint32_t* out_published) {
  return hrx_fault_batch(base, queue, commands, count, out_published, true);
}

static void hrx_fault_kernel_describe_image(
    hrx_backend_device_t* base, const void* image, size_t size,
    const char* const* names, size_t name_count,
    hrx_kernel_param_record_t* out_params) {
  HRX_INNER_VT(base)->kernel.describe_image(HRX_INNER(base), image, size,
                                            names, name_count, out_params);
}

static bool hrx_fault_kernel_launch_batch_by_default(
    hrx_backend_device_t* base) {
  hrx_backend_device_t* inner = HRX_INNER(base);
  return inner->vtable->kernel.launch_batch_by_default &&
         inner->vtable->kernel.launch_batch_by_default(inner);
}

/* Waits count as calls of synchronize / event_synchronize (each slice of
 * a sliced wait, and a whole wait once). */
static hrx_status_t hrx_fault_queue_wait(hrx_backend_device_t* base,
                                         hrx_native_queue_t* queue,
                                         uint64_t timeout_ns, bool* out_done) {
  HRX_RETURN_IF_ERROR(hrx_fault_check(base, HRX_FAULT_SYNCHRONIZE));
  return HRX_INNER_VT(base)->queue.wait(
      HRX_INNER(base), HRX_INNER_QUEUE(queue), timeout_ns, out_done);
}

static hrx_status_t hrx_fault_event_wait(hrx_backend_device_t* base,
                                         hrx_native_event_t* event,
                                         uint64_t timeout_ns, bool* out_done) {
  HRX_RETURN_IF_ERROR(hrx_fault_check(base, HRX_FAULT_EVENT_SYNCHRONIZE));
  return HRX_INNER_VT(base)->event.wait(HRX_INNER(base), event, timeout_ns,
                                        out_done);
}

static const hrx_backend_vtable_t hrx_fault_vtable = {
    .destroy = hrx_fault_destroy,
    .query_info = hrx_fault_query_info,
    .query_free_memory = hrx_fault_query_free_memory,
    .plan_connections = hrx_fault_plan_connections,
    .query_connections = hrx_fault_query_connections,
    .peer_path = hrx_fault_peer_path,
    .queue = {
        .create = hrx_fault_queue_create,
        .destroy = hrx_fault_queue_destroy,
        .query = hrx_fault_queue_query,
        .native_handle = hrx_fault_queue_native_handle,
        .copy = hrx_fault_copy,
        .fill = hrx_fault_fill,
        .upload = hrx_fault_upload,
        .upload_pinned = hrx_fault_upload_pinned,
        .download = hrx_fault_download,
        .wait_event = hrx_fault_queue_wait_event,
        .batch_submit = hrx_fault_batch_submit,
        .host_call = hrx_fault_queue_host_call,
        .wait = hrx_fault_queue_wait,
        .foreign_stream_wait_event = hrx_fault_foreign_stream_wait_event,
        .peer_copy = hrx_fault_peer_copy,
    },
    .memory = {
        .alloc = hrx_fault_alloc,
        .free = hrx_fault_free,
        .host_alloc = hrx_fault_host_alloc,
        .host_free = hrx_fault_host_free,
        .host_register = hrx_fault_host_register,
        .host_unregister = hrx_fault_host_unregister,
    },
    .event = {
        .create = hrx_fault_event_create,
        .destroy = hrx_fault_event_destroy,
        .record = hrx_fault_event_record,
        .query = hrx_fault_event_query,
        .wait = hrx_fault_event_wait,
        .create_timing = hrx_fault_event_create_timing,
        .elapsed_ms = hrx_fault_event_elapsed_ms,
    },
    .graph = {
        .create = hrx_fault_graph_create,
        .launch = hrx_fault_graph_launch,
        .destroy = hrx_fault_graph_destroy,
    },
    .kernel = {
        .toolchain = hrx_fault_kernel_toolchain,
        .compile = hrx_fault_kernel_compile,
        .module_load = hrx_fault_module_load,
        .module_unload = hrx_fault_module_unload,
        .module_get_kernel = hrx_fault_module_get_kernel,
        .launch = hrx_fault_kernel_launch,
        .launch_batch = hrx_fault_kernel_launch_batch,
        .launch_batch_by_default = hrx_fault_kernel_launch_batch_by_default,
        .describe_image = hrx_fault_kernel_describe_image,
    },
};

hrx_status_t hrx_fault_wrap(const char* spec, hrx_backend_device_t* inner,
                            hrx_backend_device_t** out_device) {
  hrx_fault_device_t* device = calloc(1, sizeof(*device));
  if (!device) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a fault wrapper");
  }
  hrx_status_t status = hrx_fault_parse(spec, device);
  if (status) {
    free(device);
    return status;
  }
  /* Optional entries stay absent where the wrapped backend lacks them, so
   * the core takes the same paths as without the wrapper. */
  device->vtable = hrx_fault_vtable;
  if (!inner->vtable->queue.batch_submit) device->vtable.queue.batch_submit = NULL;
  if (!inner->vtable->queue.foreign_stream_wait_event) {
    device->vtable.queue.foreign_stream_wait_event = NULL;
  }
  if (!inner->vtable->event.create_timing) {
    device->vtable.event.create_timing = NULL;
    device->vtable.event.elapsed_ms = NULL;
  }
  if (!inner->vtable->plan_connections) device->vtable.plan_connections = NULL;
  if (!inner->vtable->query_connections) {
    device->vtable.query_connections = NULL;
  }
  if (!inner->vtable->queue.peer_copy) {
    device->vtable.peer_path = NULL;
    device->vtable.queue.peer_copy = NULL;
  }
  if (!inner->vtable->kernel.launch || device->no_kernels) {
    device->vtable.kernel.toolchain = NULL;
    device->vtable.kernel.compile = NULL;
    device->vtable.kernel.module_load = NULL;
    device->vtable.kernel.module_unload = NULL;
    device->vtable.kernel.module_get_kernel = NULL;
    device->vtable.kernel.launch = NULL;
  }
  if (!device->vtable.kernel.launch || !inner->vtable->kernel.describe_image) {
    device->vtable.kernel.describe_image = NULL;
  }
  if (!device->vtable.kernel.launch || !inner->vtable->kernel.launch_batch) {
    device->vtable.kernel.launch_batch = NULL;
    device->vtable.kernel.launch_batch_by_default = NULL;
  }
  if (!inner->vtable->graph.create) {
    device->vtable.graph.create = NULL;
    device->vtable.graph.launch = NULL;
    device->vtable.graph.destroy = NULL;
  }
  device->base.vtable = &device->vtable;
  device->inner = inner;
  pthread_mutex_init(&device->rng_mutex, NULL);
  for (int i = 0; i < HRX_FAULT_OP_COUNT; ++i) atomic_init(&device->calls[i], 0);
  atomic_fetch_add(&hrx_fault_live_devices, 1);
  *out_device = &device->base;
  return NULL;
}

hrx_status_t hrx_fault_wrap_from_env(hrx_backend_device_t** inout_device) {
  const char* spec = getenv("HRX_FAULTS");
  if (!spec || !*spec) return NULL;
  return hrx_fault_wrap(spec, *inout_device, inout_device);
}
