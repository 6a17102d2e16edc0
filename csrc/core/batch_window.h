/* A stream's window of published batches: an event recorded after each
 * pending batch it publishes (two events, used in turn), so that the batch
 * flusher can tell whether the stream's queue still has two published
 * batches to run. While it has, the device is busy for at least the time
 * of the newer one, and the flusher holds the next partial batch
 * (HRX_BATCH_HOLD_US, batching.h) instead of publishing it at its delay:
 * the batch keeps growing, so a stream the device cannot keep up with is
 * fed fewer, larger batches (fewer native graph launches for launches),
 * and the queue never runs dry for it, since the newer batch is still
 * queued when the older one completes. Internal to the core.
 *
 * Not thread-safe: the owner guards it (a stream's publication: its
 * publish_lock). Never touches Python. */
#ifndef HRX_CORE_BATCH_WINDOW_H_
#define HRX_CORE_BATCH_WINDOW_H_

#include <stdbool.h>
#include <stdint.h>

#include "hal/device.h"

typedef struct hrx_batch_window_s {
  hrx_native_event_t* events[2];  /* made at the first record */
  uint64_t recorded;              /* batches recorded so far */
  bool failed;                    /* an event could not be made or
                                     recorded: the window holds nothing */
} hrx_batch_window_t;

/* Records an event after the batch just published on `queue` (a record
 * never waits for queue space). A failure turns the window off for good:
 * nothing is held, and the failure is not the stream's. */
void hrx_batch_window_note(hrx_batch_window_t* window,
                           hrx_backend_device_t* backend,
                           hrx_native_queue_t* queue);

/* Whether the older of the last two batches recorded is not done yet
 * (then the newer one is still queued behind it or running). False until
 * two were recorded, and after a failure. Never waits. */
bool hrx_batch_window_full(hrx_batch_window_t* window,
                           hrx_backend_device_t* backend);

/* Destroys the events. */
void hrx_batch_window_deinitialize(hrx_batch_window_t* window,
                                   hrx_backend_device_t* backend);

#endif /* HRX_CORE_BATCH_WINDOW_H_ */
