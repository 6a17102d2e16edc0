/* The objects of the backend interface, declared once for every header of
 * hal/ (one header per object, as IREE's HAL has). A driver (csrc/drivers)
 * defines them; the core holds them only as pointers.
 *
 *   hrx_backend_t          a driver: loads its runtime, opens devices
 *                          (driver.h)
 *   hrx_backend_device_t   an open device and the vtable of everything done
 *                          with it (device.h)
 *   hrx_native_queue_t     a queue of the device and its commands (queue.h)
 *   hrx_native_event_t     an event recorded on queues (event.h)
 *   hrx_native_graph_t     an instantiated graph (graph.h)
 *   hrx_native_module_t, hrx_native_kernel_t   loaded kernels (kernel.h)
 *
 * Threading, for every entry point of every object: it may be called from
 * any thread, concurrently, including on the same queue. A driver never
 * calls back into the core and never touches Python. Arguments reaching a
 * driver have been validated by the core: pointers are in bounds, lengths
 * are non-zero, copies do not overlap.
 *
 * Non-blocking mode (base/nonblocking.h, read with hrx_nonblocking()): when
 * the calling thread is in it, a command (a queue's copy, fill, upload,
 * download, wait_event, host_call, batch_submit, a graph's launch, a kernel
 * launch, a timing event's record) that would wait for queue space, staging
 * memory or a one-time native allocation returns HRX_STATUS_WOULD_BLOCK
 * having submitted nothing. */
#ifndef HRX_HAL_OBJECTS_H_
#define HRX_HAL_OBJECTS_H_

#include "hrx.h"

typedef struct hrx_backend_s hrx_backend_t;
typedef struct hrx_backend_device_s hrx_backend_device_t;
typedef struct hrx_native_queue_s hrx_native_queue_t;
typedef struct hrx_native_event_s hrx_native_event_t;
typedef struct hrx_native_graph_s hrx_native_graph_t;
typedef struct hrx_native_module_s hrx_native_module_t;
typedef struct hrx_native_kernel_s hrx_native_kernel_t;

/* The timeout of a wait that lasts until the work is done (a queue's or an
 * event's wait). */
#define HRX_WAIT_FOREVER UINT64_MAX

#endif /* HRX_HAL_OBJECTS_H_ */
