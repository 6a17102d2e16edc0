/* hrx.Completion: the host-side completion of a graph launch with host
 * callbacks. Waits release the GIL and can be interrupted by Ctrl-C;
 * result() re-raises the exception the first failing callback raised (kept
 * by the trampoline in graph.c). */
#include "completion.h"

#include <math.h>

#include "args.h"
#include "handle.h"
#include "host_threads.h"
#include "wait.h"

typedef struct {
  PyObject_HEAD
  hrx_completion_t* completion;  /* retained */
} hrx_py_completion_t;

static void hrx_py_completion_release(void* completion) {
  /* The last reference may free a graph, whose buffers wait for queued
   * work, which may include callbacks that need the GIL. */
  hrx_completion_release(completion);
}

PyObject* hrx_py_completion_wrap(hrx_py_state_t* state,
                                 hrx_completion_t* completion) {
  hrx_py_completion_t* self =
      PyObject_GC_New(hrx_py_completion_t, state->completion_type);
  if (!self) {
    hrx_py_release_without_gil(hrx_py_completion_release, completion);
    return NULL;
  }
  self->completion = completion;
  PyObject_GC_Track(self);
  return (PyObject*)self;
}

/* A Completion has no close(): dealloc drops its reference, and so does
 * the garbage collector's tp_clear (after which the handle reads as
 * closed). */
static const hrx_py_handle_kind_t hrx_py_completion_kind = {
    .name = "completion",
    .field = offsetof(hrx_py_completion_t, completion),
    .release = hrx_py_completion_release};

hrx_completion_t* hrx_py_completion_unwrap(hrx_py_state_t* state,
                                           PyObject* object) {
  return hrx_py_handle_unwrap(state, object, state->completion_type,
                              &hrx_py_completion_kind);
}

static hrx_completion_t* hrx_py_completion_get(PyObject* self) {
  return hrx_py_handle_get(self, &hrx_py_completion_kind);
}

static void hrx_py_completion_dealloc(PyObject* self) {
  hrx_py_handle_dealloc(self, &hrx_py_completion_kind);
}

/* What the C completion, which this handle holds, keeps alive for Python:
 * the exception the launch's first failing callback raised (final once the
 * launch is done; the trampoline attaches it before), and the callables of
 * the launched graph while the launch alone holds it. The collector must
 * see them, or a cycle through them (an exception whose arguments or
 * traceback refer back to this Completion, a callable whose closure does)
 * would never be collected, and the live device it keeps (queues, engine
 * threads, memory) would outlive every handle. */
static int hrx_py_completion_traverse(PyObject* self, visitproc visit,
                                      void* arg) {
  Py_VISIT(Py_TYPE(self));
  hrx_completion_t* completion = ((hrx_py_completion_t*)self)->completion;
  if (!completion) return 0;
  if (hrx_completion_done(completion)) {
    Py_VISIT((PyObject*)hrx_completion_payload(completion));
  }
  hrx_py_callable_visit_t how = {visit, arg};
  return hrx_completion_visit_host_data(completion, hrx_py_visit_callable,
                                        &how);
}

/* Breaks such a cycle: drops the handle's reference (the C completion,
 * and with it the exception, unless the stream still holds the launch). */
static int hrx_py_completion_clear(PyObject* self) {
  hrx_py_handle_close(self, &hrx_py_completion_kind);
  return 0;
}

/* Raises a shallow copy of the callback's exception, with its traceback and
 * chained to it (__cause__). Raising the kept exception itself would append
 * the caller's frames to its traceback at every result(), and make the
 * cycle exception -> frame -> Completion -> exception out of any call that
 * catches it (collected, but only by the garbage collector). Falls back to
 * the kept exception if it cannot be copied. */
static void hrx_py_completion_reraise(PyObject* exception) {
  PyObject* copy_module = PyImport_ImportModule("copy");
  PyObject* copy =
      copy_module ? PyObject_CallMethod(copy_module, "copy", "O", exception)
                  : NULL;
  Py_XDECREF(copy_module);
  if (!copy || !PyExceptionInstance_Check(copy)) {
    PyErr_Clear();
    Py_XDECREF(copy);
    PyErr_SetObject((PyObject*)Py_TYPE(exception), exception);
    return;
  }
  PyObject* traceback = PyException_GetTraceback(exception);
  if (traceback) {
    PyException_SetTraceback(copy, traceback);
    Py_DECREF(traceback);
  }
  PyException_SetCause(copy, Py_NewRef(exception));
  PyErr_SetObject((PyObject*)Py_TYPE(copy), copy);
  Py_DECREF(copy);
}

/* timeout: None (no limit) or a non-negative number of seconds. */
static int hrx_py_completion_timeout(hrx_py_state_t* state, PyObject* object,
                                     int64_t* out_ns) {
  if (!object || object == Py_None) {
    *out_ns = -1;
    return 0;
  }
  if (PyBool_Check(object) || !(PyLong_Check(object) || PyFloat_Check(object))) {
    PyErr_Format(PyExc_TypeError,
                 "timeout must be None or a number of seconds, not %.100s",
                 Py_TYPE(object)->tp_name);
    return -1;
  }
  double seconds = PyFloat_AsDouble(object);
  if (seconds == -1.0 && PyErr_Occurred()) return -1;
  if (isnan(seconds) || seconds < 0) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "timeout must be None or >= 0 seconds; got %R", object);
    return -1;
  }
  /* Beyond about 292 years is no limit. */
  *out_ns = seconds >= 9.2e9 ? -1 : (int64_t)(seconds * 1e9);
  return 0;
}

/* Waits for the completion (timeout_ns -1: no limit) in slices, with the
 * GIL released, running Python's signal handlers between slices so that
 * Ctrl-C interrupts it (wait.h). 1 done, 0 timed out, -1 error set. */
static int hrx_py_completion_block(hrx_py_state_t* state,
                                   hrx_completion_t* completion,
                                   int64_t timeout_ns) {
  /* Done: nothing to wait for, so the GIL is kept. */
  if (hrx_completion_done(completion)) return 1;
  hrx_py_wait_t wait;
  hrx_py_wait_begin(&wait);
  uint64_t start = hrx_now_ns();
  bool done = false;
  hrx_status_t status = NULL;
  for (;;) {
    int64_t slice = (int64_t)wait.hook.slice_ns;
    if (timeout_ns >= 0) {
      int64_t left = timeout_ns - (int64_t)(hrx_now_ns() - start);
      if (left < slice) slice = left < 0 ? 0 : left;
    }
    status = hrx_completion_wait(completion, slice, &done);
    if (status || done) break;
    if (timeout_ns >= 0 && (int64_t)(hrx_now_ns() - start) >= timeout_ns) {
      break;
    }
    if (wait.hook.interrupted(wait.hook.user_data)) break;
  }
  hrx_py_wait_end(&wait);
  if (status) return hrx_py_raise_int(state, status);
  if (wait.raised) return -1;
  return done ? 1 : 0;
}

static PyObject* hrx_py_completion_done(PyObject* self, PyObject* unused) {
  (void)unused;
  hrx_completion_t* completion = hrx_py_completion_get(self);
  if (!completion) return NULL;
  return PyBool_FromLong(hrx_completion_done(completion));
}

/* wait(timeout=None) and result(timeout=None) (`function`): parses
 * `timeout`, then waits as hrx_py_completion_block does.
 * 1 done, 0 timed out, -1 error set; *out_completion is borrowed from the
 * open handle. */
static int hrx_py_completion_wait_for(PyObject* self, PyObject* const* args,
                                      Py_ssize_t nargs, PyObject* kwnames,
                                      const char* function,
                                      hrx_py_state_t** out_state,
                                      hrx_completion_t** out_completion) {
  static const char* const names[] = {"timeout"};
  PyObject* timeout = NULL;
  if (hrx_py_arg_parse(function, args, nargs, kwnames, names, 1, 1, 0,
                       &timeout) < 0) {
    return -1;
  }
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  int64_t timeout_ns = 0;
  if (hrx_py_completion_timeout(state, timeout, &timeout_ns) < 0) return -1;
  hrx_completion_t* completion = hrx_py_completion_get(self);
  if (!completion) return -1;
  *out_state = state;
  *out_completion = completion;
  return hrx_py_completion_block(state, completion, timeout_ns);
}

static PyObject* hrx_py_completion_wait(PyObject* self, PyObject* const* args,
                                        Py_ssize_t nargs, PyObject* kwnames) {
  hrx_py_state_t* state = NULL;
  hrx_completion_t* completion = NULL;
  int done = hrx_py_completion_wait_for(self, args, nargs, kwnames, "wait",
                                        &state, &completion);
  if (done < 0) return NULL;
  return PyBool_FromLong(done);
}

static PyObject* hrx_py_completion_result(PyObject* self, PyObject* const* args,
                                          Py_ssize_t nargs, PyObject* kwnames) {
  hrx_py_state_t* state = NULL;
  hrx_completion_t* completion = NULL;
  int done = hrx_py_completion_wait_for(self, args, nargs, kwnames, "result",
                                        &state, &completion);
  if (done < 0) return NULL;
  if (!done) {
    PyErr_SetString(PyExc_TimeoutError,
                    "the launch did not complete within the timeout");
    return NULL;
  }
  hrx_status_t status = hrx_completion_result(completion);
  if (!status) Py_RETURN_NONE;
  PyObject* exception = hrx_completion_payload(completion);
  if (!exception) return hrx_py_raise(state, status);
  hrx_status_free(status);
  hrx_py_completion_reraise(exception);
  return NULL;
}

static PyMethodDef hrx_py_completion_methods[] = {
    {"done", hrx_py_completion_done, METH_NOARGS,
     "done($self, /)\n--\n\n"
     "Whether every node of the launch has run (never waits)."},
    {"wait", (PyCFunction)(void (*)(void))hrx_py_completion_wait,
     METH_FASTCALL | METH_KEYWORDS,
     "wait($self, timeout=None)\n--\n\n"
     "Wait (GIL released) until the launch is complete or timeout seconds "
     "passed (None: no limit); return True when complete."},
    {"result", (PyCFunction)(void (*)(void))hrx_py_completion_result,
     METH_FASTCALL | METH_KEYWORDS,
     "result($self, timeout=None)\n--\n\n"
     "Wait as wait() does, then re-raise the exception of the first host "
     "callback that raised; return None if none did (TimeoutError if not "
     "complete in time)."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot hrx_py_completion_slots[] = {
    {Py_tp_doc, "Completes when every node of one graph launch, host "
                "callbacks included, has run. A host-side latch, never a "
                "native event: order stream work after it with "
                "Stream.wait_completion(). Returned by Graph.launch() for "
                "graphs with host callbacks."},
    {Py_tp_dealloc, hrx_py_completion_dealloc},
    {Py_tp_traverse, hrx_py_completion_traverse},
    {Py_tp_clear, hrx_py_completion_clear},
    {Py_tp_methods, hrx_py_completion_methods},
    {0, NULL},
};

PyType_Spec hrx_py_completion_spec = {
    .name = "hrx.Completion",
    .basicsize = sizeof(hrx_py_completion_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = hrx_py_completion_slots,
};
