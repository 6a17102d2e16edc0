/* The benchmark's contention cases (bench_contention.h): what a small
 * command waits for behind compute and transfer backlogs, and how many
 * small kernels one host thread keeps running at once. */
#include "bench_contention.h"

#include <stdlib.h>
#include <string.h>

#include "bench_kernels.h"
#include "bench_run.h"
#include "base/status.h"

static bool hrx_bench_raw(const hrx_bench_t* bench) {
  return bench->config.driver == HRX_BENCH_DRIVER_RAW;
}

/* The probe stream of `kind` for sample s: a round-robin small lane, or one
 * of the probe lanes. */
static hrx_bench_lane_t* hrx_bench_probe_lane(hrx_bench_t* bench, int kind,
                                              int s) {
  if (kind == 0) return &bench->small[s % bench->config.lanes];
  return &bench->probes[kind - 1];
}

/* ------------------------------------------------------------ commands */

/* One launch of the spin kernel (grid blocks of one thread, `ns` each) on
 * the lane, writing lane->counter. */
static hrx_status_t hrx_bench_launch(hrx_bench_t* bench,
                                     hrx_bench_lane_t* lane, uint32_t grid,
                                     uint64_t ns) {
  if (hrx_bench_raw(bench)) {
    void* out = hrx_buffer_native_pointer(lane->counter);
    const void* args[2] = {&ns, &out};
    uint32_t sizes[2] = {sizeof(ns), sizeof(out)};
    hrx_kernel_launch_t launch = {{grid, 1, 1}, {1, 1, 1}, 0, 2, args, sizes};
    HRX_RETURN_IF_ERROR(bench->vtable->kernel.launch(
        bench->backend, lane->queue, bench->native_kernel, &launch));
  } else {
    hrx_view_t out = {lane->counter, 0, hrx_buffer_size(lane->counter)};
    hrx_kernel_arg_t args[2] = {hrx_kernel_arg_value(&ns, sizeof(ns)),
                                hrx_kernel_arg_view(out)};
    hrx_launch_config_t config = {{grid, 1, 1}, {1, 1, 1}, 0};
    HRX_RETURN_IF_ERROR(
        hrx_stream_launch(lane->stream, bench->kernel, &config, args, 2));
  }
  lane->launched++;
  return NULL;
}

/* Asynchronous read of the first `length` bytes of `src` on the lane:
 * native into readback slot `slot`, raw into lane->host. */
static hrx_status_t hrx_bench_read_start(hrx_bench_t* bench,
                                         hrx_bench_lane_t* lane,
                                         hrx_buffer_t* src, uint64_t length,
                                         int slot) {
  if (hrx_bench_raw(bench)) {
    return bench->vtable->queue.download(bench->backend, lane->queue, lane->host,
                                   hrx_buffer_native_pointer(src), length);
  }
  hrx_view_t view = {src, 0, length};
  return hrx_stream_read(lane->stream, view, &lane->readbacks[slot]);
}

/* The timed probe read: `small_bytes` of lane->src into lane->host, waited
 * for. */
static hrx_status_t hrx_bench_read_probe(hrx_bench_t* bench,
                                         hrx_bench_lane_t* lane) {
  if (hrx_bench_raw(bench)) {
    HRX_RETURN_IF_ERROR(
        hrx_bench_read_start(bench, lane, lane->src, lane->bytes, 0));
    return bench->ops->sync(bench, lane);
  }
  hrx_view_t view = {lane->src, 0, lane->bytes};
  return hrx_stream_read_blocking(lane->stream, view, lane->host, lane->bytes,
                                  NULL, NULL);
}

/* Waits for the bulk lanes' work and releases their readbacks. */
static hrx_status_t hrx_bench_drain(hrx_bench_t* bench) {
  hrx_status_t first = NULL;
  for (int i = 0; i < bench->config.lanes; ++i) {
    hrx_bench_lane_t* lane = &bench->bulk[i];
    hrx_status_t status = bench->ops->sync(bench, lane);
    if (status && !first) {
      first = status;
    } else {
      hrx_status_free(status);
    }
    for (int c = 0; lane->readbacks && c < bench->config.transfer_copies;
         ++c) {
      hrx_readback_release(lane->readbacks[c]);
      lane->readbacks[c] = NULL;
    }
  }
  return first;
}

/* --------------------------------------------------------------- setup */

static hrx_status_t hrx_bench_zeroed_counter(hrx_bench_t* bench,
                                             hrx_bench_lane_t* lane,
                                             uint64_t words) {
  HRX_RETURN_IF_ERROR(
      hrx_buffer_allocate(bench->device, words * 4, &lane->counter));
  return bench->ops->fill(bench, lane, lane->counter, 0);
}

/* Source bytes of a lane with `id`, `length` long: the pattern prefix, then
 * the fill byte (hrx_bench_initialize_lane's contents). */
static void hrx_bench_source_bytes(int id, uint8_t* out, uint64_t length) {
  uint64_t prefix = length < 64 ? length : 64;
  memset(out, hrx_bench_pattern(id, 0), (size_t)length);
  for (uint64_t i = 0; i < prefix; ++i) out[i] = hrx_bench_pattern(id, i);
}

static hrx_status_t hrx_bench_contention_prepare(hrx_bench_t* bench) {
  const hrx_bench_config_t* c = &bench->config;
  HRX_RETURN_IF_ERROR(
      hrx_bench_kernel_compile(bench->device, HRX_BENCH_KERNEL_SPIN,
                               &bench->kernel));
  if (hrx_bench_raw(bench)) {
    /* The raw driver loads the same image itself, past the core. */
    const void* image = NULL;
    size_t size = 0;
    hrx_kernel_image(bench->kernel, &image, &size);
    HRX_RETURN_IF_ERROR(bench->vtable->kernel.module_load(bench->backend, image,
                                                   size, &bench->module));
    hrx_kernel_attributes_t kernel_info;
    HRX_RETURN_IF_ERROR(bench->vtable->kernel.module_get_kernel(
        bench->backend, bench->module,
        hrx_bench_kernel_symbols[HRX_BENCH_KERNEL_SPIN],
        &bench->native_kernel, &kernel_info));
  }
  for (int v = 0; v < HRX_BENCH_PROBE_COUNT; ++v) {
    HRX_RETURN_IF_ERROR(hrx_bench_make_probe(bench, v));
  }
  bench->upload_source = malloc((size_t)c->transfer_bytes);
  if (!bench->upload_source) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate %llu bytes of upload source",
                           (unsigned long long)c->transfer_bytes);
  }
  memset(bench->upload_source, 0xA5, (size_t)c->transfer_bytes);
  for (int i = 0; i < c->lanes; ++i) {
    hrx_bench_lane_t* bulk = &bench->bulk[i];
    HRX_RETURN_IF_ERROR(hrx_bench_zeroed_counter(
        bench, bulk, (uint64_t)c->backlog_blocks));
    HRX_RETURN_IF_ERROR(hrx_buffer_allocate(bench->device, c->transfer_bytes,
                                            &bulk->transfer));
    HRX_RETURN_IF_ERROR(bench->ops->fill(bench, bulk, bulk->transfer, 0x3C));
    if (hrx_bench_raw(bench)) {
      HRX_RETURN_IF_ERROR(bench->vtable->memory.host_alloc(
          bench->backend, c->transfer_bytes, &bulk->host));
    } else {
      bulk->readbacks =
          calloc((size_t)c->transfer_copies, sizeof(*bulk->readbacks));
      if (!bulk->readbacks) {
        return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                               "cannot allocate benchmark readbacks");
      }
    }
    HRX_RETURN_IF_ERROR(hrx_bench_zeroed_counter(bench, &bench->small[i], 1));
  }
  for (int k = 1; k < HRX_BENCH_CONTENTION_KINDS; ++k) {
    HRX_RETURN_IF_ERROR(
        hrx_bench_zeroed_counter(bench, hrx_bench_probe_lane(bench, k, 0), 1));
  }
  for (int k = 0; k < HRX_BENCH_CONTENTION_KINDS; ++k) {
    int count = k == 0 ? c->lanes : 1;
    for (int s = 0; s < count; ++s) {
      hrx_bench_lane_t* lane = hrx_bench_probe_lane(bench, k, s);
      HRX_RETURN_IF_ERROR(bench->vtable->memory.host_alloc(bench->backend,
                                                    lane->bytes, &lane->host));
    }
  }
  for (int i = 0; i < c->lanes; ++i) {
    HRX_RETURN_IF_ERROR(bench->ops->sync(bench, &bench->small[i]));
    HRX_RETURN_IF_ERROR(bench->ops->sync(bench, &bench->bulk[i]));
  }
  for (int v = 0; v < HRX_BENCH_PROBE_COUNT; ++v) {
    HRX_RETURN_IF_ERROR(bench->ops->sync(bench, &bench->probes[v]));
  }
  return NULL;
}

/* ---------------------------------------------------------- concurrency */

/* `kernel_launches` 1-block spin kernels on `count` small lanes in turn,
 * then every one of them synchronized. */
static hrx_status_t hrx_bench_kernel_round(hrx_bench_t* bench, int count,
                                           uint64_t* out) {
  const hrx_bench_config_t* c = &bench->config;
  uint64_t start = hrx_now_ns();
  for (int n = 0; n < c->kernel_launches; ++n) {
    HRX_RETURN_IF_ERROR(hrx_bench_launch(bench, &bench->small[n % count], 1,
                                         c->kernel_spin_ns));
  }
  for (int i = 0; i < count; ++i) {
    HRX_RETURN_IF_ERROR(bench->ops->sync(bench, &bench->small[i]));
  }
  *out = hrx_now_ns() - start;
  return NULL;
}

static hrx_status_t hrx_bench_case_concurrency(hrx_bench_t* bench) {
  const hrx_bench_config_t* c = &bench->config;
  hrx_bench_result_t* r = bench->result;
  uint64_t scratch = 0;
  for (int n = 0; n < c->warmup + c->samples; ++n) {
    bool warm = n < c->warmup;
    int i = n - c->warmup;
    HRX_RETURN_IF_ERROR(hrx_bench_kernel_round(
        bench, 1, warm ? &scratch : &r->kernel_one_lane_round_ns[i]));
    HRX_RETURN_IF_ERROR(hrx_bench_kernel_round(
        bench, c->lanes, warm ? &scratch : &r->kernel_lanes_round_ns[i]));
  }
  return NULL;
}

/* -------------------------------------------------------------- backlogs */

typedef enum {
  HRX_BENCH_BACKLOG_COMPUTE,
  HRX_BENCH_BACKLOG_READS,
  HRX_BENCH_BACKLOG_UPLOADS,
} hrx_bench_backlog_t;

/* Queues the backlog on every bulk lane, round-robin (one command on every
 * lane, then the next). */
static hrx_status_t hrx_bench_fill_backlog(hrx_bench_t* bench,
                                           hrx_bench_backlog_t backlog) {
  const hrx_bench_config_t* c = &bench->config;
  int rounds = backlog == HRX_BENCH_BACKLOG_COMPUTE ? c->backlog_kernels
                                                    : c->transfer_copies;
  for (int n = 0; n < rounds; ++n) {
    for (int i = 0; i < c->lanes; ++i) {
      hrx_bench_lane_t* lane = &bench->bulk[i];
      switch (backlog) {
        case HRX_BENCH_BACKLOG_COMPUTE:
          HRX_RETURN_IF_ERROR(hrx_bench_launch(
              bench, lane, (uint32_t)c->backlog_blocks, c->kernel_spin_ns));
          break;
        case HRX_BENCH_BACKLOG_READS:
          HRX_RETURN_IF_ERROR(hrx_bench_read_start(
              bench, lane, lane->transfer, c->transfer_bytes, n));
          break;
        case HRX_BENCH_BACKLOG_UPLOADS:
          HRX_RETURN_IF_ERROR(bench->ops->upload(bench, lane, lane->transfer,
                                                 bench->upload_source,
                                                 c->transfer_bytes));
          break;
      }
    }
  }
  return NULL;
}

/* The timed operation `op` on `lane`: submit, then wait for it. */
static hrx_status_t hrx_bench_probe_op(hrx_bench_t* bench, int op,
                                       hrx_bench_lane_t* lane) {
  switch (op) {
    case HRX_BENCH_OP_COMPUTE_KERNEL:
      HRX_RETURN_IF_ERROR(hrx_bench_launch(bench, lane, 1, 0));
      return bench->ops->sync(bench, lane);
    case HRX_BENCH_OP_COMPUTE_COPY:
      HRX_RETURN_IF_ERROR(bench->ops->copy(bench, lane));
      return bench->ops->sync(bench, lane);
    case HRX_BENCH_OP_TRANSFER_READ:
      return hrx_bench_read_probe(bench, lane);
    default: {
      /* The source's own bytes into the destination, so the output check
       * of its copies still holds. */
      uint8_t* bytes = lane->host;
      hrx_bench_source_bytes(lane->id, bytes, lane->bytes);
      HRX_RETURN_IF_ERROR(
          bench->ops->upload(bench, lane, lane->dst, bytes, lane->bytes));
      return bench->ops->sync(bench, lane);
    }
  }
}

/* The read probe read the lane's source: its checked prefix must be the
 * pattern. */
static hrx_status_t hrx_bench_check_read(const hrx_bench_lane_t* lane) {
  const uint8_t* bytes = lane->host;
  for (uint64_t i = 0; i < hrx_bench_check_length(lane); ++i) {
    uint8_t expected = hrx_bench_pattern(lane->id, i);
    if (bytes[i] != expected) {
      return hrx_make_status(HRX_STATUS_DEVICE_ERROR,
                             "benchmark read check failed: %s lane %d byte "
                             "%llu is 0x%02x, expected 0x%02x",
                             lane->kind, lane->index, (unsigned long long)i,
                             bytes[i], expected);
    }
  }
  return NULL;
}

/* For every probe kind: `warmup` unrecorded, then `samples` recorded
 * samples of: backlog queued, `op` timed on the probe stream, backlog
 * drained untimed. */
static hrx_status_t hrx_bench_case_backlog(hrx_bench_t* bench,
                                           hrx_bench_backlog_t backlog, int op,
                                           int samples) {
  const hrx_bench_config_t* c = &bench->config;
  for (int kind = 0; kind < HRX_BENCH_CONTENTION_KINDS; ++kind) {
    uint64_t* out = bench->result->contention_sample_ns[op][kind];
    for (int n = 0; n < c->warmup + samples; ++n) {
      int s = n - c->warmup;
      hrx_bench_lane_t* lane = hrx_bench_probe_lane(bench, kind, n);
      HRX_RETURN_IF_ERROR(hrx_bench_fill_backlog(bench, backlog));
      uint64_t start = hrx_now_ns();
      hrx_status_t status = hrx_bench_probe_op(bench, op, lane);
      uint64_t elapsed = hrx_now_ns() - start;
      hrx_status_t drained = hrx_bench_drain(bench);
      if (status) {
        hrx_status_free(drained);
        return status;
      }
      HRX_RETURN_IF_ERROR(drained);
      if (op == HRX_BENCH_OP_TRANSFER_READ) {
        HRX_RETURN_IF_ERROR(hrx_bench_check_read(lane));
      }
      if (s >= 0) out[s] = elapsed;
    }
  }
  return NULL;
}

hrx_status_t hrx_bench_contention_check_device(hrx_bench_t* bench) {
  const hrx_bench_config_t* c = &bench->config;
  hrx_device_info_t info;
  HRX_RETURN_IF_ERROR(hrx_device_query_info(bench->device, &info));
  if ((uint64_t)c->backlog_blocks > info.max_grid_dim[0]) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "backlog_blocks %d; device %s:%d allows at most "
                           "%u blocks (max_grid_dim.x)",
                           c->backlog_blocks, info.backend, info.index,
                           info.max_grid_dim[0]);
  }
  return NULL;
}

hrx_status_t hrx_bench_contention_run(hrx_bench_t* bench) {
  const hrx_bench_config_t* c = &bench->config;
  HRX_RETURN_IF_ERROR(hrx_bench_contention_prepare(bench));
  HRX_RETURN_IF_ERROR(hrx_bench_case_concurrency(bench));
  HRX_RETURN_IF_ERROR(hrx_bench_case_backlog(bench, HRX_BENCH_BACKLOG_COMPUTE,
                                             HRX_BENCH_OP_COMPUTE_KERNEL,
                                             c->compute_samples));
  HRX_RETURN_IF_ERROR(hrx_bench_case_backlog(bench, HRX_BENCH_BACKLOG_COMPUTE,
                                             HRX_BENCH_OP_COMPUTE_COPY,
                                             c->compute_samples));
  HRX_RETURN_IF_ERROR(hrx_bench_case_backlog(bench, HRX_BENCH_BACKLOG_READS,
                                             HRX_BENCH_OP_TRANSFER_READ,
                                             c->transfer_samples));
  return hrx_bench_case_backlog(bench, HRX_BENCH_BACKLOG_UPLOADS,
                                HRX_BENCH_OP_TRANSFER_UPLOAD,
                                c->transfer_samples);
}

/* ---------------------------------------------------------- output check */

/* Every block word of the lane's counter (up to 16 of them) counts every
 * launch that wrote it. */
static hrx_status_t hrx_bench_check_counter(hrx_bench_t* bench,
                                            hrx_bench_lane_t* lane) {
  if (!lane->counter) return NULL;
  uint32_t words[16];
  uint64_t length = hrx_buffer_size(lane->counter);
  if (length > sizeof(words)) length = sizeof(words);
  HRX_RETURN_IF_ERROR(
      bench->ops->read(bench, lane, lane->counter, words, length));
  for (uint64_t w = 0; w < length / 4; ++w) {
    if (words[w] != (uint32_t)lane->launched) {
      return hrx_make_status(HRX_STATUS_DEVICE_ERROR,
                             "benchmark kernel check failed: %s lane %d "
                             "block %llu counted %u launches, expected %llu",
                             lane->kind, lane->index, (unsigned long long)w,
                             words[w], (unsigned long long)lane->launched);
    }
  }
  return NULL;
}

hrx_status_t hrx_bench_contention_check(hrx_bench_t* bench) {
  for (int i = 0; i < bench->config.lanes; ++i) {
    HRX_RETURN_IF_ERROR(hrx_bench_check_counter(bench, &bench->small[i]));
    HRX_RETURN_IF_ERROR(hrx_bench_check_counter(bench, &bench->bulk[i]));
  }
  for (int v = 0; v < HRX_BENCH_PROBE_COUNT; ++v) {
    HRX_RETURN_IF_ERROR(hrx_bench_check_counter(bench, &bench->probes[v]));
  }
  return NULL;
}

/* ------------------------------------------------------------- teardown */

static void hrx_bench_lane_release_contention(hrx_bench_t* bench,
                                              hrx_bench_lane_t* lane) {
  if (lane->readbacks) {
    for (int c = 0; c < bench->config.transfer_copies; ++c) {
      hrx_readback_release(lane->readbacks[c]);
    }
    free(lane->readbacks);
    lane->readbacks = NULL;
  }
  hrx_buffer_release(lane->counter);
  lane->counter = NULL;
  hrx_buffer_release(lane->transfer);
  lane->transfer = NULL;
  if (lane->host) bench->vtable->memory.host_free(bench->backend, lane->host);
  lane->host = NULL;
}

void hrx_bench_contention_teardown(hrx_bench_t* bench) {
  int lanes = bench->config.lanes;
  /* Raw commands retain nothing: wait for every lane before releasing. */
  for (int pass = 0; pass < 2; ++pass) {
    hrx_bench_lane_t* set = pass == 0 ? bench->small : bench->bulk;
    for (int i = 0; set && i < lanes; ++i) {
      if (set[i].stream || set[i].queue) {
        hrx_status_free(bench->ops->sync(bench, &set[i]));
      }
    }
  }
  for (int v = 0; v < HRX_BENCH_PROBE_COUNT; ++v) {
    hrx_bench_lane_t* lane = &bench->probes[v];
    if (lane->stream || lane->queue) {
      hrx_status_free(bench->ops->sync(bench, lane));
    }
  }
  for (int pass = 0; pass < 2; ++pass) {
    hrx_bench_lane_t* set = pass == 0 ? bench->small : bench->bulk;
    for (int i = 0; set && i < lanes; ++i) {
      hrx_bench_lane_release_contention(bench, &set[i]);
    }
  }
  for (int v = 0; v < HRX_BENCH_PROBE_COUNT; ++v) {
    hrx_bench_lane_release_contention(bench, &bench->probes[v]);
  }
  if (bench->module) bench->vtable->kernel.module_unload(bench->backend, bench->module);
  bench->module = NULL;
  hrx_kernel_release(bench->kernel);
  bench->kernel = NULL;
  free(bench->upload_source);
  bench->upload_source = NULL;
}
