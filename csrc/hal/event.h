/* A native event: recorded at a queue's current end, complete once the
 * work submitted to that queue before the record is done. Waited for on
 * the host (wait, query) or by other queues (a queue's wait_event,
 * queue.h). */
#ifndef HRX_HAL_EVENT_H_
#define HRX_HAL_EVENT_H_

#include "objects.h"

typedef struct hrx_hal_event_vtable_s {
  hrx_status_t (*create)(hrx_backend_device_t* device,
                         hrx_native_event_t** out_event);
  void (*destroy)(hrx_backend_device_t* device, hrx_native_event_t* event);
  /* Makes the event complete once the work submitted to the queue so far
   * is done (it records at the queue's current end). It must not wait for
   * space in the queue. */
  hrx_status_t (*record)(hrx_backend_device_t* device,
                         hrx_native_queue_t* queue, hrx_native_event_t* event);
  /* Never waits. Where the driver copies between devices (a queue's
   * peer_copy), it accepts an event of another device of the driver. */
  hrx_status_t (*query)(hrx_backend_device_t* device,
                        hrx_native_event_t* event, bool* out_done);
  /* Waits for the event's last record as a queue's wait does (queue.h). */
  hrx_status_t (*wait)(hrx_backend_device_t* device, hrx_native_event_t* event,
                       uint64_t timeout_ns, bool* out_done);
  /* Timing events (optional: both or neither). create_timing makes an
   * event that also notes when the work before each record completed (hip:
   * an event created with timing; host: each record is a command that
   * reads the worker's clock, so it may wait for queue space). elapsed_ms:
   * milliseconds between two such events' last records;
   * FAILED_PRECONDITION when either was never recorded or is not complete
   * (it never waits). */
  hrx_status_t (*create_timing)(hrx_backend_device_t* device,
                                hrx_native_event_t** out_event);
  hrx_status_t (*elapsed_ms)(hrx_backend_device_t* device,
                             hrx_native_event_t* start,
                             hrx_native_event_t* end, double* out_ms);
} hrx_hal_event_vtable_t;

#endif /* HRX_HAL_EVENT_H_ */
