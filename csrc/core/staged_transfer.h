/* Pipelined host copies of large pageable transfers: a small pool of copy
 * threads per live device that fills (upload) and drains (read) pinned
 * staging together with the calling thread, so that a large transfer of
 * pageable memory is not bound by one thread's memcpy. Internal to the
 * core.
 *
 * Which copies: a host copy of at least min_bytes
 * ($HRX_STAGED_COPY_MIN_BYTES) while the device has copy threads
 * ($HRX_STAGED_COPY_THREADS, 0 turns this off). Smaller copies, and every
 * copy with no threads, are one copy on the caller's thread, as before.
 * A copy of at least HRX_STAGED_COPY_STREAMING_MIN_BYTES, pipelined or
 * not, writes around the CPU caches (base/streaming_copy.h) unless
 * $HRX_STAGED_COPY_STREAMING is 0: its bytes go to pinned staging that the
 * device reads next, or to caller memory larger than the caches.
 *
 * - A paced upload (paced_submission.c) is held on its stream before its
 *   staging is filled; the copy is cut into pieces, and whenever the
 *   filled prefix grows, the transfer's staged_bytes grows with it and the
 *   stream's held chunks that lie inside are published (pacing.h): the
 *   chunks' DMA overlaps the copy of the later pieces. The call returns
 *   once every byte was copied (the caller's memory is borrowed for the
 *   call, as before).
 * - A read's bytes are drained from its staging into the caller's memory
 *   (read_into, read_blocking, and a binding's copy out of a read) by the
 *   caller and the copy threads together; a paced read's chunks as they
 *   land (readback.c).
 *
 * Threads: started with the first copy that uses them, ended when the
 * device is torn down. They copy host memory and call the `ready`
 * callback (a paced upload's publishes its staged chunks, as a pacer
 * thread does); they never touch Python objects.
 * A copy takes pieces in order; several copies at once (many threads
 * uploading) share the threads, each caller working on its own copy too,
 * so none waits on another's pieces alone.
 *
 * Thread-safe. */
#ifndef HRX_CORE_STAGED_TRANSFER_H_
#define HRX_CORE_STAGED_TRANSFER_H_

#include <stdbool.h>
#include <stdint.h>

#include "hrx.h"

/* Defaults and limits of the variables (read when a live device opens). */
#define HRX_STAGED_COPY_DEFAULT_MIN_BYTES (8ull << 20)
#define HRX_STAGED_COPY_MIN_MIN_BYTES (64ull << 10)
#define HRX_STAGED_COPY_MAX_THREADS 64
/* Default threads: half the CPUs the process may run on, at most this
 * many. */
#define HRX_STAGED_COPY_DEFAULT_MAX_THREADS 8
/* The piece a copy is cut into when its caller leaves it to the copier
 * (piece_bytes 0): this, or less for a copy that would not give every
 * thread a piece, down to HRX_STAGED_COPY_MIN_PIECE_BYTES. */
#define HRX_STAGED_COPY_DRAIN_PIECE_BYTES (2ull << 20)
#define HRX_STAGED_COPY_MIN_PIECE_BYTES (16ull << 10)
/* Copies from this size up write around the caches (when streaming). */
#define HRX_STAGED_COPY_STREAMING_MIN_BYTES (4ull << 20)

typedef struct hrx_staged_copier_s hrx_staged_copier_t;

typedef struct hrx_staged_copy_settings_s {
  uint32_t threads;    /* copy threads besides the caller; 0: off */
  uint64_t min_bytes;  /* copies of at least this many bytes use them */
  bool streaming;      /* large copies write around the caches */
} hrx_staged_copy_settings_t;

/* $HRX_STAGED_COPY_THREADS (0 .. HRX_STAGED_COPY_MAX_THREADS; default half
 * the CPUs the process may run on, 1 .. HRX_STAGED_COPY_DEFAULT_MAX_THREADS),
 * $HRX_STAGED_COPY_MIN_BYTES (HRX_STAGED_COPY_MIN_MIN_BYTES .. 2^40;
 * default HRX_STAGED_COPY_DEFAULT_MIN_BYTES) and $HRX_STAGED_COPY_STREAMING
 * (0 or 1, default 1): INVALID_ARGUMENT naming a malformed one (out
 * unchanged). */
hrx_status_t hrx_staged_copy_settings_from_environment(
    hrx_staged_copy_settings_t* out_settings);

/* No thread is started here. */
hrx_status_t hrx_staged_copier_create(const hrx_staged_copy_settings_t* settings,
                                      hrx_staged_copier_t** out_copier);
/* Ends the threads. No copy is in progress. */
void hrx_staged_copier_destroy(hrx_staged_copier_t* copier);

/* Whether a host copy of `length` bytes is pipelined. */
bool hrx_staged_copier_applies(const hrx_staged_copier_t* copier,
                               uint64_t length);

/* Called, on whichever thread copied the piece, when the copied prefix of
 * a copy grew to `ready_bytes`. Calls may come out of order between
 * threads (keep the largest). The copy does not return before every call
 * returned. */
typedef void (*hrx_staged_ready_fn_t)(void* user_data, uint64_t ready_bytes);

/* Copies `length` bytes from `src` to `dst` (neither overlapping), in
 * pieces of `piece_bytes` (0: the copier's choice, above) taken in order by the caller and the copy
 * threads; returns once every piece was copied. `ready` (may be NULL)
 * reports the copied prefix. A copy that does not apply, or that cannot
 * get its bookkeeping allocated, is copied by the caller alone (with
 * `ready` called once, at the end): it never fails. `copier` may be NULL
 * (one plain copy by the caller). */
void hrx_staged_copy(hrx_staged_copier_t* copier, void* dst, const void* src,
                     uint64_t length, uint64_t piece_bytes,
                     hrx_staged_ready_fn_t ready, void* user_data);

#endif /* HRX_CORE_STAGED_TRANSFER_H_ */
