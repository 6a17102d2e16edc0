/* The benchmark's contention cases, run by hrx_bench_run after the other
 * cases, for both drivers (native: the public API; raw: the backend vtable,
 * probe queues of the driver's own with the probe's native priority):
 *
 *   kernel concurrency  per round (warmup + samples rounds), one host
 *                       thread launches kernel_launches spin kernels
 *                       (1 block of 1 thread, kernel_spin_ns) on one small
 *                       lane, then as many round-robin over every small
 *                       lane; each round ends with the synchronize of the
 *                       lanes it used. kernels at once = one-lane round /
 *                       all-lanes round (hrx/bench/record.py);
 *   compute backlog     every bulk lane holds backlog_kernels spin kernels
 *                       of backlog_blocks blocks (kernel_spin_ns each), then
 *                       a 1-block kernel with no spin, or a small_bytes
 *                       copy, is timed (submit + synchronize of its stream);
 *   transfer backlog    every bulk lane holds transfer_copies reads
 *                       (device to host) of transfer_bytes, then a
 *                       small_bytes read is timed (submit + wait); then
 *                       the same with uploads (host to device) and a
 *                       small_bytes upload.
 * Each timed operation runs on each probe kind in turn
 * (hrx_bench_contention_kind_name): a round-robin small lane (sample s on
 * lane s mod lanes), the high-priority probe, the reserved one and the
 * reserved high-priority one, with `warmup` unrecorded samples first and
 * the backlog drained untimed after every sample. Checked afterwards:
 * every read probe's prefix, every kernel output's launch count, and the
 * copy destinations (the upload probe writes a lane's own source bytes).
 *
 * Internal to csrc/bench; called with the run's state (bench_run.h). */
#ifndef HRX_BENCH_BENCH_CONTENTION_H_
#define HRX_BENCH_BENCH_CONTENTION_H_

#include "bench_run.h"

/* Before any work: the sizes against the device (backlog_blocks within
 * max_grid_dim.x; INVALID_ARGUMENT otherwise). */
hrx_status_t hrx_bench_contention_check_device(hrx_bench_t* bench);
/* Makes the kernel, the probes, the counters and the transfer buffers
 * (untimed), then runs the cases into the result's contention arrays. */
hrx_status_t hrx_bench_contention_run(hrx_bench_t* bench);
/* The kernel outputs' launch counts (DEVICE_ERROR naming the lane). */
hrx_status_t hrx_bench_contention_check(hrx_bench_t* bench);
/* Waits for every lane, then releases what the cases made; any state. */
void hrx_bench_contention_teardown(hrx_bench_t* bench);

#endif /* HRX_BENCH_BENCH_CONTENTION_H_ */
