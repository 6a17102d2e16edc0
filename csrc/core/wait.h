/* Waits with a hook (hrx_wait_hook_t, hrx.h): the slicing every blocking wait
 * shares. Internal to the core. */
#ifndef HRX_CORE_WAIT_H_
#define HRX_CORE_WAIT_H_

#include "hal/device.h"
#include "hrx.h"

/* Waits for the work submitted to `queue` so far. The first slice waits for
 * the queue itself; later ones for an event recorded at the queue's end
 * after that slice, so work that other threads keep adding cannot prolong
 * the wait forever.
 * A NULL hook waits to the end, without slices. out_interrupted may be NULL
 * (then the wait is not interrupted). */
hrx_status_t hrx_wait_queue(hrx_backend_device_t* backend,
                            hrx_native_queue_t* queue,
                            const hrx_wait_hook_t* hook,
                            bool* out_interrupted);

/* Waits for a native event's last record, in slices when hook is not NULL
 * (as hrx_wait_queue). */
hrx_status_t hrx_wait_native_event(hrx_backend_device_t* backend,
                                   hrx_native_event_t* event,
                                   const hrx_wait_hook_t* hook,
                                   bool* out_interrupted);

/* A wait of the core's own (completions, the cleanup thread) in the hook's
 * slices: wait(arg, timeout_ns) waits at most timeout_ns and returns
 * whether what it waits for happened. Between slices the hook may
 * interrupt (then *out_interrupted is set, if not NULL, and false is
 * returned). A NULL hook waits whole (HRX_WAIT_FOREVER). */
bool hrx_wait_sliced(bool (*wait)(void* arg, uint64_t timeout_ns), void* arg,
                     const hrx_wait_hook_t* hook, bool* out_interrupted);

#endif /* HRX_CORE_WAIT_H_ */
