/* A native queue of a backend device and the commands it runs in order:
 * copies, fills, transfers to and from host memory, batches, event waits,
 * host functions, copies between devices. */
#ifndef HRX_HAL_QUEUE_H_
#define HRX_HAL_QUEUE_H_

#include "batch.h"
#include "objects.h"

/* A host function queued on a native queue (host_call). */
typedef void (*hrx_queue_host_fn_t)(void* user_data);

/* How a queue is used, for drivers that schedule their queues themselves
 * (create's flags). */
typedef enum hrx_native_queue_flags_e {
  /* The queue of one reserved stream, never shared with pool streams: a
   * driver that serves queues with a fixed set of executors gives it an
   * executor of its own when one is free (host: drivers/host/host_engines.h).
   * A runtime whose hardware connections are assigned by the runtime (hip)
   * has nothing to map it to and ignores it. */
  HRX_NATIVE_QUEUE_RESERVED = 1u << 0,
} hrx_native_queue_flags_t;

typedef struct hrx_hal_queue_vtable_s {
  /* create makes a queue of a priority lane (hrx_stream_priority_t, already
   * validated; HRX_STREAM_PRIORITY_NORMAL for a queue outside the lanes)
   * with `flags` (hrx_native_queue_flags_t, or 0) and writes the runtime's
   * own priority value the queue got to *out_native_priority (0 where the
   * runtime has none). A refused queue (capacity) is RESOURCE_EXHAUSTED
   * carrying the runtime's message, and leaves nothing behind. destroy
   * first waits for the queue's submitted work. */
  hrx_status_t (*create)(hrx_backend_device_t* device, int priority,
                         uint32_t flags, hrx_native_queue_t** out_queue,
                         int* out_native_priority);
  void (*destroy)(hrx_backend_device_t* device, hrx_native_queue_t* queue);
  /* How much submitted work is still pending on the queue: the exact number
   * of pending native commands if the driver can count them, else 0 when
   * the queue is idle and UINT64_MAX when it is busy (or when unsure).
   * Never blocks; also the batching policy's idle test. */
  hrx_status_t (*query)(hrx_backend_device_t* device,
                        hrx_native_queue_t* queue, uint64_t* out_pending);
  /* The runtime's own handle of the queue (a hipStream_t / cudaStream_t;
   * the host driver's ring), for interop. */
  void* (*native_handle)(hrx_native_queue_t* queue);
  /* Waits for everything submitted to the queue so far, for at most about
   * timeout_ns, then *out_done says whether it was done (a timeout cancels
   * nothing). HRX_WAIT_FOREVER waits until it is done. Callers wait in
   * slices to handle signals between them; a driver sleeps rather than
   * spins for a long timeout. It may report not done before its timeout
   * where the runtime cannot query a queue (the caller then waits on an
   * event it records), but never with HRX_WAIT_FOREVER. */
  hrx_status_t (*wait)(hrx_backend_device_t* device, hrx_native_queue_t* queue,
                       uint64_t timeout_ns, bool* out_done);

  /* Asynchronous commands, executed in submission order on the queue. A
   * command is published once the call returns successfully; on failure
   * nothing was submitted. */
  hrx_status_t (*copy)(hrx_backend_device_t* device, hrx_native_queue_t* queue,
                       void* dst, const void* src, uint64_t length);
  hrx_status_t (*fill)(hrx_backend_device_t* device, hrx_native_queue_t* queue,
                       void* dst, uint8_t byte, uint64_t length);
  /* host_src is borrowed only for the duration of the call: the driver
   * copies or stages it before returning. */
  hrx_status_t (*upload)(hrx_backend_device_t* device,
                         hrx_native_queue_t* queue, void* dst,
                         const void* host_src, uint64_t length);
  /* The same from host memory that comes from the device's host_alloc
   * (memory.h), or that host_register made usable like it (or the core
   * tracks as pinned where the driver has no host_register: core/pinned.h),
   * and stays valid and unchanged until the command is done: an
   * asynchronous host-to-device copy of it, with no staging copy (paced
   * uploads, core/pacing.h). May be NULL: the core uses upload instead. */
  hrx_status_t (*upload_pinned)(hrx_backend_device_t* device,
                                hrx_native_queue_t* queue, void* dst,
                                const void* host_src, uint64_t length);
  /* host_dst comes from host_alloc (or is pinned like it, as for
   * upload_pinned) and stays valid until the command is done. */
  hrx_status_t (*download)(hrx_backend_device_t* device,
                           hrx_native_queue_t* queue, void* host_dst,
                           const void* src, uint64_t length);
  /* Makes later work on the queue wait on the device for the event's last
   * record (event.h); where the driver copies between devices (peer_copy),
   * also for an event of another device of the driver. */
  hrx_status_t (*wait_event)(hrx_backend_device_t* device,
                             hrx_native_queue_t* queue,
                             hrx_native_event_t* event);
  /* fn(user_data) runs on a host thread once the queue's earlier work is
   * done, and the queue's later work starts after it has returned. fn never
   * calls back into the driver. Required. */
  hrx_status_t (*host_call)(hrx_backend_device_t* device,
                            hrx_native_queue_t* queue, hrx_queue_host_fn_t fn,
                            void* user_data);
  /* Optional (NULL: the core publishes each command with copy() or fill()).
   * Publishes commands[0..count) as few native operations as the driver
   * can (host: one ring slot; hip: one copy-kernel launch), executed in
   * order, after the queue's earlier work. count is in
   * [2, HRX_BATCH_MAX_COMMANDS] (batch.h). On failure *out_published (never
   * NULL) is the number of leading commands that were published anyway;
   * the others were not. It may wait for queue space like copy(). */
  hrx_status_t (*batch_submit)(hrx_backend_device_t* device,
                               hrx_native_queue_t* queue,
                               const hrx_batch_command_t* commands,
                               uint32_t count, uint32_t* out_published);
  /* Optional, with the device's peer_path (device.h): both or neither; NULL
   * where the driver cannot, and the core refuses such copies. Copies
   * `length` bytes from `src` (memory of device src_index) to `dst` (device
   * dst_index) on `queue`, in order with its other work; one of the two
   * indices is the device's own. For HRX_PEER_PATH_STAGED the core passes
   * `staging`, at least `length` bytes from the device's host_alloc that it
   * keeps until the copy is done; otherwise NULL. */
  hrx_status_t (*peer_copy)(hrx_backend_device_t* device,
                            hrx_native_queue_t* queue, void* dst,
                            int dst_index, const void* src, int src_index,
                            uint64_t length, void* staging);
  /* Optional: makes a native stream of the runtime that the driver did not
   * create (a handle another library made, or a special handle of the
   * runtime, NULL included) wait on the device for the event's last
   * record. NULL where the driver has no such streams (host). */
  hrx_status_t (*foreign_stream_wait_event)(hrx_backend_device_t* device,
                                            void* foreign_stream,
                                            hrx_native_event_t* event);
} hrx_hal_queue_vtable_t;

#endif /* HRX_HAL_QUEUE_H_ */
