/* The benchmark's built-in kernels for the hip backend: one CUDA / HIP C++
 * source for both platforms, compiled like any user kernel (kernel_compile,
 * hip_kernels.h). Private to csrc/backends/hip and the benchmark's C code.
 *
 *   hrx_bench_tiny(unsigned int* out)
 *       The smallest useful kernel: thread 0 of block b adds 1 to out[b].
 *       What launch-rate measurements launch.
 *   hrx_bench_spin(unsigned long long ns, unsigned int* out)
 *       Thread 0 of every block spins for about `ns` nanoseconds of the
 *       device's real-time clock, then adds 1 to out[b]; the block lasts
 *       that long. NVIDIA reads %globaltimer (nanoseconds); AMD reads
 *       wall_clock64(), taken to tick at HRX_BENCH_TIMER_MHZ (default 100,
 *       the real-time clock of current AMD GPUs; pass
 *       -DHRX_BENCH_TIMER_MHZ=<hipDeviceAttributeWallClockRate / 1000> to
 *       override). Where the target has no real-time clock (wall_clock64()
 *       is negative) it does not spin.
 *
 * Both take their output array last; a launch of grid (n) needs n
 * elements. */
#ifndef HRX_BACKENDS_HIP_HIP_BENCH_KERNELS_H_
#define HRX_BACKENDS_HIP_HIP_BENCH_KERNELS_H_

#include <stddef.h>

extern const char hrx_hip_bench_kernels_source[];

/* "hrx_bench_tiny", "hrx_bench_spin". */
#define HRX_HIP_BENCH_KERNEL_COUNT 2
extern const char* const
    hrx_hip_bench_kernel_names[HRX_HIP_BENCH_KERNEL_COUNT];

#endif /* HRX_BACKENDS_HIP_HIP_BENCH_KERNELS_H_ */
