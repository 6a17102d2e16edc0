/* fork() safety. A forked child has only the thread that called fork(): the
 * host backend's queue workers are gone, locks other threads held stay
 * held, and GPU runtimes cannot be used. So in a child every object of a
 * device opened before the fork is refused with FAILED_PRECONDITION naming
 * fork (its release then frees nothing of the parent's: the memory is the
 * child's copy and goes with it), while hrx_device_open starts a fresh
 * device registry. Internal to the core. */
#ifndef HRX_CORE_FORK_H_
#define HRX_CORE_FORK_H_

#include <stdatomic.h>
#include <stdint.h>

#include "hrx.h"

/* Counts the forks this process descends from (0 in the original process):
 * incremented in each child. Read relaxed: a plain load on the hot path. */
extern atomic_uint hrx_fork_generation;

static inline unsigned hrx_fork_current(void) {
  return atomic_load_explicit(&hrx_fork_generation, memory_order_relaxed);
}

/* Registers the pthread_atfork handlers once (idempotent, thread-safe). */
void hrx_fork_install(void);

/* The error for an object of a device opened `generation` forks ago. */
hrx_status_t hrx_fork_stale_error(const char* backend, int index);

#endif /* HRX_CORE_FORK_H_ */
