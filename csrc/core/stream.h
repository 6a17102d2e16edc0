/* Internal access to streams for readbacks, graphs, kernels and copies
 * between devices. */
#ifndef HRX_CORE_STREAM_H_
#define HRX_CORE_STREAM_H_

#include "hrx.h"
#include "peer_holds.h"
#include "publication.h"

/* Checks that `view` names a live, non-empty, in-bounds range of a buffer on
 * the stream's device. `role` names the argument in the message ("dst"). */
hrx_status_t hrx_stream_check_view(const hrx_stream_t* stream,
                                   hrx_view_t view, const char* role);

/* The entry of every public stream call that may block: hrx_entry_check
 * (`what` names the call in a refusal), then the completions the stream was
 * told to wait for, and finished launches are given back. */
hrx_status_t hrx_stream_enter(hrx_stream_t* stream, const char* what);

/* Submits a command published alone (the caller passed hrx_stream_enter;
 * publication.h, hrx_publication_submit). */
hrx_status_t hrx_stream_submit(hrx_stream_t* stream,
                               const hrx_command_t* command);

/* Enters the stream (hrx_stream_enter; `what` names the call in a
 * refusal) and submits a small copy or fill, or a kernel launch, through
 * the publication's batching policy (publication.h,
 * hrx_publication_enqueue). */
hrx_status_t hrx_stream_enqueue(hrx_stream_t* stream,
                                const hrx_batch_command_t* command,
                                const char* what);

/* Whether a transfer of `length` bytes on this stream is paced
 * (paced_submission.h, hrx_paced_applies). */
bool hrx_stream_paces(hrx_stream_t* stream, uint64_t length);

/* After a host transfer of the stream was published unpaced (`upload`, or
 * a read): on a high-priority or reserved stream the device's pacer
 * yields that direction to it (pacing.h, hrx_pacer_yield). Never waits. */
void hrx_stream_urgent_transfer(hrx_stream_t* stream, bool upload);

/* The stream's publication (publication.h; borrowed, lives as long as the
 * stream), for paced reads. */
hrx_publication_t* hrx_stream_publication(hrx_stream_t* stream);

/* The stream's copies between devices in flight (peer_holds.h). */
hrx_peer_holds_t* hrx_stream_peer_holds(hrx_stream_t* stream);

/* Keeps a launch's completion (retained) until it is done; releasing the
 * stream waits for it. Call only after the launch was submitted. */
hrx_status_t hrx_stream_track_completion(hrx_stream_t* stream,
                                         hrx_completion_t* completion);

#endif /* HRX_CORE_STREAM_H_ */
