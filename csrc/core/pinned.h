/* Pinned host memory of a live device: memory the device copies to and
 * from directly and asynchronously, with no staging copy. Internal to the
 * core; the public calls are hrx_device_pinned_alloc / _free, hrx_device_pin
 * / _unpin and hrx_device_is_pinned (hrx.h).
 *
 * Two kinds of range:
 * - allocated: a block of the device's pinned pool (a staging pool of its
 *   own, staging.h, keeping up to $HRX_PINNED_CACHE_BYTES of free blocks),
 *   handed to the caller until hrx_pinned_free;
 * - registered: the caller's memory, page-locked by the driver's
 *   host_register (or only tracked where the driver has none: host) until
 *   hrx_pinned_unregister.
 * Ranges never overlap: registering memory that overlaps a range is
 * refused.
 *
 * Uses: a transfer that finds its host memory inside a range (begin_use)
 * copies it directly and records the use's native event right after the
 * copy (use_recorded); the one who began it ends it (end_use) once it no
 * longer needs the event. A range whose owner let it go (free, unregister)
 * is no longer found, and its memory is given back only once every use's
 * copy is complete: a free never waits (the cleanup thread, cleanup.h,
 * waits for the copies and returns the block to the pool); an unregister
 * waits for them (it is the end of a caller's scope). The range itself is
 * freed once every use has also ended.
 *
 * Each range holds a reference on its device, so the device outlives the
 * memory it pinned.
 *
 * Thread-safe: one mutex guards the ranges and their uses; it is never
 * held across a native call that can wait (an event query, a record and
 * a create do not). */
#ifndef HRX_CORE_PINNED_H_
#define HRX_CORE_PINNED_H_

#include <stdbool.h>
#include <stdint.h>

#include "cleanup.h"
#include "hal/device.h"
#include "staging.h"
#include "hrx.h"

#define HRX_PINNED_DEFAULT_CACHE_BYTES (1ull << 30)
#define HRX_PINNED_MAX_CACHE_BYTES (64ull << 30)

typedef struct hrx_pinned_s hrx_pinned_t;
typedef struct hrx_pinned_range_s hrx_pinned_range_t;

/* One transfer's use of a range. */
typedef struct hrx_pinned_use_s {
  hrx_pinned_t* pinned;            /* borrowed: the registry */
  hrx_pinned_range_t* range;       /* borrowed: lives until the use ended */
  hrx_native_event_t* event;       /* owned by the registry: recorded after
                                      the copy */
  bool recorded;                   /* registry mutex */
  bool ended;                      /* registry mutex */
  struct hrx_pinned_use_s* next;   /* the range's uses; registry mutex */
} hrx_pinned_use_t;

/* $HRX_PINNED_CACHE_BYTES: HRX_PINNED_DEFAULT_CACHE_BYTES when unset,
 * 0 .. HRX_PINNED_MAX_CACHE_BYTES, else INVALID_ARGUMENT naming it. */
hrx_status_t hrx_pinned_cache_bytes_from_environment(uint64_t* out_bytes);

/* The registry of `device` (borrowed: the registry lives inside it, and
 * ranges retain it); `cleanup` (borrowed) runs the deferred frees. */
hrx_status_t hrx_pinned_create(hrx_device_t* device,
                               hrx_backend_device_t* backend,
                               uint64_t cache_bytes, hrx_cleanup_t* cleanup,
                               hrx_pinned_t** out_pinned);
/* Before the cleanup thread is destroyed (see hrx_staging_pool_detach_cleanup). */
void hrx_pinned_detach_cleanup(hrx_pinned_t* pinned);
/* No range is left (each held a device reference); frees the pool and the
 * events. */
void hrx_pinned_destroy(hrx_pinned_t* pinned);

/* A new allocated range of at least `size` bytes (size > 0). */
hrx_status_t hrx_pinned_alloc(hrx_pinned_t* pinned, uint64_t size,
                              void** out_ptr);
/* Makes a complete read's staging block (from `home`, a staging pool of
 * the same device; the caller owned it) an allocated range of `length`
 * bytes at block->memory: freed like any (hrx_pinned_free), it goes back
 * to `home`. */
hrx_status_t hrx_pinned_adopt(hrx_pinned_t* pinned, hrx_staging_block_t* block,
                              struct hrx_staging_pool_s* home,
                              uint64_t length);
/* Lets the allocated range starting at `ptr` go; never waits.
 * INVALID_ARGUMENT when `ptr` is not the start of one. */
hrx_status_t hrx_pinned_free(hrx_pinned_t* pinned, void* ptr);
/* Registers [ptr, ptr + size). INVALID_ARGUMENT (nothing registered) when
 * it overlaps a range; the driver's error when it refuses. */
hrx_status_t hrx_pinned_register(hrx_pinned_t* pinned, void* ptr,
                                 uint64_t size);
/* Waits for the copies of the registered range starting at `ptr`, then
 * unregisters it. Wait hook as hrx.h's waits: when interrupted, the range
 * stays registered and is no longer found; a later call finishes it.
 * INVALID_ARGUMENT when `ptr` is not the start of a registered range. */
hrx_status_t hrx_pinned_unregister(hrx_pinned_t* pinned, void* ptr,
                                   const hrx_wait_hook_t* hook,
                                   bool* out_interrupted);
/* Whether [ptr, ptr + length) lies inside one range that is not let go. */
bool hrx_pinned_contains(hrx_pinned_t* pinned, const void* ptr,
                         uint64_t length);

/* When [ptr, ptr + length) lies inside one live range: a new use of it
 * (*out_use), else *out_use is NULL (copy through staging). Nothing pinned
 * costs one atomic load. */
hrx_status_t hrx_pinned_begin_use(hrx_pinned_t* pinned, const void* ptr,
                                  uint64_t length, hrx_pinned_use_t** out_use);
/* The use's event was recorded after its copy. */
void hrx_pinned_use_recorded(hrx_pinned_t* pinned, hrx_pinned_use_t* use);
/* The caller is done with the use (its event may still be pending, or it
 * was never recorded: then nothing of it was queued). */
void hrx_pinned_end_use(hrx_pinned_t* pinned, hrx_pinned_use_t* use);
/* hrx_pinned_end_use of `use` (a hrx_pinned_use_t*), for a paced
 * transfer's release (pacing.h, on_release). A paced transfer's use is
 * never recorded: it is complete once ended, after the last chunk. */
void hrx_pinned_end_use_hook(void* use);

/* Testing builds count the direct transfers (hrx_pinned_query_direct,
 * testing/hrx_testing.h). */
#ifdef HRX_TESTING_BUILD
void hrx_pinned_count_direct(bool upload);
#define HRX_PINNED_COUNT_DIRECT(upload) hrx_pinned_count_direct(upload)
#else
#define HRX_PINNED_COUNT_DIRECT(upload) ((void)0)
#endif

#endif /* HRX_CORE_PINNED_H_ */
