/* Pinned host memory in Python (pinned.h): Device.empty_pinned's owner
 * object hrx.PinnedMemory, Device.pin's scope hrx.PinnedScope, and
 * Device.is_pinned. The rules (pools, lifetimes, direct copies) are the
 * core's (core/pinned.h, hrx.h). */
#include "pinned.h"

#include "device_handle.h"
#include "host_memory.h"
#include "wait.h"

/* hrx_device_release for hrx_py_release_without_gil. */
static void hrx_py_pinned_device_release(void* device) {
  hrx_device_release(device);
}

/* ------------------------------------------------------- PinnedMemory */

/* Owns one pinned allocation; exports it as writable bytes. Its last
 * reference goes only once no export (numpy array) is left. */
typedef struct {
  PyObject_HEAD
  hrx_device_t* device;  /* retained */
  void* memory;          /* owned: hrx_device_pinned_alloc's */
  Py_ssize_t nbytes;     /* what the export shows (may be 0) */
} hrx_py_pinned_memory_t;

static int hrx_py_pinned_memory_getbuffer(PyObject* self, Py_buffer* view,
                                          int flags) {
  hrx_py_pinned_memory_t* memory = (hrx_py_pinned_memory_t*)self;
  return PyBuffer_FillInfo(view, self, memory->memory, memory->nbytes, 0,
                           flags);
}

/* Gives the allocation back with the GIL held, in non-blocking mode: the
 * free never waits (a block whose copies still run is returned to the
 * pool by the device's cleanup thread), nor does the device's release. */
static void hrx_py_pinned_memory_dealloc(PyObject* self) {
  hrx_py_pinned_memory_t* memory = (hrx_py_pinned_memory_t*)self;
  PyTypeObject* type = Py_TYPE(self);
  if (memory->device) {
    bool previous = hrx_thread_set_nonblocking(true);
    hrx_status_free(hrx_device_pinned_free(memory->device, memory->memory));
    hrx_device_release(memory->device);
    hrx_thread_set_nonblocking(previous);
  }
  type->tp_free(self);
  Py_DECREF(type);
}

static PyObject* hrx_py_pinned_memory_nbytes(PyObject* self, void* unused) {
  (void)unused;
  return PyLong_FromSsize_t(((hrx_py_pinned_memory_t*)self)->nbytes);
}

static PyObject* hrx_py_pinned_memory_address(PyObject* self, void* unused) {
  (void)unused;
  return PyLong_FromVoidPtr(((hrx_py_pinned_memory_t*)self)->memory);
}

static PyObject* hrx_py_pinned_memory_device(PyObject* self, void* unused) {
  (void)unused;
  hrx_py_pinned_memory_t* memory = (hrx_py_pinned_memory_t*)self;
  return hrx_py_device_ref(hrx_py_state_from_type(Py_TYPE(self)),
                           memory->device);
}

static PyGetSetDef hrx_py_pinned_memory_getset[] = {
    {"nbytes", hrx_py_pinned_memory_nbytes, NULL,
     "the bytes the buffer shows", NULL},
    {"address", hrx_py_pinned_memory_address, NULL,
     "the host address of the memory", NULL},
    {"device", hrx_py_pinned_memory_device, NULL,
     "the device the memory is pinned for", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot hrx_py_pinned_memory_slots[] = {
    {Py_tp_doc, "Pinned host memory of a device (Device.empty_pinned's "
                "array's base): exports its bytes with the buffer protocol; "
                "its memory goes back to the device's pinned pool once "
                "nothing refers to it and its queued copies are done."},
    {Py_tp_dealloc, hrx_py_pinned_memory_dealloc},
    {Py_bf_getbuffer, hrx_py_pinned_memory_getbuffer},
    {Py_tp_getset, hrx_py_pinned_memory_getset},
    {0, NULL},
};

PyType_Spec hrx_py_pinned_memory_spec = {
    .name = "hrx.PinnedMemory",
    .basicsize = sizeof(hrx_py_pinned_memory_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = hrx_py_pinned_memory_slots,
};

/* The element count of `shape` (an int or a sequence of ints, each >= 0),
 * as a tuple in *out_shape; -1 with an error otherwise. */
static int hrx_py_pinned_shape(hrx_py_state_t* state, PyObject* shape,
                               PyObject** out_shape, uint64_t* out_count) {
  PyObject* tuple = NULL;
  if (PyIndex_Check(shape)) {
    tuple = PyTuple_Pack(1, shape);
  } else if (PySequence_Check(shape) && !PyUnicode_Check(shape) &&
             !PyBytes_Check(shape)) {
    tuple = PySequence_Tuple(shape);
  } else {
    PyErr_Format(PyExc_TypeError,
                 "shape must be an int or a sequence of ints, not %.100s",
                 Py_TYPE(shape)->tp_name);
    return -1;
  }
  if (!tuple) return -1;
  uint64_t count = 1;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); ++i) {
    PyObject* item = PyTuple_GET_ITEM(tuple, i);
    if (!PyIndex_Check(item) || PyBool_Check(item)) {
      PyErr_Format(PyExc_TypeError,
                   "shape must hold ints; item %zd is %.100s", i,
                   Py_TYPE(item)->tp_name);
      Py_DECREF(tuple);
      return -1;
    }
    Py_ssize_t n = PyNumber_AsSsize_t(item, NULL);
    if (n == -1 && PyErr_Occurred()) {
      Py_DECREF(tuple);
      return -1;
    }
    if (n < 0) {
      PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                   "shape sizes must be >= 0; item %zd is %zd", i, n);
      Py_DECREF(tuple);
      return -1;
    }
    if (n && count > UINT64_MAX / (uint64_t)n) {
      PyErr_SetString(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                      "shape is too large");
      Py_DECREF(tuple);
      return -1;
    }
    count *= (uint64_t)n;
  }
  *out_shape = tuple;
  *out_count = count;
  return 0;
}

PyObject* hrx_py_device_empty_pinned(PyObject* self, PyObject* args,
                                     PyObject* kwargs) {
  static char* keywords[] = {"shape", "dtype", NULL};
  PyObject* shape_object = NULL;
  PyObject* dtype_object = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:empty_pinned", keywords,
                                   &shape_object, &dtype_object)) {
    return NULL;
  }
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_device_t* device = hrx_py_device_unwrap(state, self);
  if (!device) return NULL;
  PyObject* numpy = PyImport_ImportModule("numpy");
  if (!numpy) return NULL;
  PyObject* dtype = PyObject_CallMethod(
      numpy, "dtype", "O", dtype_object ? dtype_object : Py_None);
  if (!dtype_object && dtype) {
    Py_DECREF(dtype);
    dtype = PyObject_CallMethod(numpy, "dtype", "s", "uint8");
  }
  PyObject *shape = NULL, *owner = NULL, *array = NULL;
  PyObject* flat = NULL; /* ndarray's keywords */
  uint64_t count = 0;
  if (!dtype) goto done;
  PyObject* has_objects = PyObject_GetAttrString(dtype, "hasobject");
  int refuse = has_objects ? PyObject_IsTrue(has_objects) : -1;
  Py_XDECREF(has_objects);
  if (refuse < 0) goto done;
  if (refuse) {
    PyErr_SetString(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                    "empty_pinned needs a dtype of numbers (this one holds "
                    "Python objects)");
    goto done;
  }
  PyObject* itemsize_object = PyObject_GetAttrString(dtype, "itemsize");
  if (!itemsize_object) goto done;
  Py_ssize_t itemsize = PyLong_AsSsize_t(itemsize_object);
  Py_DECREF(itemsize_object);
  if (itemsize < 0 && PyErr_Occurred()) goto done;
  if (hrx_py_pinned_shape(state, shape_object, &shape, &count) < 0) goto done;
  if (itemsize && count > (uint64_t)PY_SSIZE_T_MAX / (uint64_t)itemsize) {
    PyErr_SetString(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                    "shape is too large");
    goto done;
  }
  const uint64_t nbytes = count * (uint64_t)itemsize;
  void* memory = NULL;
  hrx_device_retain(device);
  hrx_status_t status = NULL;
  Py_BEGIN_ALLOW_THREADS
  /* At least one byte: an empty array still has an owner. */
  status = hrx_device_pinned_alloc(device, nbytes ? nbytes : 1, &memory);
  Py_END_ALLOW_THREADS
  if (status) {
    hrx_py_release_without_gil(hrx_py_pinned_device_release, device);
    hrx_py_raise(state, status);
    goto done;
  }
  hrx_py_pinned_memory_t* pinned =
      PyObject_New(hrx_py_pinned_memory_t, state->pinned_memory_type);
  if (!pinned) {
    bool previous = hrx_thread_set_nonblocking(true);
    hrx_status_free(hrx_device_pinned_free(device, memory));
    hrx_device_release(device);
    hrx_thread_set_nonblocking(previous);
    goto done;
  }
  pinned->device = device;
  pinned->memory = memory;
  pinned->nbytes = (Py_ssize_t)nbytes;
  owner = (PyObject*)pinned;
  /* numpy.ndarray(shape, dtype, buffer=owner): the array's base is the
   * owner itself. */
  PyObject* ndarray = PyObject_GetAttrString(numpy, "ndarray");
  PyObject* call_args = ndarray ? PyTuple_Pack(2, shape, dtype) : NULL;
  flat = call_args ? PyDict_New() : NULL;
  if (flat && PyDict_SetItemString(flat, "buffer", owner) == 0) {
    array = PyObject_Call(ndarray, call_args, flat);
  }
  Py_XDECREF(call_args);
  Py_XDECREF(ndarray);
done:
  Py_XDECREF(flat);
  Py_XDECREF(owner);
  Py_XDECREF(shape);
  Py_XDECREF(dtype);
  Py_DECREF(numpy);
  return array;
}

PyObject* hrx_py_device_is_pinned(PyObject* self, PyObject* object) {
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_py_host_memory_t memory;
  if (hrx_py_host_memory_get(state, object, false, "is_pinned's argument",
                             &memory) < 0) {
    return NULL;
  }
  hrx_device_t* device = hrx_py_device_unwrap(state, self);
  bool pinned = device && hrx_device_is_pinned(device, memory.data,
                                               memory.length);
  hrx_py_host_memory_release(&memory);
  if (!device) return NULL;
  return PyBool_FromLong(pinned);
}

/* -------------------------------------------------------- PinnedScope */

/* Device.pin(obj): holds obj's export (buffer protocol or host DLPack)
 * from the call on, so the memory cannot move or go, pins it on __enter__
 * and unpins on __exit__ (which waits for the copies queued with it). */
typedef struct {
  PyObject_HEAD
  hrx_device_t* device;          /* retained */
  PyObject* object;              /* obj, for __enter__; owned */
  hrx_py_host_memory_t memory;   /* held until the scope object goes */
  bool has_memory;
  bool pinned;           /* between a successful __enter__ and __exit__ */
  bool used;             /* entered once: a scope is not reusable */
} hrx_py_pinned_scope_t;

PyObject* hrx_py_device_pin(PyObject* self, PyObject* object) {
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_py_pinned_scope_t* scope =
      PyObject_GC_New(hrx_py_pinned_scope_t, state->pinned_scope_type);
  if (!scope) return NULL;
  scope->device = NULL;
  scope->object = Py_NewRef(object);
  scope->has_memory = false;
  scope->pinned = false;
  scope->used = false;
  PyObject_GC_Track(scope);
  /* Read-only memory is allowed: it can be an upload's source. */
  if (hrx_py_host_memory_get(state, object, false, "memory to pin",
                             &scope->memory) < 0) {
    Py_DECREF(scope);
    return NULL;
  }
  scope->has_memory = true;
  if (scope->memory.length == 0) {
    PyErr_SetString(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                    "pin needs at least one byte of memory (got an empty "
                    "buffer)");
    Py_DECREF(scope);
    return NULL;
  }
  hrx_device_t* device = hrx_py_device_unwrap(state, self);
  if (!device) {
    Py_DECREF(scope);
    return NULL;
  }
  hrx_device_retain(device);
  scope->device = device;
  return (PyObject*)scope;
}

static PyObject* hrx_py_pinned_scope_enter(PyObject* self, PyObject* unused) {
  (void)unused;
  hrx_py_pinned_scope_t* scope = (hrx_py_pinned_scope_t*)self;
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  if (scope->used) {
    PyErr_SetString(state->errors[HRX_STATUS_FAILED_PRECONDITION],
                    "this pin scope was entered already; call Device.pin() "
                    "again for a new scope");
    return NULL;
  }
  scope->used = true;
  hrx_status_t status = NULL;
  Py_BEGIN_ALLOW_THREADS
  status = hrx_device_pin(scope->device, scope->memory.data,
                          scope->memory.length);
  Py_END_ALLOW_THREADS
  if (status) return hrx_py_raise(state, status);
  scope->pinned = true;
  return Py_NewRef(scope->object);
}

/* Unpins, waiting for the queued copies; 0, or -1 with an error (an
 * interrupted wait: the memory stays pinned until its copies are done). */
static int hrx_py_pinned_scope_unpin(hrx_py_pinned_scope_t* scope) {
  if (!scope->pinned) return 0;
  scope->pinned = false;
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(scope));
  bool interrupted = false;
  hrx_py_wait_t wait;
  hrx_py_wait_begin(&wait);
  hrx_status_t status = hrx_device_unpin(scope->device, scope->memory.data,
                                         &wait.hook, &interrupted);
  hrx_py_wait_end(&wait);
  if (status) {
    hrx_py_raise(state, status);
    return -1;
  }
  if (interrupted) {
    /* The copies still run: the export (and so the memory) stays until
     * they are done; the scope keeps it, and a later unpin finishes. */
    scope->pinned = true;
    return -1;
  }
  return 0;
}

static PyObject* hrx_py_pinned_scope_exit(PyObject* self, PyObject* args) {
  (void)args;
  if (hrx_py_pinned_scope_unpin((hrx_py_pinned_scope_t*)self) < 0) {
    return NULL;
  }
  Py_RETURN_FALSE;
}

static PyObject* hrx_py_pinned_scope_is_pinned(PyObject* self, void* unused) {
  (void)unused;
  return PyBool_FromLong(((hrx_py_pinned_scope_t*)self)->pinned);
}

static int hrx_py_pinned_scope_traverse(PyObject* self, visitproc visit,
                                        void* arg) {
  hrx_py_pinned_scope_t* scope = (hrx_py_pinned_scope_t*)self;
  Py_VISIT(scope->object);
  if (scope->has_memory && scope->memory.has_view) {
    Py_VISIT(scope->memory.view.obj);
  }
  Py_VISIT(Py_TYPE(self));
  return 0;
}

/* A scope dropped while pinned (never exited) unpins here: its memory
 * must stay until its copies are done, so this waits for them. */
static void hrx_py_pinned_scope_dealloc(PyObject* self) {
  hrx_py_pinned_scope_t* scope = (hrx_py_pinned_scope_t*)self;
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  if (scope->pinned) {
    Py_BEGIN_ALLOW_THREADS
    hrx_status_free(
        hrx_device_unpin(scope->device, scope->memory.data, NULL, NULL));
    Py_END_ALLOW_THREADS
  }
  if (scope->has_memory) hrx_py_host_memory_release(&scope->memory);
  Py_XDECREF(scope->object);
  if (scope->device) {
    hrx_py_release_without_gil(hrx_py_pinned_device_release,
                               scope->device);
  }
  type->tp_free(self);
  Py_DECREF(type);
}

static PyMethodDef hrx_py_pinned_scope_methods[] = {
    {"__enter__", hrx_py_pinned_scope_enter, METH_NOARGS,
     "__enter__($self, /)\n--\n\n"
     "Pin the memory for the device; return the pinned object."},
    {"__exit__", hrx_py_pinned_scope_exit, METH_VARARGS,
     "__exit__($self, exc_type, exc_value, traceback, /)\n--\n\n"
     "Wait for the copies queued with the memory, then unpin it."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef hrx_py_pinned_scope_getset[] = {
    {"pinned", hrx_py_pinned_scope_is_pinned, NULL,
     "whether the memory is pinned now (inside the with block)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot hrx_py_pinned_scope_slots[] = {
    {Py_tp_doc, "Device.pin(obj): a context manager that pins obj's memory "
                "for the device inside the with block."},
    {Py_tp_dealloc, hrx_py_pinned_scope_dealloc},
    {Py_tp_traverse, hrx_py_pinned_scope_traverse},
    {Py_tp_methods, hrx_py_pinned_scope_methods},
    {Py_tp_getset, hrx_py_pinned_scope_getset},
    {0, NULL},
};

PyType_Spec hrx_py_pinned_scope_spec = {
    .name = "hrx.PinnedScope",
    .basicsize = sizeof(hrx_py_pinned_scope_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = hrx_py_pinned_scope_slots,
};
