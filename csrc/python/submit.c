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
    case HRX_PY_SUBMIT_KERNEL_LAUNCH:
      return hrx_stream_launch(s->stream, s->launch->kernel,
                               &s->launch->config, s->launch->args,
                               s->launch->count);
  }
  return hrx_status_create(HRX_STATUS_INVALID_ARGUMENT,
                           "unknown submission kind");
}

static void hrx_py_submission_retain(hrx_py_submission_t* s) {
  hrx_stream_retain(s->stream);
  hrx_buffer_retain(s->dst.buffer);
  hrx_buffer_retain(s->src.buffer);
  hrx_event_retain(s->event);
  hrx_graph_retain(s->graph);
  if (s->launch) {
    hrx_kernel_retain(s->launch->kernel);
    for (size_t i = 0; i < s->launch->count; ++i) {
      if (s->launch->args[i].kind == HRX_KERNEL_ARG_VIEW) {
        hrx_buffer_retain(s->launch->args[i].view.buffer);
      }
    }
  }
}

static void hrx_py_submission_release(hrx_py_submission_t* s) {
  hrx_stream_release(s->stream);
  hrx_buffer_release(s->dst.buffer);
  hrx_buffer_release(s->src.buffer);
  hrx_event_release(s->event);
  hrx_graph_release(s->graph);
  if (s->launch) {
    for (size_t i = 0; i < s->launch->count; ++i) {
      if (s->launch->args[i].kind == HRX_KERNEL_ARG_VIEW) {
        hrx_buffer_release(s->launch->args[i].view.buffer);
      }
    }
    hrx_kernel_release(s->launch->kernel);
  }
}

#ifdef HRX_TESTING_BUILD
/* The testing build counts the submissions that released the GIL, by kind
 * and by the core's reason (the WOULD_BLOCK message; "large upload" for an
 * upload that skipped the attempt): {(kind, reason): count}. Only touched
 * with the GIL held. */
static PyObject* hrx_py_gil_releases;

static const char* const hrx_py_submission_kind_names[] = {
    [HRX_PY_SUBMIT_COPY] = "copy",
    [HRX_PY_SUBMIT_COPY_PEER] = "copy_peer",
    [HRX_PY_SUBMIT_FILL] = "fill",
    [HRX_PY_SUBMIT_UPLOAD] = "upload",
    [HRX_PY_SUBMIT_WAIT_EVENT] = "wait_event",
    [HRX_PY_SUBMIT_RECORD_EVENT] = "record_event",
    [HRX_PY_SUBMIT_GRAPH_LAUNCH] = "graph_launch",
    [HRX_PY_SUBMIT_KERNEL_LAUNCH] = "kernel_launch",
};

static void hrx_py_count_gil_release(hrx_py_submission_kind_t kind,
                                     const char* reason) {
  if (!hrx_py_gil_releases && !(hrx_py_gil_releases = PyDict_New())) {
    PyErr_WriteUnraisable(NULL);
    return;
  }
  PyObject* key =
      Py_BuildValue("(ss)", hrx_py_submission_kind_names[kind], reason);
  PyObject* count = key ? PyDict_GetItemWithError(hrx_py_gil_releases, key)
                        : NULL;
  PyObject* next = NULL;
  if (key && !PyErr_Occurred()) {
    next = PyLong_FromLongLong(count ? PyLong_AsLongLong(count) + 1 : 1);
  }
  if (!next || PyDict_SetItem(hrx_py_gil_releases, key, next) < 0) {
    PyErr_WriteUnraisable(NULL);
  }
  Py_XDECREF(next);
  Py_XDECREF(key);
}

PyObject* hrx_py_testing_gil_releases(void) {
  return hrx_py_gil_releases ? PyDict_Copy(hrx_py_gil_releases) : PyDict_New();
}
#define HRX_PY_COUNT_GIL_RELEASE(kind, reason) \
  hrx_py_count_gil_release(kind, reason)
#else
#define HRX_PY_COUNT_GIL_RELEASE(kind, reason) ((void)0)
#endif

hrx_status_t hrx_py_submit(hrx_py_submission_t* s) {
  hrx_status_t status = NULL;
  bool attempt = !(s->kind == HRX_PY_SUBMIT_UPLOAD &&
                   s->length > HRX_PY_UPLOAD_KEEP_GIL_BYTES);
  if (attempt) {
    bool previous = hrx_thread_set_nonblocking(true);
    status = hrx_py_submission_call(s);
    hrx_thread_set_nonblocking(previous);
    if (hrx_status_code(status) != HRX_STATUS_WOULD_BLOCK) return status;
    HRX_PY_COUNT_GIL_RELEASE(s->kind, hrx_status_message(status));
    hrx_status_free(status);
    status = NULL;
  } else {
    HRX_PY_COUNT_GIL_RELEASE(s->kind, "large upload");
  }
  hrx_py_submission_retain(s);
  Py_BEGIN_ALLOW_THREADS
  status = hrx_py_submission_call(s);
  hrx_py_submission_release(s);
  Py_END_ALLOW_THREADS
  return status;
}
