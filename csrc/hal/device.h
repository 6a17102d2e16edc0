/* An open device of a driver (driver.h) and the vtable of everything done
 * with it: the device's own entries, then one group per object it makes
 * (queue.h, memory.h, event.h, graph.h, kernel.h), called as
 * `device->vtable->queue.copy(device, queue, ...)`.
 *
 * The core owns all policy (the pool, streams, publication, validation); a
 * driver only translates these calls into its runtime's and its errors into
 * hrx_status_t (objects.h: threading, validated arguments, non-blocking
 * mode). */
#ifndef HRX_HAL_DEVICE_H_
#define HRX_HAL_DEVICE_H_

#include "event.h"
#include "graph.h"
#include "kernel.h"
#include "memory.h"
#include "objects.h"
#include "queue.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hrx_backend_vtable_s hrx_backend_vtable_t;

/* A driver's device. Drivers embed this as their struct's first member. */
struct hrx_backend_device_s {
  const hrx_backend_vtable_t* vtable;
};

struct hrx_backend_vtable_s {
  /* Frees the device. Every queue and event of it has been destroyed and
   * every allocation freed before this is called. */
  void (*destroy)(hrx_backend_device_t* device);
  hrx_status_t (*query_info)(hrx_backend_device_t* device,
                             hrx_device_info_t* out_info);
  hrx_status_t (*query_free_memory)(hrx_backend_device_t* device,
                                    uint64_t* out_free_bytes);
  /* The hardware connection budget (hrx.h, hrx_connection_budget_t). The
   * core calls plan_connections with what the pool wants while the pool
   * size may still change; a driver applies it when it creates its native
   * context (never before), respecting a value the user set. */
  void (*plan_connections)(hrx_backend_device_t* device, int wanted);
  void (*query_connections)(hrx_backend_device_t* device,
                            hrx_connection_budget_t* out_budget);
  /* Optional, with the queue's peer_copy: both or neither. How copies on
   * queues of `device` reach memory of device `other` (never the device's
   * own index) of the same driver (hrx_peer_path_t). */
  hrx_status_t (*peer_path)(hrx_backend_device_t* device, int other,
                            hrx_peer_path_t* out_path);

  hrx_hal_queue_vtable_t queue;
  hrx_hal_memory_vtable_t memory;
  hrx_hal_event_vtable_t event;
  hrx_hal_graph_vtable_t graph;
  hrx_hal_kernel_vtable_t kernel;
};

#ifdef __cplusplus
}
#endif

#endif /* HRX_HAL_DEVICE_H_ */
