/* The hip backend on a GPU: with the normal search finding a device, every
 * vtable entry is exercised and the data checked: device information, queues
 * and events, uploads, copies, fills and downloads of sizes crossing the
 * ring and its blocks, many small uploads and uploads from several threads,
 * native graphs and host functions, the batch kernel, and the kernel entries
 * (compile, load, look up, launch, kernel graph nodes, launches from several
 * threads, an unload that waits for a running launch), with the errors that
 * carry the runtime's names.
 *
 *   test_hip_device device
 *
 * make -f tests/c/hip.mk hip-device runs it on a GPU machine (AMD or
 * NVIDIA). Exit status 0 on success. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "drivers/hip/hip_backend.h"
#include "drivers/hip/hip_batch.h"
#include "drivers/hip/hip_dynamic.h"
#include "drivers/hip/hip_kernels.h"
#include "bench/bench_kernel_sources.h"
#include "hip_test_support.h"

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* A wait for all of a queue's work, and for an event. */
static hrx_status_t sync_queue(device_fixture_t* f, hrx_native_queue_t* queue) {
  bool done = false;
  return f->vt->queue.wait(f->device, queue, HRX_WAIT_FOREVER, &done);
}

static hrx_status_t sync_event(device_fixture_t* f, hrx_native_event_t* event) {
  bool done = false;
  return f->vt->event.wait(f->device, event, HRX_WAIT_FOREVER, &done);
}

static uint8_t pattern_byte(uint64_t seed, uint64_t i) {
  return (uint8_t)((i * 131u + seed * 7u + (i >> 9)) & 0xff);
}

/* Uploads `length` bytes of pattern `seed` to dst through a host buffer
 * that is overwritten right after the call (upload borrows it only for the
 * call). */
static int upload_pattern(device_fixture_t* f, hrx_native_queue_t* queue,
                          void* dst, uint64_t length, uint64_t seed) {
  uint8_t* host = malloc(length);
  if (!host) return 1;
  for (uint64_t i = 0; i < length; ++i) host[i] = pattern_byte(seed, i);
  hrx_status_t status = f->vt->queue.upload(f->device, queue, dst, host, length);
  memset(host, 0xEE, length);
  free(host);
  CHECK_OK(status);
  return 0;
}

/* Downloads and compares against pattern `seed`. */
static int expect_pattern(device_fixture_t* f, hrx_native_queue_t* queue,
                          const void* src, uint64_t length, uint64_t seed,
                          const char* what) {
  void* host = NULL;
  CHECK_OK(f->vt->memory.host_alloc(f->device, length, &host));
  memset(host, 0, length);
  CHECK_OK(f->vt->queue.download(f->device, queue, host, src, length));
  CHECK_OK(sync_queue(f, queue));
  const uint8_t* bytes = host;
  uint64_t bad = 0;
  for (uint64_t i = 0; i < length; ++i) {
    if (bytes[i] != pattern_byte(seed, i)) {
      if (bad == 0) {
        fprintf(stderr, "%s: byte %llu is %u, want %u\n", what,
                (unsigned long long)i, bytes[i], pattern_byte(seed, i));
      }
      ++bad;
    }
  }
  CHECK(bad == 0, "%s: %llu of %llu bytes differ", what,
        (unsigned long long)bad, (unsigned long long)length);
  f->vt->memory.host_free(f->device, host);
  return 0;
}

/* Downloads `count` slots of `slot` bytes at once; slot k must hold
 * pattern seed + k. */
static int expect_slots(device_fixture_t* f, hrx_native_queue_t* queue,
                        const uint8_t* region, uint64_t slot, int count,
                        uint64_t seed, const char* what) {
  uint64_t length = slot * (uint64_t)count;
  void* host = NULL;
  CHECK_OK(f->vt->memory.host_alloc(f->device, length, &host));
  CHECK_OK(f->vt->queue.download(f->device, queue, host, region, length));
  CHECK_OK(sync_queue(f, queue));
  const uint8_t* bytes = host;
  int bad_slots = 0;
  for (int k = 0; k < count; ++k) {
    for (uint64_t i = 0; i < slot; ++i) {
      if (bytes[(uint64_t)k * slot + i] != pattern_byte(seed + (uint64_t)k, i)) {
        ++bad_slots;
        break;
      }
    }
  }
  CHECK(bad_slots == 0, "%s: %d of %d slots differ", what, bad_slots, count);
  f->vt->memory.host_free(f->device, host);
  return bad_slots != 0;
}

typedef struct upload_thread_s {
  device_fixture_t* fixture;
  hrx_native_queue_t* shared_queue;  /* NULL: the thread makes its own */
  uint8_t* region;   /* device memory of `count` slots of `slot` bytes */
  uint64_t slot;
  int count;
  uint64_t seed;
  int result;
} upload_thread_t;

static void* upload_thread_main(void* arg) {
  upload_thread_t* t = arg;
  device_fixture_t* f = t->fixture;
  hrx_native_queue_t* queue = t->shared_queue;
  hrx_status_t status =
      queue ? NULL : create_queue(f, &queue);
  if (status) {
    fprintf(stderr, "thread queue_create: %s\n", hrx_status_message(status));
    hrx_status_free(status);
    t->result = 1;
    return NULL;
  }
  uint8_t* host = malloc(t->slot);
  for (int k = 0; k < t->count && t->result == 0; ++k) {
    for (uint64_t i = 0; i < t->slot; ++i) {
      host[i] = pattern_byte(t->seed + (uint64_t)k, i);
    }
    status = f->vt->queue.upload(f->device, queue, t->region + (uint64_t)k * t->slot,
                           host, t->slot);
    if (status) {
      fprintf(stderr, "thread upload: %s\n", hrx_status_message(status));
      hrx_status_free(status);
      t->result = 1;
    }
  }
  free(host);
  if (t->result == 0) {
    t->result = expect_slots(f, queue, t->region, t->slot, t->count, t->seed,
                             "thread upload");
  }
  if (!t->shared_queue) f->vt->queue.destroy(f->device, queue);
  return NULL;
}

/* The batch kernel against a host model: the benchmark's repeated copy,
 * dependent commands (sequential mode with barriers, unaligned and
 * byte-path commands) and independent multi-chunk commands (parallel
 * mode). */
static int exercise_batches(device_fixture_t* f, hrx_native_queue_t* queue) {
  const uint64_t size = 1u << 20;
  uint8_t* a = NULL;
  uint8_t* b = NULL;
  CHECK_OK(f->vt->memory.alloc(f->device, size, (void**)&a));
  CHECK_OK(f->vt->memory.alloc(f->device, size, (void**)&b));
  if (upload_pattern(f, queue, a, size, 11)) return 1;
  CHECK_OK(f->vt->queue.fill(f->device, queue, b, 0, size));
  uint8_t* model = calloc(1, size);
  uint8_t* source = malloc(size);
  for (uint64_t i = 0; i < size; ++i) source[i] = pattern_byte(11, i);
  hrx_batch_command_t c[HRX_BATCH_MAX_COMMANDS];
  uint32_t n = 0;
  uint32_t published = 0;
  /* 1: the same 4 KiB copy 160 times. */
  for (n = 0; n < HRX_BATCH_MAX_COMMANDS; ++n) {
    c[n] = (hrx_batch_command_t){.dst = b, .src = a, .length = 4096,
                                 .kind = HRX_BATCH_COPY};
  }
  memcpy(model, source, 4096);
  CHECK_OK(f->vt->queue.batch_submit(f->device, queue, c, n, &published));
  CHECK(published == n, "published %u of %u", published, n);
  /* 2: dependent commands, in order. */
  n = 0;
#define HRX_ADD_COPY(d, s, len)                                              \
  do {                                                                       \
    c[n++] = (hrx_batch_command_t){.dst = b + (d), .src = a + (s),           \
                                   .length = (len), .kind = HRX_BATCH_COPY}; \
    memcpy(model + (d), source + (s), (len));                                \
  } while (0)
#define HRX_ADD_FILL(d, len, v)                                              \
  do {                                                                       \
    c[n++] = (hrx_batch_command_t){.dst = b + (d), .length = (len),          \
                                   .kind = HRX_BATCH_FILL, .byte = (v)};     \
    memset(model + (d), (v), (len));                                         \
  } while (0)
  HRX_ADD_FILL(8192, 4096, 0x5a);
  /* b -> b copy depending on the fill (read after write). */
  c[n++] = (hrx_batch_command_t){.dst = b + 16384, .src = b + 8192,
                                 .length = 4096, .kind = HRX_BATCH_COPY};
  memcpy(model + 16384, model + 8192, 4096);
  HRX_ADD_COPY(8192 + 100, 3, 1000);        /* overwrite part of the fill */
  HRX_ADD_COPY(20001, 777, 5003);           /* byte path, odd sizes */
  HRX_ADD_FILL(30001, 99, 0xc3);
  HRX_ADD_COPY(65536, 65536, 65536);        /* 4 chunks in one block */
  for (int k = 0; k < 100; ++k) HRX_ADD_COPY(200000 + 17 * k, 5000 + k, 33);
  CHECK_OK(f->vt->queue.batch_submit(f->device, queue, c, n, &published));
  CHECK(published == n, "published %u of %u", published, n);
  /* 3: independent commands, parallel mode, multi-chunk. */
  n = 0;
  HRX_ADD_COPY(300000, 300000, 40000);
  HRX_ADD_COPY(400000 + 16, 400000, 50000);
  HRX_ADD_FILL(500000, 65536, 0x11);
  HRX_ADD_COPY(600003, 600001, 12345);
#undef HRX_ADD_COPY
#undef HRX_ADD_FILL
  CHECK_OK(f->vt->queue.batch_submit(f->device, queue, c, n, &published));
  CHECK_OK(sync_queue(f, queue));
  uint8_t* host = NULL;
  CHECK_OK(f->vt->memory.host_alloc(f->device, size, (void**)&host));
  CHECK_OK(f->vt->queue.download(f->device, queue, host, b, size));
  CHECK_OK(sync_queue(f, queue));
  uint64_t bad = 0;
  for (uint64_t i = 0; i < size; ++i) {
    if (host[i] != model[i]) {
      if (!bad) {
        fprintf(stderr, "batch: byte %llu is %u, want %u\n",
                (unsigned long long)i, host[i], model[i]);
      }
      ++bad;
    }
  }
  CHECK(bad == 0, "batch kernel: %llu of %llu bytes differ",
        (unsigned long long)bad, (unsigned long long)size);
  f->vt->memory.host_free(f->device, host);
  free(model);
  free(source);
  f->vt->memory.free(f->device, a);
  f->vt->memory.free(f->device, b);
  hrx_device_info_t info;
  CHECK_OK(f->vt->query_info(f->device, &info));
  printf("  batch publication: %s\n", info.batch_publication);
  CHECK(strstr(info.batch_publication, "unavailable") == NULL,
        "no batch kernel: %s", info.batch_publication);
  return 0;
}

static void count_host_call(void* user_data) {
  atomic_fetch_add((atomic_int*)user_data, 1);
}

/* Uploads `count` 32-bit words; downloads them back into `out`. */
static int upload_words(device_fixture_t* f, hrx_native_queue_t* queue,
                        void* dst, const void* words, size_t count) {
  CHECK_OK(f->vt->queue.upload(f->device, queue, dst, words, count * 4));
  return 0;
}

static int download_words(device_fixture_t* f, hrx_native_queue_t* queue,
                          void* out, const void* src, size_t count) {
  void* host = NULL;
  CHECK_OK(f->vt->memory.host_alloc(f->device, count * 4, &host));
  CHECK_OK(f->vt->queue.download(f->device, queue, host, src, count * 4));
  CHECK_OK(sync_queue(f, queue));
  memcpy(out, host, count * 4);
  f->vt->memory.host_free(f->device, host);
  return 0;
}

typedef struct launch_thread_s {
  device_fixture_t* fixture;
  hrx_native_kernel_t* tiny;
  unsigned int* out;  /* device: one word */
  int launches;
  int result;
} launch_thread_t;

/* Launches the tiny kernel `launches` times on a queue of its own. */
static void* launch_thread_main(void* arg) {
  launch_thread_t* t = arg;
  device_fixture_t* f = t->fixture;
  hrx_native_queue_t* queue = NULL;
  hrx_status_t status = create_queue(f, &queue);
  const void* args[] = {&t->out};
  const uint32_t sizes[] = {sizeof(void*)};
  hrx_kernel_launch_t launch = {.grid = {1, 1, 1}, .block = {32, 1, 1},
                                .arg_count = 1, .args = args,
                                .arg_sizes = sizes};
  for (int i = 0; !status && i < t->launches; ++i) {
    status = f->vt->kernel.launch(f->device, queue, t->tiny, &launch);
  }
  if (!status) status = sync_queue(f, queue);
  if (status) {
    fprintf(stderr, "launch thread: %s\n", hrx_status_message(status));
    hrx_status_free(status);
    t->result = 1;
  }
  if (queue) f->vt->queue.destroy(f->device, queue);
  return NULL;
}

/* The kernel entries of the vtable, alone: toolchain, compile, load, look
 * up with the parameter layout, launch and check the data, errors (compile
 * log, corrupt and foreign images, a missing name, a refused launch),
 * dynamic shared memory beyond 48 KiB, a kernel node in a native graph,
 * launches from several threads, and an unload that waits for a running
 * launch. */
static int exercise_kernels(device_fixture_t* f, hrx_native_queue_t* queue) {
  const hrx_backend_vtable_t* vt = f->vt;
  hrx_device_info_t info;
  CHECK_OK(vt->query_info(f->device, &info));
  bool nvidia = strcmp(info.platform, "nvidia") == 0;
  printf("  limits: %u threads per block, block %u x %u x %u, grid %u x %u "
         "x %u, %llu bytes of shared memory per block\n",
         info.max_threads_per_block, info.max_block_dim[0],
         info.max_block_dim[1], info.max_block_dim[2], info.max_grid_dim[0],
         info.max_grid_dim[1], info.max_grid_dim[2],
         (unsigned long long)info.max_shared_bytes_per_block);
  CHECK(info.max_threads_per_block >= 256, "max threads %u",
        info.max_threads_per_block);
  CHECK(info.max_block_dim[0] >= 256 && info.max_block_dim[1] >= 1 &&
            info.max_block_dim[2] >= 1,
        "block limits");
  CHECK(info.max_grid_dim[0] >= 65535 && info.max_grid_dim[1] >= 1 &&
            info.max_grid_dim[2] >= 1,
        "grid limits");
  CHECK(info.max_shared_bytes_per_block >= 32768, "shared %llu",
        (unsigned long long)info.max_shared_bytes_per_block);
  /* The opt-in maximum, beyond the 48 KiB every CUDA device has. */
  CHECK(!nvidia || info.max_shared_bytes_per_block > 49152,
        "shared %llu is not the opt-in maximum",
        (unsigned long long)info.max_shared_bytes_per_block);

  hrx_kernel_compiler_t toolchain;
  CHECK_OK(vt->kernel.toolchain(f->device, &toolchain));
  printf("  toolchain: %s, \"%s\", %s, %s\n", toolchain.language,
         toolchain.compiler, toolchain.target, toolchain.image_format);
  CHECK(strcmp(toolchain.language, nvidia ? "cuda" : "hip") == 0,
        "language %s", toolchain.language);
  CHECK(strcmp(toolchain.target, info.target) == 0, "target %s",
        toolchain.target);

  uint64_t t0 = now_ns();
  void* image = NULL;
  size_t size = 0;
  hrx_kernel_param_record_t params[3];
  for (int i = 0; i < 3; ++i) params[i].count = -1;
  CHECK_OK(vt->kernel.compile(f->device, kernel_source, kernel_names, 3,
                              kernel_options, 3, &image, &size, params));
  printf("  parameter types of saxpy: %s\n",
         params[0].count >= 0 ? "recorded" : "not recorded");
  uint64_t compile_ns = now_ns() - t0;
  hrx_native_module_t* module = NULL;
  t0 = now_ns();
  CHECK_OK(vt->kernel.module_load(f->device, image, size, &module));
  printf("  compiled %zu bytes of %s in %.1f ms, loaded in %.2f ms\n", size,
         toolchain.image_format, compile_ns / 1e6, (now_ns() - t0) / 1e6);
  free(image);

  /* saxpy: its parameters as the runtime lays them out. */
  hrx_native_kernel_t* saxpy = NULL;
  hrx_kernel_attributes_t ki;
  CHECK_OK(vt->kernel.module_get_kernel(f->device, module, "saxpy", &saxpy, &ki));
  printf("  saxpy: %d parameters", ki.param_count);
  for (int i = 0; i < ki.param_count; ++i) {
    printf(" [%u at %u]", ki.param_size[i], ki.param_offset[i]);
  }
  printf(", %u threads per block, %llu static + up to %llu dynamic shared "
         "bytes\n",
         ki.max_threads_per_block, (unsigned long long)ki.static_shared_bytes,
         (unsigned long long)ki.max_dynamic_shared_bytes);
  /* CUDA 12.8+ runtimes (and 12.5+ with a 12.4+ driver) tell the layout. */
  CHECK(!nvidia || ki.param_count == 4, "param_count %d", ki.param_count);
  if (ki.param_count == 4) {
    static const uint32_t want_size[] = {8, 8, 4, 4};
    static const uint32_t want_offset[] = {0, 8, 16, 20};
    for (int i = 0; i < 4; ++i) {
      CHECK(ki.param_size[i] == want_size[i] &&
                ki.param_offset[i] == want_offset[i],
            "parameter %d: %u bytes at %u", i, ki.param_size[i],
            ki.param_offset[i]);
    }
  }
  CHECK(ki.max_threads_per_block > 0 &&
            ki.max_threads_per_block <= info.max_threads_per_block,
        "kernel max threads %u", ki.max_threads_per_block);
  CHECK(ki.static_shared_bytes == 0, "saxpy static shared %llu",
        (unsigned long long)ki.static_shared_bytes);
  CHECK(ki.max_dynamic_shared_bytes == info.max_shared_bytes_per_block,
        "saxpy may use %llu dynamic shared bytes of %llu",
        (unsigned long long)ki.max_dynamic_shared_bytes,
        (unsigned long long)info.max_shared_bytes_per_block);
  /* On NVIDIA the driver's own parameter query agrees with what the
   * backend reported (the path taken where the runtime lacks one). */
  if (nvidia && hrx_hip_rt.sym.GetDriverEntryPointByVersion) {
    void* address = NULL;
    hrx_hip_driver_entry_status_t found = -1;
    hrx_hip_error_t err = hrx_hip_rt.sym.GetDriverEntryPointByVersion(
        "cuKernelGetParamInfo", &address,
        HRX_HIP_CUDA_KERNEL_PARAM_INFO_VERSION, HRX_HIP_CUDA_ENABLE_DEFAULT,
        &found);
    CHECK(err == 0 && found == 0 && address, "no cuKernelGetParamInfo: %d %d",
          (int)err, (int)found);
    if (address) {
      hrx_hip_driver_result_t (*param_info)(hrx_hip_kernel_t, size_t,
                                            size_t*, size_t*) = NULL;
      memcpy(&param_info, &address, sizeof(address));
      for (int i = 0; i < 5; ++i) {
        size_t offset = 0, psize = 0;
        hrx_hip_driver_result_t r =
            param_info((hrx_hip_kernel_t)saxpy, (size_t)i, &offset, &psize);
        if (i < 4) {
          CHECK(r == 0 && offset == ki.param_offset[i] &&
                    psize == ki.param_size[i],
                "driver parameter %d: %d, %zu at %zu", i, (int)r, psize,
                offset);
        } else {
          CHECK(r == HRX_HIP_CUDA_DRIVER_ERROR_INVALID_VALUE,
                "driver parameter past the last: %d", (int)r);
        }
      }
    }
  }

  /* saxpy on a queue, checked. */
  enum { kN = 1 << 20 };
  float* xs = malloc(kN * sizeof(float));
  float* ys = malloc(kN * sizeof(float));
  for (int i = 0; i < kN; ++i) {
    xs[i] = (float)(i % 1000) * 0.5f;
    ys[i] = 1.0f;
  }
  void* x = NULL;
  void* y = NULL;
  CHECK_OK(vt->memory.alloc(f->device, kN * sizeof(float), &x));
  CHECK_OK(vt->memory.alloc(f->device, kN * sizeof(float), &y));
  if (upload_words(f, queue, x, xs, kN) || upload_words(f, queue, y, ys, kN)) {
    return 1;
  }
  float a = 2.0f;
  int n = kN;
  const void* saxpy_args[] = {&y, &x, &a, &n};
  const uint32_t saxpy_sizes[] = {8, 8, 4, 4};
  hrx_kernel_launch_t launch = {.grid = {kN / 256, 1, 1}, .block = {256, 1, 1},
                                .shared_bytes = 0, .arg_count = 4,
                                .args = saxpy_args, .arg_sizes = saxpy_sizes};
  CHECK_OK(vt->kernel.launch(f->device, queue, saxpy, &launch));
  /* The values were copied at the call. */
  a = -100.0f;
  n = 0;
  if (download_words(f, queue, ys, y, kN)) return 1;
  int bad = 0;
  for (int i = 0; i < kN; ++i) {
    bad += ys[i] != 2.0f * ((float)(i % 1000) * 0.5f) + 1.0f;
  }
  CHECK(bad == 0, "saxpy: %d of %d values differ", bad, kN);

  /* scaled: the options reached the compiler (HRX_SCALE=3). */
  hrx_native_kernel_t* scaled = NULL;
  CHECK_OK(vt->kernel.module_get_kernel(f->device, module, "scaled", &scaled, &ki));
  enum { kWords = 256 };
  unsigned int words[kWords];
  unsigned int* out = NULL;
  CHECK_OK(vt->memory.alloc(f->device, kWords * 4, (void**)&out));
  CHECK_OK(vt->queue.fill(f->device, queue, out, 0, kWords * 4));
  const void* out_args[] = {&out};
  const uint32_t pointer_size[] = {sizeof(void*)};
  hrx_kernel_launch_t scaled_launch = {
      .grid = {4, 1, 1}, .block = {64, 1, 1}, .arg_count = 1,
      .args = out_args, .arg_sizes = pointer_size};
  CHECK_OK(vt->kernel.launch(f->device, queue, scaled, &scaled_launch));
  if (download_words(f, queue, words, out, kWords)) return 1;
  bad = 0;
  for (int i = 0; i < kWords; ++i) bad += words[i] != 3;
  CHECK(bad == 0, "scaled: %d words are not 3", bad);

  /* Dynamic shared memory beyond 48 KiB where the device allows it. */
  hrx_native_kernel_t* shared_sum = NULL;
  CHECK_OK(vt->kernel.module_get_kernel(f->device, module, "shared_sum", &shared_sum,
                                 &ki));
  unsigned int shared_words = (unsigned int)(ki.max_dynamic_shared_bytes / 4);
  if (shared_words > 25600) shared_words = 25600;  /* 100 KiB */
  CHECK(!nvidia || shared_words * 4u > 49152u,
        "only %u bytes of dynamic shared memory", shared_words * 4u);
  const void* sum_args[] = {&out, &shared_words};
  const uint32_t sum_sizes[] = {sizeof(void*), 4};
  hrx_kernel_launch_t sum_launch = {
      .grid = {2, 1, 1}, .block = {256, 1, 1},
      .shared_bytes = (uint64_t)shared_words * 4u, .arg_count = 2,
      .args = sum_args, .arg_sizes = sum_sizes};
  CHECK_OK(vt->kernel.launch(f->device, queue, shared_sum, &sum_launch));
  if (download_words(f, queue, words, out, 2)) return 1;
  unsigned int want_sum = 0;
  for (unsigned int i = 0; i < shared_words; ++i) want_sum += i;
  CHECK(words[0] == want_sum && words[1] == want_sum,
        "shared_sum over %u words: %u %u, want %u", shared_words, words[0],
        words[1], want_sum);
  printf("  shared_sum used %u bytes of dynamic shared memory\n",
         shared_words * 4u);

  /* A launch the runtime refuses returns its error and leaves the
   * runtime's last error clean. */
  hrx_kernel_launch_t too_big = scaled_launch;
  too_big.block[0] = info.max_threads_per_block * 2;
  expect_failure(vt->kernel.launch(f->device, queue, scaled, &too_big),
                 HRX_STATUS_DEVICE_ERROR, "a refused launch",
                 nvidia ? "cudaLaunchKernel" : "hipModuleLaunchKernel", NULL);
  expect_last_error_clean("a refused launch");
  /* The queue still works. */
  CHECK_OK(vt->kernel.launch(f->device, queue, scaled, &scaled_launch));
  CHECK_OK(sync_queue(f, queue));

  /* Errors through the vtable. */
  const char* broken = "extern \"C\" __global__ void k(int* p) { *p = q; }\n";
  const char* k_name = "k";
  image = NULL;
  expect_failure(vt->kernel.compile(f->device, broken, &k_name, 1, NULL, 0,
                                    &image, &size, NULL),
                 HRX_STATUS_INVALID_ARGUMENT, "compile error", "*p = q", NULL);
  hrx_native_module_t* bad_module = NULL;
  static const char garbage[64] = "this is not a kernel image";
  expect_failure(vt->kernel.module_load(f->device, garbage, sizeof(garbage),
                                 &bad_module),
                 HRX_STATUS_INVALID_ARGUMENT, "a corrupt image",
                 /* CUDA loads lazily: cudaLibraryLoadData may accept the
                  * bytes and cuLibraryGetModule refuse them, so the message
                  * names whichever call refused. */
                 nvidia ? "CUDA runtime" : "hipModuleLoadData",
                 "cannot load this image", NULL);
  CHECK(bad_module == NULL, "module written on failure");
  expect_last_error_clean("a corrupt image");
  expect_failure(vt->kernel.module_load(f->device, garbage, 0, &bad_module),
                 HRX_STATUS_INVALID_ARGUMENT, "an empty image", "empty", NULL);
  if (nvidia) {
    /* A cubin for another architecture family is refused at load. */
    const char* other = strcmp(info.target, "sm_80") == 0 ? "sm_90" : "sm_80";
    image = NULL;
    CHECK_OK(hrx_hip_kernel_compile("nvidia", NULL, other, kernel_source,
                                    kernel_names, 1, kernel_options, 3, &image,
                                    &size, NULL));
    expect_failure(vt->kernel.module_load(f->device, image, size, &bad_module),
                   HRX_STATUS_INVALID_ARGUMENT, "a foreign cubin",
                   "cannot load this image", NULL);
    CHECK(bad_module == NULL, "module written on failure");
    expect_last_error_clean("a foreign cubin");
    free(image);
    /* PTX for an older architecture loads (the driver compiles it). */
    char* ptx = NULL;
    char description[384];
    CHECK_OK(hrx_hip_batch_compile("nvidia", NULL, "sm_80", &ptx, &size,
                                   description, sizeof(description)));
    hrx_native_module_t* ptx_module = NULL;
    CHECK_OK(vt->kernel.module_load(f->device, ptx, size - 1, &ptx_module));
    hrx_native_kernel_t* batch = NULL;
    CHECK_OK(vt->kernel.module_get_kernel(f->device, ptx_module, "hrx_batch_execute",
                                   &batch, &ki));
    CHECK(ki.param_count == 1 && ki.param_size[0] > 3000,
          "batch kernel parameters: %d, %u bytes", ki.param_count,
          ki.param_size[0]);
    vt->kernel.module_unload(f->device, ptx_module);
    free(ptx);
  }
  hrx_native_kernel_t* missing = NULL;
  expect_failure(vt->kernel.module_get_kernel(f->device, module, "no_such_kernel",
                                       &missing, &ki),
                 HRX_STATUS_INVALID_ARGUMENT, "a missing kernel",
                 "no_such_kernel", "extern \"C\"", NULL);
  CHECK(missing == NULL, "kernel written on failure");
  expect_last_error_clean("a missing kernel");

  /* A kernel node in a native graph: fill, then scaled, then a copy; the
   * argument values are taken when the graph is made. */
  {
    unsigned int* copy_dst = NULL;
    CHECK_OK(vt->memory.alloc(f->device, kWords * 4, (void**)&copy_dst));
    unsigned int* node_out = out;
    const void* node_args[] = {&node_out};
    hrx_kernel_launch_t node_launch = scaled_launch;
    node_launch.args = node_args;
    const uint32_t after_fill = 0;
    const uint32_t after_kernel = 1;
    hrx_native_graph_node_t nodes[3] = {
        {.kind = HRX_NATIVE_GRAPH_FILL, .dst = out, .length = kWords * 4,
         .byte = 0},
        {.kind = HRX_NATIVE_GRAPH_KERNEL, .kernel = scaled,
         .launch = &node_launch, .after = &after_fill, .after_count = 1},
        {.kind = HRX_NATIVE_GRAPH_COPY, .dst = copy_dst, .src = out,
         .length = kWords * 4, .after = &after_kernel, .after_count = 1},
    };
    hrx_native_graph_t* graph = NULL;
    CHECK_OK(vt->graph.create(f->device, nodes, 3, &graph));
    node_out = NULL;
    for (int round = 0; round < 2; ++round) {
      CHECK_OK(vt->queue.fill(f->device, queue, copy_dst, 0xff, kWords * 4));
      CHECK_OK(vt->graph.launch(f->device, queue, graph));
    }
    if (download_words(f, queue, words, copy_dst, kWords)) return 1;
    bad = 0;
    for (int i = 0; i < kWords; ++i) bad += words[i] != 3;
    CHECK(bad == 0, "graph kernel node: %d words are not 3", bad);
    vt->graph.destroy(f->device, graph);
    vt->memory.free(f->device, copy_dst);
  }

  /* The benchmark's kernels: tiny from several threads at once, each on a
   * queue of its own, and spin under an unload that must wait for it. */
  image = NULL;
  CHECK_OK(vt->kernel.compile(f->device, hrx_bench_kernel_source("cuda"),
                              hrx_bench_kernel_symbols,
                              HRX_BENCH_KERNEL_COUNT, NULL, 0, &image,
                              &size, NULL));
  hrx_native_module_t* bench = NULL;
  CHECK_OK(vt->kernel.module_load(f->device, image, size, &bench));
  free(image);
  hrx_native_kernel_t* tiny = NULL;
  hrx_native_kernel_t* spin = NULL;
  CHECK_OK(vt->kernel.module_get_kernel(f->device, bench, "hrx_bench_tiny", &tiny,
                                 &ki));
  CHECK(!nvidia || (ki.param_count == 1 && ki.param_size[0] == 8),
        "tiny parameters %d", ki.param_count);
  CHECK_OK(vt->kernel.module_get_kernel(f->device, bench, "hrx_bench_spin", &spin,
                                 &ki));
  {
    enum { kThreads = 4, kLaunches = 5000 };
    unsigned int* counters = NULL;
    CHECK_OK(vt->memory.alloc(f->device, kThreads * 4, (void**)&counters));
    CHECK_OK(vt->queue.fill(f->device, queue, counters, 0, kThreads * 4));
    CHECK_OK(sync_queue(f, queue));
    pthread_t threads[kThreads];
    launch_thread_t args[kThreads];
    t0 = now_ns();
    for (int t = 0; t < kThreads; ++t) {
      args[t] = (launch_thread_t){f, tiny, counters + t, kLaunches, 0};
      pthread_create(&threads[t], NULL, launch_thread_main, &args[t]);
    }
    for (int t = 0; t < kThreads; ++t) {
      pthread_join(threads[t], NULL);
      CHECK(args[t].result == 0, "launch thread %d failed", t);
    }
    double seconds = (now_ns() - t0) / 1e9;
    if (download_words(f, queue, words, counters, kThreads)) return 1;
    for (int t = 0; t < kThreads; ++t) {
      CHECK(words[t] == kLaunches, "thread %d: %u of %d launches ran", t,
            words[t], kLaunches);
    }
    printf("  %d threads x %d tiny launches through the vtable: %.0f "
           "launches/s (incl. queue creation and synchronize)\n",
           kThreads, kLaunches, kThreads * kLaunches / seconds);
    vt->memory.free(f->device, counters);
  }
  {
    /* One thread, the lean path alone. */
    enum { kLaunches = 20000 };
    const void* tiny_args[] = {&out};
    hrx_kernel_launch_t tiny_launch = {
        .grid = {1, 1, 1}, .block = {32, 1, 1}, .arg_count = 1,
        .args = tiny_args, .arg_sizes = pointer_size};
    for (int i = 0; i < 1000; ++i) {
      CHECK_OK(vt->kernel.launch(f->device, queue, tiny, &tiny_launch));
    }
    CHECK_OK(sync_queue(f, queue));
    t0 = now_ns();
    for (int i = 0; i < kLaunches; ++i) {
      CHECK_OK(vt->kernel.launch(f->device, queue, tiny, &tiny_launch));
    }
    double us = (now_ns() - t0) / 1e3 / kLaunches;
    CHECK_OK(sync_queue(f, queue));
    printf("  one thread, tiny kernel_launch: %.2f us per launch\n", us);
  }
  {
    unsigned long long spin_ns = 50000000ull;  /* 50 ms */
    CHECK_OK(vt->queue.fill(f->device, queue, out, 0, 4));
    const void* spin_args[] = {&spin_ns, &out};
    const uint32_t spin_sizes[] = {8, sizeof(void*)};
    hrx_kernel_launch_t spin_launch = {
        .grid = {1, 1, 1}, .block = {32, 1, 1}, .arg_count = 2,
        .args = spin_args, .arg_sizes = spin_sizes};
    CHECK_OK(sync_queue(f, queue));
    t0 = now_ns();
    CHECK_OK(vt->kernel.launch(f->device, queue, spin, &spin_launch));
    vt->kernel.module_unload(f->device, bench);
    double unload_ms = (now_ns() - t0) / 1e6;
    uint64_t pending = 1;
    CHECK_OK(vt->queue.query(f->device, queue, &pending));
    CHECK(pending == 0, "the spin kernel still runs after module_unload");
    CHECK(unload_ms >= 40.0, "module_unload returned after %.1f ms, before "
          "the 50 ms launch ended", unload_ms);
    printf("  module_unload waited %.1f ms for a 50 ms launch\n", unload_ms);
    if (download_words(f, queue, words, out, 1)) return 1;
    CHECK(words[0] == 1, "spin kernel wrote %u", words[0]);
  }

  vt->kernel.module_unload(f->device, module);
  expect_last_error_clean("the kernel tests");
  vt->memory.free(f->device, out);
  vt->memory.free(f->device, x);
  vt->memory.free(f->device, y);
  free(xs);
  free(ys);
  return 0;
}

static int scenario_device(void) {
  int count = 0;
  CHECK_OK(hrx_hip_backend.load(true, &count));
  printf("library %s, platform %s, %d device(s)\n", hrx_hip_loaded_library(),
         hrx_hip_platform(), count);
  CHECK(count >= 1, "count %d", count);

  device_fixture_t f = {0};
  hrx_status_t status =
      hrx_hip_backend.device_open(count, &hrx_test_settings, &f.device);
  CHECK(status && hrx_status_code(status) == HRX_STATUS_OUT_OF_RANGE,
        "device_open(count): %s", hrx_status_message(status));
  hrx_status_free(status);
  CHECK_OK(hrx_hip_backend.device_open(0, &hrx_test_settings, &f.device));
  f.vt = f.device->vtable;

  hrx_device_info_t info;
  CHECK_OK(f.vt->query_info(f.device, &info));
  printf("info: backend=%s index=%d name=\"%s\" target=%s runtime=\"%s\" "
         "total=%llu max_native_queues=%d\n",
         info.backend, info.index, info.name, info.target, info.runtime,
         (unsigned long long)info.total_memory, info.max_native_queues);
  CHECK(strcmp(info.backend, "hip") == 0, "backend %s", info.backend);
  CHECK(info.name[0] != '\0', "empty name");
  CHECK(strncmp(info.target, "sm_", 3) == 0 ||
            strncmp(info.target, "gfx", 3) == 0,
        "target %s", info.target);
  CHECK(strstr(info.runtime, "runtime") != NULL, "runtime %s", info.runtime);
  CHECK(strcmp(info.platform, strncmp(info.target, "sm_", 3) == 0 ? "nvidia"
                                                                  : "amd") == 0,
        "platform %s for target %s", info.platform, info.target);
  CHECK(info.total_memory > 0, "total memory 0");
  CHECK(info.max_native_queues == 0, "max_native_queues %d",
        info.max_native_queues);
  uint64_t free_bytes = 0;
  CHECK_OK(f.vt->query_free_memory(f.device, &free_bytes));
  CHECK(free_bytes > 0 && free_bytes <= info.total_memory, "free %llu",
        (unsigned long long)free_bytes);

  hrx_native_queue_t* q1 = NULL;
  hrx_native_queue_t* q2 = NULL;
  CHECK_OK(create_queue(&f, &q1));
  CHECK_OK(create_queue(&f, &q2));
  CHECK(f.vt->queue.native_handle(q1) != NULL, "null native handle");
  CHECK(f.vt->queue.native_handle(q1) != f.vt->queue.native_handle(q2),
        "queues share a stream");

  /* Sizes crossing the ring / block boundary. */
  static const uint64_t sizes[] = {1, 100, 4096, 1u << 20, (4u << 20),
                                   (4u << 20) + 1, (6u << 20) + 3,
                                   (33u << 20) + 17};
  const uint64_t max_size = (33u << 20) + 17;
  void* a = NULL;
  void* b = NULL;
  CHECK_OK(f.vt->memory.alloc(f.device, max_size, &a));
  CHECK_OK(f.vt->memory.alloc(f.device, max_size, &b));
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
    uint64_t n = sizes[i];
    if (upload_pattern(&f, q1, a, n, i)) return 1;
    CHECK_OK(f.vt->queue.copy(f.device, q1, b, a, n));
    char what[64];
    snprintf(what, sizeof(what), "upload+copy of %llu bytes",
             (unsigned long long)n);
    if (expect_pattern(&f, q1, b, n, i, what)) return 1;
  }

  /* Fill, then cross-queue ordering through an event. */
  {
    const uint64_t n = 8u << 20;
    hrx_native_event_t* event = NULL;
    CHECK_OK(f.vt->event.create(f.device, &event));
    CHECK_OK(f.vt->queue.fill(f.device, q1, a, 0x5A, n));
    CHECK_OK(f.vt->event.record(f.device, q1, event));
    CHECK_OK(f.vt->queue.wait_event(f.device, q2, event));
    CHECK_OK(f.vt->queue.copy(f.device, q2, b, a, n));
    void* host = NULL;
    CHECK_OK(f.vt->memory.host_alloc(f.device, n, &host));
    CHECK_OK(f.vt->queue.download(f.device, q2, host, b, n));
    CHECK_OK(f.vt->event.record(f.device, q2, event));
    CHECK_OK(sync_event(&f, event));
    bool done = false;
    CHECK_OK(f.vt->event.query(f.device, event, &done));
    CHECK(done, "event not done after synchronize");
    const uint8_t* bytes = host;
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; ++i) bad += bytes[i] != 0x5A;
    CHECK(bad == 0, "fill/event/copy: %llu bytes differ",
          (unsigned long long)bad);
    f.vt->memory.host_free(f.device, host);
    f.vt->event.destroy(f.device, event);
  }

  /* Many small uploads: the ring wraps and fence slots are reused many
   * times over. */
  {
    const uint64_t slot = 4096;
    const int uploads = 20000;
    uint8_t* region = NULL;
    CHECK_OK(f.vt->memory.alloc(f.device, slot * (uint64_t)uploads, (void**)&region));
    /* A backlog ahead of the uploads, so that the fence slots run out while
     * their copies wait and uploads must wait for the oldest. */
    void* backlog = NULL;
    const uint64_t backlog_bytes = 1ull << 30;
    CHECK_OK(f.vt->memory.alloc(f.device, backlog_bytes, &backlog));
    for (int k = 0; k < 8; ++k) {
      CHECK_OK(f.vt->queue.fill(f.device, q1, backlog, (uint8_t)k, backlog_bytes));
    }
    uint8_t* host = malloc(slot);
    uint64_t start = now_ns();
    for (int k = 0; k < uploads; ++k) {
      for (uint64_t i = 0; i < slot; ++i) host[i] = pattern_byte(1000 + k, i);
      CHECK_OK(f.vt->queue.upload(f.device, q1, region + (uint64_t)k * slot, host,
                            slot));
    }
    uint64_t elapsed = now_ns() - start;
    free(host);
    CHECK_OK(sync_queue(&f, q1));
    printf("%d uploads of 4 KiB behind a backlog: %.2f us each (host time, "
           "incl. making the pattern)\n",
           uploads, (double)elapsed / uploads / 1000.0);
    if (expect_slots(&f, q2, region, slot, uploads, 1000, "small uploads")) {
      return 1;
    }
    f.vt->memory.free(f.device, backlog);
    f.vt->memory.free(f.device, region);
  }

  /* Concurrent uploads from four threads: two share q2, two have their
   * own queues. */
  {
    enum { kThreads = 4 };
    const uint64_t slot = 4096;
    const int per_thread = 3000;
    uint8_t* region = NULL;
    CHECK_OK(f.vt->memory.alloc(f.device, slot * per_thread * kThreads,
                         (void**)&region));
    pthread_t threads[kThreads];
    upload_thread_t args[kThreads];
    for (int t = 0; t < kThreads; ++t) {
      args[t] = (upload_thread_t){&f, t < 2 ? q2 : NULL,
                                  region + (uint64_t)t * slot * per_thread,
                                  slot, per_thread, 50000u * (t + 1), 0};
      pthread_create(&threads[t], NULL, upload_thread_main, &args[t]);
    }
    for (int t = 0; t < kThreads; ++t) {
      pthread_join(threads[t], NULL);
      CHECK(args[t].result == 0, "upload thread %d failed", t);
    }
    f.vt->memory.free(f.device, region);
  }

  /* Idle latency of a small copy then event_synchronize. */
  {
    hrx_native_event_t* event = NULL;
    CHECK_OK(f.vt->event.create(f.device, &event));
    enum { kSamples = 2000 };
    static uint64_t samples[kSamples];
    for (int k = 0; k < kSamples; ++k) {
      uint64_t t0 = now_ns();
      CHECK_OK(f.vt->queue.copy(f.device, q1, b, a, 4096));
      CHECK_OK(f.vt->event.record(f.device, q1, event));
      CHECK_OK(sync_event(&f, event));
      samples[k] = now_ns() - t0;
    }
    for (int i = 1; i < kSamples; ++i) {
      uint64_t v = samples[i];
      int j = i - 1;
      while (j >= 0 && samples[j] > v) {
        samples[j + 1] = samples[j];
        --j;
      }
      samples[j + 1] = v;
    }
    printf("4 KiB copy + record + event_synchronize: median %.1f us, "
           "p95 %.1f us\n",
           samples[kSamples / 2] / 1000.0,
           samples[(kSamples * 95 + 99) / 100 - 1] / 1000.0);
    f.vt->event.destroy(f.device, event);
  }

  /* Native graphs: fill a, copy a -> b after it, fill the head of b after
   * the copy; instantiated once, launched twice; then the host-function
   * entry orders a later copy after itself. */
  {
    const uint64_t n = 1u << 20;
    const uint32_t after_fill = 0;
    const uint32_t after_copy = 1;
    hrx_native_graph_node_t nodes[3] = {
        {.kind = HRX_NATIVE_GRAPH_FILL, .dst = a, .length = n, .byte = 0x11},
        {.kind = HRX_NATIVE_GRAPH_COPY, .dst = b, .src = a, .length = n,
         .after = &after_fill, .after_count = 1},
        {.kind = HRX_NATIVE_GRAPH_FILL, .dst = b, .length = 16, .byte = 0x22,
         .after = &after_copy, .after_count = 1},
    };
    hrx_native_graph_t* graph = NULL;
    CHECK_OK(f.vt->graph.create(f.device, nodes, 3, &graph));
    for (int round = 0; round < 2; ++round) {
      CHECK_OK(f.vt->queue.fill(f.device, q1, b, 0, n));
      CHECK_OK(f.vt->graph.launch(f.device, q1, graph));
    }
    uint8_t* host = NULL;
    CHECK_OK(f.vt->memory.host_alloc(f.device, n, (void**)&host));
    CHECK_OK(f.vt->queue.download(f.device, q1, host, b, n));
    CHECK_OK(sync_queue(&f, q1));
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; ++i) bad += host[i] != (i < 16 ? 0x22 : 0x11);
    CHECK(bad == 0, "native graph: %llu bytes differ", (unsigned long long)bad);
    /* Host time of one launch of 64 independent 4 KiB copies, against 64
     * separate copies (the point of a native graph: one call). */
    enum { kCopies = 64, kRounds = 200 };
    hrx_native_graph_node_t copies[kCopies];
    for (int k = 0; k < kCopies; ++k) {
      copies[k] = (hrx_native_graph_node_t){
          .kind = HRX_NATIVE_GRAPH_COPY, .dst = (uint8_t*)b + 4096u * k,
          .src = (uint8_t*)a + 4096u * k, .length = 4096};
    }
    hrx_native_graph_t* batch = NULL;
    CHECK_OK(f.vt->graph.create(f.device, copies, kCopies, &batch));
    uint64_t t0 = now_ns();
    for (int r = 0; r < kRounds; ++r) {
      CHECK_OK(f.vt->graph.launch(f.device, q1, batch));
    }
    uint64_t graph_ns = now_ns() - t0;
    CHECK_OK(sync_queue(&f, q1));
    t0 = now_ns();
    for (int r = 0; r < kRounds; ++r) {
      for (int k = 0; k < kCopies; ++k) {
        CHECK_OK(f.vt->queue.copy(f.device, q1, copies[k].dst, copies[k].src, 4096));
      }
    }
    uint64_t copy_ns = now_ns() - t0;
    CHECK_OK(sync_queue(&f, q1));
    printf("64 x 4 KiB copies: one native graph launch %.1f us, 64 copy "
           "calls %.1f us (host time per round)\n",
           graph_ns / 1000.0 / kRounds, copy_ns / 1000.0 / kRounds);
    /* A host function blocks the queue's later work until it returns. */
    static atomic_int host_calls;
    atomic_store(&host_calls, 0);
    CHECK_OK(f.vt->queue.fill(f.device, q1, a, 0x33, n));
    CHECK_OK(f.vt->queue.host_call(f.device, q1, count_host_call, &host_calls));
    CHECK_OK(f.vt->queue.copy(f.device, q1, b, a, n));
    CHECK_OK(f.vt->queue.download(f.device, q1, host, b, n));
    CHECK_OK(sync_queue(&f, q1));
    CHECK(atomic_load(&host_calls) == 1, "host function ran %d times",
          atomic_load(&host_calls));
    CHECK(host[0] == 0x33 && host[n - 1] == 0x33, "copy after host function");
    f.vt->memory.host_free(f.device, host);
    f.vt->graph.destroy(f.device, batch);
    f.vt->graph.destroy(f.device, graph);
  }

  /* Errors carry the runtime's names. */
  {
    void* huge = NULL;
    status = f.vt->memory.alloc(f.device, 1ull << 52, &huge);
    CHECK(status && hrx_status_code(status) == HRX_STATUS_OUT_OF_MEMORY,
          "huge alloc: %s %s",
          hrx_status_code_name(hrx_status_code(status)),
          hrx_status_message(status));
    CHECK(status && strstr(hrx_status_message(status), "Malloc failed: "),
          "message: %s", hrx_status_message(status));
    printf("huge alloc: %s: %s\n",
           hrx_status_code_name(hrx_status_code(status)),
           hrx_status_message(status));
    CHECK(huge == NULL, "out_ptr written on failure");
    hrx_status_free(status);
    /* The refusal is hrx's to report: the runtime's per-thread last error,
     * which other libraries on this thread read, is left clean. */
    CHECK(hrx_hip_rt.sym.GetLastError != NULL, "GetLastError not bound");
    if (hrx_hip_rt.sym.GetLastError) {
      hrx_hip_error_t last = hrx_hip_rt.sym.GetLastError();
      CHECK(hrx_hip_ok(last), "the failed Malloc left last error %d", (int)last);
    }
  }

  /* Pinned host memory: caller memory is registered; memory the runtime
   * pinned already (host_alloc) is reported as such, not refused, and
   * leaves the runtime's last error clean; both copy directly. */
  {
    const uint64_t n = 1 << 20;
    uint8_t* mine = aligned_alloc(4096, n);
    uint8_t* pinned = NULL;
    bool registered = false;
    CHECK(mine != NULL, "aligned_alloc");
    CHECK_OK(f.vt->memory.host_register(f.device, mine, n, &registered));
    CHECK(registered, "caller memory not registered");
    CHECK_OK(f.vt->memory.host_alloc(f.device, n, (void**)&pinned));
    registered = true;
    CHECK_OK(f.vt->memory.host_register(f.device, pinned, n, &registered));
    CHECK(!registered, "pinned memory registered again");
    if (hrx_hip_rt.sym.GetLastError) {
      hrx_hip_error_t last = hrx_hip_rt.sym.GetLastError();
      CHECK(hrx_hip_ok(last), "already registered left last error %d",
            (int)last);
    }
    memset(mine, 0x3C, n);
    memset(pinned, 0, n);
    CHECK_OK(f.vt->queue.upload_pinned(f.device, q1, a, mine, n));
    CHECK_OK(f.vt->queue.download(f.device, q1, pinned, a, n));
    CHECK_OK(sync_queue(&f, q1));
    CHECK(pinned[0] == 0x3C && pinned[n - 1] == 0x3C,
          "direct copies of registered memory");
    f.vt->memory.host_unregister(f.device, mine);
    f.vt->memory.host_free(f.device, pinned);
    free(mine);
    printf("pinned host memory: registered, already pinned, direct copies\n");
  }

  f.vt->memory.free(f.device, a);
  f.vt->memory.free(f.device, b);
  if (exercise_batches(&f, q1)) return 1;
  printf("kernels:\n");
  if (exercise_kernels(&f, q2)) return 1;
  f.vt->queue.destroy(f.device, q1);
  f.vt->queue.destroy(f.device, q2);
  f.vt->destroy(f.device);
  return 0;
}

static int run_device(const char* no_argument) {
  (void)no_argument;
  return scenario_device();
}

static const hip_scenario_t scenarios[] = {
    {"device", NULL, run_device},
};

int main(int argc, char** argv) {
  return hip_scenario_main(argc, argv, scenarios,
                           sizeof(scenarios) / sizeof(scenarios[0]));
}
