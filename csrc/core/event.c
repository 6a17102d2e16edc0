/* An event snapshots the work a stream had published when it was recorded. */
#include "event.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "completion.h"
#include "live_device.h"
#include "entry.h"
#include "base/nonblocking.h"
#include "base/status.h"
#include "wait.h"

struct hrx_event_s {
  atomic_int ref_count;
  hrx_device_t* device;          /* retained */
  hrx_native_event_t* native;    /* owned */
  bool timing;                   /* created with event_create_timing */
};

static hrx_status_t hrx_event_create_with(hrx_device_t* device, bool timing,
                                          hrx_event_t** out_event) {
  hrx_backend_device_t* backend = hrx_device_backend(device);
  if (timing && !backend->vtable->event.create_timing) {
    return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                           "this backend has no timing events");
  }
  hrx_event_t* event = calloc(1, sizeof(*event));
  if (!event) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY, "cannot allocate event");
  }
  hrx_status_t status =
      timing ? backend->vtable->event.create_timing(backend, &event->native)
             : backend->vtable->event.create(backend, &event->native);
  if (status) {
    free(event);
    return status;
  }
  atomic_init(&event->ref_count, 1);
  event->device = device;
  event->timing = timing;
  hrx_device_retain_holder(device, HRX_DEVICE_HOLDER_EVENT);
  *out_event = event;
  return NULL;
}

hrx_status_t hrx_event_create(hrx_device_t* device, hrx_event_t** out_event) {
  return hrx_event_create_with(device, false, out_event);
}

hrx_status_t hrx_event_create_timing(hrx_device_t* device,
                                     hrx_event_t** out_event) {
  return hrx_event_create_with(device, true, out_event);
}

bool hrx_event_timing(const hrx_event_t* event) { return event->timing; }

hrx_status_t hrx_event_elapsed_ms(hrx_event_t* start, hrx_event_t* end,
                                  double* out_ms) {
  if (!start || !end) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "elapsed time needs a start and an end event");
  }
  HRX_RETURN_IF_ERROR(hrx_device_check_same(
      end->device, start->device, "the start event", "the end event belongs to",
      "elapsed time is measured between events of one device"));
  if (!start->timing || !end->timing) {
    return hrx_make_status(
        HRX_STATUS_INVALID_ARGUMENT,
        "the %s event was recorded without timing; record both with "
        "record_event(timing=True)",
        start->timing ? "end" : "start");
  }
  HRX_RETURN_IF_ERROR(hrx_entry_check(end->device, HRX_ENTRY_RUNTIME_QUERY,
                                      "measuring elapsed time"));
  hrx_backend_device_t* backend = hrx_device_backend(end->device);
  return backend->vtable->event.elapsed_ms(backend, start->native, end->native,
                                           out_ms);
}

void hrx_event_retain(hrx_event_t* event) {
  if (event) atomic_fetch_add_explicit(&event->ref_count, 1,
                                       memory_order_relaxed);
}

static void hrx_event_release_object(void* event) {
  hrx_event_release(event);
}

void hrx_event_release(hrx_event_t* event) {
  if (!event ||
      !hrx_entry_release_last(event->device, &event->ref_count,
                              hrx_event_release_object, event, false)) {
    return;
  }
  hrx_backend_device_t* backend = hrx_device_backend(event->device);
  backend->vtable->event.destroy(backend, event->native);
  hrx_device_release_holder(event->device, HRX_DEVICE_HOLDER_EVENT);
  free(event);
}

hrx_device_t* hrx_event_device(const hrx_event_t* event) {
  return event->device;
}

hrx_native_event_t* hrx_event_native(hrx_event_t* event) {
  return event->native;
}

hrx_status_t hrx_event_query(hrx_event_t* event, bool* out_done) {
  HRX_RETURN_IF_ERROR(
      hrx_entry_check(event->device, HRX_ENTRY_RUNTIME_QUERY,
                      "querying an event"));
  hrx_backend_device_t* backend = hrx_device_backend(event->device);
  return backend->vtable->event.query(backend, event->native, out_done);
}

hrx_status_t hrx_event_synchronize(hrx_event_t* event,
                                   const hrx_wait_hook_t* hook,
                                   bool* out_interrupted) {
  if (out_interrupted) *out_interrupted = false;
  bool nonblocking;
  HRX_RETURN_IF_ERROR(hrx_entry_check_mode(event->device, HRX_ENTRY_BLOCKING,
                                           "waiting for an event",
                                           &nonblocking));
  hrx_backend_device_t* backend = hrx_device_backend(event->device);
  if (nonblocking) {
    /* Done: the wait itself answers at once (as in a blocking call). */
    bool done = false;
    HRX_RETURN_IF_ERROR(
        backend->vtable->event.query(backend, event->native, &done));
    if (done) {
      HRX_RETURN_IF_ERROR(
          backend->vtable->event.wait(backend, event->native, 0, &done));
    }
    return done ? NULL : hrx_would_block("the event's work");
  }
  return hrx_wait_native_event(backend, event->native, hook, out_interrupted);
}
