/* One kernel launch on the host backend: its grid of blocks, the argument
 * values, and who runs which block.
 *
 * A KERNEL command of a host queue (host_queue.h) holds a grid. The thread
 * that runs the queue's commands (an engine, or a waiter helping) runs the
 * grid's blocks, claiming them one at a time; a grid of more than one block
 * is also offered to the device's free engines (host_engines.h, "offers"),
 * which claim blocks the same way. The command completes once every block
 * has finished, so the queue's later work starts after the last block
 * (hrx_host_grid_run, _await, _wait_until).
 *
 * A block runs every thread of the block, one after another, on the thread
 * that claimed it (hrx_kernel.h), with the block's dynamic shared memory in
 * a scratch area of that thread.
 *
 * Thread-safe. Never touches Python. */
#ifndef HRX_DRIVERS_HOST_HOST_GRID_H_
#define HRX_DRIVERS_HOST_HOST_GRID_H_

#include <stdbool.h>
#include <stdint.h>

#include "hal/device.h"
#include "host_engines.h"
#include "host_kernel_module.h"

typedef struct hrx_host_grid_s hrx_host_grid_t;

/* A grid of `launch` (already checked by the core) for `kernel`, on a
 * queue of `lane` served by `engines` (borrowed; they outlive the grid's
 * work). Copies the argument values into a parameter block laid out as
 * the kernel's layout says; retains the kernel's module. One reference. */
hrx_status_t hrx_host_grid_create(hrx_host_engines_t* engines,
                                  hrx_host_lane_t lane,
                                  hrx_host_kernel_t* kernel,
                                  const hrx_kernel_launch_t* launch,
                                  hrx_host_grid_t** out_grid);
void hrx_host_grid_retain(hrx_host_grid_t* grid);
void hrx_host_grid_release(hrx_host_grid_t* grid);

/* Blocks of the grid. */
uint64_t hrx_host_grid_blocks(const hrx_host_grid_t* grid);

typedef enum hrx_host_grid_state_e {
  HRX_HOST_GRID_FINISHED,  /* every block has finished */
  HRX_HOST_GRID_RUNNING,   /* every block is claimed; some still run on
                              other threads */
  HRX_HOST_GRID_STOPPED,   /* `stop` ended the run with blocks unclaimed */
} hrx_host_grid_state_t;

/* Runs blocks on the calling thread (the queue's runner) until none is
 * left to claim or, after a block, stop(context, *served) says so;
 * *served counts the blocks run. The first call offers the grid to free
 * engines. May be called again after STOPPED, to go on. */
hrx_host_grid_state_t hrx_host_grid_run(hrx_host_grid_t* grid,
                                        bool (*stop)(void* context,
                                                     uint32_t served),
                                        void* context, uint32_t* served);

/* For an engine whose run ended RUNNING: the thread that finishes the last
 * block lists `runnable` with the grid's engines (handing it the queue's
 * listing token). False, registering nothing, when the grid finished
 * meanwhile. */
bool hrx_host_grid_await(hrx_host_grid_t* grid, hrx_host_runnable_t* runnable);

/* For a waiter whose run ended RUNNING: blocks until the grid finishes or
 * hrx_now_ns() reaches `deadline` (UINT64_MAX: no limit); returns whether
 * it finished. */
bool hrx_host_grid_wait_until(hrx_host_grid_t* grid, uint64_t deadline);

#endif /* HRX_DRIVERS_HOST_HOST_GRID_H_ */
