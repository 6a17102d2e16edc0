/* Read staging: host memory the device can write asynchronously (pinned on
 * GPUs), pooled per live device so that a read neither allocates nor frees
 * it (a pinned free waits for the whole device). Internal to the core.
 *
 * A block comes with its own native event, recorded after the read that
 * uses it. A block goes back to the pool only once that read is known to be
 * complete: at once when the reader saw it complete, else it waits on the
 * pool's pending list until a later acquire finds its event complete.
 * Blocks are sized in powers of two (at least HRX_STAGING_MIN_BYTES); free
 * blocks beyond HRX_STAGING_CACHE_BYTES in total are returned to the
 * backend (its host_free) instead of being kept. Everything left is freed
 * when the device is torn down, after its queues finished.
 *
 * Thread-safe: one mutex guards the lists; it is never held across a
 * native call that can wait. */
#ifndef HRX_CORE_STAGING_H_
#define HRX_CORE_STAGING_H_

#include <stdint.h>

#include "backends/backend.h"
#include "hrx.h"

#define HRX_STAGING_MIN_BYTES 256u
#define HRX_STAGING_CACHE_BYTES (256ull << 20)

typedef struct hrx_staging_pool_s hrx_staging_pool_t;

typedef struct hrx_staging_block_s {
  void* memory;                     /* owned: backend host memory */
  uint64_t capacity;
  hrx_native_event_t* event;        /* owned: recorded after its read */
  struct hrx_staging_block_s* next; /* pool lists */
} hrx_staging_block_t;

hrx_status_t hrx_staging_pool_create(hrx_backend_device_t* backend,
                                     hrx_staging_pool_t** out_pool);
/* Frees every block. No queue of the device can still run (they were
 * destroyed). */
void hrx_staging_pool_destroy(hrx_staging_pool_t* pool);

/* A block of at least `length` bytes and its event: a free one of the size
 * class if there is one, else a new one (host_alloc, event_create). */
hrx_status_t hrx_staging_acquire(hrx_staging_pool_t* pool, uint64_t length,
                                 hrx_staging_block_t** out_block);
/* Gives back a block whose read is complete (or never started). */
void hrx_staging_release(hrx_staging_pool_t* pool, hrx_staging_block_t* block);
/* Gives back a block whose read may still run: reused once its event is
 * seen complete. */
void hrx_staging_release_pending(hrx_staging_pool_t* pool,
                                 hrx_staging_block_t* block);

#endif /* HRX_CORE_STAGING_H_ */
