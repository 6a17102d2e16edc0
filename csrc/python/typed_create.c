/* Typed buffers made on a device: empty, zeros, asarray (typed_create.h). */
#include "typed_create.h"

#include "buffer.h"
#include "dtype.h"

PyObject* hrx_py_typed_empty(hrx_py_state_t* state, PyObject* device,
                             PyObject* shape, PyObject* dtype) {
  hrx_py_dtype_t type;
  /* numpy.dtype(None) is float64; a buffer's dtype is never implied. */
  if (dtype == Py_None) {
    PyErr_SetString(PyExc_TypeError,
                    "dtype must be given (e.g. numpy.float32), not None");
    return NULL;
  }
  if (hrx_py_dtype_convert(state, dtype, "dtype", &type) < 0) return NULL;
  PyObject* extents = NULL;
  uint64_t nbytes = 0;
  if (hrx_py_shape_convert(state, shape, type.itemsize, false, 0, &extents,
                           &nbytes) < 0) {
    return NULL;
  }
  if (nbytes == 0) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "shape %R holds no elements; a buffer holds at least one "
                 "byte",
                 extents);
    Py_DECREF(extents);
    return NULL;
  }
  PyObject* size = PyLong_FromUnsignedLongLong(nbytes);
  PyObject* buffer =
      size ? PyObject_CallMethod(device, "allocate", "O", size) : NULL;
  Py_XDECREF(size);
  if (buffer) hrx_py_buffer_set_type(buffer, type, extents);
  Py_DECREF(extents);
  return buffer;
}

/* The stream argument of zeros and asarray: None or an hrx.Stream (or
 * fabric.Queue); TypeError otherwise. */
static int hrx_py_typed_stream_arg(hrx_py_state_t* state, PyObject* stream) {
  if (stream == Py_None || PyObject_TypeCheck(stream, state->stream_type)) {
    return 0;
  }
  PyErr_Format(PyExc_TypeError, "stream must be an hrx.Stream or None, not "
               "%.100s", Py_TYPE(stream)->tp_name);
  return -1;
}

/* stream.<method>(buffer, argument) on `stream`, or with None on a new
 * stream of `device` that is synchronized and closed before returning. */
static int hrx_py_typed_submit_one(PyObject* device, PyObject* stream,
                                   const char* method, PyObject* buffer,
                                   PyObject* argument) {
  if (stream != Py_None) {
    PyObject* done =
        PyObject_CallMethod(stream, method, "OO", buffer, argument);
    Py_XDECREF(done);
    return done ? 0 : -1;
  }
  PyObject* own = PyObject_CallMethod(device, "stream", NULL);
  if (!own) return -1;
  PyObject* done = PyObject_CallMethod(own, method, "OO", buffer, argument);
  if (done) {
    Py_DECREF(done);
    done = PyObject_CallMethod(own, "synchronize", NULL);
  }
  /* close() keeps a pending error: it is called with none set. */
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyObject* closed = PyObject_CallMethod(own, "close", NULL);
  if (!closed) PyErr_WriteUnraisable(own);
  Py_XDECREF(closed);
  PyErr_Restore(type, value, traceback);
  Py_DECREF(own);
  Py_XDECREF(done);
  return done ? 0 : -1;
}

PyObject* hrx_py_typed_zeros(hrx_py_state_t* state, PyObject* device,
                             PyObject* shape, PyObject* dtype,
                             PyObject* stream) {
  if (hrx_py_typed_stream_arg(state, stream) < 0) return NULL;
  PyObject* buffer = hrx_py_typed_empty(state, device, shape, dtype);
  if (!buffer) return NULL;
  /* A byte fill: zero is all zero bytes in every dtype. */
  PyObject* untyped = PyObject_CallMethod(buffer, "view", "O", Py_None);
  PyObject* zero = PyLong_FromLong(0);
  int result = untyped && zero ? hrx_py_typed_submit_one(device, stream,
                                                         "fill", untyped, zero)
                               : -1;
  Py_XDECREF(zero);
  Py_XDECREF(untyped);
  if (result < 0) Py_CLEAR(buffer);
  return buffer;
}

PyObject* hrx_py_typed_asarray(hrx_py_state_t* state, PyObject* device,
                               PyObject* array, PyObject* dtype,
                               PyObject* stream) {
  if (hrx_py_typed_stream_arg(state, stream) < 0) return NULL;
  if (PyObject_TypeCheck(array, state->buffer_type)) {
    PyErr_SetString(PyExc_TypeError,
                    "asarray takes host data (a numpy array, a sequence, a "
                    "host DLPack tensor); for an hrx.Buffer copy it on the "
                    "device with stream.copy(dst, src)");
    return NULL;
  }
  PyObject* numpy = PyImport_ImportModule("numpy");
  if (!numpy) return NULL;
  /* A DLPack producer numpy does not take as an array (no buffer protocol,
   * no __array__) is imported through DLPack first. */
  PyObject* source = NULL;
  if (!PyObject_CheckBuffer(array) &&
      PyObject_HasAttrString(array, "__dlpack__") &&
      !PyObject_HasAttrString(array, "__array__")) {
    source = PyObject_CallMethod(numpy, "from_dlpack", "O", array);
  } else {
    source = Py_NewRef(array);
  }
  PyObject* host = source ? PyObject_CallMethod(numpy, "ascontiguousarray",
                                                "OO", source, dtype)
                          : NULL;
  Py_XDECREF(source);
  Py_DECREF(numpy);
  if (!host) return NULL;
  PyObject* host_shape = PyObject_GetAttrString(host, "shape");
  PyObject* host_dtype =
      host_shape ? PyObject_GetAttrString(host, "dtype") : NULL;
  PyObject* buffer = host_dtype ? hrx_py_typed_empty(state, device, host_shape,
                                                     host_dtype)
                                : NULL;
  if (buffer &&
      hrx_py_typed_submit_one(device, stream, "upload", buffer, host) < 0) {
    Py_CLEAR(buffer);
  }
  Py_XDECREF(host_dtype);
  Py_XDECREF(host_shape);
  Py_DECREF(host);
  return buffer;
}
