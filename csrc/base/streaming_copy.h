/* Copies of host memory too large to stay in the CPU's caches, written
 * around the caches.
 *
 * A plain memcpy into memory that is not cached reads every destination
 * line before it overwrites it (a read for ownership) and leaves the
 * copied bytes in the caches, evicting what was there. A staged transfer's
 * host copy (staged_transfer.h) moves hundreds of megabytes through pinned
 * staging that the device reads next, or into caller memory that is far
 * larger than the caches: the extra read is a third more memory traffic,
 * and memory bandwidth is what bounds several threads copying at once.
 * Non-temporal stores write whole lines straight to memory with no read.
 *
 * Where the CPU has no such stores (or hrx does not use them there), this
 * is memcpy. Never touches Python. */
#ifndef HRX_BASE_STREAMING_COPY_H_
#define HRX_BASE_STREAMING_COPY_H_

#include <stdbool.h>
#include <stddef.h>

/* Whether hrx_streaming_copy writes around the caches on this build. */
bool hrx_streaming_copy_bypasses_caches(void);

/* Copies `length` bytes from `src` to `dst` (which do not overlap), as
 * memcpy does; the stores are complete and ordered before later stores
 * of the calling thread once it returns, as memcpy's are, so publishing
 * the copy (a lock, an atomic) publishes the bytes. Any alignment. */
void hrx_streaming_copy(void* dst, const void* src, size_t length);

/* hrx_streaming_copy when `streaming`, else memcpy: for callers whose
 * settings choose. A zero length touches neither pointer. */
void hrx_host_copy(void* dst, const void* src, size_t length, bool streaming);

#endif  /* HRX_BASE_STREAMING_COPY_H_ */
