/* The benchmark's built-in kernels, as source text for every kernel
 * language: the one place they are written. Pure data (no hrx call), so
 * the hip backend's C checks and the plain-C launch baseline use it too.
 *
 *   hrx_bench_tiny(unsigned int* out)
 *       The smallest useful kernel: thread 0 of block b adds 1 to out[b].
 *       What launch-rate measurements launch.
 *   hrx_bench_spin(unsigned long long ns, unsigned int* out)
 *       Thread 0 of every block spins for about `ns` nanoseconds of the
 *       device's real-time clock, then adds 1 to out[b]; the block lasts
 *       that long. Clocks: "c" (host backend) clock_gettime
 *       (CLOCK_MONOTONIC); NVIDIA %globaltimer (nanoseconds; it ticks
 *       every microsecond or finer); AMD wall_clock64(), taken to tick at
 *       HRX_BENCH_TIMER_MHZ (default 100, the real-time clock of current
 *       AMD GPUs; pass -DHRX_BENCH_TIMER_MHZ=<hipDeviceAttributeWallClockRate
 *       / 1000> to override). Where the target has no real-time clock
 *       (wall_clock64() is negative) it does not spin.
 * Both take their output array last; a launch of grid (n) needs n
 * elements. "cuda" (NVRTC) and "hip" (hiprtc) are one text: NVRTC defines
 * __CUDACC_RTC__.
 *
 * Thread-safe (static data). */
#ifndef HRX_BENCH_BENCH_KERNEL_SOURCES_H_
#define HRX_BENCH_BENCH_KERNEL_SOURCES_H_

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hrx_bench_kernel_e {
  HRX_BENCH_KERNEL_TINY = 0,
  HRX_BENCH_KERNEL_SPIN = 1,
  HRX_BENCH_KERNEL_COUNT = 2,
} hrx_bench_kernel_t;

/* The kernels' symbols, by hrx_bench_kernel_t: "hrx_bench_tiny",
 * "hrx_bench_spin". */
extern const char* const hrx_bench_kernel_symbols[HRX_BENCH_KERNEL_COUNT];

/* "tiny", "spin"; NULL for an unknown value. */
const char* hrx_bench_kernel_name(int kernel);
/* Inverse of hrx_bench_kernel_name; false (out unchanged) if unknown. */
bool hrx_bench_kernel_parse(const char* name, hrx_bench_kernel_t* out);

/* The source of the built-ins in `language` ("c", "cuda", "hip"), or NULL
 * when there is none. */
const char* hrx_bench_kernel_source(const char* language);

#ifdef __cplusplus
}
#endif

#endif /* HRX_BENCH_BENCH_KERNEL_SOURCES_H_ */
