/* The stream queue pool of one live device: per priority lane a fixed-size
 * table of native queues, created lazily and handed out by the device's
 * policy (round-robin or least-loaded), plus reserved queues that belong to
 * one stream each. This file holds every rule of the pool contract
 * (DESIGN.md); the device, streams and bindings add no policy of their own.
 *
 * Thread-safe: all state but the publication counters is guarded by the
 * pool's mutex. Queue creation runs under it, so concurrent stream creations
 * see one consistent cursor. The counters of a pool queue are atomics
 * written by publishing streams without the pool's mutex. */
#ifndef HRX_CORE_QUEUE_POOL_H_
#define HRX_CORE_QUEUE_POOL_H_

#include <pthread.h>
#include <stdatomic.h>

#include "hal/device.h"
#include "hrx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One native queue of the pool (a lane slot or a reserved queue). */
typedef struct hrx_pool_queue_s {
  hrx_native_queue_t* native;      /* owned by the pool */
  int priority;                    /* lane */
  int slot;                        /* -1 when reserved */
  bool reserved;
  int native_priority;
  int streams;                     /* live streams; pool mutex */
  int refs;                        /* reserved: its stream + snapshots;
                                      pool mutex */
  uint64_t streams_assigned;       /* pool mutex */
  /* Published (by streams, lock-free) and known complete (under the pool
   * mutex, from queue_query). */
  atomic_uint_fast64_t commands;
  atomic_uint_fast64_t bytes;
  /* Gathered runs published and the commands they carried (lock-free). */
  atomic_uint_fast64_t batches;
  atomic_uint_fast64_t batched;
  uint64_t commands_done;          /* pool mutex */
  uint64_t bytes_done;             /* pool mutex */
} hrx_pool_queue_t;

typedef struct hrx_queue_pool_s {
  pthread_mutex_t mutex;
  hrx_backend_device_t* backend;   /* borrowed; outlives the pool */
  int count;                       /* configured size per lane, 1..MAX */
  hrx_queue_policy_t policy;
  bool first_use;                  /* a pool queue was created successfully */
  /* Per lane (index = HRX_STREAM_PRIORITY_HIGH - priority): the slot after
   * the last one handed out, modulo count. */
  uint64_t lane_cursor[HRX_STREAM_LANE_COUNT];
  int queues_created;              /* lane queues (not reserved) */
  int live_streams;
  int fabric_queues;
  int reserved_live;
  uint64_t reserved_created;
  uint64_t reserved_refused;
  /* Lane index = HRX_STREAM_PRIORITY_HIGH - priority: high, normal, low. */
  hrx_pool_queue_t* slots[HRX_STREAM_LANE_COUNT][HRX_MAX_STREAM_QUEUE_COUNT];
  hrx_pool_queue_t* reserved[HRX_MAX_RESERVED_QUEUES]; /* owned; live */
} hrx_queue_pool_t;

void hrx_queue_pool_initialize(hrx_backend_device_t* backend,
                               hrx_queue_pool_t* out_pool);
/* Destroys the created queues (each waits for its work). No stream may be
 * alive. */
void hrx_queue_pool_deinitialize(hrx_queue_pool_t* pool);

hrx_status_t hrx_queue_pool_set_count(hrx_queue_pool_t* pool, int64_t count);
int hrx_queue_pool_count(hrx_queue_pool_t* pool);
hrx_status_t hrx_queue_pool_set_policy(hrx_queue_pool_t* pool, int policy);
hrx_queue_policy_t hrx_queue_pool_policy(hrx_queue_pool_t* pool);

/* Hands a queue to a new stream of lane `priority` (validated by the
 * caller): a reserved queue of its own, or the lane slot the policy picks,
 * creating its queue if needed. On failure the cursors, slots and counts are
 * unchanged (except reserved_refused). */
hrx_status_t hrx_queue_pool_acquire(hrx_queue_pool_t* pool, int priority,
                                    bool reserve,
                                    hrx_pool_queue_t** out_queue);
/* A pool stream that acquired `queue` is gone. A lane queue stays in the
 * pool; a reserved one is destroyed (after its work). */
void hrx_queue_pool_stream_released(hrx_queue_pool_t* pool,
                                    hrx_pool_queue_t* queue);

/* Counts `commands` published commands moving `bytes` bytes in all on a
 * pool queue. Lock-free; any thread. */
static inline void hrx_pool_queue_count_published(hrx_pool_queue_t* queue,
                                                  uint64_t commands,
                                                  uint64_t bytes) {
  atomic_fetch_add_explicit(&queue->commands, commands, memory_order_relaxed);
  if (bytes) atomic_fetch_add_explicit(&queue->bytes, bytes,
                                       memory_order_relaxed);
}

/* Counts `runs` gathered runs carrying `commands` commands in all, among
 * those counted published (hrx_batch_tally_t). Lock-free; any thread. */
static inline void hrx_pool_queue_count_batched(hrx_pool_queue_t* queue,
                                                uint64_t runs,
                                                uint64_t commands) {
  if (!runs) return;
  atomic_fetch_add_explicit(&queue->batches, runs, memory_order_relaxed);
  atomic_fetch_add_explicit(&queue->batched, commands, memory_order_relaxed);
}

/* Queues outside the pool are only counted here. */
void hrx_queue_pool_fabric_added(hrx_queue_pool_t* pool);
void hrx_queue_pool_fabric_removed(hrx_queue_pool_t* pool);

/* The created lane queues (high, normal, low lanes, slots ascending), for
 * device-wide waits. Returns the count written (at most capacity). Lane
 * queues live as long as the pool, so the handles stay valid after the
 * mutex is released. Reserved queues are not included: they go with their
 * stream at any time, so hrx_queue_pool_synchronize_reserved waits for them
 * under the pool's mutex instead. */
int hrx_queue_pool_snapshot(hrx_queue_pool_t* pool, hrx_native_queue_t** out,
                            int capacity);
/* The live reserved queues, each retained (its native queue stays valid
 * even if its stream goes) until hrx_queue_pool_release_reserved. Returns
 * the count written (at most capacity). */
int hrx_queue_pool_snapshot_reserved(hrx_queue_pool_t* pool,
                                     hrx_pool_queue_t** out, int capacity);
/* Drops a reference taken by hrx_queue_pool_snapshot_reserved; the last one
 * destroys the queue (after its work). */
void hrx_queue_pool_release_reserved(hrx_queue_pool_t* pool,
                                     hrx_pool_queue_t* queue);

void hrx_queue_pool_query(hrx_queue_pool_t* pool, hrx_pool_info_t* out_info);
hrx_status_t hrx_queue_pool_stats(hrx_queue_pool_t* pool,
                                  hrx_pool_queue_stats_t* out_queues,
                                  int capacity, hrx_pool_stats_t* out_stats);

#ifdef __cplusplus
}
#endif

#endif /* HRX_CORE_QUEUE_POOL_H_ */
