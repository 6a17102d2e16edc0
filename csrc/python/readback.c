/* hrx.Readback: an asynchronous read; wait() returns a numpy uint8 array. */
#include "handle.h"
#include "objects.h"
#include "wait.h"

PyObject* hrx_py_readback_wrap(hrx_py_state_t* state,
                               hrx_readback_t* readback) {
  hrx_py_readback_t* self =
      PyObject_GC_New(hrx_py_readback_t, state->readback_type);
  if (!self) {
    hrx_readback_release(readback);
    return NULL;
  }
  self->readback = readback;
  self->result = NULL;
  self->abandoned = false;
  PyObject_GC_Track(self);
  return (PyObject*)self;
}

static int hrx_py_readback_traverse(PyObject* self, visitproc visit,
                                    void* arg) {
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(((hrx_py_readback_t*)self)->result);
  return 0;
}

static int hrx_py_readback_clear(PyObject* self) {
  Py_CLEAR(((hrx_py_readback_t*)self)->result);
  return 0;
}

static void hrx_py_readback_release(PyObject* self, void* readback) {
  bool abandoned = ((hrx_py_readback_t*)self)->abandoned;
  Py_BEGIN_ALLOW_THREADS
  /* After an interrupted wait (Ctrl-C) dropping the handle must not
   * wait for the read either. */
  if (abandoned) {
    hrx_readback_release_deferred(readback);
  } else {
    hrx_readback_release(readback);
  }
  Py_END_ALLOW_THREADS
}

/* Open while it holds the read or its result. */
static void* hrx_py_readback_open(PyObject* self) {
  hrx_py_readback_t* readback = (hrx_py_readback_t*)self;
  return readback->readback || readback->result ? self : NULL;
}

static const hrx_py_handle_kind_t hrx_py_readback_kind = {
    .name = "readback",
    .field = offsetof(hrx_py_readback_t, readback),
    .close = hrx_py_readback_release,
    .open = hrx_py_readback_open,
    .clear = hrx_py_readback_clear};

HRX_PY_HANDLE_FUNCTIONS(hrx_py_readback, hrx_py_readback_kind)

static PyObject* hrx_py_readback_wait(PyObject* self, PyObject* unused) {
  (void)unused;
  hrx_py_readback_t* readback = (hrx_py_readback_t*)self;
  if (readback->result) return Py_NewRef(readback->result);
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  if (!readback->readback) {
    hrx_py_raise_closed(state, "readback");
    return NULL;
  }
  /* Detach while the GIL is released, so a concurrent close() cannot free
   * the readback under the wait; it is ours until reattached or released. */
  hrx_readback_t* owned = readback->readback;
  readback->readback = NULL;
  const uint8_t* bytes = NULL;
  bool interrupted = false;
  hrx_py_wait_t wait;
  hrx_py_wait_begin(&wait);
  hrx_status_t status =
      hrx_readback_wait(owned, &wait.hook, &bytes, &interrupted);
  hrx_py_wait_end(&wait);
  if (status || interrupted) {
    /* Reattached, so wait() can be called again. */
    readback->abandoned = interrupted;
    if (!readback->readback) {
      readback->readback = owned;
    } else {
      hrx_readback_release(owned);
    }
    return status ? hrx_py_raise(state, status) : NULL;
  }
  Py_ssize_t length = (Py_ssize_t)hrx_readback_length(owned);
  PyObject* data = PyByteArray_FromStringAndSize((const char*)bytes, length);
  /* The host staging memory is no longer needed. */
  Py_BEGIN_ALLOW_THREADS
  hrx_readback_release(owned);
  Py_END_ALLOW_THREADS
  if (!data) return NULL;
  PyObject* numpy = PyImport_ImportModule("numpy");
  if (!numpy) {
    Py_DECREF(data);
    return NULL;
  }
  PyObject* array = PyObject_CallMethod(numpy, "frombuffer", "Os", data,
                                        "uint8");
  Py_DECREF(numpy);
  Py_DECREF(data);
  if (!array) return NULL;
  readback->result = Py_NewRef(array);
  return array;
}

static PyObject* hrx_py_readback_done(PyObject* self, PyObject* unused) {
  (void)unused;
  hrx_py_readback_t* readback = (hrx_py_readback_t*)self;
  if (readback->result) Py_RETURN_TRUE;
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  if (!readback->readback) {
    hrx_py_raise_closed(state, "readback");
    return NULL;
  }
  bool done = false;
  hrx_status_t status = hrx_readback_query(readback->readback, &done);
  if (status) return hrx_py_raise(state, status);
  return PyBool_FromLong(done);
}

static PyMethodDef hrx_py_readback_methods[] = {
    {"wait", hrx_py_readback_wait, METH_NOARGS,
     "wait($self, /)\n--\n\n"
     "Wait until the read is done; return the bytes as a numpy uint8 "
     "array."},
    {"done", hrx_py_readback_done, METH_NOARGS,
     "done($self, /)\n--\n\n"
     "Whether the read has completed (never waits)."},
    HRX_PY_HANDLE_METHODS(hrx_py_readback,
                          "Drop the read's staging memory without waiting "
                          "for it."),
    {NULL, NULL, 0, NULL},
};

static PyType_Slot hrx_py_readback_slots[] = {
    {Py_tp_doc, "An asynchronous device-to-host read (Stream.read)."},
    {Py_tp_dealloc, hrx_py_readback_dealloc},
    {Py_tp_traverse, hrx_py_readback_traverse},
    {Py_tp_clear, hrx_py_readback_clear},
    {Py_tp_methods, hrx_py_readback_methods},
    {0, NULL},
};

static PyType_Spec hrx_py_readback_spec = {
    .name = "hrx.Readback",
    .basicsize = sizeof(hrx_py_readback_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = hrx_py_readback_slots,
};

int hrx_py_readback_register(PyObject* module, hrx_py_state_t* state) {
  state->readback_type = (PyTypeObject*)PyType_FromModuleAndSpec(
      module, &hrx_py_readback_spec, NULL);
  if (!state->readback_type) return -1;
  return PyModule_AddObjectRef(module, "Readback",
                               (PyObject*)state->readback_type);
}
