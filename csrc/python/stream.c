/* hrx.Stream (a pool stream) and hrx.fabric.Queue (a stream on a native
 * queue of its own, outside the pool). Submissions keep the GIL unless the
 * core says they would wait (submit.h); waits and large host copies run
 * with the GIL released. */
#include "stream.h"

#include "args.h"
#include "buffer.h"
#include "completion.h"
#include "device_handle.h"
#include "event.h"
#include "host_memory.h"
#include "launch.h"
#include "property.h"
#include "readback.h"
#include "special.h"
#include "submit.h"

typedef struct {
  PyObject_HEAD
  hrx_stream_t* stream;      /* retained; NULL once closed */
} hrx_py_stream_t;

static void hrx_py_stream_drop(void* stream) { hrx_stream_release(stream); }

PyObject* hrx_py_stream_wrap(PyTypeObject* type, hrx_stream_t* stream) {
  hrx_py_stream_t* self = PyObject_GC_New(hrx_py_stream_t, type);
  if (!self) {
    hrx_py_release_without_gil(hrx_py_stream_drop, stream);
    return NULL;
  }
  self->stream = stream;
  PyObject_GC_Track(self);
  return (PyObject*)self;
}

/* Drops the handle's reference. A failure of the stream that no
 * observation raised becomes a RuntimeWarning naming the command: like the
 * ResourceWarning of an unclosed file, but shown under the default warning
 * filters, so a failure is never silent. A warning that a filter turned
 * into an error is reported as unraisable (close() itself cannot fail). */
static void hrx_py_stream_release(PyObject* self, void* stream) {
  hrx_status_t unobserved = NULL;
  Py_BEGIN_ALLOW_THREADS
  hrx_stream_release_checked(stream, &unobserved);
  Py_END_ALLOW_THREADS
  if (!unobserved) return;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  if (PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "hrx stream closed: %s",
                       hrx_status_message(unobserved)) < 0) {
    PyErr_WriteUnraisable(self);
  }
  PyErr_Restore(type, value, traceback);
  hrx_status_free(unobserved);
}

static const hrx_py_handle_kind_t hrx_py_stream_kind = {
    .name = "stream",
    .field = offsetof(hrx_py_stream_t, stream),
    .close = hrx_py_stream_release};

HRX_PY_HANDLE_FUNCTIONS(hrx_py_stream, hrx_py_stream_kind)

hrx_stream_t* hrx_py_stream_unwrap(hrx_py_state_t* state, PyObject* object) {
  return hrx_py_handle_unwrap(state, object, state->stream_type,
                              &hrx_py_stream_kind);
}

static hrx_stream_t* hrx_py_stream_get(PyObject* self, hrx_py_state_t** out) {
  *out = hrx_py_state_from_type(Py_TYPE(self));
  return *out ? hrx_py_stream_unwrap(*out, self) : NULL;
}

/* The stream, RETAINED for a call that releases the GIL (another thread may
 * close the handle meanwhile). Call after converting arguments, which may run
 * Python code. Drop with hrx_py_release_held. */
static hrx_stream_t* hrx_py_stream_hold(PyObject* self) {
  hrx_py_state_t* state;
  hrx_stream_t* stream = hrx_py_stream_get(self, &state);
  hrx_stream_retain(stream);
  return stream;
}

/* Stream.open(index=0, backend=None): a pool stream on that device. */
static PyObject* hrx_py_stream_open(PyObject* cls, PyObject* args,
                                    PyObject* kwargs) {
  hrx_py_state_t* state = hrx_py_state_from_type((PyTypeObject*)cls);
  if (!state) return NULL;
  PyObject* device_object =
      PyObject_Call((PyObject*)state->device_type, args, kwargs);
  if (!device_object) return NULL;
  hrx_device_t* device = ((hrx_py_device_t*)device_object)->device;
  /* fabric.Queue.open() makes a queue outside the pool, like Queue(). */
  bool dedicated = PyType_IsSubtype((PyTypeObject*)cls, state->queue_type);
  hrx_stream_t* stream = NULL;
  hrx_status_t status;
  Py_BEGIN_ALLOW_THREADS
  status = dedicated ? hrx_stream_create_dedicated(device, &stream)
                     : hrx_stream_create(device, &stream);
  Py_END_ALLOW_THREADS
  Py_DECREF(device_object); /* the stream holds the device */
  if (status) return hrx_py_raise(state, status);
  return hrx_py_stream_wrap((PyTypeObject*)cls, stream);
}

static PyObject* hrx_py_stream_allocate(PyObject* self, PyObject* size) {
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  uint64_t nbytes = 0;
  if (hrx_py_arg_uint64(state, size, "buffer size", &nbytes) < 0) return NULL;
  hrx_stream_t* stream = hrx_py_stream_hold(self);
  if (!stream) return NULL;
  hrx_device_t* device = hrx_stream_device(stream);
  hrx_device_retain(device);
  PyObject* buffer = hrx_py_allocate(state, device, nbytes);
  Py_BEGIN_ALLOW_THREADS
  hrx_py_release_held(stream, NULL, NULL, NULL);
  Py_END_ALLOW_THREADS
  return buffer;
}

/* copy(dst, src, /) and copy_peer(dst, src, /): the same arguments. */
static PyObject* hrx_py_stream_copy_kind(PyObject* self, PyObject* const* args,
                                         Py_ssize_t nargs,
                                         hrx_py_submission_kind_t kind,
                                         const char* signature) {
  if (hrx_py_arg_count(signature, nargs, 2) < 0) return NULL;
  PyObject *dst = args[0], *src = args[1];
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_py_submission_t s = {.kind = kind};
  s.stream = hrx_py_stream_unwrap(state, self);
  if (!s.stream ||
      hrx_py_buffer_view_borrowed(state, dst, "copy destination", &s.dst) <
          0 ||
      hrx_py_buffer_view_borrowed(state, src, "copy source", &s.src) < 0) {
    return NULL;
  }
  if (hrx_py_submit(state, &s) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject* hrx_py_stream_copy(PyObject* self, PyObject* const* args,
                                    Py_ssize_t nargs) {
  return hrx_py_stream_copy_kind(self, args, nargs, HRX_PY_SUBMIT_COPY,
                                 "copy(dst, src)");
}

static PyObject* hrx_py_stream_copy_peer(PyObject* self, PyObject* const* args,
                                         Py_ssize_t nargs) {
  return hrx_py_stream_copy_kind(self, args, nargs, HRX_PY_SUBMIT_COPY_PEER,
                                 "copy_peer(dst, src)");
}

/* fill(dst, byte, /) */
static PyObject* hrx_py_stream_fill(PyObject* self, PyObject* const* args,
                                    Py_ssize_t nargs) {
  if (hrx_py_arg_count("fill(dst, byte)", nargs, 2) < 0) return NULL;
  PyObject *dst = args[0], *byte_object = args[1];
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  int64_t byte = 0;
  if (hrx_py_arg_int64(state, byte_object, "fill byte", &byte) < 0) {
    return NULL;
  }
  if (byte < 0 || byte > 255) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "fill byte must be between 0 and 255; got %lld",
                 (long long)byte);
    return NULL;
  }
  hrx_py_submission_t s = {.kind = HRX_PY_SUBMIT_FILL, .byte = (uint8_t)byte};
  s.stream = hrx_py_stream_unwrap(state, self);
  if (!s.stream ||
      hrx_py_buffer_view_borrowed(state, dst, "fill destination", &s.dst) <
          0) {
    return NULL;
  }
  if (hrx_py_submit(state, &s) < 0) return NULL;
  Py_RETURN_NONE;
}

/* upload(dst, data, /) */
static PyObject* hrx_py_stream_upload(PyObject* self, PyObject* const* args,
                                      Py_ssize_t nargs) {
  if (hrx_py_arg_count("upload(dst, data)", nargs, 2) < 0) return NULL;
  PyObject *dst = args[0], *data_object = args[1];
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_py_host_memory_t data;
  if (hrx_py_host_memory_get(state, data_object, false, "upload data",
                             &data) < 0) {
    return NULL;
  }
  hrx_py_submission_t s = {.kind = HRX_PY_SUBMIT_UPLOAD,
                           .data = data.data,
                           .length = data.length};
  s.stream = hrx_py_stream_unwrap(state, self);
  bool ok = s.stream && hrx_py_buffer_view_borrowed(state, dst,
                                                    "upload destination",
                                                    &s.dst) == 0;
  ok = ok && hrx_py_submit(state, &s) == 0;
  hrx_py_host_memory_release(&data);
  if (!ok) return NULL;
  Py_RETURN_NONE;
}

static PyObject* hrx_py_stream_read(PyObject* self, PyObject* source) {
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_py_submission_t s = {.kind = HRX_PY_SUBMIT_READ};
  s.stream = hrx_py_stream_unwrap(state, self);
  if (!s.stream ||
      hrx_py_buffer_view_borrowed(state, source, "read source", &s.src) < 0 ||
      hrx_py_submit(state, &s) < 0) {
    return NULL;
  }
  return hrx_py_readback_wrap(state, s.out_readback);
}

/* read_into(src, out, /) */
static PyObject* hrx_py_stream_read_into(PyObject* self, PyObject* const* args,
                                         Py_ssize_t nargs) {
  if (hrx_py_arg_count("read_into(src, out)", nargs, 2) < 0) return NULL;
  PyObject *src = args[0], *out_object = args[1];
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  Py_buffer out;
  if (hrx_py_host_buffer_writable(state, out_object, "read output", &out) <
      0) {
    return NULL;
  }
  hrx_py_submission_t s = {.kind = HRX_PY_SUBMIT_READ,
                           .into = out.buf,
                           .length = (uint64_t)out.len};
  s.stream = hrx_py_stream_unwrap(state, self);
  /* A zero-length export may have a NULL buffer: any address will do. */
  if (!s.into) s.into = &s;
  if (!s.stream ||
      hrx_py_buffer_view_borrowed(state, src, "read source", &s.src) < 0 ||
      hrx_py_submit(state, &s) < 0) {
    PyBuffer_Release(&out);
    return NULL;
  }
  return hrx_py_readback_wrap_into(state, s.out_readback, &out);
}

/* read_blocking(src, out, /) */
static PyObject* hrx_py_stream_read_blocking(PyObject* self,
                                             PyObject* const* args,
                                             Py_ssize_t nargs) {
  if (hrx_py_arg_count("read_blocking(src, out)", nargs, 2) < 0) return NULL;
  PyObject *src = args[0], *out_object = args[1];
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_py_host_memory_t out;
  if (hrx_py_host_memory_get(state, out_object, true, "read output", &out) <
      0) {
    return NULL;
  }
  hrx_py_submission_t s = {.kind = HRX_PY_SUBMIT_READ};
  s.stream = hrx_py_stream_unwrap(state, self);
  bool ok = s.stream &&
            hrx_py_buffer_view_borrowed(state, src, "read source", &s.src) ==
                0 &&
            hrx_py_host_memory_fits(state, &out, s.stream, s.src) == 0;
  if (ok && hrx_device_is_pinned(hrx_stream_device(s.stream), out.data,
                                 s.src.length)) {
    /* Pinned memory of the device: the read writes it directly. */
    s.into = out.data;
    s.length = s.src.length;
  }
  /* The read, then its wait: each with the GIL kept when it need not
   * wait (submit.h, readback.c). */
  ok = ok && hrx_py_submit(state, &s) == 0;
  ok = ok && hrx_py_readback_copy_out(state, s.out_readback, out.data) == 0;
  hrx_py_host_memory_release(&out);
  if (!ok) return NULL;
  return Py_NewRef(out_object);
}

/* synchronize() and flush(): calls of the stream alone. */
static PyObject* hrx_py_stream_call(PyObject* self,
                                    hrx_py_submission_kind_t kind) {
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_py_submission_t s = {.kind = kind};
  s.stream = hrx_py_stream_unwrap(state, self);
  if (!s.stream || hrx_py_submit(state, &s) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject* hrx_py_stream_synchronize(PyObject* self, PyObject* unused) {
  (void)unused;
  return hrx_py_stream_call(self, HRX_PY_SUBMIT_SYNCHRONIZE);
}

static PyObject* hrx_py_stream_flush(PyObject* self, PyObject* unused) {
  (void)unused;
  return hrx_py_stream_call(self, HRX_PY_SUBMIT_FLUSH);
}

/* record_event(*, timing=False) -> Event */
static PyObject* hrx_py_stream_record_event(PyObject* self,
                                            PyObject* const* args,
                                            Py_ssize_t nargs,
                                            PyObject* kwnames) {
  static const char* const names[] = {"timing"};
  PyObject* timing = NULL;
  /* Any other argument is refused with a message that names the one
   * keyword there is. */
  if (hrx_py_arg_parse("record_event", args, nargs, kwnames, names, 1, 0, 0,
                       &timing) < 0) {
    PyErr_SetString(PyExc_TypeError,
                    "record_event() takes only the keyword argument "
                    "timing=True/False");
    return NULL;
  }
  if (!timing) timing = Py_False;
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  if (!PyBool_Check(timing)) {
    PyErr_Format(PyExc_TypeError, "timing must be True or False, not %.100s",
                 Py_TYPE(timing)->tp_name);
    return NULL;
  }
  hrx_py_submission_t s = {.kind = HRX_PY_SUBMIT_RECORD_EVENT,
                           .timing = timing == Py_True};
  s.stream = hrx_py_stream_unwrap(state, self);
  if (!s.stream) return NULL;
  if (hrx_py_submit(state, &s) < 0) return NULL;
  return hrx_py_event_wrap(state, s.out_event);
}

/* The stream's device, for a launch's foreign arrays. */
static hrx_device_t* hrx_py_stream_launch_device(PyObject* self) {
  hrx_py_state_t* state;
  hrx_stream_t* stream = hrx_py_stream_get(self, &state);
  return stream ? hrx_stream_device(stream) : NULL;
}

/* launch(kernel, grid, block, args=(), shared=0) */
static PyObject* hrx_py_stream_launch(PyObject* self, PyObject* const* args,
                                      Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"kernel", "grid", "block", "args",
                                      "shared"};
  PyObject* given[5];
  if (hrx_py_arg_parse("launch", args, nargs, kwnames, names, 5, 5, 3, given) <
      0) {
    return NULL;
  }
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_py_launch_t launch;
  if (hrx_py_launch_convert(state, given[0], given[1], given[2], given[3],
                            given[4], hrx_py_stream_launch_device, self,
                            &launch) < 0) {
    return NULL;
  }
  hrx_py_submission_t s = {.kind = HRX_PY_SUBMIT_KERNEL_LAUNCH,
                           .kernel = launch.kernel,
                           .config = &launch.config,
                           .args = launch.args,
                           .arg_count = launch.count};
  s.stream = hrx_py_stream_unwrap(state, self);
  if (!s.stream) return NULL;
  if (hrx_py_submit(state, &s) < 0) return NULL;
  Py_RETURN_NONE;
}

typedef struct {
  hrx_stream_t* stream;  /* borrowed from the handle; held while the GIL is
                            released */
  bool done;
} hrx_py_stream_query_t;

static hrx_status_t hrx_py_stream_query_call(void* arg) {
  hrx_py_stream_query_t* query = arg;
  return hrx_stream_query(query->stream, &query->done);
}

static void hrx_py_stream_query_hold(void* arg, bool held) {
  hrx_stream_t* stream = ((hrx_py_stream_query_t*)arg)->stream;
  if (held) {
    hrx_stream_retain(stream);
  } else {
    hrx_py_release_without_gil(hrx_py_stream_drop, stream);
  }
}

static PyObject* hrx_py_stream_query(PyObject* self, PyObject* unused) {
  (void)unused;
  hrx_py_state_t* state;
  hrx_py_stream_query_t query = {hrx_py_stream_get(self, &state), false};
  if (!query.stream) return NULL;
  hrx_status_t status = hrx_py_runtime_query(
      hrx_py_stream_query_call, hrx_py_stream_query_hold, &query);
  if (status) return hrx_py_raise(state, status);
  return PyBool_FromLong(query.done);
}

static PyObject* hrx_py_stream_wait_event(PyObject* self, PyObject* event_obj) {
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_py_submission_t s = {.kind = HRX_PY_SUBMIT_WAIT_EVENT};
  s.stream = hrx_py_stream_unwrap(state, self);
  if (!s.stream) return NULL;
  s.event = hrx_py_event_unwrap(state, event_obj);
  if (!s.event) return NULL;
  if (hrx_py_submit(state, &s) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject* hrx_py_stream_wait_completion(PyObject* self,
                                               PyObject* completion_obj) {
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_completion_t* completion =
      hrx_py_completion_unwrap(state, completion_obj);
  if (!completion) return NULL;
  hrx_stream_t* stream = hrx_py_stream_hold(self);
  if (!stream) return NULL;
  hrx_status_t status;
  Py_BEGIN_ALLOW_THREADS
  status = hrx_stream_wait_completion(stream, completion);
  hrx_py_release_held(stream, NULL, NULL, NULL);
  Py_END_ALLOW_THREADS
  if (status) return hrx_py_raise(state, status);
  Py_RETURN_NONE;
}

static PyObject* hrx_py_stream_device_of(hrx_py_state_t* state, void* stream) {
  return hrx_py_device_ref(state, hrx_stream_device(stream));
}

static PyObject* hrx_py_stream_queue_index(hrx_py_state_t* state,
                                           void* stream) {
  (void)state;
  int index = hrx_stream_queue_index(stream);
  if (index < 0) Py_RETURN_NONE;
  return PyLong_FromLong(index);
}

static PyObject* hrx_py_stream_priority_of(hrx_py_state_t* state,
                                           void* stream) {
  (void)state;
  return PyUnicode_FromString(
      hrx_stream_priority_name(hrx_stream_priority(stream)));
}

static PyObject* hrx_py_stream_reserved(hrx_py_state_t* state, void* stream) {
  (void)state;
  return PyBool_FromLong(hrx_stream_reserved(stream));
}

static PyObject* hrx_py_stream_native_handle(hrx_py_state_t* state,
                                             void* stream) {
  (void)state;
  return PyLong_FromVoidPtr(hrx_stream_native_handle(stream));
}

/* The CUDA stream protocol: __cuda_stream__() -> (0, cudaStream_t). */
static PyObject* hrx_py_stream_cuda_stream(PyObject* self, PyObject* unused) {
  (void)unused;
  hrx_py_state_t* state;
  hrx_stream_t* stream = hrx_py_stream_get(self, &state);
  if (!stream) return NULL;
  return Py_BuildValue("(iN)", 0,
                       PyLong_FromVoidPtr(hrx_stream_native_handle(stream)));
}

static PyMethodDef hrx_py_stream_cuda_stream_def = {
    "__cuda_stream__", hrx_py_stream_cuda_stream, METH_NOARGS,
    "__cuda_stream__($self, /)\n--\n\n"
    "Return (0, the cudaStream_t handle as an int): the CUDA stream "
    "protocol."};

static PyObject* hrx_py_stream_get_cuda_stream(PyObject* self, void* closure) {
  (void)closure;
  hrx_py_state_t* state;
  hrx_stream_t* stream = hrx_py_stream_get(self, &state);
  if (!stream) return NULL;
  if (hrx_py_require_cuda(hrx_stream_device(stream), "__cuda_stream__") < 0) {
    return NULL;
  }
  return PyCFunction_New(&hrx_py_stream_cuda_stream_def, self);
}

static PyObject* hrx_py_stream_repr(PyObject* self) {
  hrx_stream_t* stream = ((hrx_py_stream_t*)self)->stream;
  const char* name = Py_TYPE(self)->tp_name;
  if (!stream) return PyUnicode_FromFormat("<%s (closed)>", name);
  int index = hrx_stream_queue_index(stream);
  if (hrx_stream_reserved(stream)) {
    return PyUnicode_FromFormat(
        "<%s on a reserved %s-priority queue>", name,
        hrx_stream_priority_name(hrx_stream_priority(stream)));
  }
  if (index < 0) return PyUnicode_FromFormat("<%s outside the pool>", name);
  return PyUnicode_FromFormat("<%s on pool queue %d>", name, index);
}

HRX_PY_NEW_FUNCTION(hrx_py_stream, stream_type)

static PyMethodDef hrx_py_stream_methods[] = {
    HRX_PY_NEW_METHOD(
        hrx_py_stream,
        "__new__($type, *args, **kwargs)\n--\n\n"
        "Refuse with a TypeError: streams come from device.stream() or "
        "Stream.open()."),
    {"open", (PyCFunction)(void (*)(void))hrx_py_stream_open,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "open($type, index=0, backend=None, *, batching=None)\n--\n\n"
     "Open that live device as Device.open does and return a stream of it: "
     "a pool stream for Stream.open, a queue outside the pool for "
     "hrx.fabric.Queue.open."},
    {"allocate", hrx_py_stream_allocate, METH_O,
     "allocate($self, nbytes, /)\n--\n\n"
     "Allocate nbytes of the stream's device's memory; return the Buffer."},
    {"copy", (PyCFunction)(void (*)(void))hrx_py_stream_copy, METH_FASTCALL,
     "copy($self, dst, src, /)\n--\n\n"
     "Copy src to dst on the device: views of equal length that do not "
     "overlap."},
    {"copy_peer", (PyCFunction)(void (*)(void))hrx_py_stream_copy_peer,
     METH_FASTCALL,
     "copy_peer($self, dst, src, /)\n--\n\n"
     "Copy between buffers of two devices of this stream's backend, one of "
     "them this stream's device, in this stream's order "
     "(Device.info['peer'] says how: direct, peer or staged). The other "
     "device's work is ordered only by events."},
    {"fill", (PyCFunction)(void (*)(void))hrx_py_stream_fill, METH_FASTCALL,
     "fill($self, dst, byte, /)\n--\n\n"
     "Set every byte of dst to byte (0..255)."},
    {"upload", (PyCFunction)(void (*)(void))hrx_py_stream_upload, METH_FASTCALL,
     "upload($self, dst, data, /)\n--\n\n"
     "Copy contiguous host memory (buffer protocol or a host DLPack tensor) "
     "of exactly dst.nbytes bytes into dst; data may be reused as soon as "
     "this returns."},
    {"read", hrx_py_stream_read, METH_O,
     "read($self, src, /)\n--\n\n"
     "Start reading src to the host; return a Readback whose wait() returns "
     "the bytes as a numpy uint8 array."},
    {"read_into", (PyCFunction)(void (*)(void))hrx_py_stream_read_into,
     METH_FASTCALL,
     "read_into($self, src, out, /)\n--\n\n"
     "Start reading src into out, a writable C-contiguous buffer (e.g. a "
     "numpy array) of exactly src's length; return a Readback. out is held "
     "until the Readback is waited, closed or collected; it holds the bytes "
     "once wait() returned (wait() returns out) or done() returned True."},
    {"read_blocking", (PyCFunction)(void (*)(void))hrx_py_stream_read_blocking,
     METH_FASTCALL,
     "read_blocking($self, src, out, /)\n--\n\n"
     "Read src into writable contiguous host memory (buffer protocol or a "
     "host DLPack tensor) of at least src.nbytes bytes; return out."},
    {"synchronize", hrx_py_stream_synchronize, METH_NOARGS,
     "synchronize($self, /)\n--\n\n"
     "Wait for the work published on this stream; raise a failed command "
     "of it."},
    {"flush", hrx_py_stream_flush, METH_NOARGS,
     "flush($self, /)\n--\n\n"
     "Publish the stream's pending batch now, without an event or a wait, "
     "so that everything submitted so far is on its native queue (before "
     "launching other work on native_handle). Raise an earlier command's "
     "failure like synchronize()."},
    {"record_event", (PyCFunction)(void (*)(void))hrx_py_stream_record_event,
     METH_FASTCALL | METH_KEYWORDS,
     "record_event($self, /, *, timing=False)\n--\n\n"
     "Return an Event for the work published so far. With timing=True the "
     "event also notes when that work completed, for Event.elapsed_time."},
    {"launch", (PyCFunction)(void (*)(void))hrx_py_stream_launch,
     METH_FASTCALL | METH_KEYWORDS,
     "launch($self, /, kernel, grid, block, args=(), shared=0)\n--\n\n"
     "Launch an hrx.Kernel of this stream's device: a command in the "
     "stream's order, like a copy. grid and block are an int or 1 to 3 "
     "ints; shared is the dynamic shared memory of each block in bytes. "
     "args: hrx.Buffer (the address of the view's first byte), int, float, "
     "bool, numpy scalars (their exact type), and arrays with "
     "__cuda_array_interface__ or __dlpack__ on this device (their "
     "address); docs/kernels.md says how each is passed. Checked against "
     "the device's and the kernel's limits before anything is submitted. "
     "Keeps the GIL unless the queue is full."},
    {"query", hrx_py_stream_query, METH_NOARGS,
     "query($self, /)\n--\n\n"
     "Whether all work the stream accepted is done (never waits; False "
     "while work waits in a pending batch; on a shared queue, other "
     "streams' earlier work counts too)."},
    {"wait_event", hrx_py_stream_wait_event, METH_O,
     "wait_event($self, event, /)\n--\n\n"
     "Make later work on this stream's queue wait for event (a device-side "
     "wait; it also holds back streams sharing the queue)."},
    {"wait_completion", hrx_py_stream_wait_completion, METH_O,
     "wait_completion($self, completion, /)\n--\n\n"
     "Order this stream's later work after a graph launch's Completion (of "
     "any device). Until it is done, the stream's next submission, "
     "record_event() or synchronize() waits for it on the host (GIL "
     "released; Ctrl-C interrupts the wait)."},
    HRX_PY_HANDLE_METHODS(hrx_py_stream,
                          "Drop the stream; its queued work still completes "
                          "(waits for graph launches with host callbacks "
                          "still running on it)."),
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef hrx_py_stream_getset[] = {
    HRX_PY_PROPERTY("device", hrx_py_stream_kind, hrx_py_stream_device_of,
                    "the stream's device"),
    HRX_PY_PROPERTY("queue_index", hrx_py_stream_kind,
                    hrx_py_stream_queue_index,
                    "pool slot of the stream's queue within its priority lane "
                    "(None outside the pool and for a reserved queue)"),
    HRX_PY_PROPERTY("priority", hrx_py_stream_kind, hrx_py_stream_priority_of,
                    "the stream's lane: \"high\", \"normal\" or \"low\""),
    HRX_PY_PROPERTY("reserved", hrx_py_stream_kind, hrx_py_stream_reserved,
                    "whether the stream has a reserved queue of its own"),
    HRX_PY_PROPERTY("native_handle", hrx_py_stream_kind,
                    hrx_py_stream_native_handle,
                    "the native queue handle as an int (hipStream_t / "
                    "cudaStream_t)"),
    HRX_PY_CLOSED_PROPERTY(hrx_py_stream_kind),
    {"__cuda_stream__", hrx_py_stream_get_cuda_stream, NULL,
     "the CUDA stream protocol (cuda.core, CuPy, PyTorch): a method that "
     "returns (0, cudaStream_t handle). Only on NVIDIA GPUs; elsewhere the "
     "attribute is absent (AttributeError says why).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject* hrx_py_stream_new(PyTypeObject* type, PyObject* args,
                                   PyObject* kwargs) {
  (void)type;
  (void)args;
  (void)kwargs;
  PyErr_SetString(PyExc_TypeError,
                  "hrx.Stream cannot be created directly; get one with "
                  "device.stream() (or hrx.Stream.open(index, backend))");
  return NULL;
}

static PyType_Slot hrx_py_stream_slots[] = {
    {Py_tp_new, hrx_py_stream_new},
    {Py_tp_doc, "An ordered stream of device work on one native queue of the "
                "device's pool, assigned by the queue policy (round-robin "
                "unless set otherwise) for the stream's life. Not created "
                "directly: use Device.stream() or Stream.open()."},
    {Py_tp_dealloc, hrx_py_stream_dealloc},
    {Py_tp_traverse, hrx_py_traverse_type},
    {Py_tp_methods, hrx_py_stream_methods},
    {Py_tp_getset, hrx_py_stream_getset},
    {Py_tp_repr, hrx_py_stream_repr},
    {0, NULL},
};

PyType_Spec hrx_py_stream_spec = {
    .name = "hrx.Stream",
    .basicsize = sizeof(hrx_py_stream_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = hrx_py_stream_slots,
};

/* hrx.fabric.Queue(device): a native queue outside the pool. */
static PyObject* hrx_py_queue_new(PyTypeObject* type, PyObject* args,
                                  PyObject* kwargs) {
  hrx_py_state_t* state = NULL;
  hrx_device_t* device =
      hrx_py_device_argument(type, args, kwargs, "O:Queue", &state);
  if (!device) return NULL;
  hrx_stream_t* stream = NULL;
  hrx_status_t status;
  Py_BEGIN_ALLOW_THREADS
  status = hrx_stream_create_dedicated(device, &stream);
  Py_END_ALLOW_THREADS
  if (status) return hrx_py_raise(state, status);
  return hrx_py_stream_wrap(type, stream);
}

HRX_PY_NEW_FUNCTION(hrx_py_queue, queue_type)

static PyMethodDef hrx_py_queue_methods[] = {
    HRX_PY_NEW_METHOD(hrx_py_queue, "__new__($type, device)\n--\n\n"
                      "Create a native queue of device outside its pool."),
    {NULL, NULL, 0, NULL},
};

static PyType_Slot hrx_py_queue_slots[] = {
    {Py_tp_doc, "Queue(device)\n--\n\n"
                "A native queue created outside the stream queue pool. It "
                "takes no pool slot, does not count as the pool's first use "
                "and is never handed to pool streams. It has the Stream API; "
                "queue_index is None."},
    {Py_tp_new, hrx_py_queue_new},
    {Py_tp_methods, hrx_py_queue_methods},
    {Py_tp_traverse, hrx_py_traverse_type},
    {Py_tp_dealloc, hrx_py_stream_dealloc},
    {0, NULL},
};

PyType_Spec hrx_py_queue_spec = {
    .name = "hrx.fabric.Queue",
    .basicsize = sizeof(hrx_py_stream_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = hrx_py_queue_slots,
};
