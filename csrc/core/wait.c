/* Hooked waits: slices of the backends' timed waits, with the caller's
 * interrupt check between them. */
#include "wait.h"

#include "status.h"
#include "stream.h"

hrx_status_t hrx_wait_native_event(hrx_backend_device_t* backend,
                                   hrx_native_event_t* event,
                                   const hrx_wait_hook_t* hook,
                                   bool* out_interrupted) {
  if (out_interrupted) *out_interrupted = false;
  if (!hook) return backend->vtable->event_synchronize(backend, event);
  for (;;) {
    bool done = false;
    HRX_RETURN_IF_ERROR(
        backend->vtable->event_wait_for(backend, event, hook->slice_ns, &done));
    if (done) return NULL;
    if (hook->interrupted(hook->user_data)) {
      if (out_interrupted) *out_interrupted = true;
      return NULL;
    }
  }
}

hrx_status_t hrx_wait_queue(hrx_backend_device_t* backend,
                            hrx_native_queue_t* queue, hrx_stream_t* stream,
                            const hrx_wait_hook_t* hook,
                            bool* out_interrupted) {
  if (out_interrupted) *out_interrupted = false;
  if (!hook) return backend->vtable->queue_synchronize(backend, queue);
  bool done = false;
  HRX_RETURN_IF_ERROR(
      backend->vtable->queue_wait_for(backend, queue, hook->slice_ns, &done));
  if (done) return NULL;
  if (hook->interrupted(hook->user_data)) {
    if (out_interrupted) *out_interrupted = true;
    return NULL;
  }
  hrx_native_event_t* marker = NULL;
  HRX_RETURN_IF_ERROR(backend->vtable->event_create(backend, &marker));
  /* Without a stream: both backends record at the queue's current end
   * whatever the ticket (backend.h). */
  hrx_status_t status =
      stream ? hrx_stream_record_marker(stream, marker)
             : backend->vtable->event_record(backend, queue, marker, 0);
  if (!status) {
    status = hrx_wait_native_event(backend, marker, hook, out_interrupted);
  }
  backend->vtable->event_destroy(backend, marker);
  return status;
}
