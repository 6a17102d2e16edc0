/* The benchmark's kernels: built-in kernels for every kernel language, and
 * a timed launch loop for them through the public API (driver "native") or
 * straight through the backend interface (driver "raw"), for the compute
 * cases of the benchmark and the launch-rate script
 * (bench/scripts/kernel_launch_rate.py).
 *
 * The built-ins (bench_kernel_sources.h) are compiled through the kernel
 * cache (hrx_device_compile_kernel), so a process compiles them once per
 * live device and a sweep's processes once in all.
 *
 * Threading: hrx_bench_launch_run blocks and may be called from any
 * thread; it starts `threads` threads of its own and joins them. None of
 * them touches Python. */
#ifndef HRX_BENCH_BENCH_KERNELS_H_
#define HRX_BENCH_BENCH_KERNELS_H_

#include <stdbool.h>
#include <stdint.h>

#include "bench.h"
#include "bench_kernel_sources.h"
#include "hrx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Compiles (or finds in the cache) the built-in for the device's kernel
 * language. UNAVAILABLE when the device runs no kernels or the language
 * has no built-ins. */
hrx_status_t hrx_bench_kernel_compile(hrx_device_t* device,
                                      hrx_bench_kernel_t kernel,
                                      hrx_kernel_t** out_kernel);

/* Limits checked by hrx_bench_launch_run. */
#define HRX_BENCH_MAX_LAUNCH_THREADS 256
#define HRX_BENCH_MAX_LAUNCHES (1ull << 32)

typedef struct hrx_bench_launch_config_s {
  hrx_bench_driver_t driver;  /* native: pool streams; raw: native queues */
  hrx_bench_kernel_t kernel;
  uint32_t grid;              /* blocks, 1 .. the device's max_grid_dim.x */
  uint32_t block;             /* threads per block, 1 .. its limit */
  uint64_t spin_ns;           /* SPIN: each block's wait */
  uint64_t launches;          /* per thread, 1 .. HRX_BENCH_MAX_LAUNCHES */
  uint64_t warmup;            /* untimed launches per thread first */
  int threads;                /* 1 .. HRX_BENCH_MAX_LAUNCH_THREADS, each
                                 with a stream (or queue) of its own */
  int priority;               /* native: the streams' lane */
  bool synchronize_each;      /* each timed launch is followed by a
                                 synchronize of its stream (queue): the
                                 isolated launch's latency */
} hrx_bench_launch_config_t;

/* One kernel, one thread, 1000 launches, 100 warm-up, grid and block 1. */
void hrx_bench_launch_config_default(hrx_bench_launch_config_t* out);

typedef struct hrx_bench_launch_result_s {
  /* From the common start of the threads' timed launches to the end of
   * the slowest thread's synchronize, and each thread's own. */
  uint64_t elapsed_ns;
  uint64_t thread_ns[HRX_BENCH_MAX_LAUNCH_THREADS];
  uint64_t launches;          /* threads * launches */
} hrx_bench_launch_result_t;

/* Each thread launches the kernel `launches` times on its own stream (or
 * raw queue) after `warmup` untimed launches, then synchronizes it; the
 * output (every block's word counts warmup + launches) is checked
 * afterwards (a wrong count is DEVICE_ERROR). Every stream, queue, buffer and thread is
 * released on every path. Blocks for the whole run. */
hrx_status_t hrx_bench_launch_run(hrx_device_t* device,
                                  const hrx_bench_launch_config_t* config,
                                  hrx_bench_launch_result_t* out);

#ifdef __cplusplus
}
#endif

#endif /* HRX_BENCH_BENCH_KERNELS_H_ */
