/* hrx.Readback: an asynchronous read; wait() returns a numpy array: uint8
 * bytes, or a typed view's dtype and shape.
 *
 * Usable from several threads at once, like a stream: wait() in one thread
 * and done(), wait() or close() in others. A wait keeps the read while it
 * waits with the GIL released (counted in `waiters`); the result, once one
 * wait has it, is kept for every later call; the read itself is released
 * by the last wait out, or at once when none runs. close() during a wait
 * closes the handle for every later call (the waits in progress still
 * return the data they waited for). Releases keep the GIL: in the core's
 * non-blocking mode a Readback's release never waits (an unfinished
 * read's staging memory is returned once it completes). */
#include "readback.h"

#include <string.h>

#include "handle.h"
#include "pinned.h"
#include "result_memory.h"
#include "submit.h"
#include "wait.h"

/* Used from several threads at once: waits use `readback` with the GIL
 * released, counted in `waiters`; the last of them releases it once the
 * result is kept or close() was called. */
typedef struct {
  PyObject_HEAD
  hrx_readback_t* readback;  /* owned; NULL once released */
  PyObject* result;          /* cached numpy array after wait() */
  PyObject* dtype;           /* Stream.read of a typed view: the result's
                                numpy.dtype and shape; else NULL */
  PyObject* shape;
  int waiters;               /* wait() and done() calls using `readback`
                                without the GIL */
  bool closing;              /* close() was called (also while waits ran
                                or after one kept the result): closed for
                                every later call */
  bool abandoned;            /* a wait() was interrupted: release deferred */
  /* Stream.read_into: the export of `out`, held while `readback` may still
   * write it, released (with the GIL) right after `readback` is. */
  Py_buffer into;
  bool has_into;
} hrx_py_readback_t;

/* Readback.wait() copies the read's bytes into a new array, the large
 * ones by the device's copy threads too, into pooled result memory
 * (result_memory.h) that is mapped already when an earlier result of a
 * like size was let go. That memory is taken before the wait, so that a
 * paced read's chunks are copied into it as they land
 * (hrx_readback_wait_copy), as read_into's are. It does not hand over the
 * read's pinned staging (hrx_readback_take): memory of the device's pool
 * holds the live device, and an array a user keeps must not keep the
 * device (and its queue count) alive. */

/* Reads larger than this are copied out with the GIL released. */
#define HRX_PY_READ_COPY_KEEP_GIL_BYTES (64u << 10)

/* Releases a read without waiting for it: with the GIL held, in the
 * core's non-blocking mode. */
static void hrx_py_readback_drop(void* readback) {
  bool previous = hrx_thread_set_nonblocking(true);
  hrx_readback_release(readback);
  hrx_thread_set_nonblocking(previous);
}

/* Releases the read held by `self`, then the export of read_into's `out`
 * it may write. */
static void hrx_py_readback_drop_held(hrx_py_readback_t* self,
                                      hrx_readback_t* readback) {
  hrx_py_readback_drop(readback);
  if (self->has_into) {
    self->has_into = false;
    PyBuffer_Release(&self->into);
  }
}

PyObject* hrx_py_readback_wrap(hrx_py_state_t* state,
                               hrx_readback_t* readback) {
  return hrx_py_readback_wrap_into(state, readback, NULL);
}

PyObject* hrx_py_readback_wrap_into(hrx_py_state_t* state,
                                    hrx_readback_t* readback,
                                    Py_buffer* into) {
  hrx_py_readback_t* self =
      PyObject_GC_New(hrx_py_readback_t, state->readback_type);
  if (!self) {
    hrx_py_readback_drop(readback);
    if (into) PyBuffer_Release(into);
    return NULL;
  }
  self->readback = readback;
  self->result = NULL;
  self->dtype = NULL;
  self->shape = NULL;
  self->waiters = 0;
  self->closing = false;
  self->abandoned = false;
  self->has_into = into != NULL;
  if (into) self->into = *into; /* the export is the handle's now */
  PyObject_GC_Track(self);
  return (PyObject*)self;
}

static int hrx_py_readback_traverse(PyObject* self, visitproc visit,
                                    void* arg) {
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(((hrx_py_readback_t*)self)->result);
  Py_VISIT(((hrx_py_readback_t*)self)->dtype);
  Py_VISIT(((hrx_py_readback_t*)self)->shape);
  if (((hrx_py_readback_t*)self)->has_into) {
    Py_VISIT(((hrx_py_readback_t*)self)->into.obj);
  }
  return 0;
}

static int hrx_py_readback_clear(PyObject* self) {
  Py_CLEAR(((hrx_py_readback_t*)self)->result);
  Py_CLEAR(((hrx_py_readback_t*)self)->dtype);
  Py_CLEAR(((hrx_py_readback_t*)self)->shape);
  return 0;
}

void hrx_py_readback_set_type(PyObject* readback, PyObject* dtype,
                              PyObject* shape) {
  hrx_py_readback_t* self = (hrx_py_readback_t*)readback;
  Py_XSETREF(self->dtype, Py_NewRef(dtype));
  Py_XSETREF(self->shape, Py_NewRef(shape));
}

/* close(), or dealloc: with waits in progress the last of them releases
 * the read; the handle is closed from now on, whatever state the read is
 * in (`readback` is NULL once a wait released it and kept the result). */
static void hrx_py_readback_give_up(PyObject* self, void* readback) {
  hrx_py_readback_t* handle = (hrx_py_readback_t*)self;
  handle->closing = true;
  Py_CLEAR(handle->result);
  if (!readback) return;
  if (handle->waiters) {
    handle->readback = readback;
    return;
  }
  hrx_py_readback_drop_held(handle, readback);
}

/* Open while it holds the read or its result, and close() was not called
 * during a wait. */
static void* hrx_py_readback_open(PyObject* self) {
  hrx_py_readback_t* readback = (hrx_py_readback_t*)self;
  if (readback->closing) return NULL;
  return readback->readback || readback->result ? self : NULL;
}

static const hrx_py_handle_kind_t hrx_py_readback_kind = {
    .name = "readback",
    .field = offsetof(hrx_py_readback_t, readback),
    .close = hrx_py_readback_give_up,
    .open = hrx_py_readback_open,
    .clear = hrx_py_readback_clear};

HRX_PY_HANDLE_FUNCTIONS(hrx_py_readback, hrx_py_readback_kind)

/* After a wait: the last wait out releases the read once nothing needs it
 * (the result is kept, or close() was called). */
static void hrx_py_readback_settle(hrx_py_readback_t* self) {
  if (self->waiters || !self->readback) return;
  if (!self->result && !self->closing) return;
  hrx_readback_t* readback = self->readback;
  self->readback = NULL;
  hrx_py_readback_drop_held(self, readback);
}

/* Copies a complete read's `bytes` into `out` (hrx_readback_length
 * bytes): a large read by the device's copy threads too, with the GIL
 * released; a small one with the GIL kept (a release would cost more than
 * the copy). */
static void hrx_py_read_copy_out(hrx_readback_t* readback,
                                 const uint8_t* bytes, void* out) {
  uint64_t length = hrx_readback_length(readback);
  if (length > HRX_PY_READ_COPY_KEEP_GIL_BYTES) {
    Py_BEGIN_ALLOW_THREADS
    hrx_readback_copy_out(readback, bytes, out);
    Py_END_ALLOW_THREADS
  } else {
    memcpy(out, bytes, (size_t)length);
  }
}

typedef struct {
  hrx_readback_t* readback;
  const uint8_t* bytes;
} hrx_py_read_wait_t;

static hrx_status_t hrx_py_read_wait_attempt(void* arg) {
  hrx_py_read_wait_t* wait = arg;
  return hrx_readback_wait(wait->readback, NULL, &wait->bytes, NULL);
}

/* Waits for the read: with the GIL kept when it is done (submit.h), else
 * released, interruptibly. With `into` (hrx_readback_length bytes, for a
 * read of Stream.read), also copies the bytes there with the GIL
 * released: a paced read's chunks as they land when the read was not
 * done at once (hrx_readback_wait_copy). `waiters` (may be NULL) counts
 * the time the GIL is released. 1 done (*out_bytes set, NULL with
 * `into`), 0 interrupted (a Python exception set), -1 with the core's
 * failure in *out_status. */
static int hrx_py_read_wait(hrx_readback_t* readback, int* waiters,
                            void* into, const uint8_t** out_bytes,
                            hrx_status_t* out_status) {
  hrx_py_read_wait_t wait = {readback, NULL};
  hrx_status_t status =
      hrx_py_attempt_keeping_gil(hrx_py_read_wait_attempt, &wait);
  bool interrupted = false;
  if (waiters) ++*waiters;
  if (hrx_status_code(status) == HRX_STATUS_WOULD_BLOCK) {
    hrx_status_free(status);
    wait.bytes = NULL;
    hrx_py_wait_t gil;
    hrx_py_wait_begin(&gil);
    status = into ? hrx_readback_wait_copy(readback, into, &gil.hook,
                                           &interrupted)
                  : hrx_readback_wait(readback, &gil.hook, &wait.bytes,
                                      &interrupted);
    hrx_py_wait_end(&gil);
  } else {
    hrx_py_hand_over_gil();
    if (!status && into) {
      hrx_py_read_copy_out(readback, wait.bytes, into);
      wait.bytes = NULL;
    }
  }
  if (waiters) --*waiters;
  *out_status = status;
  if (status) return -1;
  if (interrupted) return 0;
  *out_bytes = wait.bytes;
  return 1;
}

/* A new result's memory: result memory for a large one, else a bytearray;
 * *out_into is where its bytes go. NULL with an error set. */
static PyObject* hrx_py_result_data_new(hrx_py_state_t* state,
                                        Py_ssize_t length, void** out_into) {
  if ((uint64_t)length >= HRX_PY_RESULT_MEMORY_MIN_BYTES) {
    return hrx_py_result_memory_new(state, (uint64_t)length, out_into);
  }
  PyObject* data = PyByteArray_FromStringAndSize(NULL, length);
  if (data) *out_into = PyByteArray_AS_STRING(data);
  return data;
}

/* The array a wait returns over `data` (consumed): typed as Stream.read
 * of a typed view asked, else uint8. NULL with an error set. */
static PyObject* hrx_py_result_array(hrx_py_readback_t* readback,
                                     PyObject* data) {
  PyObject* array = NULL;
  PyObject* numpy = PyImport_ImportModule("numpy");
  if (numpy && readback->dtype) {
    PyObject* flat = PyObject_CallMethod(numpy, "frombuffer", "OO", data,
                                         readback->dtype);
    if (flat) {
      array = PyObject_CallMethod(flat, "reshape", "O", readback->shape);
      Py_DECREF(flat);
    }
  } else if (numpy) {
    array = PyObject_CallMethod(numpy, "frombuffer", "Os", data, "uint8");
  }
  Py_XDECREF(numpy);
  Py_DECREF(data);
  return array;
}

static PyObject* hrx_py_readback_wait(PyObject* self, PyObject* unused) {
  (void)unused;
  hrx_py_readback_t* readback = (hrx_py_readback_t*)self;
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  if (!hrx_py_handle_get(self, &hrx_py_readback_kind)) return NULL;
  if (readback->result) return Py_NewRef(readback->result);
  hrx_readback_t* read = readback->readback;
  Py_ssize_t length = (Py_ssize_t)hrx_readback_length(read);
  const uint8_t* bytes = NULL;
  hrx_status_t status = NULL;
  PyObject* array = NULL;
  PyObject* data = NULL;
  void* into = NULL;
  if (!readback->has_into &&
      (uint64_t)length > HRX_PY_READ_COPY_KEEP_GIL_BYTES) {
    /* A large read into a new array: its memory first, so that the copy
     * can start with the first chunk that lands. Counted as a waiter
     * while the GIL is released: a close meanwhile keeps the bytes. */
    data = hrx_py_result_data_new(state, length, &into);
    if (!data) return NULL;
  }
  int outcome =
      hrx_py_read_wait(read, &readback->waiters, into, &bytes, &status);
  if (outcome == 1 && readback->result) {
    array = Py_NewRef(readback->result); /* another wait made it */
  } else if (outcome == 1 && readback->has_into) {
    /* The bytes are in `out` (read_into): it is the result. */
    array = Py_NewRef(readback->into.obj);
    if (!readback->closing) readback->result = Py_NewRef(array);
  } else if (outcome == 1) {
    /* `read` is alive: only the last wait out (this one or a later one)
     * releases it. A small read is copied here, with the GIL. */
    if (!data) {
      data = hrx_py_result_data_new(state, length, &into);
      if (data) hrx_py_read_copy_out(read, bytes, into);
    }
    array = data ? hrx_py_result_array(readback, data) : NULL;
    data = NULL;
    if (array && readback->result) {
      /* Another wait made it while this one copied without the GIL. */
      PyObject* made = Py_NewRef(readback->result);
      Py_DECREF(array);
      array = made;
    } else if (array && !readback->closing) {
      readback->result = Py_NewRef(array);
    }
  } else if (outcome == 0) {
    /* Dropping the handle must not wait for the read either. */
    readback->abandoned = true;
  }
  Py_XDECREF(data);
  hrx_py_readback_settle(readback);
  if (status) return hrx_py_raise(state, status);
  return array;
}

typedef struct {
  hrx_py_readback_t* handle;
  hrx_readback_t* readback;  /* the handle's; held while the GIL is
                                released, counted in its `waiters` */
  bool done;
} hrx_py_readback_query_t;

static hrx_status_t hrx_py_readback_query_call(void* arg) {
  hrx_py_readback_query_t* query = arg;
  return hrx_readback_query(query->readback, &query->done);
}

static void hrx_py_readback_query_hold(void* arg, bool held) {
  hrx_py_readback_t* handle = ((hrx_py_readback_query_t*)arg)->handle;
  if (held) {
    ++handle->waiters;
  } else {
    --handle->waiters;
    hrx_py_readback_settle(handle);
  }
}

static PyObject* hrx_py_readback_done(PyObject* self, PyObject* unused) {
  (void)unused;
  hrx_py_readback_t* readback = (hrx_py_readback_t*)self;
  if (!hrx_py_handle_get(self, &hrx_py_readback_kind)) return NULL;
  if (readback->result) Py_RETURN_TRUE;
  hrx_py_readback_query_t query = {readback, readback->readback, false};
  hrx_status_t status = hrx_py_runtime_query(
      hrx_py_readback_query_call, hrx_py_readback_query_hold, &query);
  if (status) {
    return hrx_py_raise(hrx_py_state_from_type(Py_TYPE(self)), status);
  }
  return PyBool_FromLong(query.done);
}

int hrx_py_readback_copy_out(hrx_py_state_t* state, hrx_readback_t* readback,
                             void* out) {
  const uint8_t* bytes = NULL;
  hrx_status_t status = NULL;
  int outcome = hrx_py_read_wait(readback, NULL, NULL, &bytes, &status);
  if (outcome == 1 && bytes != out) {  /* else read into `out` itself */
    hrx_py_read_copy_out(readback, bytes, out);
  }
  /* Done, failed or interrupted: never waits for the read. */
  hrx_py_readback_drop(readback);
  if (status) return hrx_py_raise_int(state, status);
  return outcome == 1 ? 0 : -1;
}

static PyMethodDef hrx_py_readback_methods[] = {
    {"wait", hrx_py_readback_wait, METH_NOARGS,
     "wait($self, /)\n--\n\n"
     "Wait until the read is done; return a numpy array (Stream.read): "
     "of a typed view's dtype and shape, or the bytes as uint8 for an "
     "untyped view; or `out` holding them (Stream.read_into)."},
    {"done", hrx_py_readback_done, METH_NOARGS,
     "done($self, /)\n--\n\n"
     "Whether the read has completed (never waits); once True, "
     "read_into's `out` holds the bytes."},
    HRX_PY_HANDLE_METHODS(hrx_py_readback,
                          "Drop the read's staging memory without waiting "
                          "for it. Closed from now on, also once a wait "
                          "returned (arrays it returned stay)."),
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

PyType_Spec hrx_py_readback_spec = {
    .name = "hrx.Readback",
    .basicsize = sizeof(hrx_py_readback_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = hrx_py_readback_slots,
};
