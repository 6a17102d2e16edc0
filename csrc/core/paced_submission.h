/* Paced transfers on a stream (pacing.h has the pacer): which of a
 * stream's transfers are paced, holding one on the stream's publication,
 * and the paced upload and read themselves. Internal to the core.
 *
 * A held transfer keeps its place in the stream's order: its command
 * number is taken under the publication's lock after the pending batch was
 * published, and everything the stream does later waits for the held list
 * to be published (publication.h). A failure reads as an unpaced
 * transfer's would: a chunk that fails fails the stream by the transfer's
 * number (an observing read keeps its own failure for its readback), and
 * transfers held after it are dropped and counted as not run. */
#ifndef HRX_CORE_PACED_SUBMISSION_H_
#define HRX_CORE_PACED_SUBMISSION_H_

#include <stdbool.h>
#include <stdint.h>

#include "hrx.h"
#include "pacing.h"
#include "publication.h"
#include "staging.h"

/* Sets the publication's pace entry up (its ops are this file's). */
void hrx_paced_entry_initialize(hrx_publication_t* publication);

/* Whether a transfer of `length` bytes on a stream of `priority`
 * (`reserved`) is paced: chunking on, at least a chunk, a stream neither
 * high-priority nor reserved. */
bool hrx_paced_applies(hrx_publication_t* publication, uint64_t length,
                       int priority, bool reserved);

/* A paced transfer may wait (for the publication's lock, for its held
 * list to be published when a waiter asked for it, for queue space for its
 * first chunks): in non-blocking mode it is WOULD_BLOCK before anything is
 * done, so that a binding retries it in blocking mode (with its global
 * lock released) and the transfer is paced like any other; NULL
 * otherwise. */
hrx_status_t hrx_paced_would_block(void);

/* An upload of `length` bytes from `data` (borrowed for the call: the
 * chunks read a copy of it in pooled staging, pinned on GPUs) to `dst`.
 * When the device's copy threads apply (staged_transfer.h), it is held
 * first and the copy is made by them and the caller, each chunk published
 * once copied; the call returns after the whole copy. The caller passed
 * the stream's entry. */
hrx_status_t hrx_paced_upload(hrx_publication_t* publication, void* dst,
                              const void* data, uint64_t length);

/* hrx_paced_upload from pinned host memory (pinned.h) read in place, with
 * no staging copy; on_release(release_arg) runs once no chunk can read
 * `data` any more (also when the upload fails). */
hrx_status_t hrx_paced_upload_pinned(hrx_publication_t* publication,
                                     void* dst, const void* data,
                                     uint64_t length,
                                     void (*on_release)(void*),
                                     void* release_arg);

/* A read of `length` bytes from `src` into `block` (the readback's
 * staging), whose event is recorded after the last chunk. On success
 * *out_transfer is the transfer, retained for the readback; on failure the
 * block goes back to `staging` as pending (chunks published before the
 * failing one may still write it). The caller passed the stream's
 * entry. */
hrx_status_t hrx_paced_read(hrx_publication_t* publication, const void* src,
                            uint64_t length, hrx_staging_pool_t* staging,
                            hrx_staging_block_t* block,
                            hrx_paced_transfer_t** out_transfer);

/* A read straight into pinned host memory (pinned.h): `block` is the
 * read's own, naming that memory and the pinned use's event, and the
 * transfer owns it from here. on_recorded(arg) runs once the block's event
 * is recorded behind every chunk the read published (pacing.h), and
 * on_release(arg) once nothing of the read can run any more (the
 * transfer's last reference, or at once when it cannot be made), also when
 * this call fails: it ends the use and frees the block. On success
 * *out_transfer is the transfer, retained for the readback. The caller
 * passed the stream's entry. */
hrx_status_t hrx_paced_read_pinned(hrx_publication_t* publication,
                                   const void* src, uint64_t length,
                                   hrx_staging_block_t* block,
                                   void (*on_recorded)(void*),
                                   void (*on_release)(void*), void* arg,
                                   hrx_paced_transfer_t** out_transfer);

#endif /* HRX_CORE_PACED_SUBMISSION_H_ */
