/* The benchmark's built-in kernels (bench_kernel_sources.h). */
#include "bench_kernel_sources.h"

#include <stddef.h>
#include <string.h>

/* The host backend's C (hrx_kernel.h is included by the backend): a
 * block's threads run one after another, so thread (0, 0, 0) alone waits
 * and adds. */
static const char hrx_bench_source_c[] =
    "#include <time.h>\n"
    "static unsigned long long hrx_bench_now_ns(void) {\n"
    "  struct timespec t;\n"
    "  clock_gettime(CLOCK_MONOTONIC, &t);\n"
    "  return (unsigned long long)t.tv_sec * 1000000000ull +\n"
    "         (unsigned long long)t.tv_nsec;\n"
    "}\n"
    "__global__ void hrx_bench_tiny(unsigned int* out) {\n"
    "  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {\n"
    "    out[blockIdx.x] += 1;\n"
    "  }\n"
    "}\n"
    "__global__ void hrx_bench_spin(unsigned long long ns,\n"
    "                               unsigned int* out) {\n"
    "  if (threadIdx.x != 0 || threadIdx.y != 0 || threadIdx.z != 0) return;\n"
    "  unsigned long long start = hrx_bench_now_ns();\n"
    "  while (hrx_bench_now_ns() - start < ns) {\n"
    "  }\n"
    "  out[blockIdx.x] += 1;\n"
    "}\n";

/* CUDA and HIP C++: NVRTC defines __CUDACC_RTC__; hiprtc compiles the HIP
 * branch. */
static const char hrx_bench_source_gpu[] =
    "extern \"C\" __global__ void hrx_bench_tiny(unsigned int* out) {\n"
    "  if (threadIdx.x == 0) out[blockIdx.x] += 1;\n"
    "}\n"
    "\n"
    "#if defined(__CUDACC_RTC__) || defined(__CUDACC__)\n"
    "__device__ static inline long long hrx_bench_now_ns() {\n"
    "  unsigned long long t;\n"
    "  asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));\n"
    "  return (long long)t;\n"
    "}\n"
    "#else\n"
    "#ifndef HRX_BENCH_TIMER_MHZ\n"
    "#define HRX_BENCH_TIMER_MHZ 100\n"
    "#endif\n"
    "__device__ static inline long long hrx_bench_now_ns() {\n"
    "  const long long ticks = wall_clock64();\n"
    "  return ticks < 0 ? -1 : ticks * 1000 / HRX_BENCH_TIMER_MHZ;\n"
    "}\n"
    "#endif\n"
    "\n"
    "extern \"C\" __global__ void hrx_bench_spin(unsigned long long ns,\n"
    "                                           unsigned int* out) {\n"
    "  if (threadIdx.x != 0) return;\n"
    "  const long long start = hrx_bench_now_ns();\n"
    "  if (start >= 0) {\n"
    "    while ((unsigned long long)(hrx_bench_now_ns() - start) < ns) {\n"
    "    }\n"
    "  }\n"
    "  out[blockIdx.x] += 1;\n"
    "}\n";

const char* const hrx_bench_kernel_symbols[HRX_BENCH_KERNEL_COUNT] = {
    "hrx_bench_tiny", "hrx_bench_spin"};

const char* hrx_bench_kernel_source(const char* language) {
  if (!language) return NULL;
  if (strcmp(language, "c") == 0) return hrx_bench_source_c;
  if (strcmp(language, "cuda") == 0 || strcmp(language, "hip") == 0) {
    return hrx_bench_source_gpu;
  }
  return NULL;
}

const char* hrx_bench_kernel_name(int kernel) {
  switch (kernel) {
    case HRX_BENCH_KERNEL_TINY: return "tiny";
    case HRX_BENCH_KERNEL_SPIN: return "spin";
  }
  return NULL;
}

bool hrx_bench_kernel_parse(const char* name, hrx_bench_kernel_t* out) {
  for (int k = 0; k < HRX_BENCH_KERNEL_COUNT; ++k) {
    if (name && strcmp(name, hrx_bench_kernel_name(k)) == 0) {
      *out = (hrx_bench_kernel_t)k;
      return true;
    }
  }
  return false;
}
