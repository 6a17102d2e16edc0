/* hrx.Buffer: device memory, or a view (byte range) of it. Views share the
 * allocation; its memory is freed when the last view and the last command
 * using it are gone. */
#include "buffer.h"

#include "args.h"
#include "device_handle.h"
#include "dlpack.h"
#include "property.h"
#include "special.h"

typedef struct {
  PyObject_HEAD
  hrx_buffer_t* buffer;      /* retained; NULL once closed */
  uint64_t offset;           /* this view's range within the allocation */
  uint64_t length;
} hrx_py_buffer_t;

static void hrx_py_buffer_release(void* buffer) {
  /* Freeing waits until no submitted work can touch the memory. */
  hrx_buffer_release(buffer);
}

PyObject* hrx_py_buffer_wrap(hrx_py_state_t* state, hrx_buffer_t* buffer,
                             uint64_t offset, uint64_t length) {
  hrx_py_buffer_t* self = PyObject_GC_New(hrx_py_buffer_t, state->buffer_type);
  if (!self) {
    hrx_py_release_without_gil(hrx_py_buffer_release, buffer);
    return NULL;
  }
  self->buffer = buffer;
  self->offset = offset;
  self->length = length;
  PyObject_GC_Track(self);
  return (PyObject*)self;
}

int hrx_py_buffer_view_borrowed(hrx_py_state_t* state, PyObject* object,
                                const char* role, hrx_view_t* out_view) {
  if (!PyObject_TypeCheck(object, state->buffer_type)) {
    PyErr_Format(PyExc_TypeError, "%s must be an hrx.Buffer, not %.100s", role,
                 Py_TYPE(object)->tp_name);
    return -1;
  }
  hrx_py_buffer_t* self = (hrx_py_buffer_t*)object;
  if (!self->buffer) {
    PyErr_Format(state->errors[HRX_STATUS_FAILED_PRECONDITION],
                 "%s is a closed buffer", role);
    return -1;
  }
  out_view->buffer = self->buffer;
  out_view->offset = self->offset;
  out_view->length = self->length;
  return 0;
}

bool hrx_py_buffer_open_view(PyObject* object, hrx_view_t* out_view) {
  hrx_py_buffer_t* self = (hrx_py_buffer_t*)object;
  if (!self->buffer) return false;
  *out_view = (hrx_view_t){self->buffer, self->offset, self->length};
  return true;
}

int hrx_py_buffer_view(hrx_py_state_t* state, PyObject* object,
                       const char* role, hrx_view_t* out_view) {
  if (hrx_py_buffer_view_borrowed(state, object, role, out_view) < 0) {
    return -1;
  }
  hrx_buffer_retain(out_view->buffer);
  return 0;
}

PyObject* hrx_py_allocate(hrx_py_state_t* state, hrx_device_t* device,
                          uint64_t size) {
  hrx_buffer_t* buffer = NULL;
  hrx_status_t status;
  Py_BEGIN_ALLOW_THREADS
  status = hrx_buffer_allocate(device, size, &buffer);
  hrx_device_release(device);
  Py_END_ALLOW_THREADS
  if (status) return hrx_py_raise(state, status);
  return hrx_py_buffer_wrap(state, buffer, 0, size);
}

/* The open view (the handle itself), or NULL once closed. */
static void* hrx_py_buffer_object(PyObject* self) {
  return ((hrx_py_buffer_t*)self)->buffer ? self : NULL;
}

static const hrx_py_handle_kind_t hrx_py_buffer_kind = {
    .name = "buffer",
    .field = offsetof(hrx_py_buffer_t, buffer),
    .release = hrx_py_buffer_release,
    .open = hrx_py_buffer_object};

HRX_PY_HANDLE_FUNCTIONS(hrx_py_buffer, hrx_py_buffer_kind)

static hrx_py_buffer_t* hrx_py_buffer_get(PyObject* self) {
  return hrx_py_handle_get(self, &hrx_py_buffer_kind);
}

/* A view bound: an integer beyond int64 is out of range like any other too
 * large bound (it becomes INT64_MAX); wrong types stay TypeError. */
static int hrx_py_arg_bound(hrx_py_state_t* state, PyObject* object,
                            const char* what, int64_t* out) {
  if (hrx_py_arg_int64(state, object, what, out) == 0) return 0;
  if (!PyErr_ExceptionMatches(PyExc_ValueError)) return -1;
  PyErr_Clear();
  *out = INT64_MAX;
  return 0;
}

/* A sub-view [offset, offset + length) of this view, bounds-checked. */
static PyObject* hrx_py_buffer_subview(hrx_py_buffer_t* self, uint64_t offset,
                                       uint64_t length) {
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  if (offset > self->length || length > self->length - offset) {
    PyErr_Format(state->errors[HRX_STATUS_OUT_OF_RANGE],
                 "view [offset %llu, length %llu] exceeds the %llu-byte "
                 "buffer it is taken from",
                 (unsigned long long)offset, (unsigned long long)length,
                 (unsigned long long)self->length);
    return NULL;
  }
  hrx_buffer_retain(self->buffer);
  return hrx_py_buffer_wrap(state, self->buffer, self->offset + offset, length);
}

static PyObject* hrx_py_buffer_slice(PyObject* self, PyObject* const* args,
                                     Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"offset", "length"};
  PyObject* offset_object = NULL;
  PyObject* length_object = NULL;
  PyObject* parsed[2];
  if (hrx_py_arg_parse("slice", args, nargs, kwnames, names, 2, 2, 2, parsed) <
      0) {
    return NULL;
  }
  offset_object = parsed[0];
  length_object = parsed[1];
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  int64_t offset = 0, length = 0;
  /* Conversions may run Python code: check the handle only afterwards. */
  if (hrx_py_arg_bound(state, offset_object, "offset", &offset) < 0 ||
      hrx_py_arg_bound(state, length_object, "length", &length) < 0) {
    return NULL;
  }
  hrx_py_buffer_t* buffer = hrx_py_buffer_get(self);
  if (!buffer) return NULL;
  if (offset < 0 || length < 0) {
    PyErr_Format(state->errors[HRX_STATUS_OUT_OF_RANGE],
                 "offset and length must be >= 0; got offset %lld, length "
                 "%lld",
                 (long long)offset, (long long)length);
    return NULL;
  }
  return hrx_py_buffer_subview(buffer, (uint64_t)offset, (uint64_t)length);
}

/* buf[a:b]: Python's negative indices count from the end; a range that does
 * not fit is an error, not clamped; steps other than 1 are refused. */
static PyObject* hrx_py_buffer_subscript(PyObject* self, PyObject* key) {
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  if (!PySlice_Check(key)) {
    PyErr_Format(PyExc_TypeError,
                 "buffers are indexed with a slice (buf[a:b]), not %.100s",
                 Py_TYPE(key)->tp_name);
    return NULL;
  }
  PySliceObject* slice = (PySliceObject*)key;
  int64_t raw[2] = {0, 0};
  bool given[2] = {false, false};
  PyObject* parts[2] = {slice->start, slice->stop};
  /* Conversions may run Python code: check the handle only afterwards. */
  for (int i = 0; i < 2; ++i) {
    if (parts[i] == Py_None) continue;
    if (hrx_py_arg_bound(state, parts[i], "slice bound", &raw[i]) < 0) {
      return NULL;
    }
    given[i] = true;
  }
  int64_t step = 1;
  if (slice->step != Py_None &&
      hrx_py_arg_int64(state, slice->step, "slice step", &step) < 0) {
    return NULL;
  }
  hrx_py_buffer_t* buffer = hrx_py_buffer_get(self);
  if (!buffer) return NULL;
  if (step != 1) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "buffer views are contiguous: slice step must be 1; got "
                 "%lld",
                 (long long)step);
    return NULL;
  }
  int64_t length = (int64_t)buffer->length;
  int64_t bounds[2] = {given[0] ? raw[0] : 0, given[1] ? raw[1] : length};
  for (int i = 0; i < 2; ++i) {
    if (given[i] && bounds[i] < 0) bounds[i] += length;
  }
  if (bounds[0] < 0 || bounds[1] > length || bounds[0] > bounds[1]) {
    PyErr_Format(state->errors[HRX_STATUS_OUT_OF_RANGE],
                 "slice [%lld:%lld] is outside the %llu-byte buffer (valid: "
                 "0 <= start <= stop <= %llu)",
                 (long long)bounds[0], (long long)bounds[1],
                 (unsigned long long)buffer->length,
                 (unsigned long long)buffer->length);
    return NULL;
  }
  return hrx_py_buffer_subview(buffer, (uint64_t)bounds[0],
                               (uint64_t)(bounds[1] - bounds[0]));
}

static Py_ssize_t hrx_py_buffer_length(PyObject* self) {
  hrx_py_buffer_t* buffer = hrx_py_buffer_get(self);
  return buffer ? (Py_ssize_t)buffer->length : -1;
}

static PyObject* hrx_py_buffer_nbytes(hrx_py_state_t* state, void* view) {
  (void)state;
  return PyLong_FromUnsignedLongLong(((hrx_py_buffer_t*)view)->length);
}

static PyObject* hrx_py_buffer_offset(hrx_py_state_t* state, void* view) {
  (void)state;
  return PyLong_FromUnsignedLongLong(((hrx_py_buffer_t*)view)->offset);
}

static PyObject* hrx_py_buffer_allocation_size(hrx_py_state_t* state,
                                               void* view) {
  (void)state;
  return PyLong_FromUnsignedLongLong(
      hrx_buffer_size(((hrx_py_buffer_t*)view)->buffer));
}

static PyObject* hrx_py_buffer_device_of(hrx_py_state_t* state, void* view) {
  return hrx_py_device_ref(state,
                           hrx_buffer_device(((hrx_py_buffer_t*)view)->buffer));
}

/* The CUDA Array Interface, version 3: this view as a 1-D uint8 array.
 * Its stream is the legacy default stream (1), made to wait first, on the
 * device, for the work already submitted to the pool queues: a consumer
 * that orders its stream after `stream` (as the interface asks) then runs
 * after that work. */
static PyObject* hrx_py_buffer_get_cuda_array_interface(PyObject* self,
                                                        void* closure) {
  (void)closure;
  hrx_py_buffer_t* buffer = hrx_py_buffer_get(self);
  if (!buffer) return NULL;
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_device_t* device = hrx_buffer_device(buffer->buffer);
  if (hrx_py_require_cuda(device, "__cuda_array_interface__") < 0) return NULL;
  enum { legacy_default_stream = 1 };
  hrx_status_t status;
  hrx_buffer_t* held = buffer->buffer;
  hrx_buffer_retain(held);
  Py_BEGIN_ALLOW_THREADS
  status = hrx_device_order_foreign_stream(
      device, (void*)(uintptr_t)legacy_default_stream);
  hrx_buffer_release(held);
  Py_END_ALLOW_THREADS
  if (status) return hrx_py_raise(state, status);
  void* data = (uint8_t*)hrx_buffer_native_pointer(buffer->buffer) +
               buffer->offset;
  return Py_BuildValue(
      "{s:(K),s:s,s:(NO),s:i,s:O,s:i}", "shape",
      (unsigned long long)buffer->length, "typestr", "|u1", "data",
      PyLong_FromVoidPtr(data), Py_False, "version", 3, "strides", Py_None,
      "stream", legacy_default_stream);
}

/* __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None):
 * the arguments are converted before the handle is checked (they may run
 * Python code); dlpack.c makes the capsule. */
static PyObject* hrx_py_buffer_dlpack(PyObject* self, PyObject* const* args,
                                      Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"stream", "max_version", "dl_device",
                                      "copy"};
  PyObject* stream_object = Py_None;
  PyObject* version_object = Py_None;
  PyObject* device_object = Py_None;
  PyObject* copy_object = Py_None;
  PyObject* parsed[4];
  if (hrx_py_arg_parse("__dlpack__", args, nargs, kwnames, names, 4, 0, 0,
                       parsed) < 0) {
    return NULL;
  }
  if (parsed[0]) stream_object = parsed[0];
  if (parsed[1]) version_object = parsed[1];
  if (parsed[2]) device_object = parsed[2];
  if (parsed[3]) copy_object = parsed[3];
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_py_dlpack_request_t request;
  if (hrx_py_dlpack_request(state, stream_object, version_object,
                            device_object, copy_object, &request) < 0) {
    return NULL;
  }
  hrx_py_buffer_t* buffer = hrx_py_buffer_get(self);
  if (!buffer) return NULL;
  return hrx_py_dlpack_export(state, buffer->buffer, buffer->offset,
                              buffer->length, &request);
}

static PyObject* hrx_py_buffer_dlpack_device(PyObject* self, PyObject* unused) {
  (void)unused;
  hrx_py_buffer_t* buffer = hrx_py_buffer_get(self);
  if (!buffer) return NULL;
  return hrx_py_dlpack_device(hrx_py_state_from_type(Py_TYPE(self)),
                              buffer->buffer);
}

/* numpy.asarray(buffer) would otherwise make a 0-d object array. */
static PyObject* hrx_py_buffer_array(PyObject* self, PyObject* const* args,
                                     Py_ssize_t nargs, PyObject* kwnames) {
  (void)self;
  (void)args;
  (void)nargs;
  (void)kwnames;
  PyErr_SetString(PyExc_TypeError,
                  "an hrx.Buffer is device memory that numpy cannot view; "
                  "copy it to host memory with stream.read(buffer).wait() "
                  "or stream.read_blocking(buffer, out)");
  return NULL;
}

static PyObject* hrx_py_buffer_new(PyTypeObject* type, PyObject* args,
                                   PyObject* kwargs) {
  (void)type;
  (void)args;
  (void)kwargs;
  PyErr_SetString(PyExc_TypeError,
                  "hrx.Buffer cannot be created directly; allocate one with "
                  "device.allocate(nbytes) or stream.allocate(nbytes)");
  return NULL;
}

static PyObject* hrx_py_buffer_repr(PyObject* self) {
  hrx_py_buffer_t* buffer = (hrx_py_buffer_t*)self;
  if (!buffer->buffer) return PyUnicode_FromString("<hrx.Buffer (closed)>");
  return PyUnicode_FromFormat("<hrx.Buffer [%llu:%llu] of %llu bytes>",
                              (unsigned long long)buffer->offset,
                              (unsigned long long)(buffer->offset +
                                                   buffer->length),
                              (unsigned long long)hrx_buffer_size(
                                  buffer->buffer));
}

HRX_PY_NEW_FUNCTION(hrx_py_buffer, buffer_type)

static PyMethodDef hrx_py_buffer_methods[] = {
    HRX_PY_NEW_METHOD(
        hrx_py_buffer,
        "__new__($type, *args, **kwargs)\n--\n\n"
        "Refuse with a TypeError: buffers come from device.allocate(nbytes) "
        "or stream.allocate(nbytes)."),
    {"slice", (PyCFunction)(void (*)(void))hrx_py_buffer_slice,
     METH_FASTCALL | METH_KEYWORDS,
     "slice($self, offset, length)\n--\n\n"
     "Return the view [offset, offset + length) of this view, "
     "bounds-checked."},
    HRX_PY_HANDLE_METHODS(hrx_py_buffer,
                          "Drop this view; memory is freed once no view or "
                          "queued command uses it."),
    {"__dlpack__", (PyCFunction)(void (*)(void))hrx_py_buffer_dlpack,
     METH_FASTCALL | METH_KEYWORDS,
     "__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, "
     "copy=None)\n--\n\n"
     "Return this view as a 1-D uint8 DLPack tensor (a capsule), without a "
     "copy; the consumer keeps the memory alive. Unless stream is -1, the "
     "consumer's stream (None: the default stream) is made to wait on the "
     "device, through events, for the work already submitted to the "
     "device's pool queues; for host memory the host waits for it."},
    {"__array__", (PyCFunction)(void (*)(void))hrx_py_buffer_array,
     METH_FASTCALL | METH_KEYWORDS,
     "__array__($self, /, *args, **kwargs)\n--\n\n"
     "Refuse with a TypeError: numpy cannot view device memory; read it "
     "with stream.read(buffer).wait() or stream.read_blocking(buffer, "
     "out)."},
    {"__dlpack_device__", hrx_py_buffer_dlpack_device, METH_NOARGS,
     "__dlpack_device__($self, /)\n--\n\n"
     "Return (device_type, device_id): (1, 0) on the host backend, "
     "(2, ordinal) for CUDA and (10, ordinal) for ROCm memory."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef hrx_py_buffer_getset[] = {
    HRX_PY_PROPERTY("nbytes", hrx_py_buffer_kind, hrx_py_buffer_nbytes,
                    "length of this view in bytes"),
    HRX_PY_PROPERTY("offset", hrx_py_buffer_kind, hrx_py_buffer_offset,
                    "offset of this view in its allocation"),
    HRX_PY_PROPERTY("allocation_size", hrx_py_buffer_kind,
                    hrx_py_buffer_allocation_size,
                    "size of the whole allocation"),
    HRX_PY_PROPERTY("device", hrx_py_buffer_kind, hrx_py_buffer_device_of,
                    "the buffer's device"),
    HRX_PY_CLOSED_PROPERTY(hrx_py_buffer_kind),
    {"__cuda_array_interface__", hrx_py_buffer_get_cuda_array_interface, NULL,
     "the CUDA Array Interface (version 3) of this view as 1-D uint8, for "
     "Numba and CuPy. Its stream is the legacy default stream, made to wait "
     "for the work already submitted to the device's pool queues. Only on "
     "NVIDIA GPUs; elsewhere the attribute is absent (AttributeError says "
     "why).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot hrx_py_buffer_slots[] = {
    {Py_tp_doc, "Device memory (or a view of it: buf[a:b], buf.slice(offset, "
                "length)), usable by every stream of its device. Not created "
                "directly: use Device.allocate or Stream.allocate."},
    {Py_tp_new, hrx_py_buffer_new},
    {Py_tp_dealloc, hrx_py_buffer_dealloc},
    {Py_tp_traverse, hrx_py_traverse_type},
    {Py_tp_methods, hrx_py_buffer_methods},
    {Py_tp_getset, hrx_py_buffer_getset},
    {Py_tp_repr, hrx_py_buffer_repr},
    {Py_mp_subscript, hrx_py_buffer_subscript},
    {Py_mp_length, hrx_py_buffer_length},
    {0, NULL},
};

PyType_Spec hrx_py_buffer_spec = {
    .name = "hrx.Buffer",
    .basicsize = sizeof(hrx_py_buffer_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = hrx_py_buffer_slots,
};
