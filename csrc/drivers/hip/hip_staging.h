/* Pinned staging for host-to-device uploads, one per device.
 *
 * An upload borrows its host source only for the call, yet must stay
 * asynchronous: the bytes are copied into pinned staging memory and an async
 * H2D copy is issued from there. Staging is reclaimed only once an event
 * recorded after its copy has completed.
 *
 * - Uploads up to HRX_HIP_STAGING_RING_MAX_UPLOAD bytes take a slice of a
 *   pinned ring (allocated on first use), each slice tagged with a fence
 *   event; slices are reclaimed in order. When the ring is full of copies
 *   still in flight, the upload waits for the oldest one.
 * - In the calling thread's non-blocking mode (core/nonblocking.h), an
 *   upload that would allocate the ring or a block, or wait for the ring,
 *   is WOULD_BLOCK instead.
 * - Larger uploads take a dedicated pinned block, reused once its event has
 *   completed; free blocks above HRX_HIP_STAGING_BLOCK_CACHE_BYTES are
 *   returned to the runtime.
 *
 * Threading: hrx_hip_staging_upload may be called from any thread,
 * concurrently; one mutex guards the bookkeeping and is never held across a
 * copy of user bytes or a blocking native call. */
#ifndef HRX_DRIVERS_HIP_HIP_STAGING_H_
#define HRX_DRIVERS_HIP_HIP_STAGING_H_

#include <stdbool.h>
#include <stdint.h>

#include "hip_dynamic.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HRX_HIP_STAGING_RING_BYTES (16ull << 20)
#define HRX_HIP_STAGING_RING_MAX_UPLOAD (HRX_HIP_STAGING_RING_BYTES / 4)
#define HRX_HIP_STAGING_FENCES 512
#define HRX_HIP_STAGING_ALIGNMENT 256
#define HRX_HIP_STAGING_BLOCK_GRANULE (2ull << 20)
#define HRX_HIP_STAGING_BLOCK_CACHE_BYTES (256ull << 20)
#define HRX_HIP_STAGING_STREAMING_MIN_BYTES (64ull << 10)

typedef struct hrx_hip_staging_s hrx_hip_staging_t;

/* Makes empty staging; no native call. `streaming`: uploads of at least
 * HRX_HIP_STAGING_STREAMING_MIN_BYTES are copied into staging around the
 * CPU caches (base/streaming_copy.h): the device reads them next, the CPU
 * never. */
hrx_status_t hrx_hip_staging_create(bool streaming,
                                    hrx_hip_staging_t** out_staging);

/* Frees everything. The caller has made the device current and no copy from
 * staging can still be running (every queue of the device was synchronized
 * and destroyed). */
void hrx_hip_staging_destroy(hrx_hip_staging_t* staging);

/* Stages `length` bytes of `src` (borrowed for the call) and issues an async
 * copy of them to device address `dst` on `stream`. The device is current.
 * On failure nothing was submitted. */
hrx_status_t hrx_hip_staging_upload(hrx_hip_staging_t* staging,
                                    hrx_hip_stream_t stream, void* dst,
                                    const void* src, uint64_t length);

#ifdef __cplusplus
}
#endif

#endif /* HRX_DRIVERS_HIP_HIP_STAGING_H_ */
