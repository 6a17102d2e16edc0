/* The benchmark's built-in kernels and their launch loop
 * (bench_kernels.h). */
#include "bench_kernels.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hal/device.h"
#include "base/status.h"

hrx_status_t hrx_bench_kernel_compile(hrx_device_t* device,
                                      hrx_bench_kernel_t kernel,
                                      hrx_kernel_t** out_kernel) {
  if (!hrx_bench_kernel_name(kernel)) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "unknown benchmark kernel %d; 'tiny' or 'spin'",
                           (int)kernel);
  }
  hrx_kernel_compiler_t compiler;
  HRX_RETURN_IF_ERROR(hrx_device_query_kernel_compiler(device, &compiler));
  const char* source = hrx_bench_kernel_source(compiler.language);
  if (!source) {
    return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                           "no benchmark kernels in language '%s' (there are "
                           "'c', 'cuda' and 'hip')",
                           compiler.language);
  }
  return hrx_device_compile_kernel(device, source,
                                   hrx_bench_kernel_symbols[kernel], NULL, 0,
                                   out_kernel);
}

/* ---------------------------------------------------------- the loop */

void hrx_bench_launch_config_default(hrx_bench_launch_config_t* out) {
  memset(out, 0, sizeof(*out));
  out->driver = HRX_BENCH_DRIVER_NATIVE;
  out->kernel = HRX_BENCH_KERNEL_TINY;
  out->grid = 1;
  out->block = 1;
  out->launches = 1000;
  out->warmup = 100;
  out->threads = 1;
  out->priority = HRX_STREAM_PRIORITY_NORMAL;
}

typedef struct hrx_bench_launcher_s hrx_bench_launcher_t;

/* One thread's stream (or raw queue) and output buffer. */
typedef struct {
  hrx_bench_launcher_t* run;       /* borrowed: the owner */
  pthread_t thread;
  bool started;
  hrx_stream_t* stream;            /* native: retained */
  hrx_native_queue_t* queue;       /* raw: owned */
  hrx_buffer_t* out;               /* retained: grid * 4 bytes */
  void* out_ptr;                   /* its device address */
  uint64_t start_ns;
  uint64_t end_ns;
  hrx_status_t status;             /* owned */
} hrx_bench_launch_lane_t;

/* A run's state; every pointer NULL until made, for teardown from any
 * point. */
struct hrx_bench_launcher_s {
  hrx_bench_launch_config_t config;
  hrx_device_t* device;            /* borrowed */
  hrx_backend_device_t* backend;   /* borrowed */
  hrx_kernel_t* kernel;            /* retained */
  hrx_native_module_t* module;     /* raw: owned */
  hrx_native_kernel_t* native;     /* raw: borrowed from module */
  hrx_bench_launch_lane_t* lanes;  /* owned [threads] */
  pthread_mutex_t mutex;
  pthread_cond_t go;
  bool released;                   /* mutex */
  uint64_t release_ns;             /* mutex */
};

/* One launch of the lane's kernel. */
static hrx_status_t hrx_bench_launch_one(hrx_bench_launcher_t* run,
                                         hrx_bench_launch_lane_t* lane) {
  const hrx_bench_launch_config_t* c = &run->config;
  bool spin = c->kernel == HRX_BENCH_KERNEL_SPIN;
  if (c->driver == HRX_BENCH_DRIVER_RAW) {
    const void* args[2];
    uint32_t sizes[2];
    uint32_t count = 0;
    if (spin) {
      args[count] = &c->spin_ns;
      sizes[count++] = sizeof(c->spin_ns);
    }
    args[count] = &lane->out_ptr;
    sizes[count++] = sizeof(lane->out_ptr);
    hrx_kernel_launch_t launch = {{c->grid, 1, 1}, {c->block, 1, 1}, 0,
                                  count, args, sizes};
    return run->backend->vtable->kernel.launch(run->backend, lane->queue,
                                               run->native, &launch);
  }
  hrx_view_t out = {lane->out, 0, hrx_buffer_size(lane->out)};
  hrx_kernel_arg_t args[2];
  size_t count = 0;
  if (spin) args[count++] = hrx_kernel_arg_value(&c->spin_ns, 8);
  args[count++] = hrx_kernel_arg_view(out);
  hrx_launch_config_t config = {{c->grid, 1, 1}, {c->block, 1, 1}, 0};
  return hrx_stream_launch(lane->stream, run->kernel, &config, args, count);
}

static hrx_status_t hrx_bench_launch_sync(hrx_bench_launcher_t* run,
                                          hrx_bench_launch_lane_t* lane) {
  if (run->config.driver == HRX_BENCH_DRIVER_RAW) {
    bool done = false;
    return run->backend->vtable->queue.wait(run->backend, lane->queue,
                                            HRX_WAIT_FOREVER, &done);
  }
  return hrx_stream_synchronize(lane->stream, NULL, NULL);
}

static hrx_status_t hrx_bench_launch_lane(hrx_bench_launcher_t* run,
                                          hrx_bench_launch_lane_t* lane) {
  for (uint64_t i = 0; i < run->config.warmup; ++i) {
    HRX_RETURN_IF_ERROR(hrx_bench_launch_one(run, lane));
  }
  HRX_RETURN_IF_ERROR(hrx_bench_launch_sync(run, lane));
  pthread_mutex_lock(&run->mutex);
  while (!run->released) pthread_cond_wait(&run->go, &run->mutex);
  pthread_mutex_unlock(&run->mutex);
  lane->start_ns = hrx_now_ns();
  for (uint64_t i = 0; i < run->config.launches; ++i) {
    HRX_RETURN_IF_ERROR(hrx_bench_launch_one(run, lane));
    if (run->config.synchronize_each) {
      HRX_RETURN_IF_ERROR(hrx_bench_launch_sync(run, lane));
    }
  }
  hrx_status_t status = hrx_bench_launch_sync(run, lane);
  lane->end_ns = hrx_now_ns();
  return status;
}

static void* hrx_bench_launch_main(void* arg) {
  hrx_bench_launch_lane_t* lane = arg;
  lane->status = hrx_bench_launch_lane(lane->run, lane);
  return NULL;
}

static hrx_status_t hrx_bench_launch_check_config(
    hrx_device_t* device, const hrx_bench_launch_config_t* c) {
  if (!device || !c) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "a device and a configuration are required");
  }
  if (!hrx_bench_driver_name(c->driver) || !hrx_bench_kernel_name(c->kernel)) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "unknown driver %d or kernel %d", (int)c->driver,
                           (int)c->kernel);
  }
  if (c->threads < 1 || c->threads > HRX_BENCH_MAX_LAUNCH_THREADS) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "threads must be between 1 and %d; got %d",
                           HRX_BENCH_MAX_LAUNCH_THREADS, c->threads);
  }
  if (c->launches < 1 || c->launches > HRX_BENCH_MAX_LAUNCHES ||
      c->warmup > HRX_BENCH_MAX_LAUNCHES) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "launches must be between 1 and %llu and warmup "
                           "at most that; got %llu and %llu",
                           (unsigned long long)HRX_BENCH_MAX_LAUNCHES,
                           (unsigned long long)c->launches,
                           (unsigned long long)c->warmup);
  }
  if (c->grid < 1 || c->block < 1) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "grid and block must be at least 1; got %u and %u",
                           c->grid, c->block);
  }
  /* Before anything is made: the launches would refuse them part-way. */
  hrx_device_info_t info;
  HRX_RETURN_IF_ERROR(hrx_device_query_info(device, &info));
  uint32_t block_limit = info.max_block_dim[0] < info.max_threads_per_block
                             ? info.max_block_dim[0]
                             : info.max_threads_per_block;
  if (c->grid > info.max_grid_dim[0] || c->block > block_limit) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "grid %u and block %u; device %s:%d allows at "
                           "most %u blocks and %u threads (max_grid_dim.x, "
                           "max_block_dim.x)",
                           c->grid, c->block, info.backend, info.index,
                           info.max_grid_dim[0], block_limit);
  }
  if (!hrx_stream_priority_name(c->priority)) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "priority %d is not a lane", c->priority);
  }
  return NULL;
}

/* Makes the kernel, the raw module, and each lane's stream and buffer. */
static hrx_status_t hrx_bench_launch_prepare(hrx_bench_launcher_t* run) {
  const hrx_bench_launch_config_t* c = &run->config;
  HRX_RETURN_IF_ERROR(hrx_bench_kernel_compile(run->device, c->kernel,
                                               &run->kernel));
  const hrx_backend_vtable_t* vtable = run->backend->vtable;
  if (c->driver == HRX_BENCH_DRIVER_RAW) {
    /* The raw driver loads the same image itself, past the core. */
    const void* image = NULL;
    size_t size = 0;
    hrx_kernel_image(run->kernel, &image, &size);
    HRX_RETURN_IF_ERROR(
        vtable->kernel.module_load(run->backend, image, size, &run->module));
    hrx_kernel_attributes_t info;
    HRX_RETURN_IF_ERROR(vtable->kernel.module_get_kernel(
        run->backend, run->module, hrx_bench_kernel_symbols[c->kernel],
        &run->native, &info));
  }
  for (int i = 0; i < c->threads; ++i) {
    hrx_bench_launch_lane_t* lane = &run->lanes[i];
    lane->run = run;
    HRX_RETURN_IF_ERROR(hrx_buffer_allocate(
        run->device, (uint64_t)c->grid * sizeof(uint32_t), &lane->out));
    lane->out_ptr = hrx_buffer_native_pointer(lane->out);
    hrx_view_t whole = {lane->out, 0, hrx_buffer_size(lane->out)};
    hrx_stream_t* zero = NULL;
    HRX_RETURN_IF_ERROR(hrx_stream_create(run->device, &zero));
    hrx_status_t zeroed = hrx_stream_fill(zero, whole, 0);
    if (!zeroed) zeroed = hrx_stream_synchronize(zero, NULL, NULL);
    hrx_stream_release(zero);
    HRX_RETURN_IF_ERROR(zeroed);
    if (c->driver == HRX_BENCH_DRIVER_RAW) {
      int native_priority = 0;
      HRX_RETURN_IF_ERROR(vtable->queue.create(run->backend, c->priority, 0,
                                               &lane->queue,
                                               &native_priority));
    } else {
      hrx_stream_options_t options;
      hrx_stream_options_default(&options);
      options.priority = c->priority;
      HRX_RETURN_IF_ERROR(hrx_stream_create_with_options(
          run->device, &options, &lane->stream));
    }
  }
  return NULL;
}

/* Every launch added 1 to every block's word of its lane's output. */
static hrx_status_t hrx_bench_launch_verify(hrx_bench_launcher_t* run) {
  hrx_stream_t* stream = NULL;
  HRX_RETURN_IF_ERROR(hrx_stream_create(run->device, &stream));
  size_t bytes = (size_t)run->config.grid * sizeof(uint32_t);
  uint32_t* values = malloc(bytes);
  hrx_status_t status =
      values ? NULL
             : hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                               "cannot allocate the output check");
  uint32_t expected =
      (uint32_t)(run->config.warmup + run->config.launches);
  for (int i = 0; !status && i < run->config.threads; ++i) {
    hrx_view_t out = {run->lanes[i].out, 0, bytes};
    status = hrx_stream_read_blocking(stream, out, values, bytes, NULL, NULL);
    for (uint32_t b = 0; !status && b < run->config.grid; ++b) {
      if (values[b] != expected) {
        status = hrx_make_status(HRX_STATUS_DEVICE_ERROR,
                                 "benchmark kernel %s: thread %d's block %u "
                                 "counted %u launches, expected %u",
                                 hrx_bench_kernel_name(run->config.kernel), i,
                                 b, values[b], expected);
      }
    }
  }
  free(values);
  hrx_stream_release(stream);
  return status;
}

static void hrx_bench_launch_teardown(hrx_bench_launcher_t* run) {
  const hrx_backend_vtable_t* vtable = run->backend->vtable;
  for (int i = 0; run->lanes && i < run->config.threads; ++i) {
    hrx_bench_launch_lane_t* lane = &run->lanes[i];
    /* Queue and stream releases wait for their work. */
    if (lane->queue) vtable->queue.destroy(run->backend, lane->queue);
    hrx_stream_release(lane->stream);
    hrx_buffer_release(lane->out);
    hrx_status_free(lane->status);
  }
  if (run->module) vtable->kernel.module_unload(run->backend, run->module);
  hrx_kernel_release(run->kernel);
  free(run->lanes);
}

hrx_status_t hrx_bench_launch_run(hrx_device_t* device,
                                  const hrx_bench_launch_config_t* config,
                                  hrx_bench_launch_result_t* out) {
  HRX_RETURN_IF_ERROR(hrx_bench_launch_check_config(device, config));
  if (!out) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT, "out is NULL");
  }
  hrx_bench_launcher_t run;
  memset(&run, 0, sizeof(run));
  run.config = *config;
  run.device = device;
  run.backend = hrx_device_backend(device);
  run.lanes = calloc((size_t)config->threads, sizeof(*run.lanes));
  if (!run.lanes) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate benchmark lanes");
  }
  pthread_mutex_init(&run.mutex, NULL);
  pthread_cond_init(&run.go, NULL);
  hrx_status_t status = hrx_bench_launch_prepare(&run);
  for (int i = 0; !status && i < config->threads; ++i) {
    hrx_bench_launch_lane_t* lane = &run.lanes[i];
    int error = pthread_create(&lane->thread, NULL, hrx_bench_launch_main,
                               lane);
    if (error) {
      status = hrx_make_status(HRX_STATUS_RESOURCE_EXHAUSTED,
                               "cannot start benchmark thread %d of %d", i,
                               config->threads);
    }
    lane->started = !error;
  }
  /* Every thread is past its warm-up or failed: release them together. */
  pthread_mutex_lock(&run.mutex);
  run.released = true;
  run.release_ns = hrx_now_ns();
  pthread_cond_broadcast(&run.go);
  pthread_mutex_unlock(&run.mutex);
  uint64_t last_end = 0, first_start = UINT64_MAX;
  for (int i = 0; i < config->threads; ++i) {
    hrx_bench_launch_lane_t* lane = &run.lanes[i];
    if (!lane->started) continue;
    pthread_join(lane->thread, NULL);
    if (lane->status && !status) {
      status = hrx_status_annotate(lane->status, "benchmark thread %d", i);
      lane->status = NULL;
    }
    if (lane->start_ns < first_start) first_start = lane->start_ns;
    if (lane->end_ns > last_end) last_end = lane->end_ns;
  }
  if (!status) status = hrx_bench_launch_verify(&run);
  if (!status) {
    memset(out, 0, sizeof(*out));
    out->elapsed_ns = last_end - first_start;
    out->launches = config->launches * (uint64_t)config->threads;
    for (int i = 0; i < config->threads; ++i) {
      out->thread_ns[i] = run.lanes[i].end_ns - run.lanes[i].start_ns;
    }
  }
  hrx_bench_launch_teardown(&run);
  pthread_cond_destroy(&run.go);
  pthread_mutex_destroy(&run.mutex);
  return status;
}
