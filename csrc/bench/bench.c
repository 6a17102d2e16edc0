#include "bench.h"
#include "bench_contention.h"
#include "bench_run.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hal/device.h"
#include "base/status.h"

/* ------------------------------------------------------------ native ops */

static hrx_status_t hrx_bench_native_open_stream(hrx_bench_t* bench,
                                                 int index,
                                                 hrx_bench_lane_t* lane) {
  hrx_stream_t* stream = NULL;
  HRX_RETURN_IF_ERROR(hrx_stream_create(bench->device, &stream));
  if (lane) {
    lane->stream = stream;
  } else {
    bench->retained[index] = stream;
  }
  return NULL;
}

static hrx_status_t hrx_bench_native_copy(hrx_bench_t* bench,
                                          hrx_bench_lane_t* lane) {
  (void)bench;
  return hrx_stream_copy(lane->stream, lane->dst_view, lane->src_view);
}

static hrx_status_t hrx_bench_native_sync(hrx_bench_t* bench,
                                          hrx_bench_lane_t* lane) {
  (void)bench;
  return hrx_stream_synchronize(lane->stream, NULL, NULL);
}

static hrx_status_t hrx_bench_native_fill(hrx_bench_t* bench,
                                          hrx_bench_lane_t* lane,
                                          hrx_buffer_t* buffer, uint8_t byte) {
  (void)bench;
  hrx_view_t view;
  HRX_RETURN_IF_ERROR(
      hrx_view_make(buffer, 0, hrx_buffer_size(buffer), &view));
  return hrx_stream_fill(lane->stream, view, byte);
}

static hrx_status_t hrx_bench_native_upload(hrx_bench_t* bench,
                                            hrx_bench_lane_t* lane,
                                            hrx_buffer_t* buffer,
                                            const void* data,
                                            uint64_t length) {
  (void)bench;
  hrx_view_t view;
  HRX_RETURN_IF_ERROR(hrx_view_make(buffer, 0, length, &view));
  return hrx_stream_upload(lane->stream, view, data, length);
}

static hrx_status_t hrx_bench_native_read(hrx_bench_t* bench,
                                          hrx_bench_lane_t* lane,
                                          hrx_buffer_t* buffer, void* out,
                                          uint64_t length) {
  (void)bench;
  hrx_view_t view;
  HRX_RETURN_IF_ERROR(hrx_view_make(buffer, 0, length, &view));
  return hrx_stream_read_blocking(lane->stream, view, out, length, NULL, NULL);
}

static const hrx_bench_ops_t hrx_bench_native_ops = {
    .open_stream = hrx_bench_native_open_stream,
    .copy = hrx_bench_native_copy,
    .sync = hrx_bench_native_sync,
    .fill = hrx_bench_native_fill,
    .upload = hrx_bench_native_upload,
    .read = hrx_bench_native_read,
};

/* --------------------------------------------------------------- raw ops */

/* Logical stream k uses slot k mod queue_count, whose native queue is made on
 * first need: the pool's mapping and laziness, without the pool. */
static hrx_status_t hrx_bench_raw_open_stream(hrx_bench_t* bench, int index,
                                              hrx_bench_lane_t* lane) {
  int slot = index % bench->queue_count;
  if (!bench->queues[slot]) {
    hrx_native_queue_t* queue = NULL;
    int native_priority = 0;
    HRX_RETURN_IF_ERROR(bench->vtable->queue.create(
        bench->backend, HRX_STREAM_PRIORITY_NORMAL, 0, &queue,
        &native_priority));
    bench->queues[slot] = queue;
  }
  if (lane) lane->queue = bench->queues[slot];
  return NULL;
}

static hrx_status_t hrx_bench_raw_copy(hrx_bench_t* bench,
                                       hrx_bench_lane_t* lane) {
  return bench->vtable->queue.copy(bench->backend, lane->queue, lane->dst_ptr,
                             lane->src_ptr, lane->bytes);
}

static hrx_status_t hrx_bench_raw_sync(hrx_bench_t* bench,
                                       hrx_bench_lane_t* lane) {
  bool done = false;
  return bench->vtable->queue.wait(bench->backend, lane->queue,
                                   HRX_WAIT_FOREVER, &done);
}

static hrx_status_t hrx_bench_raw_fill(hrx_bench_t* bench,
                                       hrx_bench_lane_t* lane,
                                       hrx_buffer_t* buffer, uint8_t byte) {
  return bench->vtable->queue.fill(bench->backend, lane->queue,
                             hrx_buffer_native_pointer(buffer), byte,
                             hrx_buffer_size(buffer));
}

static hrx_status_t hrx_bench_raw_upload(hrx_bench_t* bench,
                                         hrx_bench_lane_t* lane,
                                         hrx_buffer_t* buffer,
                                         const void* data, uint64_t length) {
  return bench->vtable->queue.upload(bench->backend, lane->queue,
                               hrx_buffer_native_pointer(buffer), data, length);
}

/* Not thread-safe: shares bench->staging. Only used by the output check. */
static hrx_status_t hrx_bench_raw_read(hrx_bench_t* bench,
                                       hrx_bench_lane_t* lane,
                                       hrx_buffer_t* buffer, void* out,
                                       uint64_t length) {
  HRX_RETURN_IF_ERROR(bench->vtable->queue.download(
      bench->backend, lane->queue, bench->staging,
      hrx_buffer_native_pointer(buffer), length));
  HRX_RETURN_IF_ERROR(hrx_bench_raw_sync(bench, lane));
  memcpy(out, bench->staging, (size_t)length);
  return NULL;
}

static const hrx_bench_ops_t hrx_bench_raw_ops = {
    .open_stream = hrx_bench_raw_open_stream,
    .copy = hrx_bench_raw_copy,
    .sync = hrx_bench_raw_sync,
    .fill = hrx_bench_raw_fill,
    .upload = hrx_bench_raw_upload,
    .read = hrx_bench_raw_read,
};

/* ---------------------------------------------------------------- config */

void hrx_bench_config_default(hrx_bench_config_t* out_config) {
  out_config->driver = HRX_BENCH_DRIVER_NATIVE;
  out_config->lanes = 16;
  out_config->retained_streams = 16;
  out_config->small_bytes = 4096;
  out_config->small_copies = 1024;
  out_config->bulk_bytes = 32ull << 20;
  out_config->bulk_copies = 16;
  out_config->loaded_copies = 4;
  out_config->warmup = 3;
  out_config->samples = 15;
  out_config->loaded_probes = true;
  out_config->contention = true;
  out_config->kernel_spin_ns = 20000;
  out_config->kernel_launches = 512;
  out_config->backlog_blocks = 16384;
  out_config->backlog_kernels = 4;
  out_config->transfer_bytes = 8ull << 20;
  out_config->transfer_copies = 1;
  out_config->compute_samples = 16;
  out_config->transfer_samples = 8;
}

const char* hrx_bench_contention_kind_name(int kind) {
  if (kind == 0) return "round_robin";
  return kind > 0 ? hrx_bench_probe_name(kind - 1) : NULL;
}

const char* hrx_bench_contention_op_name(int op) {
  switch (op) {
    case HRX_BENCH_OP_COMPUTE_KERNEL: return "compute_kernel";
    case HRX_BENCH_OP_COMPUTE_COPY: return "compute_copy";
    case HRX_BENCH_OP_TRANSFER_READ: return "transfer_read";
    case HRX_BENCH_OP_TRANSFER_UPLOAD: return "transfer_upload";
    default: return NULL;
  }
}

const char* hrx_bench_probe_name(int probe) {
  switch (probe) {
    case HRX_BENCH_PROBE_HIGH: return "high";
    case HRX_BENCH_PROBE_RESERVED: return "reserved";
    case HRX_BENCH_PROBE_RESERVED_HIGH: return "reserved_high";
    default: return NULL;
  }
}

const char* hrx_bench_driver_name(hrx_bench_driver_t driver) {
  switch (driver) {
    case HRX_BENCH_DRIVER_NATIVE: return "native";
    case HRX_BENCH_DRIVER_RAW: return "raw";
  }
  return NULL;
}

bool hrx_bench_driver_parse(const char* name, hrx_bench_driver_t* out_driver) {
  if (!name) return false;
  if (strcmp(name, "native") == 0) {
    *out_driver = HRX_BENCH_DRIVER_NATIVE;
  } else if (strcmp(name, "raw") == 0) {
    *out_driver = HRX_BENCH_DRIVER_RAW;
  } else {
    return false;
  }
  return true;
}

static hrx_status_t hrx_bench_check_count(const char* name, int value,
                                          int max) {
  if (value < 1 || value > max) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "benchmark %s must be in [1, %d], got %d", name,
                           max, value);
  }
  return NULL;
}

static hrx_status_t hrx_bench_check_bytes(const char* name, uint64_t value) {
  if (value < 1 || value > HRX_BENCH_MAX_BYTES) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "benchmark %s must be in [1, %llu], got %llu", name,
                           (unsigned long long)HRX_BENCH_MAX_BYTES,
                           (unsigned long long)value);
  }
  return NULL;
}

static hrx_status_t hrx_bench_validate(const hrx_bench_config_t* c) {
  if (!hrx_bench_driver_name(c->driver)) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "benchmark driver %d is unknown (allowed: native, "
                           "raw)",
                           (int)c->driver);
  }
  HRX_RETURN_IF_ERROR(
      hrx_bench_check_count("lanes", c->lanes, HRX_BENCH_MAX_LANES));
  HRX_RETURN_IF_ERROR(hrx_bench_check_count(
      "retained_streams", c->retained_streams, HRX_BENCH_MAX_STREAMS));
  HRX_RETURN_IF_ERROR(hrx_bench_check_bytes("small_bytes", c->small_bytes));
  HRX_RETURN_IF_ERROR(hrx_bench_check_count("small_copies", c->small_copies,
                                            HRX_BENCH_MAX_COPIES));
  HRX_RETURN_IF_ERROR(hrx_bench_check_bytes("bulk_bytes", c->bulk_bytes));
  HRX_RETURN_IF_ERROR(hrx_bench_check_count("bulk_copies", c->bulk_copies,
                                            HRX_BENCH_MAX_COPIES));
  HRX_RETURN_IF_ERROR(hrx_bench_check_count("loaded_copies", c->loaded_copies,
                                            HRX_BENCH_MAX_COPIES));
  HRX_RETURN_IF_ERROR(
      hrx_bench_check_count("warmup", c->warmup, HRX_BENCH_MAX_ROUNDS));
  HRX_RETURN_IF_ERROR(
      hrx_bench_check_count("samples", c->samples, HRX_BENCH_MAX_ROUNDS));
  if (c->kernel_spin_ns < 1 || c->kernel_spin_ns > HRX_BENCH_MAX_SPIN_NS) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "benchmark kernel_spin_ns must be in [1, %llu], "
                           "got %llu",
                           (unsigned long long)HRX_BENCH_MAX_SPIN_NS,
                           (unsigned long long)c->kernel_spin_ns);
  }
  HRX_RETURN_IF_ERROR(hrx_bench_check_count(
      "kernel_launches", c->kernel_launches, HRX_BENCH_MAX_COPIES));
  HRX_RETURN_IF_ERROR(hrx_bench_check_count(
      "backlog_blocks", c->backlog_blocks, HRX_BENCH_MAX_BLOCKS));
  HRX_RETURN_IF_ERROR(hrx_bench_check_count(
      "backlog_kernels", c->backlog_kernels, HRX_BENCH_MAX_COPIES));
  HRX_RETURN_IF_ERROR(
      hrx_bench_check_bytes("transfer_bytes", c->transfer_bytes));
  HRX_RETURN_IF_ERROR(hrx_bench_check_count(
      "transfer_copies", c->transfer_copies, HRX_BENCH_MAX_COPIES));
  HRX_RETURN_IF_ERROR(hrx_bench_check_count(
      "compute_samples", c->compute_samples, HRX_BENCH_MAX_ROUNDS));
  HRX_RETURN_IF_ERROR(hrx_bench_check_count(
      "transfer_samples", c->transfer_samples, HRX_BENCH_MAX_ROUNDS));
  return NULL;
}

/* ---------------------------------------------------------------- result */

void hrx_bench_result_free(hrx_bench_result_t* result) {
  if (!result) return;
  free(result->small_round_ns);
  free(result->threaded_round_ns);
  free(result->bulk_round_ns);
  free(result->idle_sample_ns);
  free(result->loaded_sample_ns);
  for (int v = 0; v < HRX_BENCH_PROBE_COUNT; ++v) {
    free(result->loaded_probe_sample_ns[v]);
  }
  free(result->kernel_one_lane_round_ns);
  free(result->kernel_lanes_round_ns);
  for (int op = 0; op < HRX_BENCH_OP_COUNT; ++op) {
    for (int k = 0; k < HRX_BENCH_CONTENTION_KINDS; ++k) {
      free(result->contention_sample_ns[op][k]);
    }
  }
  free(result);
}

static hrx_status_t hrx_bench_result_allocate(const hrx_bench_config_t* c,
                                              hrx_bench_result_t** out) {
  hrx_bench_result_t* r = calloc(1, sizeof(*r));
  if (!r) goto oom;
  r->config = *c;
  r->rounds = c->samples;
  r->latency_samples = (size_t)c->samples * (size_t)c->lanes;
  r->small_round_ns = calloc((size_t)r->rounds, sizeof(uint64_t));
  r->threaded_round_ns = calloc((size_t)r->rounds, sizeof(uint64_t));
  r->bulk_round_ns = calloc((size_t)r->rounds, sizeof(uint64_t));
  r->idle_sample_ns = calloc(r->latency_samples, sizeof(uint64_t));
  r->loaded_sample_ns = calloc(r->latency_samples, sizeof(uint64_t));
  if (!r->small_round_ns || !r->threaded_round_ns || !r->bulk_round_ns ||
      !r->idle_sample_ns || !r->loaded_sample_ns) {
    goto oom;
  }
  if (c->loaded_probes && c->driver == HRX_BENCH_DRIVER_NATIVE) {
    for (int v = 0; v < HRX_BENCH_PROBE_COUNT; ++v) {
      r->loaded_probe_sample_ns[v] =
          calloc(r->latency_samples, sizeof(uint64_t));
      if (!r->loaded_probe_sample_ns[v]) goto oom;
    }
  }
  if (c->contention) {
    r->kernel_one_lane_round_ns = calloc((size_t)r->rounds, sizeof(uint64_t));
    r->kernel_lanes_round_ns = calloc((size_t)r->rounds, sizeof(uint64_t));
    if (!r->kernel_one_lane_round_ns || !r->kernel_lanes_round_ns) goto oom;
  }
  for (int op = 0; c->contention && op < HRX_BENCH_OP_COUNT; ++op) {
    bool compute = op == HRX_BENCH_OP_COMPUTE_KERNEL ||
                   op == HRX_BENCH_OP_COMPUTE_COPY;
    size_t n = (size_t)(compute ? c->compute_samples : c->transfer_samples);
    for (int k = 0; k < HRX_BENCH_CONTENTION_KINDS; ++k) {
      r->contention_sample_ns[op][k] = calloc(n, sizeof(uint64_t));
      if (!r->contention_sample_ns[op][k]) goto oom;
    }
  }
  r->small_copies_per_round = (uint64_t)c->lanes * (uint64_t)c->small_copies;
  r->bulk_copies_per_round = (uint64_t)c->lanes * (uint64_t)c->bulk_copies;
  r->bulk_bytes_per_round = r->bulk_copies_per_round * c->bulk_bytes;
  *out = r;
  return NULL;
oom:
  hrx_bench_result_free(r);
  return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                         "cannot allocate benchmark result arrays");
}

/* ----------------------------------------------------------------- setup */

/* Byte i of lane `id`'s source prefix. Consecutive bytes differ (odd step),
 * so any 64-byte prefix holds 64 distinct values. */
uint8_t hrx_bench_pattern(int id, uint64_t i) {
  return (uint8_t)(0x5Au + (unsigned)id * 29u + (unsigned)(i & 0xFFu) * 7u);
}

uint64_t hrx_bench_check_length(const hrx_bench_lane_t* lane) {
  return lane->bytes < HRX_BENCH_CHECK_BYTES ? lane->bytes
                                             : HRX_BENCH_CHECK_BYTES;
}

hrx_status_t hrx_bench_allocate_lane(hrx_bench_t* bench,
                                            hrx_bench_lane_t* lane) {
  HRX_RETURN_IF_ERROR(
      hrx_buffer_allocate(bench->device, lane->bytes, &lane->src));
  HRX_RETURN_IF_ERROR(
      hrx_buffer_allocate(bench->device, lane->bytes, &lane->dst));
  HRX_RETURN_IF_ERROR(
      hrx_view_make(lane->src, 0, lane->bytes, &lane->src_view));
  HRX_RETURN_IF_ERROR(
      hrx_view_make(lane->dst, 0, lane->bytes, &lane->dst_view));
  lane->src_ptr = hrx_buffer_native_pointer(lane->src);
  lane->dst_ptr = hrx_buffer_native_pointer(lane->dst);
  return NULL;
}

/* Source: whole buffer filled, then the checked prefix patterned.
 * Destination: filled with a byte that differs from the pattern's first byte,
 * so a missing copy fails the check. Both fills also touch every page before
 * any timing. */
hrx_status_t hrx_bench_initialize_lane(hrx_bench_t* bench,
                                              hrx_bench_lane_t* lane) {
  uint8_t prefix[HRX_BENCH_CHECK_BYTES];
  uint64_t length = hrx_bench_check_length(lane);
  for (uint64_t i = 0; i < length; ++i) {
    prefix[i] = hrx_bench_pattern(lane->id, i);
  }
  HRX_RETURN_IF_ERROR(bench->ops->fill(bench, lane, lane->src, prefix[0]));
  HRX_RETURN_IF_ERROR(
      bench->ops->upload(bench, lane, lane->src, prefix, length));
  HRX_RETURN_IF_ERROR(
      bench->ops->fill(bench, lane, lane->dst, (uint8_t)~prefix[0]));
  return NULL;
}

static hrx_status_t hrx_bench_prepare(hrx_bench_t* bench) {
  const hrx_bench_config_t* c = &bench->config;
  int lanes = c->lanes;
  int streams = c->retained_streams + 2 * lanes;
  bench->slot_count =
      bench->queue_count < streams ? bench->queue_count : streams;
  bench->small = calloc((size_t)lanes, sizeof(*bench->small));
  bench->bulk = calloc((size_t)lanes, sizeof(*bench->bulk));
  bench->scratch = calloc((size_t)lanes, sizeof(*bench->scratch));
  if (c->driver == HRX_BENCH_DRIVER_RAW) {
    bench->queues = calloc((size_t)bench->slot_count, sizeof(*bench->queues));
  } else {
    bench->retained =
        calloc((size_t)c->retained_streams, sizeof(*bench->retained));
  }
  if (!bench->small || !bench->bulk || !bench->scratch ||
      (!bench->queues && !bench->retained)) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate benchmark lanes");
  }
  for (int i = 0; i < lanes; ++i) {
    bench->small[i] = (hrx_bench_lane_t){
        .id = i, .kind = "small", .index = i, .bytes = c->small_bytes};
    bench->bulk[i] = (hrx_bench_lane_t){
        .id = lanes + i, .kind = "bulk", .index = i, .bytes = c->bulk_bytes};
  }
  if (c->driver == HRX_BENCH_DRIVER_RAW) {
    HRX_RETURN_IF_ERROR(bench->vtable->memory.host_alloc(
        bench->backend, HRX_BENCH_CHECK_BYTES, &bench->staging));
  }
  return NULL;
}

/* Timed: the retained streams, the process's first pool streams. Untimed:
 * the lanes' streams (round-robin continues), buffers and their contents. */
static hrx_status_t hrx_bench_setup(hrx_bench_t* bench) {
  const hrx_bench_config_t* c = &bench->config;
  const hrx_bench_ops_t* ops = bench->ops;
  int retained = c->retained_streams;
  int lanes = c->lanes;

  uint64_t start = hrx_now_ns();
  for (int k = 0; k < retained; ++k) {
    HRX_RETURN_IF_ERROR(ops->open_stream(bench, k, NULL));
  }
  bench->result->stream_creation_ns = hrx_now_ns() - start;

  for (int i = 0; i < lanes; ++i) {
    HRX_RETURN_IF_ERROR(ops->open_stream(bench, retained + i, &bench->small[i]));
  }
  for (int i = 0; i < lanes; ++i) {
    HRX_RETURN_IF_ERROR(
        ops->open_stream(bench, retained + lanes + i, &bench->bulk[i]));
  }
  if (c->driver == HRX_BENCH_DRIVER_RAW) {
    int created = 0;
    for (int s = 0; s < bench->slot_count; ++s) created += !!bench->queues[s];
    bench->result->queues_used = created;
  } else {
    /* The normal lane's queues: a previous run's probes may have left a
     * high-lane queue in the pool. */
    hrx_pool_stats_t stats;
    HRX_RETURN_IF_ERROR(
        hrx_device_query_pool_stats(bench->device, NULL, 0, &stats));
    hrx_pool_info_t pool;
    hrx_device_query_pool(bench->device, &pool);
    int normal = pool.queues_created;
    enum { capacity = HRX_STREAM_LANE_COUNT * HRX_MAX_STREAM_QUEUE_COUNT +
                      HRX_MAX_RESERVED_QUEUES };
    hrx_pool_queue_stats_t* queues = calloc(capacity, sizeof(*queues));
    if (!queues) {
      return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                             "cannot allocate pool stats");
    }
    hrx_status_t status =
        hrx_device_query_pool_stats(bench->device, queues, capacity, &stats);
    if (!status) {
      normal = 0;
      for (int q = 0; q < stats.queue_stats_count; ++q) {
        normal += queues[q].priority == HRX_STREAM_PRIORITY_NORMAL &&
                  !queues[q].reserved;
      }
    }
    free(queues);
    HRX_RETURN_IF_ERROR(status);
    bench->result->queues_used = normal;
  }

  for (int i = 0; i < lanes; ++i) {
    HRX_RETURN_IF_ERROR(hrx_bench_allocate_lane(bench, &bench->small[i]));
    HRX_RETURN_IF_ERROR(hrx_bench_allocate_lane(bench, &bench->bulk[i]));
  }
  for (int i = 0; i < lanes; ++i) {
    HRX_RETURN_IF_ERROR(hrx_bench_initialize_lane(bench, &bench->small[i]));
    HRX_RETURN_IF_ERROR(hrx_bench_initialize_lane(bench, &bench->bulk[i]));
  }
  for (int i = 0; i < lanes; ++i) {
    HRX_RETURN_IF_ERROR(ops->sync(bench, &bench->small[i]));
    HRX_RETURN_IF_ERROR(ops->sync(bench, &bench->bulk[i]));
  }
  return NULL;
}

/* Best effort: waits for submitted work, then releases everything but the
 * result. Safe on any partial state. */
static void hrx_bench_teardown(hrx_bench_t* bench) {
  int lanes = bench->config.lanes;
  hrx_bench_contention_teardown(bench);
  for (int v = 0; v < HRX_BENCH_PROBE_COUNT; ++v) {
    hrx_bench_lane_t* lane = &bench->probes[v];
    if (lane->owns_queue && lane->queue) {
      bench->vtable->queue.destroy(bench->backend, lane->queue);
      lane->queue = NULL;
    }
  }
  if (bench->queues) {
    /* queue_destroy waits for the queue's work, so no raw command still
     * touches the buffers released below. */
    for (int s = 0; s < bench->slot_count; ++s) {
      if (bench->queues[s]) {
        bench->vtable->queue.destroy(bench->backend, bench->queues[s]);
      }
    }
  }
  if (bench->staging) bench->vtable->memory.host_free(bench->backend, bench->staging);
  for (int pass = 0; pass < 2; ++pass) {
    hrx_bench_lane_t* set = pass == 0 ? bench->small : bench->bulk;
    if (!set) continue;
    for (int i = 0; i < lanes; ++i) {
      hrx_bench_lane_t* lane = &set[i];
      if (lane->stream) {
        hrx_status_free(hrx_stream_synchronize(lane->stream, NULL, NULL));
        hrx_stream_release(lane->stream);
      }
      hrx_buffer_release(lane->src);
      hrx_buffer_release(lane->dst);
    }
  }
  for (int v = 0; v < HRX_BENCH_PROBE_COUNT; ++v) {
    hrx_bench_lane_t* lane = &bench->probes[v];
    if (lane->stream) {
      hrx_status_free(hrx_stream_synchronize(lane->stream, NULL, NULL));
      hrx_stream_release(lane->stream);
    }
    hrx_buffer_release(lane->src);
    hrx_buffer_release(lane->dst);
  }
  if (bench->retained) {
    for (int k = 0; k < bench->config.retained_streams; ++k) {
      hrx_stream_release(bench->retained[k]);
    }
  }
  free(bench->queues);
  free(bench->retained);
  free(bench->small);
  free(bench->bulk);
  free(bench->scratch);
}

/* ----------------------------------------------------------------- cases */

/* One round of a case; writes its samples (1, or `lanes` for the latency
 * cases) to out. */
typedef hrx_status_t (*hrx_bench_round_fn_t)(hrx_bench_t* bench,
                                             uint64_t* out);

/* Runs warmup rounds into scratch, then samples rounds into out[round *
 * stride ...]. */
static hrx_status_t hrx_bench_run_case(hrx_bench_t* bench,
                                       hrx_bench_round_fn_t round,
                                       uint64_t* out, size_t stride) {
  const hrx_bench_config_t* c = &bench->config;
  for (int r = 0; r < c->warmup; ++r) {
    HRX_RETURN_IF_ERROR(round(bench, bench->scratch));
  }
  for (int r = 0; r < c->samples; ++r) {
    HRX_RETURN_IF_ERROR(round(bench, out + (size_t)r * stride));
  }
  return NULL;
}

/* `copies` copies per lane, round-robin (copy 0 on every lane, then copy 1,
 * ...), then every lane synchronized. */
static hrx_status_t hrx_bench_burst(hrx_bench_t* bench, hrx_bench_lane_t* set,
                                    int copies, uint64_t* out) {
  const hrx_bench_ops_t* ops = bench->ops;
  int lanes = bench->config.lanes;
  uint64_t start = hrx_now_ns();
  for (int n = 0; n < copies; ++n) {
    for (int i = 0; i < lanes; ++i) {
      HRX_RETURN_IF_ERROR(ops->copy(bench, &set[i]));
    }
  }
  for (int i = 0; i < lanes; ++i) {
    HRX_RETURN_IF_ERROR(ops->sync(bench, &set[i]));
  }
  out[0] = hrx_now_ns() - start;
  return NULL;
}

static hrx_status_t hrx_bench_round_small(hrx_bench_t* bench, uint64_t* out) {
  return hrx_bench_burst(bench, bench->small, bench->config.small_copies, out);
}

static hrx_status_t hrx_bench_round_bulk(hrx_bench_t* bench, uint64_t* out) {
  return hrx_bench_burst(bench, bench->bulk, bench->config.bulk_copies, out);
}

static hrx_status_t hrx_bench_round_idle(hrx_bench_t* bench, uint64_t* out) {
  const hrx_bench_ops_t* ops = bench->ops;
  for (int p = 0; p < bench->config.lanes; ++p) {
    hrx_bench_lane_t* lane = &bench->small[p];
    uint64_t start = hrx_now_ns();
    HRX_RETURN_IF_ERROR(ops->copy(bench, lane));
    HRX_RETURN_IF_ERROR(ops->sync(bench, lane));
    out[p] = hrx_now_ns() - start;
  }
  return NULL;
}

static hrx_status_t hrx_bench_round_loaded(hrx_bench_t* bench, uint64_t* out) {
  const hrx_bench_ops_t* ops = bench->ops;
  int lanes = bench->config.lanes;
  for (int p = 0; p < lanes; ++p) {
    for (int n = 0; n < bench->config.loaded_copies; ++n) {
      for (int i = 0; i < lanes; ++i) {
        HRX_RETURN_IF_ERROR(ops->copy(bench, &bench->bulk[i]));
      }
    }
    hrx_bench_lane_t* lane = &bench->small[p];
    uint64_t start = hrx_now_ns();
    HRX_RETURN_IF_ERROR(ops->copy(bench, lane));
    HRX_RETURN_IF_ERROR(ops->sync(bench, lane));
    out[p] = hrx_now_ns() - start;
    for (int i = 0; i < lanes; ++i) {
      HRX_RETURN_IF_ERROR(ops->sync(bench, &bench->bulk[i]));
    }
  }
  return NULL;
}

/* The loaded-latency round with the timed copy on bench->probe. */
static hrx_status_t hrx_bench_round_loaded_probe(hrx_bench_t* bench,
                                                 uint64_t* out) {
  const hrx_bench_ops_t* ops = bench->ops;
  int lanes = bench->config.lanes;
  hrx_bench_lane_t* probe = bench->probe;
  for (int p = 0; p < lanes; ++p) {
    for (int n = 0; n < bench->config.loaded_copies; ++n) {
      for (int i = 0; i < lanes; ++i) {
        HRX_RETURN_IF_ERROR(ops->copy(bench, &bench->bulk[i]));
      }
    }
    uint64_t start = hrx_now_ns();
    HRX_RETURN_IF_ERROR(ops->copy(bench, probe));
    HRX_RETURN_IF_ERROR(ops->sync(bench, probe));
    out[p] = hrx_now_ns() - start;
    for (int i = 0; i < lanes; ++i) {
      HRX_RETURN_IF_ERROR(ops->sync(bench, &bench->bulk[i]));
    }
  }
  return NULL;
}

hrx_status_t hrx_bench_make_probe(hrx_bench_t* bench, int v) {
  static const hrx_stream_options_t options[HRX_BENCH_PROBE_COUNT] = {
      [HRX_BENCH_PROBE_HIGH] = {.priority = HRX_STREAM_PRIORITY_HIGH},
      [HRX_BENCH_PROBE_RESERVED] = {.priority = HRX_STREAM_PRIORITY_NORMAL,
                                    .reserve = true},
      [HRX_BENCH_PROBE_RESERVED_HIGH] = {.priority = HRX_STREAM_PRIORITY_HIGH,
                                         .reserve = true},
  };
  hrx_bench_lane_t* lane = &bench->probes[v];
  if (lane->stream || lane->queue) return NULL;
  *lane = (hrx_bench_lane_t){.id = 2 * bench->config.lanes + v,
                             .kind = "probe",
                             .index = v,
                             .bytes = bench->config.small_bytes};
  if (bench->config.driver == HRX_BENCH_DRIVER_RAW) {
    int native_priority = 0;
    HRX_RETURN_IF_ERROR(bench->vtable->queue.create(
        bench->backend, options[v].priority, 0, &lane->queue,
        &native_priority));
    lane->owns_queue = true;
  } else {
    HRX_RETURN_IF_ERROR(hrx_stream_create_with_options(
        bench->device, &options[v], &lane->stream));
  }
  HRX_RETURN_IF_ERROR(hrx_bench_allocate_lane(bench, lane));
  HRX_RETURN_IF_ERROR(hrx_bench_initialize_lane(bench, lane));
  return bench->ops->sync(bench, lane);
}

/* Makes probe `v` (untimed), then runs its case. */
static hrx_status_t hrx_bench_case_probe(hrx_bench_t* bench, int v,
                                         uint64_t* out) {
  HRX_RETURN_IF_ERROR(hrx_bench_make_probe(bench, v));
  bench->probe = &bench->probes[v];
  return hrx_bench_run_case(bench, hrx_bench_round_loaded_probe, out,
                            (size_t)bench->config.lanes);
}

/* ------------------------------------------------------- threaded case */

typedef struct hrx_bench_team_s hrx_bench_team_t;

typedef struct hrx_bench_worker_s {
  hrx_bench_team_t* team;   /* borrowed */
  hrx_bench_lane_t* lane;   /* borrowed; only this worker submits to it */
  pthread_t thread;
  /* Written by the worker before it reports a round finished; read by the
   * coordinator after all have (ordered by team->mutex). */
  uint64_t end_ns;
  hrx_status_t status;      /* owned; the round's failure or NULL */
} hrx_bench_worker_t;

/* A reusable start/finish gate. Waiting threads sleep on condition
 * variables (no spinning: there may be far more workers than cores). */
struct hrx_bench_team_s {
  hrx_bench_t* bench;               /* borrowed */
  pthread_mutex_t mutex;
  pthread_cond_t go;                /* generation advanced or stop set */
  pthread_cond_t done;              /* finished reached count */
  uint64_t generation;              /* guarded by mutex */
  int finished;                     /* guarded by mutex */
  bool stop;                        /* guarded by mutex */
  int count;                        /* workers */
  hrx_bench_worker_t* workers;      /* owned [count] */
};

static void* hrx_bench_worker_main(void* arg) {
  hrx_bench_worker_t* worker = arg;
  hrx_bench_team_t* team = worker->team;
  hrx_bench_t* bench = team->bench;
  const hrx_bench_ops_t* ops = bench->ops;
  int copies = bench->config.small_copies;
  uint64_t seen = 0;
  for (;;) {
    pthread_mutex_lock(&team->mutex);
    while (!team->stop && team->generation == seen) {
      pthread_cond_wait(&team->go, &team->mutex);
    }
    bool stop = team->stop;
    seen = team->generation;
    pthread_mutex_unlock(&team->mutex);
    if (stop) break;

    hrx_status_t status = NULL;
    for (int n = 0; n < copies && !status; ++n) {
      status = ops->copy(bench, worker->lane);
    }
    if (!status) status = ops->sync(bench, worker->lane);
    worker->end_ns = hrx_now_ns();
    worker->status = status;

    pthread_mutex_lock(&team->mutex);
    if (++team->finished == team->count) pthread_cond_signal(&team->done);
    pthread_mutex_unlock(&team->mutex);
  }
  return NULL;
}

/* Releases every worker at once; the round lasts from that release to the
 * slowest worker's end. */
static hrx_status_t hrx_bench_team_round(hrx_bench_team_t* team,
                                         uint64_t* out) {
  pthread_mutex_lock(&team->mutex);
  team->finished = 0;
  uint64_t release = hrx_now_ns();
  team->generation++;
  pthread_cond_broadcast(&team->go);
  while (team->finished < team->count) {
    pthread_cond_wait(&team->done, &team->mutex);
  }
  pthread_mutex_unlock(&team->mutex);

  hrx_status_t first = NULL;
  uint64_t last_end = release;
  for (int i = 0; i < team->count; ++i) {
    hrx_bench_worker_t* worker = &team->workers[i];
    if (worker->end_ns > last_end) last_end = worker->end_ns;
    if (worker->status) {
      if (first) {
        hrx_status_free(worker->status);
      } else {
        first = hrx_status_annotate(worker->status, "benchmark thread %d", i);
      }
      worker->status = NULL;
    }
  }
  if (first) return first;
  out[0] = last_end - release;
  return NULL;
}

/* Starts one worker per small lane (untimed), runs the rounds, then stops
 * and joins every started worker, also on failure. */
static hrx_status_t hrx_bench_case_threaded(hrx_bench_t* bench,
                                            uint64_t* out) {
  const hrx_bench_config_t* c = &bench->config;
  hrx_bench_team_t team = {.bench = bench, .count = c->lanes};
  team.workers = calloc((size_t)c->lanes, sizeof(*team.workers));
  if (!team.workers) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate benchmark threads");
  }
  int error = pthread_mutex_init(&team.mutex, NULL);
  bool have_mutex = !error;
  bool have_go = have_mutex && !(error = pthread_cond_init(&team.go, NULL));
  bool have_done =
      have_go && !(error = pthread_cond_init(&team.done, NULL));
  hrx_status_t status = NULL;
  if (!have_done) {
    status = hrx_make_status(HRX_STATUS_RESOURCE_EXHAUSTED,
                             "cannot create benchmark thread gate: %s",
                             strerror(error));
  }

  int started = 0;
  for (int i = 0; !status && i < c->lanes; ++i) {
    hrx_bench_worker_t* worker = &team.workers[i];
    worker->team = &team;
    worker->lane = &bench->small[i];
    error = pthread_create(&worker->thread, NULL, hrx_bench_worker_main,
                           worker);
    if (error) {
      status = hrx_make_status(HRX_STATUS_RESOURCE_EXHAUSTED,
                               "cannot start benchmark thread %d of %d: %s",
                               i, c->lanes, strerror(error));
    } else {
      ++started;
    }
  }

  for (int r = 0; !status && r < c->warmup; ++r) {
    status = hrx_bench_team_round(&team, bench->scratch);
  }
  for (int r = 0; !status && r < c->samples; ++r) {
    status = hrx_bench_team_round(&team, out + r);
  }

  if (started > 0) {
    pthread_mutex_lock(&team.mutex);
    team.stop = true;
    pthread_cond_broadcast(&team.go);
    pthread_mutex_unlock(&team.mutex);
    for (int i = 0; i < started; ++i) {
      pthread_join(team.workers[i].thread, NULL);
    }
  }
  if (have_done) pthread_cond_destroy(&team.done);
  if (have_go) pthread_cond_destroy(&team.go);
  if (have_mutex) pthread_mutex_destroy(&team.mutex);
  free(team.workers);
  return status;
}

/* ---------------------------------------------------------- output check */

static hrx_status_t hrx_bench_check_lane(hrx_bench_t* bench,
                                         hrx_bench_lane_t* lane) {
  uint8_t bytes[HRX_BENCH_CHECK_BYTES];
  uint64_t length = hrx_bench_check_length(lane);
  HRX_RETURN_IF_ERROR(
      bench->ops->read(bench, lane, lane->dst, bytes, length));
  for (uint64_t i = 0; i < length; ++i) {
    uint8_t expected = hrx_bench_pattern(lane->id, i);
    if (bytes[i] != expected) {
      return hrx_make_status(
          HRX_STATUS_DEVICE_ERROR,
          "benchmark output check failed: %s lane %d byte %llu is 0x%02x, "
          "expected 0x%02x",
          lane->kind, lane->index, (unsigned long long)i, bytes[i], expected);
    }
  }
  return NULL;
}

static hrx_status_t hrx_bench_check_output(hrx_bench_t* bench) {
  for (int i = 0; i < bench->config.lanes; ++i) {
    HRX_RETURN_IF_ERROR(hrx_bench_check_lane(bench, &bench->small[i]));
  }
  for (int v = 0; v < HRX_BENCH_PROBE_COUNT; ++v) {
    if (bench->probes[v].stream || bench->probes[v].queue) {
      HRX_RETURN_IF_ERROR(hrx_bench_check_lane(bench, &bench->probes[v]));
    }
  }
  for (int i = 0; i < bench->config.lanes; ++i) {
    HRX_RETURN_IF_ERROR(hrx_bench_check_lane(bench, &bench->bulk[i]));
  }
  return hrx_bench_contention_check(bench);
}

/* ------------------------------------------------------------------- run */

static hrx_status_t hrx_bench_execute(hrx_bench_t* bench) {
  hrx_bench_result_t* r = bench->result;
  size_t lanes = (size_t)bench->config.lanes;
  HRX_RETURN_IF_ERROR(hrx_bench_prepare(bench));
  HRX_RETURN_IF_ERROR(hrx_bench_setup(bench));
  HRX_RETURN_IF_ERROR(
      hrx_bench_run_case(bench, hrx_bench_round_small, r->small_round_ns, 1));
  HRX_RETURN_IF_ERROR(hrx_bench_case_threaded(bench, r->threaded_round_ns));
  HRX_RETURN_IF_ERROR(
      hrx_bench_run_case(bench, hrx_bench_round_bulk, r->bulk_round_ns, 1));
  HRX_RETURN_IF_ERROR(hrx_bench_run_case(bench, hrx_bench_round_idle,
                                         r->idle_sample_ns, lanes));
  HRX_RETURN_IF_ERROR(hrx_bench_run_case(bench, hrx_bench_round_loaded,
                                         r->loaded_sample_ns, lanes));
  for (int v = 0; v < HRX_BENCH_PROBE_COUNT; ++v) {
    if (r->loaded_probe_sample_ns[v]) {
      HRX_RETURN_IF_ERROR(
          hrx_bench_case_probe(bench, v, r->loaded_probe_sample_ns[v]));
    }
  }
  if (bench->config.contention) {
    HRX_RETURN_IF_ERROR(hrx_bench_contention_run(bench));
  }
  return hrx_bench_check_output(bench);
}

hrx_status_t hrx_bench_run(hrx_device_t* device,
                           const hrx_bench_config_t* config,
                           hrx_bench_result_t** out_result) {
  if (!device || !config || !out_result) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "hrx_bench_run needs a device, a config and an "
                           "output");
  }
  HRX_RETURN_IF_ERROR(hrx_bench_validate(config));

  hrx_bench_t bench = {
      .config = *config,
      .ops = config->driver == HRX_BENCH_DRIVER_RAW ? &hrx_bench_raw_ops
                                                    : &hrx_bench_native_ops,
      .device = device,
      .backend = hrx_device_backend(device),
      .queue_count = hrx_device_stream_queue_count(device),
  };
  bench.vtable = bench.backend->vtable;
  HRX_RETURN_IF_ERROR(hrx_bench_result_allocate(config, &bench.result));
  bench.result->queue_count = bench.queue_count;

  hrx_status_t status =
      config->contention ? hrx_bench_contention_check_device(&bench) : NULL;
  if (!status) status = hrx_bench_execute(&bench);
  hrx_bench_teardown(&bench);
  if (status) {
    hrx_bench_result_free(bench.result);
    return hrx_status_annotate(status, "queue-pool benchmark (%s driver)",
                               hrx_bench_driver_name(config->driver));
  }
  *out_result = bench.result;
  return NULL;
}
