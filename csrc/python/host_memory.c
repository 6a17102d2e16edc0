/* Host memory that Stream.upload, read_into and read_blocking read or
 * write in place (host_memory.h): buffer protocol exports, with their
 * contiguity and writability checks, and host DLPack tensors. */
#include "host_memory.h"

#include <string.h>

/* Whether a struct-module format string (as the buffer protocol reports
 * it) has an item of Python objects ('O'). Field names of structured
 * formats sit between colons and are skipped. */
static bool hrx_py_format_has_objects(const char* format) {
  if (!format) return false;
  bool in_name = false;
  for (const char* c = format; *c; ++c) {
    if (*c == ':') {
      in_name = !in_name;
    } else if (!in_name && *c == 'O') {
      return true;
    }
  }
  return false;
}

/* Gets a C-contiguous buffer of `object`, turning the buffer protocol's
 * errors into ones that say what is allowed. Buffers of Python objects
 * (numpy dtype=object) are refused: their bytes are object pointers, which
 * an upload would copy to the device and a read would overwrite. */
static int hrx_py_get_contiguous(hrx_py_state_t* state, PyObject* object,
                                 int flags, const char* role, Py_buffer* out) {
  if (PyObject_GetBuffer(object, out, flags | PyBUF_FORMAT) == 0) {
    if (!hrx_py_format_has_objects(out->format)) return 0;
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "%s holds Python objects (buffer format '%.50s'); pass "
                 "bytes or an array of numbers",
                 role, out->format);
    PyBuffer_Release(out);
    return -1;
  }
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  /* Distinguish read-only from non-contiguous for the message. */
  Py_buffer probe;
  bool readonly = false;
  if ((flags & PyBUF_WRITABLE) &&
      PyObject_GetBuffer(object, &probe, PyBUF_FULL_RO) == 0) {
    readonly = probe.readonly;
    PyBuffer_Release(&probe);
  } else {
    PyErr_Clear();
  }
  PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
               readonly ? "%s is read-only; pass a writable buffer such as a "
                          "bytearray or numpy array"
                        : "%s must be C-contiguous; pass a contiguous copy "
                          "(e.g. numpy.ascontiguousarray)",
               role);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return -1;
}

int hrx_py_host_memory_get(hrx_py_state_t* state, PyObject* object,
                                  bool writable, const char* role,
                                  hrx_py_host_memory_t* out) {
  memset(out, 0, sizeof(*out));
  if (PyObject_CheckBuffer(object)) {
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (hrx_py_get_contiguous(state, object, flags, role, &out->view) < 0) {
      return -1;
    }
    out->has_view = true;
    out->data = out->view.buf;
    out->length = (uint64_t)out->view.len;
    return 0;
  }
  if (!PyObject_HasAttrString(object, "__dlpack__")) {
    PyErr_Format(PyExc_TypeError,
                 "%s must be host memory: an object with the buffer protocol "
                 "(bytes, bytearray, memoryview, numpy array) or a DLPack "
                 "tensor in host memory, not %.100s",
                 role, Py_TYPE(object)->tp_name);
    return -1;
  }
  if (hrx_py_dlpack_host_acquire(state, object, writable, role,
                                 &out->dlpack) < 0) {
    return -1;
  }
  out->data = out->dlpack.data;
  out->length = out->dlpack.length;
  return 0;
}

void hrx_py_host_memory_release(hrx_py_host_memory_t* memory) {
  if (memory->has_view) PyBuffer_Release(&memory->view);
  memory->has_view = false;
  hrx_py_dlpack_host_release(&memory->dlpack);
}

int hrx_py_host_buffer_writable(hrx_py_state_t* state, PyObject* object,
                                const char* role, Py_buffer* out) {
  if (!PyObject_CheckBuffer(object)) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "%s must support the buffer protocol (a writable "
                 "C-contiguous buffer such as a numpy array or bytearray), "
                 "got %.100s",
                 role, Py_TYPE(object)->tp_name);
    return -1;
  }
  return hrx_py_get_contiguous(state, object,
                               PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE, role, out);
}

int hrx_py_host_memory_fits(hrx_py_state_t* state,
                            const hrx_py_host_memory_t* memory,
                            hrx_stream_t* stream, hrx_view_t src) {
  if (memory->length >= src.length) return 0;
  /* The core's message; the call refuses before it submits anything. */
  return hrx_py_raise_int(state,
                          hrx_stream_read_blocking(stream, src, memory->data,
                                                   memory->length, NULL,
                                                   NULL));
}
