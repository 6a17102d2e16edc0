#include "backends/hip/hip_bench_kernels.h"

/* NVRTC defines __CUDACC_RTC__; hiprtc compiles the HIP branch. */
const char hrx_hip_bench_kernels_source[] =
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

const char* const hrx_hip_bench_kernel_names[HRX_HIP_BENCH_KERNEL_COUNT] = {
    "hrx_bench_tiny", "hrx_bench_spin"};
