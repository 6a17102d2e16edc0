/* A stream's publication: the one ordered path of its commands onto its
 * native queue. It numbers and counts every command the stream accepts,
 * publishes lone commands, applies the small-copy batching policy
 * (batching.h) to copies and fills and to kernel launches where the
 * device gathers them, publishes pending batches, and records a command's
 * failure in the stream's failure state (failure.h). Held
 * (paced) transfers go through it too (paced_submission.h). Embedded in a
 * stream; internal to the core.
 *
 * Batching: a small copy or fill (or a launch) goes out alone when the
 * policy says so (the queue idle and the stream and thread quiet, or the
 * thread just observed), else joins the pending batch, published by
 * whoever finds it full, by the next publisher of the stream, or by the
 * device's flusher.
 *
 * Locks, in the one order a thread may take them:
 *   1. publish_lock: one publication at a time; it may wait for queue
 *      space. Threads waiting for it are served in the order they came
 *      (base/turn_lock.h): a thread that publishes in a tight loop, each
 *      time waiting for space in a full queue, does not keep another
 *      thread's call on the same stream waiting for the whole backlog;
 *   2. the failure state's mutex (failure.h), never held across a wait;
 *   3. batch_mutex: the pending batch and the command count, held only to
 *      append to the batch or move it out, or across a publication in
 *      non-blocking mode (which never waits: what the driver refuses stays
 *      pending as it was);
 *   4. the flusher's list mutex (batching.h); the pacer's mutex
 *      (pacing.h).
 * The flusher thread only try-locks publish_lock (a stream busy
 * publishing is retried at the next delay).
 *
 * Non-blocking mode (base/nonblocking.h): publish_lock is only taken when
 * free. A pending batch is published without waiting whenever the queue
 * has room; a command that fills the batch is accepted even when the batch
 * cannot go at once (it stays pending for the flusher or the next
 * command). A command that would have to publish a pending batch first
 * while another publisher holds publish_lock or the queue is full, start
 * a batch the flusher cannot be made to watch without waiting for its
 * lock, or find the queue full for a lone command reports WOULD_BLOCK
 * before it is numbered or counted, so that it never fails the stream and
 * its blocking retry is the only one accepted. A small command that finds
 * the queue full on the idle path joins the batch instead (the queue is
 * busy). A lone command is numbered once the driver took it.
 *
 * Held transfers (pacing.h): every other command and observation of a
 * publication with held work first waits (publish_lock not held) until
 * the held list is published, in non-blocking mode WOULD_BLOCK instead. The
 * held list only grows under publish_lock, so a publisher that finds it
 * empty there publishes after everything held before it; the batch path
 * checks the count under batch_mutex, where a held transfer is counted.
 * While a caller waits for the held list to drain, a new paced transfer
 * waits for it (the pacer's drainers): a thread that keeps adding
 * transfers does not keep other callers waiting.
 *
 * Thread-safe: any number of threads may submit to one publication. */
#ifndef HRX_CORE_PUBLICATION_H_
#define HRX_CORE_PUBLICATION_H_

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/turn_lock.h"
#include "batch_window.h"
#include "batching.h"
#include "failure.h"
#include "hal/device.h"
#include "hrx.h"
#include "pacing.h"
#include "queue_pool.h"
#include "wait.h"

/* A command published alone. `submit` gets the driver device and native
 * queue and runs under publish_lock, after the pending batch was
 * published. */
typedef hrx_status_t (*hrx_command_submit_fn_t)(hrx_backend_device_t* backend,
                                                hrx_native_queue_t* queue,
                                                void* user_data);
typedef struct hrx_command_s {
  hrx_command_submit_fn_t submit;
  void* user_data;
  uint64_t bytes;     /* bytes it moves (the pool queue's stats) */
  const char* what;   /* "upload", "event wait": names it in a failure */
  /* An observation point (read, graph launch): an earlier failure of the
   * stream is raised instead of running it, and its own failure is
   * returned at once. Otherwise a failure marks the stream failed and is
   * raised later (hrx.h, "Failures"). */
  bool observes;
} hrx_command_t;

typedef struct hrx_publication_s {
  hrx_device_t* device;            /* borrowed: the stream retains it */
  hrx_backend_device_t* backend;   /* borrowed from the device */
  hrx_native_queue_t* queue;       /* borrowed from the stream */
  hrx_pool_queue_t* pool_queue;    /* its counters, or NULL outside the
                                      pool (not counted) */
  hrx_turn_lock_t publish_lock;   /* served in turn (base/turn_lock.h) */
  pthread_mutex_t batch_mutex;
  hrx_failure_t failure;           /* the stream's failure state */
  hrx_pending_batch_t batch;       /* batch_mutex (batching.h) */
  uint64_t commands;               /* commands accepted (numbers them);
                                      batch_mutex */
  hrx_flush_entry_t flush_entry;   /* on the device flusher's list */
  hrx_batch_window_t window;       /* publish_lock: the last batches
                                      published (batch_window.h), recorded
                                      while HRX_BATCH_HOLD_US is set */
  hrx_pace_entry_t pace_entry;     /* held transfers (pacing.h; its ops
                                      are paced_submission.c's) */
} hrx_publication_t;

void hrx_publication_initialize(hrx_publication_t* publication,
                                hrx_device_t* device,
                                hrx_native_queue_t* queue,
                                hrx_pool_queue_t* pool_queue);
/* Leaves the flusher's list, waits for the held transfers to be published
 * (or dropped after a failure) and publishes the pending batch: afterwards
 * everything accepted is on the queue. The stream's release. */
void hrx_publication_finish(hrx_publication_t* publication);
void hrx_publication_deinitialize(hrx_publication_t* publication);

/* Submits a command published alone (the caller passed the stream's
 * entry). Counts it as accepted. Returns NULL for a command that is not an
 * observation point even when it failed or was not run (the stream keeps
 * the failure). */
hrx_status_t hrx_publication_submit(hrx_publication_t* publication,
                                    const hrx_command_t* command);
/* A small copy or fill, or a kernel launch (the caller passed the
 * stream's entry, in the mode `nonblocking` says): published alone at once
 * when the policy says so, otherwise gathered. A launch's arguments and
 * kernel are borrowed: a gathered launch takes its own copy
 * (kernel.h, hrx_kernel_pending_launch_make). */
hrx_status_t hrx_publication_enqueue(hrx_publication_t* publication,
                                     const hrx_batch_command_t* command,
                                     bool nonblocking);

/* Whether commands accepted are not on the queue yet: held transfers, a
 * pending batch, or one moved out whose publication is in progress. Never
 * waits. */
bool hrx_publication_has_unpublished(hrx_publication_t* publication);
/* Publishes the pending batch, and lets a batch publication in progress
 * (perhaps by another thread that moved this thread's commands out) end:
 * afterwards every command accepted so far is on the queue. Takes no lock
 * a producer of a lone command holds while it waits for queue space. In
 * non-blocking mode WOULD_BLOCK instead when that would wait. */
hrx_status_t hrx_publication_publish_pending(hrx_publication_t* publication);
/* Waits until the held transfers are published (no lock held); false when
 * the hook interrupted. */
bool hrx_publication_wait_held(hrx_publication_t* publication,
                               const hrx_wait_hook_t* hook,
                               bool* out_interrupted);
/* Publishes the pending batch, waiting for publish_lock. */
void hrx_publication_publish(hrx_publication_t* publication);

/* The failure an observation point raises (failure.h), or NULL. */
hrx_status_t hrx_publication_take_failure(hrx_publication_t* publication);

/* For held transfers (paced_submission.c): takes publish_lock, publishes
 * the pending batch and numbers the next command, counted as held
 * (pace_entry.held) under batch_mutex so that nothing joins a batch ahead
 * of it; returns its number with publish_lock held. */
uint64_t hrx_publication_lock_held(hrx_publication_t* publication);
void hrx_publication_unlock(hrx_publication_t* publication);
/* Counts published commands for the pool's stats (outside the pool, not
 * counted). */
void hrx_publication_count_published(hrx_publication_t* publication,
                                     uint64_t commands, uint64_t bytes);

#endif /* HRX_CORE_PUBLICATION_H_ */
