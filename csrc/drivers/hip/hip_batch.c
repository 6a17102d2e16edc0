#include "hip_batch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip_dynamic.h"
#include "hip_rtc.h"

/* Bytes one thread block moves per command: 256 threads x 16 bytes x 4.
 * Larger commands get more blocks along grid y. */
#define HRX_HIP_BATCH_CHUNK 16384u
#define HRX_HIP_BATCH_THREADS 256u

/* One command as the kernel reads it: dst, src, then the length in bits
 * 0-47, the fill byte in bits 48-55, bit 56 set for a fill and bit 57 set
 * when the block must wait for the commands before it (a barrier). */
typedef struct hrx_hip_batch_entry_s {
  uint64_t dst;
  uint64_t src;
  uint64_t word;
} hrx_hip_batch_entry_t;

#define HRX_HIP_BATCH_FILL_BIT (1ull << 56)
#define HRX_HIP_BATCH_BARRIER_BIT (1ull << 57)

typedef struct hrx_hip_batch_args_s {
  uint32_t count;
  uint32_t sequential;  /* 1: one block runs the commands in order */
  hrx_hip_batch_entry_t commands[HRX_BATCH_MAX_COMMANDS];
} hrx_hip_batch_args_t;

/* 4 KiB is the kernel-parameter limit of every CUDA and HIP release. */
_Static_assert(sizeof(hrx_hip_batch_args_t) <= 4096,
               "the batch must fit the kernel parameter limit");

/* The same layout on the device side; compiled by NVRTC or hiprtc, so it
 * uses no header. Two modes, chosen per launch by the host
 * (hrx_hip_batch_plan):
 * - parallel: no two commands touch overlapping bytes; block (x, y) runs
 *   chunk y of command x, all at once;
 * - sequential: one block runs the commands in order; a command marked
 *   with a barrier waits (__syncthreads, which also makes the block's
 *   earlier global writes visible to all its threads) for the ones before
 *   it. Commands that only rewrite the same destination the same way need
 *   no barrier: each byte is written by the same thread both times, in
 *   program order.
 * Byte k of a command is handled by thread (k / 16) % blockDim on the
 * 16-byte path (both addresses 16-byte aligned) and k % blockDim on the
 * byte path. */
static const char hrx_hip_batch_source[] =
    "#define HRX_MAX_COMMANDS 160\n"
    "#define HRX_CHUNK 16384ull\n"
    "struct hrx_command { unsigned long long dst, src, word; };\n"
    "struct hrx_args {\n"
    "  unsigned int count, sequential;\n"
    "  hrx_command commands[HRX_MAX_COMMANDS];\n"
    "};\n"
    "struct alignas(16) hrx_v16 { unsigned int x, y, z, w; };\n"
    "__device__ __forceinline__ void hrx_run(const hrx_command& c,\n"
    "    unsigned long long begin, unsigned long long end) {\n"
    "  const unsigned long long vend = begin + ((end - begin) & ~15ull);\n"
    "  unsigned char* dst = (unsigned char*)c.dst;\n"
    "  const unsigned char* src = (const unsigned char*)c.src;\n"
    "  const unsigned long long t = threadIdx.x, n = blockDim.x;\n"
    "  const unsigned char byte = (unsigned char)(c.word >> 48);\n"
    "  if ((c.word >> 56) & 1ull) {\n"
    "    if ((c.dst & 15ull) == 0) {\n"
    "      const unsigned int b4 = byte * 0x01010101u;\n"
    "      hrx_v16 v; v.x = b4; v.y = b4; v.z = b4; v.w = b4;\n"
    "      for (unsigned long long i = begin + 16 * t; i < vend; i += 16 * n)\n"
    "        *(hrx_v16*)(dst + i) = v;\n"
    "      for (unsigned long long i = vend + t; i < end; i += n)\n"
    "        dst[i] = byte;\n"
    "    } else {\n"
    "      for (unsigned long long i = begin + t; i < end; i += n)\n"
    "        dst[i] = byte;\n"
    "    }\n"
    "  } else if (((c.dst | c.src) & 15ull) == 0) {\n"
    "    for (unsigned long long i = begin + 16 * t; i < vend; i += 16 * n)\n"
    "      *(hrx_v16*)(dst + i) = *(const hrx_v16*)(src + i);\n"
    "    for (unsigned long long i = vend + t; i < end; i += n)\n"
    "      dst[i] = src[i];\n"
    "  } else {\n"
    "    for (unsigned long long i = begin + t; i < end; i += n)\n"
    "      dst[i] = src[i];\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "hrx_batch_execute(const hrx_args args) {\n"
    "  if (args.sequential) {\n"
    "    for (unsigned int i = 0; i < args.count; ++i) {\n"
    "      const hrx_command c = args.commands[i];\n"
    "      if ((c.word >> 57) & 1ull) __syncthreads();\n"
    "      hrx_run(c, 0, c.word & 0xFFFFFFFFFFFFull);\n"
    "    }\n"
    "    return;\n"
    "  }\n"
    "  if (blockIdx.x >= args.count) return;\n"
    "  const hrx_command c = args.commands[blockIdx.x];\n"
    "  const unsigned long long length = c.word & 0xFFFFFFFFFFFFull;\n"
    "  const unsigned long long begin = (unsigned long long)blockIdx.y * "
    "HRX_CHUNK;\n"
    "  if (begin >= length) return;\n"
    "  hrx_run(c, begin, length - begin > HRX_CHUNK ? begin + HRX_CHUNK : "
    "length);\n"
    "}\n";

_Static_assert(HRX_BATCH_MAX_COMMANDS == 160,
               "update HRX_MAX_COMMANDS in the kernel source");

/* A byte range [lo, hi); empty when lo >= hi. */
typedef struct hrx_hip_range_s {
  uint64_t lo, hi;
} hrx_hip_range_t;

static const hrx_hip_range_t hrx_hip_range_empty = {UINT64_MAX, 0};

static bool hrx_hip_range_overlaps(hrx_hip_range_t a, hrx_hip_range_t b) {
  return a.lo < b.hi && b.lo < a.hi;
}

static void hrx_hip_range_extend(hrx_hip_range_t* hull, hrx_hip_range_t r) {
  if (r.lo < hull->lo) hull->lo = r.lo;
  if (r.hi > hull->hi) hull->hi = r.hi;
}

/* How thread t maps to a command's destination bytes: equal keys write
 * every byte from the same thread. */
typedef struct hrx_hip_write_key_s {
  uint64_t dst, length;
  bool wide;
} hrx_hip_write_key_t;

void hrx_hip_batch_plan(const hrx_batch_command_t* commands, uint32_t count,
                        uint64_t* out_words, bool* out_sequential) {
  /* Hulls are conservative: a false overlap costs a barrier (or the
   * parallel mode), never correctness. */
  hrx_hip_range_t all_dst = hrx_hip_range_empty, all_src = hrx_hip_range_empty;
  hrx_hip_range_t seg_dst = hrx_hip_range_empty, seg_src = hrx_hip_range_empty;
  hrx_hip_write_key_t seg_key = {0, 0, false};
  bool seg_uniform = false;
  bool parallel = true;
  for (uint32_t i = 0; i < count; ++i) {
    const hrx_batch_command_t* c = &commands[i];
    bool fill = c->kind == HRX_BATCH_FILL;
    uint64_t dst_lo = (uint64_t)(uintptr_t)c->dst;
    uint64_t src_lo = fill ? 0 : (uint64_t)(uintptr_t)c->src;
    hrx_hip_range_t dst = {dst_lo, dst_lo + c->length};
    hrx_hip_range_t src = fill ? hrx_hip_range_empty
                               : (hrx_hip_range_t){src_lo, src_lo + c->length};
    hrx_hip_write_key_t key = {dst_lo, c->length,
                               ((dst_lo | src_lo) & 15u) == 0};
    if (hrx_hip_range_overlaps(dst, all_dst) ||
        hrx_hip_range_overlaps(dst, all_src) ||
        hrx_hip_range_overlaps(src, all_dst)) {
      parallel = false;
    }
    hrx_hip_range_extend(&all_dst, dst);
    if (!fill) hrx_hip_range_extend(&all_src, src);
    bool same_writer = seg_uniform && key.dst == seg_key.dst &&
                       key.length == seg_key.length && key.wide == seg_key.wide;
    bool barrier = hrx_hip_range_overlaps(src, seg_dst) ||
                   hrx_hip_range_overlaps(dst, seg_src) ||
                   (hrx_hip_range_overlaps(dst, seg_dst) && !same_writer);
    if (barrier || i == 0) {
      seg_dst = dst;
      seg_src = src;
      seg_key = key;
      seg_uniform = true;
    } else {
      if (!same_writer) seg_uniform = false;
      hrx_hip_range_extend(&seg_dst, dst);
      if (!fill) hrx_hip_range_extend(&seg_src, src);
    }
    out_words[i] = c->length | ((uint64_t)c->byte << 48) |
                   (fill ? HRX_HIP_BATCH_FILL_BIT : 0) |
                   (barrier ? HRX_HIP_BATCH_BARRIER_BIT : 0);
  }
  *out_sequential = !parallel;
}

static const char hrx_hip_batch_kernel_name[] = "hrx_batch_execute";

struct hrx_hip_batch_s {
  int device_index;
  char target[64];
  pthread_mutex_t mutex;
  atomic_bool prepared;          /* written under mutex, once */
  atomic_bool usable;            /* set once prepared successfully */
  atomic_uint_fast64_t failed_launches;  /* each fell back for its batch */
  char last_failure[256];        /* mutex: the latest failed launch */
  hrx_hip_library_t library;     /* NVIDIA; owned by the runtime */
  hrx_hip_kernel_t kernel;       /* NVIDIA */
  hrx_hip_module_t module;       /* AMD */
  hrx_hip_function_t function;   /* AMD */
  char description[384];         /* mutex until prepared */
};

hrx_status_t hrx_hip_batch_create(int device_index, const char* target,
                                  hrx_hip_batch_t** out_batch) {
  hrx_hip_batch_t* batch = calloc(1, sizeof(*batch));
  if (!batch) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate the batch kernel state");
  }
  batch->device_index = device_index;
  snprintf(batch->target, sizeof(batch->target), "%s", target);
  pthread_mutex_init(&batch->mutex, NULL);
  atomic_init(&batch->usable, false);
  atomic_init(&batch->prepared, false);
  atomic_init(&batch->failed_launches, 0);
  snprintf(batch->description, sizeof(batch->description),
           "not prepared yet");
  *out_batch = batch;
  return NULL;
}

void hrx_hip_batch_destroy(hrx_hip_batch_t* batch) {
  if (!batch) return;
  /* The library / module stays loaded until the runtime tears the context
   * down: unloading needs entry points that older runtimes lack, and a
   * device is opened at most a few times per process. */
  pthread_mutex_destroy(&batch->mutex);
  free(batch);
}

hrx_status_t hrx_hip_batch_compile(const char* platform,
                                   const char* runtime_library,
                                   const char* target, char** out_image,
                                   size_t* out_size, char* out_description,
                                   size_t description_capacity) {
  /* PTX on NVIDIA (binary = false): the kernel is loaded once per device,
   * and the driver's own compile of it is what the description names. */
  hrx_rtc_plan_t plan;
  HRX_RETURN_IF_ERROR(
      hrx_hip_rtc_plan(platform, runtime_library, target, false, &plan));
  /* -O3 is hiprtc's spelling; NVRTC optimizes by default and rejects it. */
  const char* options[] = {"-O3"};
  HRX_RETURN_IF_ERROR(hrx_hip_rtc_compile(
      &plan, hrx_hip_batch_source, "hrx_batch.cu", options, plan.amd ? 1 : 0,
      NULL, 0, out_image, out_size, NULL, NULL));
  const char* base = strrchr(plan.library, '/');
  snprintf(out_description, description_capacity, "%s from %.200s for %.40s",
           plan.amd ? "code object" : "PTX", base ? base + 1 : plan.library,
           plan.arch);
  return NULL;
}

static hrx_status_t hrx_hip_batch_load_locked(hrx_hip_batch_t* batch) {
  bool amd = strcmp(hrx_hip_rt.platform->id, "amd") == 0;
  if (amd ? !(hrx_hip_rt.sym.ModuleLoadData &&
              hrx_hip_rt.sym.ModuleGetFunction &&
              hrx_hip_rt.sym.ModuleLaunchKernel)
          : !(hrx_hip_rt.sym.LibraryLoadData &&
              hrx_hip_rt.sym.LibraryGetKernel && hrx_hip_rt.sym.LaunchKernel)) {
    return hrx_make_status(
        HRX_STATUS_UNAVAILABLE, "%s has no %s (needs %s)",
        hrx_hip_runtime_library(), amd ? "module loading" : "library loading",
        amd ? "hipModuleLoadData" : "CUDA 12.0 or later");
  }
  char* image = NULL;
  size_t image_size = 0;
  char description[sizeof(batch->description)];
  HRX_RETURN_IF_ERROR(hrx_hip_batch_compile(
      hrx_hip_rt.platform->id, hrx_hip_runtime_library(), batch->target,
      &image, &image_size, description, sizeof(description)));
  hrx_status_t status = hrx_hip_make_current(batch->device_index);
  if (!status) {
    hrx_hip_error_t err;
    if (amd) {
      err = hrx_hip_rt.sym.ModuleLoadData(&batch->module, image);
      if (!hrx_hip_ok(err)) {
        status = HRX_HIP_ERROR(DEVICE_ERROR, ModuleLoadData, err);
      } else {
        err = hrx_hip_rt.sym.ModuleGetFunction(&batch->function,
                                               batch->module,
                                               hrx_hip_batch_kernel_name);
        if (!hrx_hip_ok(err)) {
          status = HRX_HIP_ERROR(DEVICE_ERROR, ModuleGetFunction, err);
        }
      }
    } else {
      err = hrx_hip_rt.sym.LibraryLoadData(&batch->library, image, NULL, NULL,
                                           0, NULL, NULL, 0);
      if (!hrx_hip_ok(err)) {
        status = HRX_HIP_ERROR(DEVICE_ERROR, LibraryLoadData, err);
      } else {
        err = hrx_hip_rt.sym.LibraryGetKernel(&batch->kernel, batch->library,
                                              hrx_hip_batch_kernel_name);
        if (!hrx_hip_ok(err)) {
          status = HRX_HIP_ERROR(DEVICE_ERROR, LibraryGetKernel, err);
        }
      }
    }
  }
  free(image);
  if (!status) {
    snprintf(batch->description, sizeof(batch->description), "%s",
             description);
  }
  return status;
}

bool hrx_hip_batch_prepare(hrx_hip_batch_t* batch) {
  pthread_mutex_lock(&batch->mutex);
  if (!atomic_load(&batch->prepared)) {
    hrx_status_t status = hrx_hip_batch_load_locked(batch);
    if (status) {
      snprintf(batch->description, sizeof(batch->description),
               "unavailable: %.300s; one native call per command",
               hrx_status_message(status));
      hrx_status_free(status);
    } else {
      atomic_store(&batch->usable, true);
    }
    atomic_store(&batch->prepared, true);
  }
  pthread_mutex_unlock(&batch->mutex);
  return atomic_load(&batch->usable);
}

bool hrx_hip_batch_prepared(hrx_hip_batch_t* batch) {
  return atomic_load(&batch->prepared);
}

void hrx_hip_batch_describe(hrx_hip_batch_t* batch, char* out,
                            size_t capacity) {
  pthread_mutex_lock(&batch->mutex);
  uint64_t failed = atomic_load(&batch->failed_launches);
  if (failed) {
    snprintf(out, capacity,
             "%s; %llu launch%s failed and fell back to one native call per "
             "command for that batch (latest: %s)",
             batch->description, (unsigned long long)failed,
             failed == 1 ? "" : "es", batch->last_failure);
  } else {
    snprintf(out, capacity, "%s", batch->description);
  }
  pthread_mutex_unlock(&batch->mutex);
}

bool hrx_hip_batch_fits(const hrx_batch_command_t* commands, uint32_t count) {
  for (uint32_t i = 0; i < count; ++i) {
    if (commands[i].length > HRX_BATCH_MAX_COMMAND_BYTES) return false;
  }
  return true;
}

hrx_status_t hrx_hip_batch_launch(hrx_hip_batch_t* batch,
                                  hrx_hip_stream_t stream,
                                  const hrx_batch_command_t* commands,
                                  uint32_t count) {
  hrx_hip_batch_args_t args;
  uint64_t words[HRX_BATCH_MAX_COMMANDS];
  bool sequential = false;
  hrx_hip_batch_plan(commands, count, words, &sequential);
  args.count = count;
  args.sequential = sequential;
  uint64_t longest = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const hrx_batch_command_t* c = &commands[i];
    args.commands[i].dst = (uint64_t)(uintptr_t)c->dst;
    args.commands[i].src = (uint64_t)(uintptr_t)c->src;
    args.commands[i].word = words[i];
    if (c->length > longest) longest = c->length;
  }
  unsigned int blocks = sequential ? 1 : count;
  unsigned int chunks =
      sequential ? 1
                 : (unsigned int)((longest + HRX_HIP_BATCH_CHUNK - 1) /
                                  HRX_HIP_BATCH_CHUNK);
  void* params[] = {&args};
  hrx_hip_error_t err;
  if (batch->function) {
    err = hrx_hip_rt.sym.ModuleLaunchKernel(batch->function, blocks, chunks, 1,
                                            HRX_HIP_BATCH_THREADS, 1, 1, 0,
                                            stream, params, NULL);
  } else {
    hrx_hip_dim3_t grid = {blocks, chunks, 1};
    hrx_hip_dim3_t block = {HRX_HIP_BATCH_THREADS, 1, 1};
    err = hrx_hip_rt.sym.LaunchKernel((const void*)batch->kernel, grid, block,
                                      params, 0, stream);
  }
  if (hrx_hip_ok(err)) return NULL;
  hrx_status_t status =
      batch->function ? HRX_HIP_ERROR(DEVICE_ERROR, ModuleLaunchKernel, err)
                      : HRX_HIP_ERROR(DEVICE_ERROR, LaunchKernel, err);
  pthread_mutex_lock(&batch->mutex);
  atomic_fetch_add(&batch->failed_launches, 1);
  snprintf(batch->last_failure, sizeof(batch->last_failure), "%.250s",
           hrx_status_message(status));
  pthread_mutex_unlock(&batch->mutex);
  return status;
}
