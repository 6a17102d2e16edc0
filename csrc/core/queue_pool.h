/* The stream queue pool of one live device: a fixed-size table of native
 * queues, created lazily and handed out round-robin. This file holds every
 * rule of the pool contract (DESIGN.md); the device, streams and bindings
 * add no policy of their own.
 *
 * Thread-safe: all state is guarded by the pool's mutex. Queue creation runs
 * under it, so concurrent stream creations see one consistent cursor. */
#ifndef HRX_CORE_QUEUE_POOL_H_
#define HRX_CORE_QUEUE_POOL_H_

#include <pthread.h>

#include "backends/backend.h"
#include "hrx.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hrx_queue_pool_s {
  pthread_mutex_t mutex;
  hrx_backend_device_t* backend;   /* borrowed; outlives the pool */
  int count;                       /* configured size, 1..MAX */
  bool first_use;                  /* a pool queue was created successfully */
  uint64_t cursor;                 /* index of the next pool stream */
  int queues_created;
  int live_streams;
  int fabric_queues;
  hrx_native_queue_t* slots[HRX_MAX_STREAM_QUEUE_COUNT]; /* owned; lazy */
} hrx_queue_pool_t;

void hrx_queue_pool_initialize(hrx_backend_device_t* backend,
                               hrx_queue_pool_t* out_pool);
/* Destroys the created queues (each waits for its work). No stream may be
 * alive. */
void hrx_queue_pool_deinitialize(hrx_queue_pool_t* pool);

hrx_status_t hrx_queue_pool_set_count(hrx_queue_pool_t* pool, int64_t count);
int hrx_queue_pool_count(hrx_queue_pool_t* pool);

/* Hands the next slot to a new stream: creates its queue if needed, then
 * advances the cursor. On failure the cursor and every slot are unchanged. */
hrx_status_t hrx_queue_pool_acquire(hrx_queue_pool_t* pool, int* out_slot,
                                    hrx_native_queue_t** out_queue);
/* A pool stream that acquired a slot is gone. The queue stays in the pool. */
void hrx_queue_pool_stream_released(hrx_queue_pool_t* pool);

/* Queues outside the pool are only counted here. */
void hrx_queue_pool_fabric_added(hrx_queue_pool_t* pool);
void hrx_queue_pool_fabric_removed(hrx_queue_pool_t* pool);

/* The created pool queues, in slot order, for device-wide waits. Returns the
 * count written (at most capacity). */
int hrx_queue_pool_snapshot(hrx_queue_pool_t* pool, hrx_native_queue_t** out,
                            int capacity);

void hrx_queue_pool_query(hrx_queue_pool_t* pool, hrx_pool_info_t* out_info);

#ifdef __cplusplus
}
#endif

#endif /* HRX_CORE_QUEUE_POOL_H_ */
