/* The live device: one per (backend, index) while any object of it is alive.
 * It owns the backend device and the queue pool. Internal to the core. */
#ifndef HRX_CORE_DEVICE_H_
#define HRX_CORE_DEVICE_H_

#include "backends/backend.h"
#include "hrx.h"
#include "batch.h"
#include "flusher.h"
#include "queue_pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The backend device (borrowed; lives as long as the device). */
hrx_backend_device_t* hrx_device_backend(hrx_device_t* device);
/* The device's queue pool (borrowed; lives as long as the device). */
hrx_queue_pool_t* hrx_device_pool(hrx_device_t* device);
const hrx_device_info_t* hrx_device_info(hrx_device_t* device);
/* Batching settings read from the environment at open (immutable). */
const hrx_batch_settings_t* hrx_device_batch_settings(hrx_device_t* device);
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
/* Whether the device was opened before this process was forked (fork.h). */
bool hrx_device_is_stale(const hrx_device_t* device);
/* NULL, or the FAILED_PRECONDITION naming fork for a stale device. Every
 * call that reaches the backend or takes a device lock checks it first. */
hrx_status_t hrx_device_check_process(const hrx_device_t* device);

/* Runs cleanup(backend, object) when the device is torn down, after its
 * queues finished their work, instead of now: for objects whose release
 * would otherwise block on work in flight. The caller must hold a reference
 * to the device. Returns false (nothing registered) if memory runs out. */
bool hrx_device_defer_cleanup(hrx_device_t* device,
                              void (*cleanup)(hrx_backend_device_t* backend,
                                              void* object),
                              void* object);

#ifdef __cplusplus
}
#endif

#endif /* HRX_CORE_DEVICE_H_ */
