/* A stream's window of published batches (batch_window.h). */
#include "batch_window.h"

#include "base/status.h"

void hrx_batch_window_note(hrx_batch_window_t* window,
                           hrx_backend_device_t* backend,
                           hrx_native_queue_t* queue) {
  if (window->failed) return;
  const hrx_hal_event_vtable_t* events = &backend->vtable->event;
  hrx_native_event_t** slot = &window->events[window->recorded % 2];
  hrx_status_t status = *slot ? NULL : events->create(backend, slot);
  if (!status) status = events->record(backend, queue, *slot);
  if (status) {
    hrx_status_free(status);
    window->failed = true;
    return;
  }
  ++window->recorded;
}

bool hrx_batch_window_full(hrx_batch_window_t* window,
                           hrx_backend_device_t* backend) {
  if (window->failed || window->recorded < 2) return false;
  /* The older of the last two: recorded - 2, in the slot the next record
   * takes. */
  hrx_native_event_t* older = window->events[window->recorded % 2];
  bool done = true;
  hrx_status_t status = backend->vtable->event.query(backend, older, &done);
  if (status) {
    hrx_status_free(status);
    window->failed = true;
    return false;
  }
  return !done;
}

void hrx_batch_window_deinitialize(hrx_batch_window_t* window,
                                   hrx_backend_device_t* backend) {
  for (int i = 0; i < 2; ++i) {
    if (window->events[i]) {
      backend->vtable->event.destroy(backend, window->events[i]);
    }
    window->events[i] = NULL;
  }
}
