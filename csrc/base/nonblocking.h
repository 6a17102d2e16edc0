/* The calling thread's non-blocking submission mode (hrx.h,
 * hrx_thread_set_nonblocking) and what the core and the backends use to
 * honour it.
 *
 * Contract: while the flag is set, a submission either completes without
 * waiting or returns HRX_STATUS_WOULD_BLOCK before anything observable has
 * changed (nothing submitted, counted or queued). Waiting here means
 * anything whose end depends on another thread's progress for longer than
 * a short critical section: queue space, a lock a producer may hold while
 * it waits for queue space, a completion, a native graph to instantiate,
 * staging memory to allocate or reclaim. Short critical sections (the
 * batch lock, a backend's bookkeeping lock) are still entered. Conversely,
 * nothing that cannot wait reports WOULD_BLOCK: the binding's retry
 * releases its global lock, which costs every other thread a hand-off. */
#ifndef HRX_BASE_NONBLOCKING_H_
#define HRX_BASE_NONBLOCKING_H_

#include <stdbool.h>

#include "hrx.h"
#include "thread_state.h"

/* The calling thread's flag (kept in thread_state.h's block). */
static inline bool hrx_nonblocking(void) {
  return hrx_thread_state()->nonblocking;
}

/* A WOULD_BLOCK status naming what would have been waited for. */
hrx_status_t hrx_would_block(const char* what);
/* The same for a wait that is normally over within microseconds: a lock
 * that another thread holds for one publication, never across a wait for
 * queue space or anything else that may take long
 * (hrx_status_would_block_briefly, hrx.h). */
hrx_status_t hrx_would_block_briefly(const char* what);

/* Host callbacks queued or running anywhere in the process. A callback of
 * a binding may need the binding's global lock (a Python callback takes the
 * GIL), and work queued behind it cannot progress until it has run, so
 * while any is in flight every non-blocking submission reports
 * WOULD_BLOCK: the binding then waits with its lock released. */
void hrx_host_callbacks_queued(int delta);
/* hrx_host_callbacks_in_flight (hrx.h) reads it. */

#endif /* HRX_BASE_NONBLOCKING_H_ */
