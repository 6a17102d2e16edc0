/* The live device: one per (backend, index) while any object of it is
 * alive, in a registry. It owns the driver's device and what the core keeps
 * per device (the queue pool, the cleanup thread, the flusher, the pacer,
 * read staging, the kernel cache, the list of failed streams), and answers
 * for them; it makes no entry check (entry.h) and calls nothing above it.
 * The public calls on a device are device.c's. Internal to the core. */
#ifndef HRX_CORE_LIVE_DEVICE_H_
#define HRX_CORE_LIVE_DEVICE_H_

#include "batching.h"
#include "cleanup.h"
#include "failure.h"
#include "hal/driver.h"
#include "hrx.h"
#include "pacing.h"
#include "queue_pool.h"
#include "staging.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What holds a reference to a live device. Each holder kind is counted, so
 * that a refusal that depends on the device being alive (a pool setting
 * after first use) can say what keeps it alive. */
typedef enum hrx_device_holder_e {
  HRX_DEVICE_HOLDER_HANDLE = 0, /* hrx_device_open/retain: the caller's
                                   handles (and calls in progress) */
  HRX_DEVICE_HOLDER_STREAM,
  HRX_DEVICE_HOLDER_BUFFER,
  HRX_DEVICE_HOLDER_EVENT,
  HRX_DEVICE_HOLDER_GRAPH,
  HRX_DEVICE_HOLDER_KERNEL,
  HRX_DEVICE_HOLDER_READBACK,
  HRX_DEVICE_HOLDER_COUNT
} hrx_device_holder_t;

/* The live device of `backend` and `index`, a new reference: the one that
 * exists, or a new one opened with the driver (`selection` says how the
 * backend was chosen, device_info's `selection`). */
hrx_status_t hrx_live_device_open(const hrx_backend_t* backend, int index,
                                  const char* selection,
                                  hrx_device_t** out_device);
/* Drops a reference (hrx_device_release made its entry checks); the last
 * one tears the device down, on the cleanup thread in non-blocking mode.
 * The holder was already uncounted (hrx_device_release_holder). */
void hrx_live_device_release(hrx_device_t* device);

/* A reference held by an object of kind `holder` (thread-safe); the object
 * gives it back with hrx_device_release_holder (device.c), which counts the
 * holder out at once and releases the reference as hrx_device_release
 * does. hrx_device_open and hrx_device_retain count a handle. */
void hrx_device_retain_holder(hrx_device_t* device, hrx_device_holder_t holder);
void hrx_device_release_holder(hrx_device_t* device,
                               hrx_device_holder_t holder);
/* Counts one holder of kind `holder` out (thread-safe); the reference
 * stays until hrx_live_device_release. */
void hrx_device_uncount_holder(hrx_device_t* device,
                               hrx_device_holder_t holder);
/* What holds the device now, in words, into text (always terminated): e.g.
 * "2 device handles, 1 stream, 3 buffers", each kind with a count above
 * zero, in the order of hrx_device_holder_t, then "N releases not yet run"
 * for references whose holders are gone but whose release is deferred.
 * Thread-safe; a snapshot. */
void hrx_device_describe_holders(hrx_device_t* device, char* text,
                                 size_t capacity);

/* The device's queue pool (borrowed; lives as long as the device). */
hrx_queue_pool_t* hrx_device_pool(hrx_device_t* device);
const hrx_device_info_t* hrx_device_info(hrx_device_t* device);
/* Whether kernel launches join a stream's pending batch now: the batching
 * switch is on and the device gathers launches (HRX_BATCH_LAUNCHES, else
 * the driver's default; batching.h). */
bool hrx_device_batches_launches(hrx_device_t* device);
/* Batching settings read from the environment at open (immutable). */
const hrx_batch_settings_t* hrx_device_batch_settings(hrx_device_t* device);
/* The device's transfer pacer (pacing.h; borrowed, lives as long as the
 * device). */
hrx_pacer_t* hrx_device_pacer(hrx_device_t* device);
/* The device's flusher (borrowed; lives as long as the device). */
hrx_flusher_t* hrx_device_flusher(hrx_device_t* device);
/* Counts `count` accepted commands (thread-safe). Batched commands are
 * counted when their batch is moved out for publication, once per batch,
 * so the hot path of a batched command touches no shared counter;
 * hrx_device_commands_submitted publishes pending batches before it
 * reads. */
void hrx_device_count_commands(hrx_device_t* device, uint64_t count);

/* INVALID_ARGUMENT naming both devices when `other` (the device of the
 * argument called `role`) is not `expected`, the device that `holder`
 * describes ("the stream runs on", "the graph records work for"); `rule`
 * says what is allowed. NULL when they are the same. */
hrx_status_t hrx_device_check_same(hrx_device_t* expected,
                                   hrx_device_t* other, const char* role,
                                   const char* holder, const char* rule);
/* INVALID_ARGUMENT as hrx_device_check_same when `other` is of another
 * backend than `expected`; NULL for any device of the same backend (work
 * that may cross devices: waits for events, copies between devices). */
hrx_status_t hrx_device_check_same_backend(hrx_device_t* expected,
                                           hrx_device_t* other,
                                           const char* role,
                                           const char* holder,
                                           const char* rule);
/* Whether the device was opened before this process was forked (fork.h). */
bool hrx_device_is_stale(const hrx_device_t* device);

/* Whether host callbacks of this device's queues may call its runtime (the
 * backend's host_functions_may_call_runtime). */
bool hrx_device_callbacks_may_call_runtime(const hrx_device_t* device);
/* NULL, or the FAILED_PRECONDITION naming fork for a stale device. Every
 * call that reaches the backend or takes a device lock checks it first. */
hrx_status_t hrx_device_check_process(const hrx_device_t* device);

/* The device's kernel modules (kernel_cache.h; borrowed, lives as long as
 * the device). */
struct hrx_kernel_cache_s* hrx_device_kernel_cache(hrx_device_t* device);

/* Read staging of the device (borrowed; lives as long as the device). */
hrx_staging_pool_t* hrx_device_staging(hrx_device_t* device);
/* Its copy threads for large host copies (staged_transfer.h; borrowed,
 * lives as long as the device). */
typedef struct hrx_staged_copier_s hrx_staged_copier_t;
hrx_staged_copier_t* hrx_device_staged_copier(hrx_device_t* device);

/* Pinned host memory of the device (pinned.h; borrowed, lives as long as
 * the device). */
struct hrx_pinned_s* hrx_device_pinned(hrx_device_t* device);
/* Called once a stream of the device has its native queue: the first call
 * queues the staging warm-up on the cleanup thread (staging.h). Not at
 * open: allocating pinned memory creates a GPU runtime's context, which a
 * device opened only to be inspected or sized must not have yet (on NVIDIA
 * the first queue creates it, after the pool is sized). Never waits. */
void hrx_device_stream_created(hrx_device_t* device);

/* Deferred releases (entry.h): hrx_device_defer_release takes over the
 * caller's reference to `object`; release(object) runs later on the
 * device's cleanup thread (cleanup.h), never on a caller's thread: not in
 * an entry check, not in a query, not in a submission. Never waits. */
void hrx_device_defer_release(hrx_device_t* device,
                              void (*release)(void* object), void* object);
/* Whether deferred releases (or other cleanup work) are queued or running
 * (lock-free). */
bool hrx_device_has_deferred_releases(hrx_device_t* device);

/* The device's streams holding a failure that no observation has raised
 * (failure.h; borrowed, lives as long as the device). */
hrx_failure_list_t* hrx_device_failures(hrx_device_t* device);
/* The device's cleanup thread (cleanup.h; borrowed). */
hrx_cleanup_t* hrx_device_cleanup(hrx_device_t* device);
/* The driver's device count now (a host driver's HRX_HOST_DEVICE_COUNT may
 * grow), at least enough for this device; only reads the count. */
int hrx_device_backend_count(const hrx_device_t* device);

#ifdef __cplusplus
}
#endif

#endif /* HRX_CORE_LIVE_DEVICE_H_ */
