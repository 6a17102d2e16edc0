/* Ordering a stream of another library (a native stream hrx did not make)
 * after the work of a device's pool queues, for zero-copy hand-over. */
#include "batching.h"
#include "completion.h"
#include "live_device.h"
#include "entry.h"
#include "queue_pool.h"
#include "base/status.h"

/* Makes `foreign` wait for the queue's work so far through a native event
 * recorded at its end (the wait holds the event's state, so the event may
 * be destroyed right after). */
static hrx_status_t hrx_foreign_wait_queue(hrx_backend_device_t* backend,
                                           hrx_native_queue_t* queue,
                                           void* foreign) {
  const hrx_backend_vtable_t* vt = backend->vtable;
  hrx_native_event_t* event = NULL;
  HRX_RETURN_IF_ERROR(vt->event.create(backend, &event));
  hrx_status_t status = vt->event.record(backend, queue, event);
  if (!status) status = vt->queue.foreign_stream_wait_event(backend, foreign, event);
  vt->event.destroy(backend, event);
  return status;
}

hrx_status_t hrx_device_order_foreign_stream(hrx_device_t* device,
                                             void* foreign_stream) {
  HRX_RETURN_IF_ERROR(hrx_entry_check(device, HRX_ENTRY_BLOCKING,
                                      "ordering a foreign stream after a "
                                      "device"));
  hrx_backend_device_t* backend = hrx_device_backend(device);
  if (!backend->vtable->queue.foreign_stream_wait_event) {
    bool interrupted = false;
    return hrx_device_synchronize(device, NULL, &interrupted);
  }
  hrx_flusher_publish_all(hrx_device_flusher(device));
  hrx_queue_pool_t* pool = hrx_device_pool(device);
  enum { capacity = HRX_STREAM_LANE_COUNT * HRX_MAX_STREAM_QUEUE_COUNT };
  hrx_native_queue_t* queues[capacity];
  int n = hrx_queue_pool_snapshot(pool, queues, capacity);
  hrx_status_t status = NULL;
  for (int i = 0; i < n && !status; ++i) {
    status = hrx_foreign_wait_queue(backend, queues[i], foreign_stream);
  }
  hrx_pool_queue_t* reserved[HRX_MAX_RESERVED_QUEUES];
  int r = hrx_queue_pool_snapshot_reserved(pool, reserved,
                                           HRX_MAX_RESERVED_QUEUES);
  for (int i = 0; i < r && !status; ++i) {
    status = hrx_foreign_wait_queue(backend, reserved[i]->native,
                                    foreign_stream);
  }
  for (int i = 0; i < r; ++i) hrx_queue_pool_release_reserved(pool, reserved[i]);
  return status;
}
