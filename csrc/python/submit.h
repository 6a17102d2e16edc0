/* How every submission binding calls the core (copy, fill, upload,
 * wait_event, record_event, graph launch): first with the GIL held, in the
 * core's non-blocking mode (hrx_thread_set_nonblocking); only when the core
 * answers that the call would wait (a full queue, a lock held by a waiting
 * producer, a completion, host callbacks in flight, one-time preparation)
 * is the GIL released and the call repeated, blocking. A submission that
 * never waits thus costs no GIL hand-off, which is what lets many Python
 * threads submit at once. */
#ifndef HRX_PYTHON_SUBMIT_H_
#define HRX_PYTHON_SUBMIT_H_

#include "module.h"

typedef enum hrx_py_submission_kind_e {
  HRX_PY_SUBMIT_COPY,
  HRX_PY_SUBMIT_COPY_PEER,
  HRX_PY_SUBMIT_FILL,
  HRX_PY_SUBMIT_UPLOAD,
  HRX_PY_SUBMIT_WAIT_EVENT,
  HRX_PY_SUBMIT_RECORD_EVENT,
  HRX_PY_SUBMIT_GRAPH_LAUNCH,
} hrx_py_submission_kind_t;

/* Uploads larger than this skip the attempt with the GIL: staging their
 * bytes is worth letting other threads run meanwhile. */
#define HRX_PY_UPLOAD_KEEP_GIL_BYTES (64u << 10)

/* One submission. The objects it names are RETAINED by the caller (as for
 * any call that may release the GIL) and released by hrx_py_submit. */
typedef struct hrx_py_submission_s {
  hrx_py_submission_kind_t kind;
  hrx_stream_t* stream;          /* retained */
  hrx_view_t dst;                /* buffer retained (COPY, COPY_PEER, FILL,
                                    UPLOAD) */
  hrx_view_t src;                /* buffer retained (COPY, COPY_PEER) */
  uint8_t byte;                  /* FILL */
  const void* data;              /* UPLOAD: borrowed host bytes */
  uint64_t length;               /* UPLOAD */
  hrx_event_t* event;            /* retained (WAIT_EVENT) */
  bool timing;                   /* RECORD_EVENT */
  hrx_event_t* out_event;        /* RECORD_EVENT result */
  hrx_graph_t* graph;            /* retained (GRAPH_LAUNCH) */
  hrx_completion_t* out_completion;  /* GRAPH_LAUNCH result */
} hrx_py_submission_t;

/* Runs the submission as described above (`run` false: only drops the
 * references, e.g. after an argument error) and releases the objects it
 * names: with the GIL when it was never released (the handles, still open,
 * hold their own references, so none of these is the last), else without
 * it (a last buffer release waits for queued work). Call with the GIL. */
hrx_status_t hrx_py_submit(hrx_py_submission_t* submission, bool run);

#endif /* HRX_PYTHON_SUBMIT_H_ */
