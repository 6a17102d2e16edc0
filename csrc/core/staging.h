/* Read staging: host memory the device can write asynchronously (pinned on
 * GPUs), pooled per live device so that a read neither allocates nor frees
 * it (a pinned free waits for the whole device). Internal to the core.
 *
 * A block comes with its own native event, recorded after the read that
 * uses it. A block goes back to the pool only once that read is known to be
 * complete: at once when the reader saw it complete, else it waits on the
 * pool's pending list until a later acquire finds its event complete.
 * Blocks are sized in powers of two (at least HRX_STAGING_MIN_BYTES).
 *
 * Cache: free blocks are kept up to the pool's cache_bytes in total
 * ($HRX_STAGING_CACHE_BYTES, read when a live device is created), enough
 * for a backlog of large reads and uploads to reuse its blocks round after
 * round. A block freed when the cache is full displaces older free blocks,
 * the largest first (a block larger than the whole cache is not kept), so
 * that transfers repeated at one size reuse their block even when it is as
 * large as the cache. An evicted block is freed (host_free, which may
 * wait for the device) by the device's cleanup thread (cleanup.h), never on
 * a caller's path. A pool without a cleanup thread (hrx_staging_pool_create
 * with none) frees evicted blocks at once, except in non-blocking mode
 * (they are kept until the next blocking acquire); one detached from its
 * cleanup thread (device teardown) keeps them until it is destroyed.
 * Everything left is freed when the device is torn down, after its queues
 * finished.
 *
 * Warm-up: allocating pinned memory costs milliseconds on a GPU, far more
 * than a read, so a device's first read must not pay for it. When the
 * device's first stream is created (not at open: on a GPU the allocation
 * creates the runtime's context, hrx_device_stream_created), its cleanup
 * thread allocates one block of
 * HRX_STAGING_WARM_BYTES (hrx_staging_pool_warm); a read of at most that
 * many bytes whose size class has no free block takes the smallest free
 * block up to that size. A read that comes while the warm-up allocates
 * waits for it rather than allocating a block of its own; one that comes
 * before the cleanup thread started it allocates, and the warm-up is
 * dropped (waiting for the thread to be scheduled could cost more).
 *
 * Thread-safe: one mutex guards the lists; it is never held across a
 * native call that can wait. */
#ifndef HRX_CORE_STAGING_H_
#define HRX_CORE_STAGING_H_

#include <stdint.h>

#include "hal/device.h"
#include "cleanup.h"
#include "hrx.h"

#define HRX_STAGING_MIN_BYTES 256u
#define HRX_STAGING_DEFAULT_CACHE_BYTES (1ull << 30)
#define HRX_STAGING_MAX_CACHE_BYTES (64ull << 30)
#define HRX_STAGING_WARM_BYTES (64u << 10)

typedef struct hrx_staging_pool_s hrx_staging_pool_t;

typedef struct hrx_staging_block_s {
  void* memory;                     /* owned: backend host memory */
  uint64_t capacity;
  hrx_native_event_t* event;        /* owned: recorded after its read */
  struct hrx_staging_block_s* next; /* pool lists */
} hrx_staging_block_t;

/* $HRX_STAGING_CACHE_BYTES: HRX_STAGING_DEFAULT_CACHE_BYTES when unset,
 * 0 .. HRX_STAGING_MAX_CACHE_BYTES, else INVALID_ARGUMENT naming it. */
hrx_status_t hrx_staging_cache_bytes_from_environment(uint64_t* out_bytes);

/* A pool keeping up to `cache_bytes` of free blocks; `cleanup` (borrowed,
 * may be NULL) frees the evicted ones. */
hrx_status_t hrx_staging_pool_create(hrx_backend_device_t* backend,
                                     uint64_t cache_bytes,
                                     hrx_cleanup_t* cleanup,
                                     hrx_staging_pool_t** out_pool);
/* Before the cleanup thread is destroyed: evicted blocks are kept from now
 * on (a free already queued still runs). */
void hrx_staging_pool_detach_cleanup(hrx_staging_pool_t* pool);
/* Frees every block. No queue of the device can still run (they were
 * destroyed). */
void hrx_staging_pool_destroy(hrx_staging_pool_t* pool);

/* Marks the warm-up as queued (before hrx_staging_pool_warm is queued);
 * end_warm says it is over (hrx_staging_pool_warm ends with it; call it
 * when the warm-up could not be queued). */
void hrx_staging_pool_begin_warm(hrx_staging_pool_t* pool);
void hrx_staging_pool_end_warm(hrx_staging_pool_t* pool);
/* The warm-up (see above); takes a hrx_staging_pool_t* as `arg`, for the
 * cleanup thread. A failure only leaves the pool cold. */
void hrx_staging_pool_warm(void* arg);

/* A block of at least `length` bytes and its event: a free one of the size
 * class if there is one (for a small read, also a larger one up to
 * HRX_STAGING_WARM_BYTES), else a new one (host_alloc, event_create),
 * after waiting for a warm-up in progress. In the calling thread's
 * non-blocking mode (nonblocking.h) only a free block is taken:
 * WOULD_BLOCK instead of allocating or waiting. */
hrx_status_t hrx_staging_acquire(hrx_staging_pool_t* pool, uint64_t length,
                                 hrx_staging_block_t** out_block);
/* Gives back a block whose read is complete (or never started). Never
 * waits in non-blocking mode (the block is then kept even beyond the
 * cache; the next blocking acquire trims it). */
void hrx_staging_release(hrx_staging_pool_t* pool, hrx_staging_block_t* block);
/* Gives back a block whose read may still run: reused once its event is
 * seen complete. */
void hrx_staging_release_pending(hrx_staging_pool_t* pool,
                                 hrx_staging_block_t* block);

#endif /* HRX_CORE_STAGING_H_ */
