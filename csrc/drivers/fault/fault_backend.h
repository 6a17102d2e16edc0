/* Fault injection: a backend device that wraps any other backend device
 * (host or hip), forwards every vtable entry to it, fails chosen calls on
 * purpose, and counts the native objects alive through it. For testing the
 * core's error paths; never on unless asked for.
 *
 * It is installed at device open when $HRX_FAULTS is set and not empty.
 * Grammar (comma-separated rules, calls counted per live device from 1):
 *   OP:K      fail the K-th call of OP
 *   OP:K+     fail the K-th call of OP and every later one
 *   OP:P%     fail each call of OP with probability P percent (0 < P <= 100)
 *   seed:N    seed of the probabilistic rules (default 1), for reproducible
 *             runs
 *   no_kernels  the wrapper offers none of the kernel entries, as a backend
 *             that runs no kernels
 *   none      no faults: only count live objects
 * OP is one of: alloc, host_alloc, queue_create, copy, fill, upload,
 * download, event_create, event_record, wait_event, synchronize,
 * event_synchronize, peer_copy (a copy between devices), launch (a kernel
 * launch).
 *
 * A failed call reaches nothing below: the wrapped backend never sees it.
 * Its status carries "injected fault" and the call's number, with the code a
 * real failure of that call has: OUT_OF_MEMORY for alloc and host_alloc,
 * RESOURCE_EXHAUSTED for queue_create (the pool's capacity error), and
 * DEVICE_ERROR for every other call.
 *
 * Thread-safe like any backend. */
#ifndef HRX_DRIVERS_FAULT_FAULT_BACKEND_H_
#define HRX_DRIVERS_FAULT_FAULT_BACKEND_H_

#include "hal/device.h"
#include "testing/hrx_testing.h"

#ifdef __cplusplus
extern "C" {
#endif

/* If $HRX_FAULTS is set and not empty, replaces *inout_device by a fault
 * wrapper that owns it. On failure (a malformed spec: INVALID_ARGUMENT
 * naming the bad rule and the grammar) *inout_device is unchanged and still
 * owned by the caller. */
hrx_status_t hrx_fault_wrap_from_env(hrx_backend_device_t** inout_device);

/* Wraps `inner` (taken over on success; unchanged on failure) with the rules
 * of `spec` (the grammar above). The test hook behind the environment
 * switch. */
hrx_status_t hrx_fault_wrap(const char* spec, hrx_backend_device_t* inner,
                            hrx_backend_device_t** out_device);

#ifdef __cplusplus
}
#endif

#endif /* HRX_DRIVERS_FAULT_FAULT_BACKEND_H_ */
