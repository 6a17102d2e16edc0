/* hrx.Event: a snapshot of a stream's published work. Dropping one keeps
 * the GIL: in the core's non-blocking mode an event's release never waits
 * (its device's teardown, should it be the last reference, goes to the
 * device's cleanup thread). */
#include "event.h"

#include "device_handle.h"
#include "property.h"
#include "submit.h"

typedef struct {
  PyObject_HEAD
  hrx_event_t* event;        /* retained; NULL once closed */
} hrx_py_event_t;

/* Releases with the GIL held, in non-blocking mode. */
static void hrx_py_event_release(void* event) {
  bool previous = hrx_thread_set_nonblocking(true);
  hrx_event_release(event);
  hrx_thread_set_nonblocking(previous);
}

static void hrx_py_event_drop(PyObject* self, void* event) {
  (void)self;
  hrx_py_event_release(event);
}

PyObject* hrx_py_event_wrap(hrx_py_state_t* state, hrx_event_t* event) {
  hrx_py_event_t* self = PyObject_GC_New(hrx_py_event_t, state->event_type);
  if (!self) {
    hrx_py_event_release(event);
    return NULL;
  }
  self->event = event;
  PyObject_GC_Track(self);
  return (PyObject*)self;
}

static const hrx_py_handle_kind_t hrx_py_event_kind = {
    .name = "event",
    .field = offsetof(hrx_py_event_t, event),
    .close = hrx_py_event_drop};

HRX_PY_HANDLE_FUNCTIONS(hrx_py_event, hrx_py_event_kind)

hrx_event_t* hrx_py_event_unwrap(hrx_py_state_t* state, PyObject* object) {
  return hrx_py_handle_unwrap(state, object, state->event_type,
                              &hrx_py_event_kind);
}

static hrx_event_t* hrx_py_event_get(PyObject* self, hrx_py_state_t** out) {
  *out = hrx_py_state_from_type(Py_TYPE(self));
  return *out ? hrx_py_event_unwrap(*out, self) : NULL;
}

typedef struct {
  hrx_event_t* event;  /* borrowed from the handle; held while the GIL is
                          released */
  bool done;
} hrx_py_event_query_t;

static hrx_status_t hrx_py_event_query_call(void* arg) {
  hrx_py_event_query_t* query = arg;
  return hrx_event_query(query->event, &query->done);
}

static void hrx_py_event_query_hold(void* arg, bool held) {
  hrx_event_t* event = ((hrx_py_event_query_t*)arg)->event;
  if (held) {
    hrx_event_retain(event);
  } else {
    hrx_py_event_release(event); /* never waits (above) */
  }
}

static PyObject* hrx_py_event_query(PyObject* self, PyObject* unused) {
  (void)unused;
  hrx_py_state_t* state;
  hrx_py_event_query_t query = {hrx_py_event_get(self, &state), false};
  if (!query.event) return NULL;
  hrx_status_t status = hrx_py_runtime_query(
      hrx_py_event_query_call, hrx_py_event_query_hold, &query);
  if (status) return hrx_py_raise(state, status);
  return PyBool_FromLong(query.done);
}

/* elapsed_time(end): milliseconds from this event to `end`, as PyTorch's
 * torch.cuda.Event.elapsed_time. */
static PyObject* hrx_py_event_elapsed_time(PyObject* self, PyObject* end_obj) {
  hrx_py_state_t* state;
  hrx_event_t* start = hrx_py_event_get(self, &state);
  if (!start) return NULL;
  hrx_event_t* end = hrx_py_event_unwrap(state, end_obj);
  if (!end) return NULL;
  double ms = 0;
  hrx_status_t status = hrx_event_elapsed_ms(start, end, &ms);
  if (status) return hrx_py_raise(state, status);
  return PyFloat_FromDouble(ms);
}

static PyObject* hrx_py_event_synchronize(PyObject* self, PyObject* unused) {
  (void)unused;
  hrx_py_state_t* state;
  hrx_py_submission_t s = {.kind = HRX_PY_SUBMIT_EVENT_SYNCHRONIZE};
  s.event = hrx_py_event_get(self, &state);
  if (!s.event || hrx_py_submit(state, &s) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject* hrx_py_event_device_of(hrx_py_state_t* state, void* event) {
  return hrx_py_device_ref(state, hrx_event_device(event));
}

static PyObject* hrx_py_event_timing(hrx_py_state_t* state, void* event) {
  (void)state;
  return PyBool_FromLong(hrx_event_timing(event));
}

static PyMethodDef hrx_py_event_methods[] = {
    {"query", hrx_py_event_query, METH_NOARGS,
     "query($self, /)\n--\n\n"
     "Whether the recorded work is done (never waits)."},
    {"elapsed_time", hrx_py_event_elapsed_time, METH_O,
     "elapsed_time($self, end, /)\n--\n\n"
     "Return the milliseconds from this event's completion to end's (as "
     "torch.cuda.Event.elapsed_time). Both must be recorded with "
     "record_event(timing=True) on one device and be complete; it never "
     "waits."},
    {"synchronize", hrx_py_event_synchronize, METH_NOARGS,
     "synchronize($self, /)\n--\n\n"
     "Wait until the recorded work is done."},
    HRX_PY_HANDLE_METHODS(hrx_py_event, "Drop this event."),
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef hrx_py_event_getset[] = {
    HRX_PY_PROPERTY("device", hrx_py_event_kind, hrx_py_event_device_of,
                    "the event's device"),
    HRX_PY_PROPERTY("timing", hrx_py_event_kind, hrx_py_event_timing,
                    "whether the event was recorded with timing=True"),
    HRX_PY_CLOSED_PROPERTY(hrx_py_event_kind),
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot hrx_py_event_slots[] = {
    {Py_tp_doc, "Completes when the work its stream had published at "
                "Stream.record_event() is done."},
    {Py_tp_dealloc, hrx_py_event_dealloc},
    {Py_tp_traverse, hrx_py_traverse_type},
    {Py_tp_methods, hrx_py_event_methods},
    {Py_tp_getset, hrx_py_event_getset},
    {0, NULL},
};

PyType_Spec hrx_py_event_spec = {
    .name = "hrx.Event",
    .basicsize = sizeof(hrx_py_event_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = hrx_py_event_slots,
};
