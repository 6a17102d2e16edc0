/* Internal access to streams for readbacks and the benchmark driver. */
#ifndef HRX_CORE_STREAM_H_
#define HRX_CORE_STREAM_H_

#include "backends/backend.h"
#include "hrx.h"

/* Checks that `view` names a live, non-empty, in-bounds range of a buffer on
 * the stream's device. `role` names the argument in the message ("dst"). */
hrx_status_t hrx_stream_check_view(const hrx_stream_t* stream,
                                   hrx_view_t view, const char* role);

/* Runs `submit` under the stream's producer lock, then publishes: the
 * stream's last-published marker is advanced under its separate publish
 * lock. `submit` gets the stream's backend and native queue. */
typedef hrx_status_t (*hrx_stream_submit_fn_t)(hrx_backend_device_t* backend,
                                               hrx_native_queue_t* queue,
                                               void* user_data,
                                               hrx_ticket_t* out_ticket);
hrx_status_t hrx_stream_submit(hrx_stream_t* stream,
                               hrx_stream_submit_fn_t submit, void* user_data);
/* hrx_stream_submit of a command that moves `bytes` bytes: a pool stream
 * counts it on its pool queue once published (hrx_pool_queue_stats_t). */
hrx_status_t hrx_stream_submit_sized(hrx_stream_t* stream,
                                     hrx_stream_submit_fn_t submit,
                                     void* user_data, uint64_t bytes);

/* Records `native_event` after the stream's published work, under the
 * publish lock only. */
hrx_status_t hrx_stream_record_native(hrx_stream_t* stream,
                                      hrx_native_event_t* native_event);

/* Tells the batching policy that the calling thread observed work (a wait
 * of any kind): its next small command goes out at once instead of being
 * held for a batch. synchronize and record_event call it themselves. */
void hrx_stream_thread_observed(void);

/* Keeps a launch's completion (retained) until it is done; releasing the
 * stream waits for it. Call only after the launch was submitted. */
hrx_status_t hrx_stream_track_completion(hrx_stream_t* stream,
                                         hrx_completion_t* completion);

#endif /* HRX_CORE_STREAM_H_ */
