/* C tests of kernels on the host backend through the public API: compile
 * and launch (results checked), grids of 3-D blocks, blocks in parallel on
 * several engines, blocks with barriers (fibers), ordering with uploads,
 * fills and copies (batching on and off), the launcher's parameter
 * handling (arrays, function pointers, structs, qualifiers, no
 * parameters), every launch check, images (saved and loaded; foreign ones
 * refused), the caches (memory, disk, corrupt and foreign entries rebuilt,
 * the cache off, an unwritable directory), compile errors and a missing
 * compiler, graphs with kernel nodes, an injected launch failure, and
 * lifetimes. Also run under ASan and TSan. Kernels are compiled with the
 * system C compiler. Prints "N passed, M failed" last and exits non-zero
 * on any failure. */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/kernel_cache.h"
#include "core/kernel_source_names.h"
#include "core/live_device.h"
#include "hrx.h"

#include "bench/bench_kernels.h"
#include "check.h"
#include "testing/hrx_testing.h"

static hrx_view_t whole(hrx_buffer_t* buffer) {
  hrx_view_t view = {buffer, 0, hrx_buffer_size(buffer)};
  return view;
}

static hrx_launch_config_t config_1d(uint32_t grid, uint32_t block) {
  hrx_launch_config_t config = {{grid, 1, 1}, {block, 1, 1}, 0};
  return config;
}

static hrx_kernel_t* compile(hrx_device_t* device, const char* source,
                             const char* name) {
  hrx_kernel_t* kernel = NULL;
  hrx_status_t status =
      hrx_device_compile_kernel(device, source, name, NULL, 0, &kernel);
  if (status) {
    fprintf(stderr, "compiling %s: %s\n", name, hrx_status_message(status));
  }
  CHECK_OK(status);
  return kernel;
}

static const char kSaxpy[] =
    "__global__ void saxpy(const float* x, float* y, float a, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

/* upload, fill, upload, kernel, copy, read: each sees the one before. */
static void test_saxpy(hrx_device_t* device, bool batching) {
  hrx_device_set_batching(device, batching);
  hrx_kernel_t* kernel = compile(device, kSaxpy, "saxpy");
  if (!kernel) return;
  hrx_kernel_attributes_t attributes;
  hrx_kernel_query_attributes(kernel, &attributes);
  CHECK(attributes.param_count == 4);
  CHECK(attributes.param_size[0] == sizeof(void*));
  CHECK(attributes.param_size[2] == sizeof(float));
  CHECK(attributes.param_size[3] == sizeof(int));
  CHECK(attributes.param_offset[3] > attributes.param_offset[2]);
  CHECK(attributes.max_threads_per_block == 1024);
  CHECK(strcmp(hrx_kernel_name(kernel), "saxpy") == 0);
  CHECK(hrx_kernel_device(kernel) == device);
  enum { N = 1000 };
  static float x[N], y[N], out[N];
  for (int i = 0; i < N; ++i) {
    x[i] = (float)i;
    y[i] = 1.0f;
  }
  hrx_stream_t* stream = NULL;
  hrx_buffer_t *bx = NULL, *by = NULL, *copy = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, sizeof(x), &bx));
  CHECK_OK(hrx_buffer_allocate(device, sizeof(y), &by));
  CHECK_OK(hrx_buffer_allocate(device, sizeof(y), &copy));
  CHECK_OK(hrx_stream_upload(stream, whole(bx), x, sizeof(x)));
  CHECK_OK(hrx_stream_fill(stream, whole(by), 0));
  CHECK_OK(hrx_stream_upload(stream, whole(by), y, sizeof(y)));
  float a = 2.0f;
  int n = N;
  hrx_kernel_arg_t args[4] = {
      hrx_kernel_arg_view(whole(bx)), hrx_kernel_arg_view(whole(by)),
      hrx_kernel_arg_value(&a, sizeof(a)),
      hrx_kernel_arg_value(&n, sizeof(n))};
  hrx_launch_config_t config = config_1d((N + 127) / 128, 128);
  CHECK_OK(hrx_stream_launch(stream, kernel, &config, args, 4));
  CHECK_OK(hrx_stream_copy(stream, whole(copy), whole(by)));
  CHECK_OK(hrx_stream_read_blocking(stream, whole(copy), out, sizeof(out),
                                    NULL, NULL));
  int wrong = 0;
  for (int i = 0; i < N; ++i) wrong += out[i] != 2.0f * (float)i + 1.0f;
  CHECK(wrong == 0);
  hrx_buffer_release(copy);
  hrx_buffer_release(bx);
  hrx_buffer_release(by);
  hrx_stream_release(stream);
  hrx_kernel_release(kernel);
  hrx_device_set_batching(device, true);
}

/* Every thread of a 3-D grid of 3-D blocks writes where it is. */
static const char kWhere[] =
    "__global__ void where(unsigned int* out) {\n"
    "  unsigned int block = (blockIdx.z * gridDim.y + blockIdx.y) *\n"
    "      gridDim.x + blockIdx.x;\n"
    "  unsigned int thread = (threadIdx.z * blockDim.y + threadIdx.y) *\n"
    "      blockDim.x + threadIdx.x;\n"
    "  unsigned int threads = blockDim.x * blockDim.y * blockDim.z;\n"
    "  out[block * threads + thread] = block * 1000 + thread;\n"
    "}\n";

static void test_indices(hrx_device_t* device) {
  hrx_kernel_t* kernel = compile(device, kWhere, "where");
  if (!kernel) return;
  hrx_launch_config_t config = {{3, 2, 2}, {4, 3, 2}, 0};
  enum { BLOCKS = 12, THREADS = 24, N = BLOCKS * THREADS };
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* out = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, N * sizeof(unsigned), &out));
  CHECK_OK(hrx_stream_fill(stream, whole(out), 0xff));
  hrx_kernel_arg_t arg = hrx_kernel_arg_view(whole(out));
  CHECK_OK(hrx_stream_launch(stream, kernel, &config, &arg, 1));
  unsigned values[N];
  CHECK_OK(hrx_stream_read_blocking(stream, whole(out), values,
                                    sizeof(values), NULL, NULL));
  int wrong = 0;
  for (unsigned b = 0; b < BLOCKS; ++b) {
    for (unsigned t = 0; t < THREADS; ++t) {
      wrong += values[b * THREADS + t] != b * 1000 + t;
    }
  }
  CHECK(wrong == 0);
  hrx_buffer_release(out);
  hrx_stream_release(stream);
  hrx_kernel_release(kernel);
}

/* Each block spins a while and notes its thread (the address of the
 * thread-local launch state differs per thread). */
static const char kWho[] =
    "#include <time.h>\n"
    "__global__ void who(unsigned long long* out, long long ns) {\n"
    "  struct timespec t0, t1;\n"
    "  clock_gettime(CLOCK_MONOTONIC, &t0);\n"
    "  do { clock_gettime(CLOCK_MONOTONIC, &t1); }\n"
    "  while ((t1.tv_sec - t0.tv_sec) * 1000000000LL +\n"
    "         (t1.tv_nsec - t0.tv_nsec) < ns);\n"
    "  out[blockIdx.x] = (unsigned long long)&hrx_kernel_thread;\n"
    "}\n";

static void test_parallel_blocks(hrx_device_t* device) {
  hrx_kernel_t* kernel = compile(device, kWho, "who");
  if (!kernel) return;
  enum { BLOCKS = 16 };
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* out = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, BLOCKS * 8, &out));
  long long ns = 2000000;
  hrx_kernel_arg_t args[2] = {hrx_kernel_arg_view(whole(out)),
                              hrx_kernel_arg_value(&ns, sizeof(ns))};
  hrx_launch_config_t config = config_1d(BLOCKS, 1);
  uint64_t start = hrx_now_ns();
  CHECK_OK(hrx_stream_launch(stream, kernel, &config, args, 2));
  unsigned long long threads[BLOCKS];
  CHECK_OK(hrx_stream_read_blocking(stream, whole(out), threads,
                                    sizeof(threads), NULL, NULL));
  uint64_t elapsed = hrx_now_ns() - start;
  int distinct = 0;
  for (int i = 0; i < BLOCKS; ++i) {
    bool seen = false;
    for (int j = 0; j < i; ++j) seen = seen || threads[j] == threads[i];
    distinct += !seen && threads[i] != 0;
  }
  /* Four engines (main): blocks ran on more than one thread. */
  CHECK(distinct > 1);
  /* And every block ran its full time before the read. */
  CHECK(elapsed >= (uint64_t)ns * BLOCKS / 4);
  hrx_buffer_release(out);
  hrx_stream_release(stream);
  hrx_kernel_release(kernel);
}

/* A CUDA-style block reduction with barriers: its blocks run as fibers,
 * many blocks at once on the four engines, each with its own shared
 * memory (static and dynamic). */
static const char kBlockSum[] =
    "extern \"C\" __global__ void block_sum(const unsigned int* in,\n"
    "                                       unsigned int* out) {\n"
    "  extern __shared__ unsigned int partial[];\n"
    "  __shared__ unsigned int total;\n"
    "  unsigned int t = threadIdx.x;\n"
    "  partial[t] = in[blockIdx.x * blockDim.x + t];\n"
    "  if (t == 0) total = 0;\n"
    "  __syncthreads();\n"
    "  for (unsigned int half = blockDim.x / 2; half > 0; half >>= 1) {\n"
    "    if (t < half) partial[t] += partial[t + half];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  atomicAdd(&total, partial[0] == 0 ? 0u : 1u);\n"
    "  __syncthreads();\n"
    "  if (t == 0) out[blockIdx.x] = partial[0] * 1000u + total;\n"
    "}\n";

static void test_barrier_blocks(hrx_device_t* device) {
  hrx_kernel_t* kernel = compile(device, kBlockSum, "block_sum");
  if (!kernel) return;
  enum { BLOCKS = 64, THREADS = 128 };
  static unsigned int in[BLOCKS * THREADS], out[BLOCKS];
  for (int i = 0; i < BLOCKS * THREADS; ++i) in[i] = (unsigned)(i / THREADS);
  hrx_stream_t* stream = NULL;
  hrx_buffer_t *bin = NULL, *bout = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, sizeof(in), &bin));
  CHECK_OK(hrx_buffer_allocate(device, sizeof(out), &bout));
  CHECK_OK(hrx_stream_upload(stream, whole(bin), in, sizeof(in)));
  hrx_kernel_arg_t args[2] = {hrx_kernel_arg_view(whole(bin)),
                              hrx_kernel_arg_view(whole(bout))};
  hrx_launch_config_t config = config_1d(BLOCKS, THREADS);
  config.shared_bytes = THREADS * sizeof(unsigned int);
  for (int repeat = 0; repeat < 3; ++repeat) {
    CHECK_OK(hrx_stream_launch(stream, kernel, &config, args, 2));
  }
  CHECK_OK(hrx_stream_read_blocking(stream, whole(bout), out, sizeof(out),
                                    NULL, NULL));
  int wrong = 0;
  for (unsigned b = 0; b < BLOCKS; ++b) {
    unsigned sum = b * THREADS;
    wrong += out[b] != sum * 1000u + (sum ? THREADS : 0u);
  }
  CHECK(wrong == 0);
  hrx_buffer_release(bin);
  hrx_buffer_release(bout);
  hrx_stream_release(stream);
  hrx_kernel_release(kernel);
}

/* Parameters the launcher must pass as declared. */
static const char kParams[] =
    "struct pair { int a; double b; };\n"
    "static void twice(long long* p) { *p *= 2; }\n"
    "__global__ void params(long long out[4], const int n, register char c,\n"
    "                       struct pair p, unsigned long long u,\n"
    "                       void (*f)(long long*), float m[2][3],\n"
    "                       short __attribute__((unused)) s) {\n"
    "  out[0] = n + c; out[1] = p.a + (long long)p.b; out[2] = (long long)u;\n"
    "  out[3] = 21; twice(&out[3]); (void)f; (void)m;\n"
    "}\n"
    "__global__ void nothing(void) {}\n"
    "__global__ void empty() {}\n";

static void test_params(hrx_device_t* device) {
  hrx_kernel_t* kernel = compile(device, kParams, "params");
  hrx_kernel_t* nothing = compile(device, kParams, "nothing");
  hrx_kernel_t* empty = compile(device, kParams, "empty");
  if (!kernel || !nothing || !empty) return;
  hrx_kernel_attributes_t attributes;
  hrx_kernel_query_attributes(kernel, &attributes);
  CHECK(attributes.param_count == 8);
  struct pair {
    int a;
    double b;
  } p = {40, 2.5};
  CHECK(attributes.param_size[0] == sizeof(void*));
  CHECK(attributes.param_size[1] == sizeof(int));
  CHECK(attributes.param_size[2] == 1);
  CHECK(attributes.param_size[3] == sizeof(p));
  CHECK(attributes.param_size[4] == 8);
  CHECK(attributes.param_size[5] == sizeof(void*));
  CHECK(attributes.param_size[6] == sizeof(void*));
  CHECK(attributes.param_size[7] == sizeof(short));
  hrx_kernel_query_attributes(nothing, &attributes);
  CHECK(attributes.param_count == 0);
  hrx_kernel_query_attributes(empty, &attributes);
  CHECK(attributes.param_count == 0);
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* out = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 32, &out));
  int n = 5;
  char c = 3;
  unsigned long long u = 1ull << 40;
  void* f = NULL;
  void* m = NULL;
  short s = 1;
  hrx_kernel_arg_t args[8] = {
      hrx_kernel_arg_view(whole(out)), hrx_kernel_arg_value(&n, sizeof(n)),
      hrx_kernel_arg_value(&c, 1),     hrx_kernel_arg_value(&p, sizeof(p)),
      hrx_kernel_arg_value(&u, 8),     hrx_kernel_arg_value(&f, sizeof(f)),
      hrx_kernel_arg_value(&m, sizeof(m)), hrx_kernel_arg_value(&s, 2)};
  hrx_launch_config_t one = config_1d(1, 1);
  CHECK_OK(hrx_stream_launch(stream, kernel, &one, args, 8));
  CHECK_OK(hrx_stream_launch(stream, nothing, &one, NULL, 0));
  CHECK_OK(hrx_stream_launch(stream, empty, &one, NULL, 0));
  long long values[4] = {0};
  CHECK_OK(hrx_stream_read_blocking(stream, whole(out), values,
                                    sizeof(values), NULL, NULL));
  CHECK(values[0] == 8);
  CHECK(values[1] == 42);
  CHECK(values[2] == (long long)(1ull << 40));
  CHECK(values[3] == 42);
  hrx_buffer_release(out);
  hrx_stream_release(stream);
  hrx_kernel_release(kernel);
  hrx_kernel_release(nothing);
  hrx_kernel_release(empty);
}

/* Every refusal, before anything is submitted. */
static void test_launch_checks(hrx_device_t* device, hrx_device_t* other) {
  hrx_kernel_t* kernel = compile(device, kSaxpy, "saxpy");
  hrx_kernel_t* foreign = compile(other, kSaxpy, "saxpy");
  if (!kernel || !foreign) return;
  hrx_stream_t* stream = NULL;
  hrx_buffer_t *b = NULL, *ob = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 64, &b));
  CHECK_OK(hrx_buffer_allocate(other, 64, &ob));
  float a = 1;
  int n = 1;
  hrx_kernel_arg_t args[5] = {
      hrx_kernel_arg_view(whole(b)), hrx_kernel_arg_view(whole(b)),
      hrx_kernel_arg_value(&a, 4), hrx_kernel_arg_value(&n, 4),
      hrx_kernel_arg_value(&n, 4)};
  uint64_t before = hrx_device_commands_submitted(device);
  hrx_launch_config_t config = config_1d(1, 1);
  config.grid[1] = 0;
  CHECK_CODE(hrx_stream_launch(stream, kernel, &config, args, 4),
             HRX_STATUS_INVALID_ARGUMENT, "grid.y is 0");
  config = config_1d(1, 1);
  config.block[2] = 65;
  CHECK_CODE(hrx_stream_launch(stream, kernel, &config, args, 4),
             HRX_STATUS_INVALID_ARGUMENT, "at most 64 threads along z");
  config = config_1d(1, 1);
  config.grid[1] = 65536;
  CHECK_CODE(hrx_stream_launch(stream, kernel, &config, args, 4),
             HRX_STATUS_INVALID_ARGUMENT, "max_grid_dim");
  config = config_1d(1, 64);
  config.block[1] = 32;
  CHECK_CODE(hrx_stream_launch(stream, kernel, &config, args, 4),
             HRX_STATUS_INVALID_ARGUMENT, "2048 threads");
  config = config_1d(1, 1);
  config.shared_bytes = 256 * 1024 + 1;
  CHECK_CODE(hrx_stream_launch(stream, kernel, &config, args, 4),
             HRX_STATUS_INVALID_ARGUMENT, "max_dynamic_shared_bytes");
  config = config_1d(1, 1);
  CHECK_CODE(hrx_stream_launch(stream, kernel, &config, args, 3),
             HRX_STATUS_INVALID_ARGUMENT, "takes 4 arguments; got 3");
  CHECK_CODE(hrx_stream_launch(stream, kernel, &config, args, 5),
             HRX_STATUS_INVALID_ARGUMENT, "takes 4 arguments; got 5");
  hrx_kernel_arg_t wrong[4] = {args[0], args[1], hrx_kernel_arg_value(&a, 8),
                               args[3]};
  CHECK_CODE(hrx_stream_launch(stream, kernel, &config, wrong, 4),
             HRX_STATUS_INVALID_ARGUMENT, "argument 2 is 8 bytes");
  wrong[2] = hrx_kernel_arg_value(NULL, 4);
  CHECK_CODE(hrx_stream_launch(stream, kernel, &config, wrong, 4),
             HRX_STATUS_INVALID_ARGUMENT, "no value");
  wrong[2] = args[2];
  wrong[1].kind = (hrx_kernel_arg_kind_t)7;
  CHECK_CODE(hrx_stream_launch(stream, kernel, &config, wrong, 4),
             HRX_STATUS_INVALID_ARGUMENT, "kind 7");
  wrong[1] = hrx_kernel_arg_view(whole(ob));
  CHECK_CODE(hrx_stream_launch(stream, kernel, &config, wrong, 4),
             HRX_STATUS_INVALID_ARGUMENT, "argument 1 belongs to device");
  hrx_view_t empty_view = {b, 0, 0};
  wrong[1] = hrx_kernel_arg_view(empty_view);
  CHECK_CODE(hrx_stream_launch(stream, kernel, &config, wrong, 4),
             HRX_STATUS_INVALID_ARGUMENT, "argument 1 is empty");
  hrx_view_t outside = {b, 60, 8};
  wrong[1] = hrx_kernel_arg_view(outside);
  CHECK_CODE(hrx_stream_launch(stream, kernel, &config, wrong, 4),
             HRX_STATUS_OUT_OF_RANGE, "argument 1");
  CHECK_CODE(hrx_stream_launch(stream, foreign, &config, args, 4),
             HRX_STATUS_INVALID_ARGUMENT, "the kernel belongs to device");
  CHECK_CODE(hrx_stream_launch(stream, NULL, &config, args, 4),
             HRX_STATUS_INVALID_ARGUMENT, "kernel is NULL");
  CHECK_CODE(hrx_stream_launch(stream, kernel, NULL, args, 4),
             HRX_STATUS_INVALID_ARGUMENT, "configuration is NULL");
  CHECK_CODE(hrx_stream_launch(stream, kernel, &config, NULL, 4),
             HRX_STATUS_INVALID_ARGUMENT, "no argument list");
  static hrx_kernel_arg_t many[HRX_KERNEL_MAX_ARGS + 1];
  CHECK_CODE(hrx_stream_launch(stream, kernel, &config, many,
                               HRX_KERNEL_MAX_ARGS + 1),
             HRX_STATUS_INVALID_ARGUMENT, "at most 128");
  CHECK(hrx_device_commands_submitted(device) == before);
  hrx_buffer_release(b);
  hrx_buffer_release(ob);
  hrx_stream_release(stream);
  hrx_kernel_release(kernel);
  hrx_kernel_release(foreign);
}

/* Argument bytes beyond the parameter space, on a kernel of 33 arrays of
 * 128 bytes (4224 bytes). */
static void test_argument_bytes(hrx_device_t* device) {
  char source[4096];
  int used = snprintf(source, sizeof(source),
                      "struct big { char b[128]; };\n__global__ void big(");
  for (int i = 0; i < 33; ++i) {
    used += snprintf(source + used, sizeof(source) - used,
                     "%sstruct big a%d", i ? ", " : "", i);
  }
  snprintf(source + used, sizeof(source) - used, ") {}\n");
  hrx_kernel_t* kernel = compile(device, source, "big");
  if (!kernel) return;
  hrx_stream_t* stream = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  static char value[128];
  hrx_kernel_arg_t args[33];
  for (int i = 0; i < 33; ++i) args[i] = hrx_kernel_arg_value(value, 128);
  hrx_launch_config_t config = config_1d(1, 1);
  CHECK_CODE(hrx_stream_launch(stream, kernel, &config, args, 33),
             HRX_STATUS_INVALID_ARGUMENT, "more than 4096 bytes");
  hrx_stream_release(stream);
  hrx_kernel_release(kernel);
}

static void test_compile_errors(hrx_device_t* device) {
  hrx_kernel_t* kernel = NULL;
  CHECK_CODE(hrx_device_compile_kernel(
                 device, "__global__ void k(int* p) { p[0] = ; }\n", "k",
                 NULL, 0, &kernel),
             HRX_STATUS_INVALID_ARGUMENT, "kernel.c:1");
  CHECK_CODE(hrx_device_compile_kernel(device, kSaxpy, "missing", NULL, 0,
                                       &kernel),
             HRX_STATUS_INVALID_ARGUMENT, "defines no kernel 'missing'");
  CHECK_CODE(hrx_device_compile_kernel(
                 device, "void k(int a, ...) {}\n", "k", NULL, 0, &kernel),
             HRX_STATUS_INVALID_ARGUMENT, "variadic");
  CHECK_CODE(hrx_device_compile_kernel(
                 device, "void k(a) int a; {}\n", "k", NULL, 0, &kernel),
             HRX_STATUS_INVALID_ARGUMENT, "old-style");
  CHECK_CODE(hrx_device_compile_kernel(
                 device, "void k(int);\nint x = sizeof(k(1));\n", "k", NULL,
                 0, &kernel),
             HRX_STATUS_INVALID_ARGUMENT, "defines no kernel 'k'");
  CHECK_CODE(hrx_device_compile_kernel(device, kSaxpy, "1abc", NULL, 0,
                                       &kernel),
             HRX_STATUS_INVALID_ARGUMENT, "not a C identifier");
  CHECK_CODE(hrx_device_compile_kernel(device, "", "k", NULL, 0, &kernel),
             HRX_STATUS_INVALID_ARGUMENT, "empty");
  const char* options[2] = {"-DVALUE=2", ""};
  CHECK_CODE(hrx_device_compile_kernel(device, kSaxpy, "saxpy", options, 2,
                                       &kernel),
             HRX_STATUS_INVALID_ARGUMENT, "option 1 is empty");
  /* Options reach the compiler: a macro, and a bad flag it refuses. */
  CHECK_OK(hrx_device_compile_kernel(
      device, "__global__ void k(int* p) { p[0] = VALUE; }\n", "k", options,
      1, &kernel));
  hrx_kernel_release(kernel);
  kernel = NULL;
  const char* bad[1] = {"-fno-such-flag-anywhere"};
  CHECK_CODE(hrx_device_compile_kernel(device, kSaxpy, "saxpy", bad, 1,
                                       &kernel),
             HRX_STATUS_INVALID_ARGUMENT, "no-such-flag");
  CHECK_CODE(hrx_device_compile_kernel(
                 device,
                 "__global__ void k(int* p) {\n"
                 "  p[0] = __ballot_sync(~0u, 1);\n}\n",
                 "k", NULL, 0, &kernel),
             HRX_STATUS_INVALID_ARGUMENT, "__ballot_sync is a warp intrinsic");
  CHECK(kernel == NULL);
}

/* HRX_HOST_CC names what runs; nothing found is UNAVAILABLE. */
static void test_missing_compiler(hrx_device_t* device) {
  hrx_kernel_t* kernel = NULL;
  char* path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
  setenv("HRX_HOST_CC", "/nonexistent/cc", 1);
  CHECK_CODE(hrx_device_compile_kernel(device, kSaxpy, "x", NULL, 0, &kernel),
             HRX_STATUS_UNAVAILABLE, "HRX_HOST_CC");
  hrx_kernel_compiler_t compiler;
  CHECK_CODE(hrx_device_query_kernel_compiler(device, &compiler),
             HRX_STATUS_UNAVAILABLE, "/nonexistent/cc");
  unsetenv("HRX_HOST_CC");
  char* cc = getenv("CC") ? strdup(getenv("CC")) : NULL;
  unsetenv("CC");
  setenv("PATH", "/nonexistent", 1);
  CHECK_CODE(hrx_device_query_kernel_compiler(device, &compiler),
             HRX_STATUS_UNAVAILABLE, "none of cc, gcc, clang is on PATH");
  if (path) setenv("PATH", path, 1);
  if (cc) setenv("CC", cc, 1);
  free(path);
  free(cc);
  CHECK_OK(hrx_device_query_kernel_compiler(device, &compiler));
  CHECK(strcmp(compiler.language, "c") == 0);
  CHECK(strcmp(compiler.image_format, "elf") == 0);
  CHECK(strncmp(compiler.target, "host-", 5) == 0);
  CHECK(compiler.compiler[0] == '/');
}

static void test_images(hrx_device_t* device, const char* dir) {
  hrx_kernel_t* kernel = compile(device, kSaxpy, "saxpy");
  if (!kernel) return;
  const void* image = NULL;
  size_t size = 0;
  hrx_kernel_image(kernel, &image, &size);
  CHECK(size > 64 && memcmp(image, "\177ELF", 4) == 0);
  hrx_kernel_t* loaded = NULL;
  CHECK_OK(hrx_device_load_kernel(device, image, size, "saxpy", &loaded));
  if (loaded) {
    CHECK(hrx_kernel_origin(loaded) == HRX_KERNEL_ORIGIN_IMAGE);
    CHECK(strstr(hrx_kernel_cache_note(loaded), "image") != NULL);
    hrx_kernel_attributes_t attributes;
    hrx_kernel_query_attributes(loaded, &attributes);
    CHECK(attributes.param_count == 4);
  }
  hrx_kernel_t* none = NULL;
  CHECK_CODE(hrx_device_load_kernel(device, image, size, "other", &none),
             HRX_STATUS_INVALID_ARGUMENT, "no kernel named 'other'");
  CHECK_CODE(hrx_device_load_kernel(device, "not an image", 12, "saxpy",
                                    &none),
             HRX_STATUS_INVALID_ARGUMENT, "fewer than an ELF header");
  static char garbage[4096];
  memset(garbage, 0x5a, sizeof(garbage));
  CHECK_CODE(hrx_device_load_kernel(device, garbage, sizeof(garbage), "saxpy",
                                    &none),
             HRX_STATUS_INVALID_ARGUMENT, "not an ELF file");
  char* truncated = malloc(size / 2);
  memcpy(truncated, image, size / 2);
  CHECK_CODE(hrx_device_load_kernel(device, truncated, size / 2, "saxpy",
                                    &none),
             HRX_STATUS_INVALID_ARGUMENT, "truncated or damaged");
  free(truncated);
  /* A shared object hrx did not build. */
  char command[1024];
  snprintf(command, sizeof(command),
           "echo 'int f(void) { return 1; }' > %s/plain.c && cc -shared "
           "-fPIC -o %s/plain.so %s/plain.c",
           dir, dir, dir);
  CHECK(system(command) == 0);
  char plain_path[512];
  snprintf(plain_path, sizeof(plain_path), "%s/plain.so", dir);
  FILE* file = fopen(plain_path, "rb");
  static char plain[1 << 16];
  size_t plain_size = file ? fread(plain, 1, sizeof(plain), file) : 0;
  if (file) fclose(file);
  CHECK(plain_size > 0);
  CHECK_CODE(hrx_device_load_kernel(device, plain, plain_size, "saxpy",
                                    &none),
             HRX_STATUS_INVALID_ARGUMENT, "without hrx's module marker");
  CHECK_CODE(hrx_device_load_kernel(device, NULL, 0, "saxpy", &none),
             HRX_STATUS_INVALID_ARGUMENT, "image is NULL");
  CHECK(none == NULL);
  hrx_kernel_release(loaded);
  hrx_kernel_release(kernel);
}

static void test_memory_cache(hrx_device_t* device) {
  hrx_kernel_t* first = compile(device, kWhere, "where");
  hrx_kernel_t* second = compile(device, kWhere, "where");
  if (!first || !second) return;
  CHECK(hrx_kernel_origin(second) == HRX_KERNEL_ORIGIN_MEMORY_CACHE);
  const void *a, *b;
  size_t na, nb;
  hrx_kernel_image(first, &a, &na);
  hrx_kernel_image(second, &b, &nb);
  CHECK(a == b);  /* one module */
  /* Other options are another module. */
  const char* options[1] = {"-O1"};
  hrx_kernel_t* third = NULL;
  CHECK_OK(hrx_device_compile_kernel(device, kWhere, "where", options, 1,
                                     &third));
  if (third) {
    CHECK(hrx_kernel_origin(third) != HRX_KERNEL_ORIGIN_MEMORY_CACHE);
    hrx_kernel_release(third);
  }
  hrx_kernel_release(first);
  hrx_kernel_release(second);
}

/* One compile of a source gives each named kernel, of one module; a
 * compile of one of the names then finds that module. */
static void test_module(hrx_device_t* device) {
  static const char source[] =
      "__global__ void first(int* out) { out[0] = 1; }\n"
      "__global__ void second(float* out, float a) { out[0] = a; }\n";
  const char* names[2] = {"first", "second"};
  hrx_kernel_t* kernels[2] = {NULL, NULL};
  CHECK_OK(hrx_device_compile_kernels(device, source, names, 2, NULL, 0,
                                      kernels));
  if (!kernels[0] || !kernels[1]) return;
  CHECK(strcmp(hrx_kernel_name(kernels[0]), "first") == 0);
  CHECK(strcmp(hrx_kernel_name(kernels[1]), "second") == 0);
  CHECK(hrx_kernel_origin(kernels[1]) == hrx_kernel_origin(kernels[0]));
  const void *a, *b;
  size_t na, nb;
  hrx_kernel_image(kernels[0], &a, &na);
  hrx_kernel_image(kernels[1], &b, &nb);
  CHECK(a == b);  /* one module */
  hrx_kernel_t* again = compile(device, source, "second");
  if (again) {
    CHECK(hrx_kernel_origin(again) == HRX_KERNEL_ORIGIN_MEMORY_CACHE);
    const void* c;
    size_t nc;
    hrx_kernel_image(again, &c, &nc);
    CHECK(c == a);
    hrx_kernel_release(again);
  }
  /* The parameters' kinds and names, from the declarations. */
  const hrx_kernel_attributes_t* attributes =
      hrx_kernel_attributes(kernels[1]);
  CHECK(attributes->param_count == 2);
  CHECK(attributes->param_kind[0] == HRX_KERNEL_PARAM_POINTER);
  CHECK(attributes->param_kind[1] == HRX_KERNEL_PARAM_FLOAT);
  CHECK(attributes->param_name[1] &&
        strcmp(attributes->param_name[1], "a") == 0);
  char type[32];
  CHECK(strcmp(hrx_kernel_param_type_name(HRX_KERNEL_PARAM_INTEGER, 8, type,
                                          sizeof(type)),
               "int64/uint64/pointer") == 0);
  /* A view goes only to a parameter that may hold a pointer. */
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* buffer = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 64, &buffer));
  if (stream && buffer) {
    hrx_launch_config_t config = config_1d(1, 1);
    hrx_kernel_arg_t args[2] = {hrx_kernel_arg_view(whole(buffer)),
                                hrx_kernel_arg_view(whole(buffer))};
    hrx_status_t status =
        hrx_stream_launch(stream, kernels[1], &config, args, 2);
    CHECK(status && hrx_status_code(status) == HRX_STATUS_INVALID_ARGUMENT &&
          strstr(hrx_status_message(status), "parameter 1 'a'") &&
          strstr(hrx_status_message(status), "float32"));
    hrx_status_free(status);
  }
  hrx_buffer_release(buffer);
  hrx_stream_release(stream);
  /* Every name once. */
  const char* twice[2] = {"first", "first"};
  hrx_kernel_t* none[2] = {NULL, NULL};
  CHECK_CODE(hrx_device_compile_kernels(device, source, twice, 2, NULL, 0,
                                        none),
             HRX_STATUS_INVALID_ARGUMENT, "given twice");
  CHECK_CODE(hrx_device_compile_kernels(device, source, names, 0, NULL, 0,
                                        none),
             HRX_STATUS_INVALID_ARGUMENT, "0 kernel names");
  CHECK(!none[0] && !none[1]);
  hrx_kernel_release(kernels[0]);
  hrx_kernel_release(kernels[1]);
}

/* What a compiler records of the parameters (hal/kernel.h: NVIDIA's PTX)
 * fills the attributes where the module left the kinds unknown, and
 * survives the disk cache's payload. */
static void test_param_records(void) {
  hrx_kernel_param_record_t record = {.count = 3};
  uint8_t kinds[3] = {HRX_KERNEL_PARAM_POINTER, HRX_KERNEL_PARAM_FLOAT,
                      HRX_KERNEL_PARAM_INTEGER};
  uint32_t sizes[3] = {8, 4, 4};
  uint32_t offsets[3] = {0, 8, 12};
  for (int i = 0; i < 3; ++i) {
    record.kind[i] = kinds[i];
    record.size[i] = sizes[i];
    record.offset[i] = offsets[i];
  }
  /* Sizes unknown (CUDA before 12.4): the record gives all. */
  hrx_kernel_attributes_t info;
  memset(&info, 0, sizeof(info));
  info.param_count = -1;
  hrx_kernel_attributes_apply_record(&info, &record);
  CHECK(info.param_count == 3 && info.param_size[1] == 4 &&
        info.param_offset[2] == 12 &&
        info.param_kind[1] == HRX_KERNEL_PARAM_FLOAT);
  /* Sizes known and equal: the kinds. */
  memset(&info, 0, sizeof(info));
  info.param_count = 3;
  info.param_size[0] = 8;
  info.param_size[1] = 4;
  info.param_size[2] = 4;
  hrx_kernel_attributes_apply_record(&info, &record);
  CHECK(info.param_kind[0] == HRX_KERNEL_PARAM_POINTER &&
        info.param_kind[2] == HRX_KERNEL_PARAM_INTEGER);
  /* Sizes that disagree, another count, or no record: nothing. */
  hrx_kernel_attributes_t before;
  memset(&info, 0, sizeof(info));
  info.param_count = 3;
  info.param_size[0] = 8;
  info.param_size[1] = 8;
  info.param_size[2] = 4;
  before = info;
  hrx_kernel_attributes_apply_record(&info, &record);
  CHECK(memcmp(&info, &before, sizeof(info)) == 0);
  info.param_count = 2;
  before = info;
  hrx_kernel_attributes_apply_record(&info, &record);
  CHECK(memcmp(&info, &before, sizeof(info)) == 0);
  hrx_kernel_param_record_t none = {.count = -1};
  info.param_count = -1;
  before = info;
  hrx_kernel_attributes_apply_record(&info, &none);
  CHECK(memcmp(&info, &before, sizeof(info)) == 0);
  /* Kinds the module told are kept. */
  memset(&info, 0, sizeof(info));
  info.param_count = 3;
  info.param_size[0] = 8;
  info.param_size[1] = 4;
  info.param_size[2] = 4;
  info.param_kind[2] = HRX_KERNEL_PARAM_SIGNED;
  hrx_kernel_attributes_apply_record(&info, &record);
  CHECK(info.param_kind[0] == HRX_KERNEL_PARAM_UNKNOWN &&
        info.param_kind[2] == HRX_KERNEL_PARAM_SIGNED);

  /* The payload: records, then the image, read back whole. */
  hrx_kernel_param_record_t records[2] = {record, none};
  const char image[] = "an image";
  void* payload = NULL;
  size_t size = 0;
  CHECK(hrx_kernel_payload_make(records, 2, image, sizeof(image), &payload,
                                &size));
  hrx_kernel_param_record_t read[2];
  size_t offset = 0;
  CHECK(payload && hrx_kernel_payload_split(payload, size, 2, read, &offset));
  CHECK(size - offset == sizeof(image) &&
        memcmp((char*)payload + offset, image, sizeof(image)) == 0);
  CHECK(read[0].count == 3 && read[1].count == -1 &&
        read[0].kind[1] == HRX_KERNEL_PARAM_FLOAT && read[0].size[2] == 4 &&
        read[0].offset[2] == 12);
  /* Another record count, cut bytes, a bare image: not read. */
  CHECK(!hrx_kernel_payload_split(payload, size, 1, read, &offset));
  CHECK(!hrx_kernel_payload_split(payload, 20, 2, read, &offset));
  CHECK(!hrx_kernel_payload_split(image, sizeof(image), 2, read, &offset));
  free(payload);
}

static void flip_byte_near_end(const char* path) {
  FILE* file = fopen(path, "r+b");
  if (!file) return;
  fseek(file, -100, SEEK_END);
  int c = fgetc(file);
  fseek(file, -100, SEEK_END);
  fputc(c ^ 0xff, file);
  fclose(file);
}

/* The disk cache across live devices (each open starts with an empty
 * memory cache). */
static void test_disk_cache(const char* dir) {
  char cache[512];
  snprintf(cache, sizeof(cache), "%s/disk", dir);
  setenv("HRX_KERNEL_CACHE_DIR", cache, 1);
  static const char source[] =
      "__global__ void disk(int* p) { p[0] = 7; }\n";
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  hrx_kernel_t* kernel = compile(device, source, "disk");
  CHECK(kernel && hrx_kernel_origin(kernel) == HRX_KERNEL_ORIGIN_COMPILED);
  char path[1024] = "";
  if (kernel && hrx_kernel_cache_path(kernel)) {
    snprintf(path, sizeof(path), "%s", hrx_kernel_cache_path(kernel));
  }
  CHECK(strncmp(path, cache, strlen(cache)) == 0);
  hrx_kernel_release(kernel);
  hrx_device_release(device);

  /* A fresh live device reads the entry. */
  CHECK_OK(hrx_device_open("host", 0, &device));
  kernel = compile(device, source, "disk");
  CHECK(kernel && hrx_kernel_origin(kernel) == HRX_KERNEL_ORIGIN_DISK_CACHE);
  hrx_kernel_release(kernel);
  hrx_device_release(device);

  /* Corrupt, truncated and foreign entries are rebuilt and rewritten. */
  const char* damage[3] = {"checksum", "truncated", "not a kernel cache"};
  for (int i = 0; i < 3; ++i) {
    if (i == 0) flip_byte_near_end(path);
    if (i == 1) CHECK(truncate(path, 200) == 0);
    if (i == 2) {
      FILE* file = fopen(path, "wb");
      if (file) {
        fputs("something else entirely", file);
        fclose(file);
      }
    }
    CHECK_OK(hrx_device_open("host", 0, &device));
    kernel = compile(device, source, "disk");
    CHECK(kernel && hrx_kernel_origin(kernel) == HRX_KERNEL_ORIGIN_COMPILED);
    CHECK(kernel && strstr(hrx_kernel_cache_note(kernel), damage[i]));
    hrx_kernel_release(kernel);
    hrx_device_release(device);
    CHECK_OK(hrx_device_open("host", 0, &device));
    kernel = compile(device, source, "disk");
    CHECK(kernel &&
          hrx_kernel_origin(kernel) == HRX_KERNEL_ORIGIN_DISK_CACHE);
    hrx_kernel_release(kernel);
    hrx_device_release(device);
  }

  /* Off, and a directory that cannot be made: compiled, nothing written. */
  setenv("HRX_KERNEL_CACHE", "0", 1);
  CHECK_OK(hrx_device_open("host", 0, &device));
  kernel = compile(device, source, "disk");
  CHECK(kernel && hrx_kernel_origin(kernel) == HRX_KERNEL_ORIGIN_COMPILED);
  CHECK(kernel && hrx_kernel_cache_path(kernel) == NULL);
  CHECK(kernel && strstr(hrx_kernel_cache_note(kernel), "HRX_KERNEL_CACHE=0"));
  hrx_kernel_release(kernel);
  hrx_device_release(device);
  setenv("HRX_KERNEL_CACHE", "2", 1);
  CHECK_OK(hrx_device_open("host", 0, &device));
  CHECK_CODE(hrx_device_compile_kernel(device, source, "disk", NULL, 0,
                                       &kernel),
             HRX_STATUS_INVALID_ARGUMENT, "HRX_KERNEL_CACHE must be");
  hrx_device_release(device);
  unsetenv("HRX_KERNEL_CACHE");
  char blocked[600];
  snprintf(blocked, sizeof(blocked), "%s/a-file/kernels", dir);
  char file_path[600];
  snprintf(file_path, sizeof(file_path), "%s/a-file", dir);
  FILE* file = fopen(file_path, "wb");
  if (file) fclose(file);
  setenv("HRX_KERNEL_CACHE_DIR", blocked, 1);
  CHECK_OK(hrx_device_open("host", 0, &device));
  kernel = compile(device, source, "disk");
  CHECK(kernel && hrx_kernel_origin(kernel) == HRX_KERNEL_ORIGIN_COMPILED);
  CHECK(kernel && hrx_kernel_cache_path(kernel) == NULL);
  CHECK(kernel && strstr(hrx_kernel_cache_note(kernel), "not cached"));
  hrx_kernel_release(kernel);
  hrx_device_release(device);
}

/* A graph: fill, then the kernel, then a copy, launched twice. */
static void test_graph(hrx_device_t* device) {
  hrx_kernel_t* kernel = compile(device, kSaxpy, "saxpy");
  if (!kernel) return;
  hrx_graph_t* graph = NULL;
  hrx_stream_t* stream = NULL;
  hrx_buffer_t *x = NULL, *y = NULL, *out = NULL;
  CHECK_OK(hrx_graph_create(device, &graph));
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 64 * 4, &x));
  CHECK_OK(hrx_buffer_allocate(device, 64 * 4, &y));
  CHECK_OK(hrx_buffer_allocate(device, 64 * 4, &out));
  float ones[64];
  for (int i = 0; i < 64; ++i) ones[i] = 1.0f;
  CHECK_OK(hrx_stream_upload(stream, whole(x), ones, sizeof(ones)));
  float a = 3.0f;
  int n = 64;
  hrx_kernel_arg_t args[4] = {
      hrx_kernel_arg_view(whole(x)), hrx_kernel_arg_view(whole(y)),
      hrx_kernel_arg_value(&a, 4), hrx_kernel_arg_value(&n, 4)};
  hrx_graph_node_t *fill = NULL, *launch = NULL, *copy = NULL;
  CHECK_OK(hrx_graph_add_fill(graph, whole(y), 0, NULL, 0, &fill));
  hrx_launch_config_t config = config_1d(2, 32);
  CHECK_OK(hrx_graph_add_kernel(graph, kernel, &config, args, 4, &fill, 1,
                                &launch));
  CHECK_OK(hrx_graph_add_copy(graph, whole(out), whole(y), &launch, 1,
                              &copy));
  /* The graph keeps what it names: the caller's kernel goes now. */
  hrx_kernel_release(kernel);
  /* Recording checks a launch like a stream does. */
  config.block[0] = 0;
  CHECK_CODE(hrx_graph_add_kernel(graph, kernel, &config, args, 4, NULL, 0,
                                  NULL),
             HRX_STATUS_INVALID_ARGUMENT, "block.x is 0");
  CHECK(hrx_graph_node_count(graph) == 3);
  a = 100.0f;  /* values were copied at recording */
  for (int round = 0; round < 2; ++round) {
    CHECK_OK(hrx_graph_launch(graph, stream, NULL));
    float values[64];
    CHECK_OK(hrx_stream_read_blocking(stream, whole(out), values,
                                      sizeof(values), NULL, NULL));
    int wrong = 0;
    for (int i = 0; i < 64; ++i) wrong += values[i] != 3.0f;
    CHECK(wrong == 0);
  }
  hrx_graph_release(graph);
  hrx_buffer_release(x);
  hrx_buffer_release(y);
  hrx_buffer_release(out);
  hrx_stream_release(stream);
}

/* Host device 1 behind the testing build's fault wrapper with `faults`
 * (HRX_FAULTS: "none" counts calls and compiler runs, injecting nothing),
 * or NULL (a failed check). */
static hrx_device_t* open_wrapped(const char* faults) {
  setenv("HRX_FAULTS", faults, 1);
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 1, &device));
  unsetenv("HRX_FAULTS");
  return device;
}

/* A launch the device refuses fails its stream like a copy. */
static void test_injected_failure(void) {
  hrx_device_t* device = open_wrapped("launch:2");
  if (!device) return;
  /* The wrapper counts compiler runs: the disk cache has this kernel from
   * device 0, a new source needs the compiler once, then the memory
   * cache has it. */
  hrx_fault_counts_t before, after;
  hrx_fault_query_counts(&before);
  hrx_kernel_t* kernel = compile(device, kWhere, "where");
  hrx_fault_query_counts(&after);
  CHECK(after.kernel_compiles == before.kernel_compiles);
  CHECK(kernel && hrx_kernel_origin(kernel) == HRX_KERNEL_ORIGIN_DISK_CACHE);
  static const char fresh[] = "__global__ void fresh(int* p) { *p = 3; }\n";
  hrx_kernel_t* first = compile(device, fresh, "fresh");
  hrx_kernel_t* again = compile(device, fresh, "fresh");
  hrx_fault_query_counts(&after);
  CHECK(after.kernel_compiles == before.kernel_compiles + 1);
  CHECK(after.modules >= 2);
  hrx_kernel_release(first);
  hrx_kernel_release(again);
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* out = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 4, &out));
  hrx_kernel_arg_t arg = hrx_kernel_arg_view(whole(out));
  hrx_launch_config_t one = config_1d(1, 1);
  CHECK_OK(hrx_stream_launch(stream, kernel, &one, &arg, 1));
  CHECK_OK(hrx_stream_launch(stream, kernel, &one, &arg, 1));
  CHECK_OK(hrx_stream_fill(stream, whole(out), 1));
  CHECK_CODE(hrx_stream_synchronize(stream, NULL, NULL),
             HRX_STATUS_DEVICE_ERROR, "(kernel launch) failed");
  CHECK_OK(hrx_stream_launch(stream, kernel, &one, &arg, 1));
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL));
  hrx_buffer_release(out);
  hrx_stream_release(stream);
  hrx_kernel_release(kernel);
  hrx_device_release(device);
  hrx_fault_query_counts(&after);
  CHECK(after.modules == 0);  /* the device took its cache with it */
}

/* Non-blocking mode, launches published alone (HRX_BATCH_LAUNCHES=0; a
 * gathered launch joins the pending batch like a small copy instead): a
 * full ring, or a grid whose engine threads are not started yet, is
 * WOULD_BLOCK with nothing accepted or counted; the same launch made
 * blocking goes through. */
static void test_nonblocking_launch(void) {
  setenv("HRX_HOST_RING_CAPACITY", "2", 1);
  setenv("HRX_BATCH_LAUNCHES", "0", 1);
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  unsetenv("HRX_HOST_RING_CAPACITY");
  unsetenv("HRX_BATCH_LAUNCHES");
  if (!device) return;
  hrx_kernel_t* kernel = compile(device, kWho, "who");
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* out = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 8 * 8, &out));
  long long ns = 30000000;
  hrx_kernel_arg_t args[2] = {hrx_kernel_arg_view(whole(out)),
                              hrx_kernel_arg_value(&ns, 8)};
  hrx_launch_config_t one = config_1d(1, 1);
  hrx_launch_config_t four = config_1d(4, 1);
  /* One engine thread exists (one queue): a grid of four would start more. */
  bool previous = hrx_thread_set_nonblocking(true);
  uint64_t before = hrx_device_commands_submitted(device);
  CHECK_CODE(hrx_stream_launch(stream, kernel, &four, args, 2),
             HRX_STATUS_WOULD_BLOCK, "engine threads");
  CHECK(hrx_device_commands_submitted(device) == before);
  hrx_thread_set_nonblocking(false);
  ns = 1;
  CHECK_OK(hrx_stream_launch(stream, kernel, &four, args, 2));
  ns = 30000000;
  hrx_thread_set_nonblocking(true);
  /* Two slow launches fill the two-slot ring; the next would wait. */
  hrx_status_t status = NULL;
  int accepted = 0;
  for (int i = 0; i < 4 && !status; ++i) {
    status = hrx_stream_launch(stream, kernel, &one, args, 2);
    if (!status) ++accepted;
  }
  before = hrx_device_commands_submitted(device);
  CHECK(accepted >= 1 && accepted <= 3);
  CHECK_CODE(status, HRX_STATUS_WOULD_BLOCK, "full host queue");
  CHECK(hrx_device_commands_submitted(device) == before);
  hrx_thread_set_nonblocking(previous);
  CHECK_OK(hrx_stream_launch(stream, kernel, &one, args, 2));
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL));
  hrx_buffer_release(out);
  hrx_stream_release(stream);
  hrx_kernel_release(kernel);
  hrx_device_release(device);
}

static atomic_int release_gate;

/* A deferred release that holds the cleanup thread until the gate opens. */
static void wait_for_gate(void* arg) {
  (void)arg;
  while (!atomic_load(&release_gate)) sched_yield();
}

/* A kernel's last release may wait (its module's unload): made in
 * non-blocking mode it goes to the device's cleanup thread and returns at
 * once; made blocking it unloads the module before it returns. Modules of
 * images are not cached, so the fault wrapper's live count shows it. */
static void test_nonblocking_release(void) {
  hrx_device_t* device = open_wrapped("seed:1");  /* counts, injects none */
  if (!device) return;
  hrx_kernel_t* kernel = compile(device, kWhere, "where");
  if (!kernel) {
    hrx_device_release(device);
    return;
  }
  const void* image = NULL;
  size_t size = 0;
  hrx_kernel_image(kernel, &image, &size);
  hrx_kernel_t* deferred = NULL;
  hrx_kernel_t* direct = NULL;
  CHECK_OK(hrx_device_load_kernel(device, image, size, "where", &deferred));
  CHECK_OK(hrx_device_load_kernel(device, image, size, "where", &direct));
  hrx_fault_counts_t before, after;
  hrx_fault_query_counts(&before);
  atomic_store(&release_gate, 0);
  hrx_device_defer_release(device, wait_for_gate, NULL);
  bool previous = hrx_thread_set_nonblocking(true);
  hrx_kernel_release(deferred);
  hrx_thread_set_nonblocking(previous);
  hrx_fault_query_counts(&after);
  CHECK(after.modules == before.modules); /* queued behind the gate */
  hrx_kernel_release(direct);
  hrx_fault_query_counts(&after);
  CHECK(after.modules == before.modules - 1);
  atomic_store(&release_gate, 1);
  CHECK_OK(hrx_device_synchronize(device, NULL, NULL));
  hrx_fault_query_counts(&after);
  CHECK(after.modules == before.modules - 2);
  hrx_kernel_release(kernel);
  hrx_device_release(device);
}

/* Buffers and the kernel may go right after a launch: the launch still
 * runs on what it named. */
static void test_lifetimes(hrx_device_t* device) {
  hrx_kernel_t* kernel = compile(device, kWho, "who");
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* out = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 8 * 8, &out));
  hrx_buffer_t* keep = out;
  hrx_buffer_retain(keep);
  long long ns = 1000000;
  hrx_kernel_arg_t args[2] = {hrx_kernel_arg_view(whole(out)),
                              hrx_kernel_arg_value(&ns, 8)};
  hrx_launch_config_t config = config_1d(8, 1);
  CHECK_OK(hrx_stream_launch(stream, kernel, &config, args, 2));
  hrx_kernel_release(kernel);
  hrx_buffer_release(out);
  unsigned long long values[8];
  CHECK_OK(hrx_stream_read_blocking(stream, whole(keep), values,
                                    sizeof(values), NULL, NULL));
  int zero = 0;
  for (int i = 0; i < 8; ++i) zero += values[i] == 0;
  CHECK(zero == 0);
  hrx_buffer_release(keep);
  hrx_stream_release(stream);
}

/* The benchmark driver's kernels: compiled once (the memory cache), run
 * by the native and raw drivers, their output checked by the driver. */
static void test_bench_kernels(hrx_device_t* device) {
  hrx_kernel_t* first = NULL;
  hrx_kernel_t* again = NULL;
  CHECK_OK(hrx_bench_kernel_compile(device, HRX_BENCH_KERNEL_SPIN, &first));
  CHECK_OK(hrx_bench_kernel_compile(device, HRX_BENCH_KERNEL_SPIN, &again));
  CHECK(again && hrx_kernel_origin(again) == HRX_KERNEL_ORIGIN_MEMORY_CACHE);
  hrx_kernel_release(first);
  hrx_kernel_release(again);
  for (int driver = 0; driver < 2; ++driver) {
    hrx_bench_launch_config_t config;
    hrx_bench_launch_config_default(&config);
    config.driver = (hrx_bench_driver_t)driver;
    config.threads = 2;
    config.grid = 8;
    config.block = 4;
    config.launches = 300;
    config.warmup = 10;
    hrx_bench_launch_result_t result;
    CHECK_OK(hrx_bench_launch_run(device, &config, &result));
    CHECK(result.launches == 600);
    CHECK(result.elapsed_ns >= result.thread_ns[0] &&
          result.elapsed_ns >= result.thread_ns[1]);
    config.kernel = HRX_BENCH_KERNEL_SPIN;
    config.spin_ns = 2000000;
    config.threads = 1;
    config.grid = 1;
    config.launches = 3;
    config.warmup = 0;
    CHECK_OK(hrx_bench_launch_run(device, &config, &result));
    CHECK(result.elapsed_ns >= 3 * config.spin_ns);
  }
  hrx_bench_launch_config_t bad;
  hrx_bench_launch_config_default(&bad);
  bad.threads = 0;
  hrx_bench_launch_result_t result;
  CHECK_CODE(hrx_bench_launch_run(device, &bad, &result),
             HRX_STATUS_INVALID_ARGUMENT, "threads");
  CHECK(hrx_bench_kernel_source("fortran") == NULL);
}

/* The names hrx_kernel_source_names finds in `source`, joined by ' '. */
static void scanned(const char* source, size_t limit, char* out,
                    size_t capacity) {
  char** names = NULL;
  size_t count = 0;
  CHECK_OK(hrx_kernel_source_names(source, limit, &names, &count));
  out[0] = '\0';
  for (size_t i = 0; i < count; ++i) {
    if (i) strncat(out, " ", capacity - strlen(out) - 1);
    strncat(out, names[i], capacity - strlen(out) - 1);
  }
  hrx_kernel_source_names_free(names, count);
}

#define CHECK_SCAN(source, expected)                                     \
  do {                                                                   \
    char found_[256];                                                    \
    scanned((source), 100, found_, sizeof(found_));                      \
    if (strcmp(found_, (expected)) != 0) {                               \
      fprintf(stderr, "scanning %s: found \"%s\", expected \"%s\"\n",  \
              #source, found_, (expected));                              \
    }                                                                    \
    CHECK(strcmp(found_, (expected)) == 0);                              \
  } while (0)

/* What counts as a kernel a source declares (kernel_source_names.h). */
static void test_source_names(void) {
  CHECK_SCAN("__global__ void a(int* p) { *p = 1; }\n"
             "extern \"C\" __global__ void b(float x) {}\n"
             "static __global__ void c() {}\n",
             "a b c");
  /* A prototype and its definition are one kernel; helpers are none. */
  CHECK_SCAN("__global__ void k(int*);\n__device__ int h(int x) { return x; }\n"
             "__global__ void k(int* p) { *p = h(2); }\n",
             "k");
  /* Comments, literals and preprocessor lines are not code. */
  CHECK_SCAN("// __global__ void no1(int* p) {}\n"
             "/* __global__ void no2(int* p) {} */\n"
             "#define K __global__ void no3(int* p) {} \\\n"
             "  __global__ void no4() {}\n"
             "__device__ const char* s = \"__global__ void no5() {\";\n"
             "__global__ void yes(char c = '}') {}\n",
             "yes");
  /* extern "C" blocks are file scope; namespaces, classes and bodies are
   * not. */
  CHECK_SCAN("extern \"C\" {\n__global__ void in_block(int* p) {}\n}\n"
             "namespace ns { __global__ void hidden(int* p) {} }\n"
             "struct S { __global__ void member(); };\n"
             "__global__ void after(int* p) { if (p) { *p = 1; } }\n",
             "in_block after");
  /* Templates and qualified names are left out; attributes passed over. */
  CHECK_SCAN("template <typename T> __global__ void t(T* p) {}\n"
             "template <> __global__ void t<float>(float* p) {}\n"
             "__global__ void ns::q(int* p) {}\n"
             "__global__ void __launch_bounds__(256, 2) lb(int* p) {}\n"
             "__global__ __attribute__((noinline)) void at(int* p) {}\n",
             "lb at");
  /* The limit, and a source with none. */
  char few[64];
  scanned("__global__ void x1() {} __global__ void x2() {}\n"
          "__global__ void x3() {}\n", 2, few, sizeof(few));
  CHECK(strcmp(few, "x1 x2") == 0);
  CHECK_SCAN("int main(void) { return 0; }\n", "");
  CHECK_SCAN("", "");
}

/* A compile of one kernel compiles every kernel its source declares, so a
 * later compile of another finds the module; a source whose declared
 * kernels do not compile together is compiled for the names asked for. */
static void test_one_compile_per_source(void) {
  hrx_device_t* device = open_wrapped("none");
  if (!device) return;
  hrx_fault_counts_t before, after;
  static const char three[] =
      "__global__ void one_of_three(int* p) { *p = 1; }\n"
      "__global__ void two_of_three(int* p) { *p = 2; }\n"
      "extern \"C\" __global__ void three_of_three(int* p) { *p = 3; }\n";
  hrx_fault_query_counts(&before);
  hrx_kernel_t* a = compile(device, three, "two_of_three");
  hrx_kernel_t* b = compile(device, three, "one_of_three");
  hrx_kernel_t* c = compile(device, three, "three_of_three");
  hrx_fault_query_counts(&after);
  CHECK(after.kernel_compiles == before.kernel_compiles + 1);
  CHECK(a && hrx_kernel_origin(a) == HRX_KERNEL_ORIGIN_COMPILED);
  CHECK(b && hrx_kernel_origin(b) == HRX_KERNEL_ORIGIN_MEMORY_CACHE);
  CHECK(c && hrx_kernel_origin(c) == HRX_KERNEL_ORIGIN_MEMORY_CACHE);
  if (a && b) CHECK(strcmp(hrx_kernel_name(b), "one_of_three") == 0);
  hrx_kernel_release(a);
  hrx_kernel_release(b);
  hrx_kernel_release(c);

  /* A kernel inside a disabled block is declared to the scan but not to
   * the compiler: the compile falls back to the name asked for, and later
   * compiles of the source ask for their own names only. */
  static const char disabled[] =
      "#if 0\n__global__ void switched_off(int* p) { *p = 0; }\n#endif\n"
      "__global__ void kept_one(int* p) { *p = 1; }\n"
      "__global__ void kept_two(int* p) { *p = 2; }\n";
  hrx_fault_query_counts(&before);
  hrx_kernel_t* one = compile(device, disabled, "kept_one");
  hrx_fault_query_counts(&after);
  CHECK(after.kernel_compiles == before.kernel_compiles + 2);
  hrx_kernel_t* two = compile(device, disabled, "kept_two");
  hrx_fault_query_counts(&before);
  CHECK(before.kernel_compiles == after.kernel_compiles + 1);
  CHECK(one && two);
  hrx_kernel_release(one);
  hrx_kernel_release(two);

  /* An error in the kernel asked for is the source's: one compiler run,
   * its message. */
  static const char broken[] =
      "__global__ void fine_kernel(int* p) { *p = 1; }\n"
      "__global__ void broken_kernel(int* p) { *p = ; }\n";
  hrx_kernel_t* none = NULL;
  hrx_fault_query_counts(&before);
  CHECK_CODE(hrx_device_compile_kernel(device, broken, "broken_kernel", NULL,
                                       0, &none),
             HRX_STATUS_INVALID_ARGUMENT, "broken_kernel");
  hrx_fault_query_counts(&after);
  CHECK(after.kernel_compiles == before.kernel_compiles + 1);
  CHECK(none == NULL);
  hrx_device_release(device);
}

int main(void) {
  char dir[] = "/tmp/hrx-test-kernel-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  setenv("HRX_HOST_ENGINES", "4", 1);
  setenv("HRX_HOST_DEVICE_COUNT", "2", 1);
  setenv("HRX_KERNEL_CACHE_DIR", dir, 1);
  hrx_device_t* device = NULL;
  hrx_device_t* other = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  CHECK_OK(hrx_device_open("host", 1, &other));
  if (device && other) {
    test_saxpy(device, true);
    test_saxpy(device, false);
    test_indices(device);
    test_parallel_blocks(device);
    test_barrier_blocks(device);
    test_params(device);
    test_launch_checks(device, other);
    test_argument_bytes(device);
    test_compile_errors(device);
    test_missing_compiler(device);
    test_images(device, dir);
    test_memory_cache(device);
    test_module(device);
    test_graph(device);
    test_lifetimes(device);
    test_bench_kernels(device);
  }
  hrx_device_release(other);
  hrx_device_release(device);
  test_injected_failure();
  test_source_names();
  test_one_compile_per_source();
  test_nonblocking_launch();
  test_nonblocking_release();
  test_disk_cache(dir);
  test_param_records();
  char command[256];
  snprintf(command, sizeof(command), "rm -rf %s", dir);
  if (system(command) != 0) fprintf(stderr, "could not remove %s\n", dir);
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
