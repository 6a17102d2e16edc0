/* Internal access to streams for readbacks, graphs, waits and the device. */
#ifndef HRX_CORE_STREAM_H_
#define HRX_CORE_STREAM_H_

#include "hal/device.h"
#include "device.h"
#include "hrx.h"
#include "peer_copy.h"

/* Checks that `view` names a live, non-empty, in-bounds range of a buffer on
 * the stream's device. `role` names the argument in the message ("dst"). */
hrx_status_t hrx_stream_check_view(const hrx_stream_t* stream,
                                   hrx_view_t view, const char* role);

/* The entry of every public stream call that may block: hrx_entry_check
 * (`what` names the call in a refusal), then the completions the stream was
 * told to wait for, and finished launches are given back. */
hrx_status_t hrx_stream_enter(hrx_stream_t* stream, const char* what);

/* A command submitted outside a batch. `submit` gets the stream's backend
 * and native queue and runs under the stream's publish lock, after the
 * stream's pending batch was published. */
typedef hrx_status_t (*hrx_stream_submit_fn_t)(hrx_backend_device_t* backend,
                                               hrx_native_queue_t* queue,
                                               void* user_data);
typedef struct hrx_stream_command_s {
  hrx_stream_submit_fn_t submit;
  void* user_data;
  uint64_t bytes;     /* bytes it moves (the pool queue's stats) */
  const char* what;   /* "upload", "event wait": names it in a failure */
  /* An observation point (read, graph launch): an earlier failure of the
   * stream is raised instead of running it, and its own failure is
   * returned at once. Otherwise a failure marks the stream failed and is
   * raised later (hrx.h, "Failures"). */
  bool observes;
} hrx_stream_command_t;

/* Submits a command (the caller passed hrx_stream_enter). Counts it as
 * accepted. Returns NULL for a command that is not an observation point
 * even when it failed or was not run (the stream keeps the failure). */
hrx_status_t hrx_stream_submit(hrx_stream_t* stream,
                               const hrx_stream_command_t* command);

/* Whether a transfer of `length` bytes on this stream is paced (pacing.h):
 * chunking on, at least a chunk, a stream neither high-priority nor
 * reserved. */
bool hrx_stream_paces(hrx_stream_t* stream, uint64_t length);
/* A paced transfer may wait (for the stream's publication lock, for its
 * held list to be published when a waiter asked for it, for queue space
 * for its first chunks): in non-blocking mode it is WOULD_BLOCK before
 * anything is done, so that a binding retries it in blocking mode (with
 * its global lock released) and the transfer is paced like any other;
 * NULL otherwise. */
hrx_status_t hrx_stream_paced_would_block(void);

/* Holds a paced transfer on the stream (the caller passed
 * hrx_stream_enter; takes the caller's reference) after publishing the
 * pending batch, numbers and counts it, and publishes what the window
 * allows; returns at once. On a failed stream with nothing held it is not
 * run (an observing one returns the stream's failure, as an unpaced read
 * would). An observing transfer whose first chunk failed here returns that
 * failure; a later chunk's failure stays in transfer->failure. Returns NULL
 * for a transfer that does not observe. */
struct hrx_paced_transfer_s;
hrx_status_t hrx_stream_submit_paced(hrx_stream_t* stream,
                                     struct hrx_paced_transfer_s* transfer);

/* The stream's copies between devices in flight (peer_copy.h). */
hrx_peer_holds_t* hrx_stream_peer_holds(hrx_stream_t* stream);

/* Keeps a launch's completion (retained) until it is done; releasing the
 * stream waits for it. Call only after the launch was submitted. */
hrx_status_t hrx_stream_track_completion(hrx_stream_t* stream,
                                         hrx_completion_t* completion);

/* The failure of the stream whose device failure link this is, taken (the
 * caller owns it and raises it), or NULL. For the device, which has already
 * unlisted the link under its failure lock. */
hrx_status_t hrx_stream_take_failure_of_link(hrx_failure_link_t* link);

#endif /* HRX_CORE_STREAM_H_ */
