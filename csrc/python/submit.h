/* How every submission binding calls the core (copy, fill, upload,
 * wait_event, record_event, graph launch, kernel launch): first with the
 * GIL held, in the
 * core's non-blocking mode (hrx_thread_set_nonblocking); only when the core
 * answers that the call would wait (a full queue, a lock held by a waiting
 * producer, a completion, host callbacks in flight, one-time preparation)
 * is the GIL released and the call repeated, blocking. A submission that
 * never waits thus costs no GIL hand-off, which is what lets many Python
 * threads submit at once. */
#ifndef HRX_PYTHON_SUBMIT_H_
#define HRX_PYTHON_SUBMIT_H_

#include "module.h"
#include "objects.h"

typedef enum hrx_py_submission_kind_e {
  HRX_PY_SUBMIT_COPY,
  HRX_PY_SUBMIT_COPY_PEER,
  HRX_PY_SUBMIT_FILL,
  HRX_PY_SUBMIT_UPLOAD,
  HRX_PY_SUBMIT_WAIT_EVENT,
  HRX_PY_SUBMIT_RECORD_EVENT,
  HRX_PY_SUBMIT_GRAPH_LAUNCH,
  HRX_PY_SUBMIT_KERNEL_LAUNCH,
} hrx_py_submission_kind_t;

/* Uploads larger than this skip the attempt with the GIL: staging their
 * bytes is worth letting other threads run meanwhile. */
#define HRX_PY_UPLOAD_KEEP_GIL_BYTES (64u << 10)

/* One submission. The objects it names are BORROWED from open handles:
 * fill it with the GIL held and pass it to hrx_py_submit before anything
 * can release the GIL (a handle closed meanwhile would free them);
 * hrx_py_submit retains them only when it releases the GIL. */
typedef struct hrx_py_submission_s {
  hrx_py_submission_kind_t kind;
  hrx_stream_t* stream;          /* borrowed */
  hrx_view_t dst;                /* buffer borrowed (COPY, COPY_PEER, FILL,
                                    UPLOAD) */
  hrx_view_t src;                /* buffer borrowed (COPY, COPY_PEER) */
  uint8_t byte;                  /* FILL */
  const void* data;              /* UPLOAD: borrowed host bytes */
  uint64_t length;               /* UPLOAD */
  hrx_event_t* event;            /* borrowed (WAIT_EVENT) */
  bool timing;                   /* RECORD_EVENT */
  hrx_event_t* out_event;        /* RECORD_EVENT result */
  hrx_graph_t* graph;            /* borrowed (GRAPH_LAUNCH) */
  hrx_completion_t* out_completion;  /* GRAPH_LAUNCH result */
  const hrx_py_launch_t* launch; /* KERNEL_LAUNCH: its kernel and VIEW
                                    arguments' buffers borrowed */
} hrx_py_submission_t;

/* Runs the submission as described above. Call with the GIL. Before the
 * blocking retry it retains the objects the submission names (another
 * thread may close their handles while the GIL is released) and releases
 * them after it without the GIL (a last buffer release waits for queued
 * work). */
hrx_status_t hrx_py_submit(hrx_py_submission_t* submission);

#ifdef HRX_TESTING_BUILD
/* A new dict {(kind, reason): count} of the submissions that released the
 * GIL so far in this process (testing.c). */
PyObject* hrx_py_testing_gil_releases(void);
#endif

#endif /* HRX_PYTHON_SUBMIT_H_ */
