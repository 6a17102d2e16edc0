/* The entry check: what every public C entry point of the core does first,
 * in one place. Internal to the core.
 *
 * Rules:
 * - the device must be of this process (a device opened before fork() is
 *   refused with FAILED_PRECONDITION, see fork.h);
 * - a thread that is running a host callback may not wait: it runs on (or
 *   for) a native queue, and that queue waits for the callback to return.
 *   Calls that may block (submit, allocate, read, synchronize, wait) are
 *   refused there with FAILED_PRECONDITION; calls answered by the core
 *   alone (graph building) are allowed;
 * - queries that ask the runtime (an event's or a read's state, free
 *   memory, pool statistics: they query the queues) are allowed in a host callback only where the backend lets host
 *   functions call the runtime (host: yes). The CUDA and HIP runtimes forbid
 *   any runtime call inside a host function (cudaLaunchHostFunc,
 *   hipLaunchHostFunc), so on hip they are refused with
 *   FAILED_PRECONDITION saying so;
 * - releases made on a host-callback thread (garbage collection included)
 *   are deferred: the reference goes to the device's cleanup thread
 *   (cleanup.h), which runs them; never the callback's own thread, and
 *   never a caller's: no entry check runs them, so no call waits for a
 *   release that may wait for a running callback (which may wait for a
 *   lock the caller holds, such as Python's GIL);
 * - in the calling thread's non-blocking mode (nonblocking.h), a call that
 *   may block is refused with WOULD_BLOCK, before it does anything, while
 *   host callbacks are in flight.
 *
 * Thread-safe. */
#ifndef HRX_CORE_ENTRY_H_
#define HRX_CORE_ENTRY_H_

#include <stdatomic.h>
#include <stdbool.h>

#include "hrx.h"

typedef enum hrx_entry_kind_e {
  /* Never waits and never calls the runtime: allowed in callbacks. */
  HRX_ENTRY_QUERY = 0,
  /* May wait (submission, allocation, reads, synchronization). */
  HRX_ENTRY_BLOCKING = 1,
  /* Never waits but asks the runtime (event and read state, free memory,
   * pool statistics): allowed in callbacks where the device's backend
   * permits runtime calls inside host functions. */
  HRX_ENTRY_RUNTIME_QUERY = 2,
} hrx_entry_kind_t;

/* NULL when the call may proceed; otherwise the refusal, naming `what`
 * ("reading from a stream"). `device` may be NULL (a call that has no
 * device yet). Never waits. */
hrx_status_t hrx_entry_check(hrx_device_t* device, hrx_entry_kind_t kind,
                             const char* what);
/* hrx_entry_check, also saying whether the calling thread is in
 * non-blocking mode (nonblocking.h), for a caller that needs both: the
 * submission path asks once per command. */
hrx_status_t hrx_entry_check_mode(hrx_device_t* device, hrx_entry_kind_t kind,
                                  const char* what, bool* out_nonblocking);

/* For hrx_*_release(object): true when the caller must stop here, either
 * because the device belongs to the parent of a fork (nothing may be
 * touched) or because the calling thread runs a host callback (the caller's
 * reference was handed to the device's cleanup thread, and
 * release(object) will run there). */
bool hrx_entry_release(hrx_device_t* device, void (*release)(void* object),
                       void* object);

/* The release of a device's reference-counted object, whole: true when the
 * caller dropped the last reference and must destroy the object; false
 * when hrx_entry_release stopped the call (never with a NULL `device`) or
 * other references remain. With `destroy_may_wait` (a buffer's free waits
 * for queued work, a stream's for its launches, ...) a last release made
 * in the calling thread's non-blocking mode (nonblocking.h) is handed,
 * with its reference, to the device's cleanup thread instead: in
 * non-blocking mode no release waits. */
bool hrx_entry_release_last(hrx_device_t* device, atomic_int* ref_count,
                            void (*release)(void* object), void* object,
                            bool destroy_may_wait);

/* Brackets a host callback on the calling thread. */
void hrx_entry_callback_begin(void);
void hrx_entry_callback_end(void);
bool hrx_entry_in_callback(void);

#endif /* HRX_CORE_ENTRY_H_ */
