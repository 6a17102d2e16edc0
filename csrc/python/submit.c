/* Submissions that keep the GIL unless they would block: see submit.h. */
#include "submit.h"

static hrx_status_t hrx_py_submission_call(hrx_py_submission_t* s) {
  switch (s->kind) {
    case HRX_PY_SUBMIT_COPY:
      return hrx_stream_copy(s->stream, s->dst, s->src);
    case HRX_PY_SUBMIT_COPY_PEER:
      return hrx_stream_copy_peer(s->stream, s->dst, s->src);
    case HRX_PY_SUBMIT_FILL:
      return hrx_stream_fill(s->stream, s->dst, s->byte);
    case HRX_PY_SUBMIT_UPLOAD:
      return hrx_stream_upload(s->stream, s->dst, s->data, s->length);
    case HRX_PY_SUBMIT_WAIT_EVENT:
      return hrx_stream_wait_event(s->stream, s->event);
    case HRX_PY_SUBMIT_RECORD_EVENT:
      return s->timing ? hrx_stream_record_timing_event(s->stream, &s->out_event)
                       : hrx_stream_record_event(s->stream, &s->out_event);
    case HRX_PY_SUBMIT_GRAPH_LAUNCH:
      return hrx_graph_launch(s->graph, s->stream, &s->out_completion);
  }
  return hrx_status_create(HRX_STATUS_INVALID_ARGUMENT,
                           "unknown submission kind");
}

static void hrx_py_submission_release(hrx_py_submission_t* s) {
  hrx_stream_release(s->stream);
  hrx_buffer_release(s->dst.buffer);
  hrx_buffer_release(s->src.buffer);
  hrx_event_release(s->event);
  hrx_graph_release(s->graph);
}

hrx_status_t hrx_py_submit(hrx_py_submission_t* s, bool run) {
  if (!run) {
    hrx_py_submission_release(s);
    return NULL;
  }
  hrx_status_t status = NULL;
  bool attempt = !(s->kind == HRX_PY_SUBMIT_UPLOAD &&
                   s->length > HRX_PY_UPLOAD_KEEP_GIL_BYTES);
  if (attempt) {
    bool previous = hrx_thread_set_nonblocking(true);
    status = hrx_py_submission_call(s);
    hrx_thread_set_nonblocking(previous);
    if (hrx_status_code(status) != HRX_STATUS_WOULD_BLOCK) {
      hrx_py_submission_release(s);
      return status;
    }
    hrx_status_free(status);
    status = NULL;
  }
  Py_BEGIN_ALLOW_THREADS
  status = hrx_py_submission_call(s);
  hrx_py_submission_release(s);
  Py_END_ALLOW_THREADS
  return status;
}
