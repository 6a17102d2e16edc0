/* A live device's cleanup thread: the one thread that runs the work no
 * caller and no host callback may wait for. Internal to the core.
 *
 * It runs, in the order they were queued:
 * - releases made on host-callback threads (live_device.h, deferred releases):
 *   a last buffer release waits for every queue of the device, which may
 *   be running the very callback that made it, so neither the callback nor
 *   a call that holds a binding's global lock (which the callback may
 *   need) may run it;
 * - one-time preparation that a fast path must not pay for (the first
 *   read's staging memory, staging.h).
 * Nothing else runs deferred releases: no entry check, no query, no
 * submission.
 *
 * A task may wait for queued work and for the locks of the objects it
 * releases; it never waits for the thread that queued it. The thread
 * starts with the device and is joined when the device is torn down, after
 * it has run everything queued; a task that drops the device's last
 * reference tears the device down on this thread, which then ends by
 * itself (hrx_cleanup_destroy called from a task). Never touches Python
 * (a binding's release function may take its global lock itself).
 * Thread-safe. */
#ifndef HRX_CORE_CLEANUP_H_
#define HRX_CORE_CLEANUP_H_

#include <stdbool.h>
#include <stdint.h>

#include "hrx.h"

typedef struct hrx_cleanup_s hrx_cleanup_t;

/* Starts the thread; RESOURCE_EXHAUSTED when it cannot be started. */
hrx_status_t hrx_cleanup_create(hrx_cleanup_t** out_cleanup);

/* Queues run(arg); never waits. False (nothing queued) when out of
 * memory. */
bool hrx_cleanup_queue(hrx_cleanup_t* cleanup, void (*run)(void* arg),
                       void* arg);

/* Whether tasks are queued or running (lock-free). */
bool hrx_cleanup_busy(hrx_cleanup_t* cleanup);

/* Tasks queued and not finished (a snapshot). */
uint64_t hrx_cleanup_pending(hrx_cleanup_t* cleanup);

/* Whether the calling thread is this cleanup thread. */
bool hrx_cleanup_on_thread(const hrx_cleanup_t* cleanup);

/* Blocks until every task queued before the call has run. Not on the
 * cleanup thread (it returns at once there). */
void hrx_cleanup_wait(hrx_cleanup_t* cleanup);
/* The same for at most timeout_ns (HRX_WAIT_FOREVER: no limit); returns
 * whether they have run. Takes a hrx_cleanup_t* as `arg`, for
 * hrx_wait_sliced (wait.h). */
bool hrx_cleanup_wait_for(void* cleanup, uint64_t timeout_ns);

/* Runs what is queued, stops the thread and frees it. From another
 * thread it joins the thread; from a task on the thread itself it returns
 * at once, and the thread frees everything and ends when the task
 * returns. */
void hrx_cleanup_destroy(hrx_cleanup_t* cleanup);

#endif /* HRX_CORE_CLEANUP_H_ */
