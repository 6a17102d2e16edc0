/* Calls that keep the GIL unless they would wait: see submit.h. */
#include "submit.h"

#include <sched.h>

#include "wait.h"

/* The call itself; `hook` is NULL in the attempts with the GIL held (the
 * thread is in non-blocking mode then) and the interruptible hook in the
 * blocking retry. */
static hrx_status_t hrx_py_submission_call(hrx_py_submission_t* s,
                                           const hrx_wait_hook_t* hook,
                                           bool* out_interrupted) {
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
    case HRX_PY_SUBMIT_READ:
      if (s->into) {
        return hrx_stream_read_into(s->stream, s->src, s->into, s->length,
                                    &s->out_readback);
      }
      return hrx_stream_read(s->stream, s->src, &s->out_readback);
    case HRX_PY_SUBMIT_FLUSH:
      return hrx_stream_flush(s->stream);
    case HRX_PY_SUBMIT_SYNCHRONIZE:
      return hrx_stream_synchronize(s->stream, hook, out_interrupted);
    case HRX_PY_SUBMIT_EVENT_SYNCHRONIZE:
      return hrx_event_synchronize(s->event, hook, out_interrupted);
    case HRX_PY_SUBMIT_KERNEL_LAUNCH:
      return hrx_stream_launch(s->stream, s->kernel, s->config, s->args,
                               s->arg_count);
  }
  return hrx_status_create(HRX_STATUS_INVALID_ARGUMENT,
                           "unknown submission kind");
}

static hrx_status_t hrx_py_submission_attempt(void* s) {
  return hrx_py_submission_call(s, NULL, NULL);
}

static void hrx_py_submission_retain(hrx_py_submission_t* s) {
  hrx_stream_retain(s->stream);
  hrx_buffer_retain(s->dst.buffer);
  hrx_buffer_retain(s->src.buffer);
  hrx_event_retain(s->event);
  hrx_graph_retain(s->graph);
  if (s->kernel) {
    hrx_kernel_retain(s->kernel);
    for (size_t i = 0; i < s->arg_count; ++i) {
      if (s->args[i].kind == HRX_KERNEL_ARG_VIEW) {
        hrx_buffer_retain(s->args[i].view.buffer);
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
  if (s->kernel) {
    for (size_t i = 0; i < s->arg_count; ++i) {
      if (s->args[i].kind == HRX_KERNEL_ARG_VIEW) {
        hrx_buffer_release(s->args[i].view.buffer);
      }
    }
    hrx_kernel_release(s->kernel);
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
    [HRX_PY_SUBMIT_READ] = "read",
    [HRX_PY_SUBMIT_FLUSH] = "flush",
    [HRX_PY_SUBMIT_SYNCHRONIZE] = "synchronize",
    [HRX_PY_SUBMIT_EVENT_SYNCHRONIZE] = "event_synchronize",
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

/* A pause between attempts: the other thread usually needs only
 * microseconds, and may need this core to get them. */
static void hrx_py_pause(unsigned attempt) {
  if (attempt % 8 == 7) {
    sched_yield();
    return;
  }
  for (int i = 0; i < 64; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
  }
}

hrx_status_t hrx_py_attempt_keeping_gil(hrx_status_t (*attempt)(void* arg),
                                        void* arg) {
  bool previous = hrx_thread_set_nonblocking(true);
  hrx_status_t status = attempt(arg);
  uint64_t start = 0;
  for (unsigned n = 0; hrx_status_would_block_briefly(status) &&
                       !hrx_host_callbacks_in_flight();
       ++n) {
    uint64_t now = hrx_now_ns();
    if (!start) start = now;
    if (now - start >= HRX_PY_KEEP_GIL_NS) break;
    hrx_status_free(status);
    hrx_py_pause(n);
    status = attempt(arg);
  }
  hrx_thread_set_nonblocking(previous);
  return status;
}

hrx_status_t hrx_py_runtime_query(hrx_status_t (*query)(void* arg),
                                  void (*hold)(void* arg, bool held),
                                  void* arg) {
  hrx_status_t status = hrx_py_attempt_keeping_gil(query, arg);
  if (hrx_status_code(status) != HRX_STATUS_WOULD_BLOCK) {
    /* A thread polling keeps the GIL: threads whose wait is over get it
     * from here (wait.h). */
    hrx_py_hand_over_gil();
    return status;
  }
  hrx_status_free(status);
  hold(arg, true);
  Py_BEGIN_ALLOW_THREADS
  status = query(arg);
  Py_END_ALLOW_THREADS
  hold(arg, false);
  return status;
}

int hrx_py_submit(hrx_py_state_t* state, hrx_py_submission_t* s) {
  hrx_status_t status = NULL;
  bool attempt = !(s->kind == HRX_PY_SUBMIT_UPLOAD &&
                   s->length > HRX_PY_UPLOAD_KEEP_GIL_BYTES);
  if (attempt) {
    (void)hrx_thread_take_full_batch();
    status = hrx_py_attempt_keeping_gil(hrx_py_submission_attempt, s);
    if (!status && hrx_thread_take_full_batch()) {
      /* The command filled its stream's batch: published without the GIL,
       * so that other threads convert and queue their commands meanwhile. */
      HRX_PY_COUNT_GIL_RELEASE(s->kind, "full batch");
      hrx_stream_retain(s->stream);
      Py_BEGIN_ALLOW_THREADS
      status = hrx_stream_publish_batch(s->stream);
      Py_END_ALLOW_THREADS
      hrx_stream_release(s->stream);
      return status ? hrx_py_raise_int(state, status) : 0;
    }
    if (hrx_status_code(status) != HRX_STATUS_WOULD_BLOCK) {
      /* The threads taking the GIL back after a wait get it now. */
      hrx_py_hand_over_gil();
      return status ? hrx_py_raise_int(state, status) : 0;
    }
    HRX_PY_COUNT_GIL_RELEASE(s->kind, hrx_status_message(status));
    hrx_status_free(status);
    status = NULL;
  } else {
    HRX_PY_COUNT_GIL_RELEASE(s->kind, "large upload");
  }
  hrx_py_submission_retain(s);
  bool interrupted = false;
  hrx_py_wait_t wait;
  hrx_py_wait_begin(&wait);
  /* A stream's completion gate is waited for with the hook; the call would
   * otherwise wait for it without one. */
  if (s->stream) {
    status = hrx_stream_wait_completions(s->stream, &wait.hook, &interrupted);
  }
  if (!status && !interrupted) {
    status = hrx_py_submission_call(s, &wait.hook, &interrupted);
  }
  hrx_py_submission_release(s);
  hrx_py_wait_end(&wait);
  if (status) return hrx_py_raise_int(state, status);
  return interrupted ? -1 : 0;
}
