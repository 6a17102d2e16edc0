/* Waits: the backends' timed waits, in the hook's slices with the caller's
 * interrupt check between them, or whole (HRX_WAIT_FOREVER) without a
 * hook. */
#include "wait.h"

#include "base/status.h"

/* After a slice that did not finish: whether the caller asked to stop
 * (then *out_interrupted is set). */
static bool hrx_wait_interrupted(const hrx_wait_hook_t* hook,
                                 bool* out_interrupted) {
  if (!hook || !hook->interrupted(hook->user_data)) return false;
  if (out_interrupted) *out_interrupted = true;
  return true;
}

bool hrx_wait_sliced(bool (*wait)(void* arg, uint64_t timeout_ns), void* arg,
                     const hrx_wait_hook_t* hook, bool* out_interrupted) {
  uint64_t slice = hook ? hook->slice_ns : HRX_WAIT_FOREVER;
  for (;;) {
    if (wait(arg, slice)) return true;
    if (hrx_wait_interrupted(hook, out_interrupted)) return false;
  }
}

hrx_status_t hrx_wait_native_event(hrx_backend_device_t* backend,
                                   hrx_native_event_t* event,
                                   const hrx_wait_hook_t* hook,
                                   bool* out_interrupted) {
  if (out_interrupted) *out_interrupted = false;
  uint64_t slice = hook ? hook->slice_ns : HRX_WAIT_FOREVER;
  for (;;) {
    bool done = false;
    HRX_RETURN_IF_ERROR(
        backend->vtable->event.wait(backend, event, slice, &done));
    if (done || hrx_wait_interrupted(hook, out_interrupted)) return NULL;
  }
}

hrx_status_t hrx_wait_queue(hrx_backend_device_t* backend,
                            hrx_native_queue_t* queue,
                            const hrx_wait_hook_t* hook,
                            bool* out_interrupted) {
  if (out_interrupted) *out_interrupted = false;
  uint64_t slice = hook ? hook->slice_ns : HRX_WAIT_FOREVER;
  bool done = false;
  HRX_RETURN_IF_ERROR(
      backend->vtable->queue.wait(backend, queue, slice, &done));
  if (done || hrx_wait_interrupted(hook, out_interrupted)) return NULL;
  hrx_native_event_t* marker = NULL;
  HRX_RETURN_IF_ERROR(backend->vtable->event.create(backend, &marker));
  hrx_status_t status = backend->vtable->event.record(backend, queue, marker);
  if (!status) {
    status = hrx_wait_native_event(backend, marker, hook, out_interrupted);
  }
  backend->vtable->event.destroy(backend, marker);
  return status;
}
