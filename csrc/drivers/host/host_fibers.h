/* Fibers for the blocks of host kernels that use barriers.
 *
 * hrx_host_fibers_run_block runs every thread of one block on the calling
 * thread, each on a fiber of its own (ucontext: makecontext and
 * swapcontext) with a stack of HRX_HOST_FIBER_STACK_BYTES above a guard
 * page (a thread that overflows its stack faults there instead of writing
 * into another's). The fibers start in x, then y, then z order. A
 * barrier call (hrx_kernel_fiber_t.barrier) switches back to the
 * scheduler, which resumes the next fiber that has not returned, in the
 * same order; so a barrier releases once every thread of the block that
 * has not returned has called it (threads that returned no longer take
 * part, as on GPUs).
 *
 * The model is POCL's and hipCPU's for CPUs: a block's threads are
 * cooperative tasks of one OS thread, switched only at barriers, so the
 * block's __shared__ data (thread-local storage of that OS thread) and
 * its dynamic shared memory are one copy for all of them, and blocks of a
 * grid still run on several engine threads at once, each with its own
 * fibers.
 *
 * Stacks and contexts belong to the calling thread (an engine thread),
 * are kept for its later blocks, grown as a block needs more threads, and
 * freed when the thread exits.
 *
 * Thread-safe (each thread uses its own); never touches Python. */
#ifndef HRX_DRIVERS_HOST_HOST_FIBERS_H_
#define HRX_DRIVERS_HOST_HOST_FIBERS_H_

#include <stdbool.h>

#define HRX_KERNEL_ABI_ONLY
#include "hrx_kernel.h"

/* The stack of each fiber (a kernel's locals and the calls it makes):
 * a block of HRX_HOST_MAX_THREADS_PER_BLOCK threads reserves that many
 * (address space, touched only as used). */
#define HRX_HOST_FIBER_STACK_BYTES (256u * 1024u)

/* Runs the block's threads through `entry` as above; returns once every
 * thread returned. False when the fibers could not be made (out of memory
 * or address space): no thread of the block ran. */
bool hrx_host_fibers_run_block(hrx_kernel_thread_entry_t entry,
                               const void* params,
                               const hrx_kernel_block_t* block);

#endif /* HRX_DRIVERS_HOST_HOST_FIBERS_H_ */
